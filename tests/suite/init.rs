//! `hone init` (issue 16, part 4; issue 28): for a Python, Node, Rust or Go repository it writes
//! job specs (issue to PR, triage, review), a policy and their workflows that `hone validate`
//! accepts, with the ecosystem's setup and verify commands, and it never overwrites a file.

use crate::common::repo::TestRepo;
use crate::common::*;

async fn init(repo: &TestRepo, extra: &[&str]) -> Run {
    let mut args = vec!["init"];
    args.extend_from_slice(extra);
    run_in(&repo.path, &args, &[], repo.path.join("target/unused-init")).await
}

async fn validate(repo: &TestRepo, file: &str) -> Run {
    run_in(&repo.path, &["validate", file], &[], repo.path.join("target/unused-init")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_repository_gets_a_valid_job_policy_and_workflow_and_nothing_is_overwritten() {
    let repo = TestRepo::new(&[
        ("pyproject.toml", "[project]\nname = \"x\"\n[project.optional-dependencies]\ntest = [\"pytest\"]\n"),
        ("src/x/__init__.py", ""),
    ]);
    // From a subdirectory, as a user might: the files go to the repository's root.
    let sub = repo.path.join("src");
    let run = run_in(&sub, &["init"], &[], repo.path.join("target/unused-init")).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("hone: init wrote 7 file(s), kept 0"), "{}", run.stdout);
    let job = std::fs::read_to_string(repo.path.join(".github/hone/issue.yaml")).unwrap();
    assert!(job.starts_with("# yaml-language-server: $schema="), "{job}");
    assert!(job.contains(r#"run: "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' pytest""#), "{job}");
    assert!(job.contains(r#"run: ".venv/bin/python -m pytest -q""#), "{job}");
    let v = validate(&repo, ".github/hone/issue.yaml").await;
    assert_eq!(v.code, 0, "{}", v.stderr);
    assert!(
        v.stdout.contains("valid job spec (job `issue`, 1 check(s)") && v.stdout.contains("--task"),
        "{}",
        v.stdout
    );
    let v = validate(&repo, ".github/hone/policy.yaml").await;
    assert_eq!(v.code, 0, "{}", v.stderr);
    let policy = std::fs::read_to_string(repo.path.join(".github/hone/policy.yaml")).unwrap();
    assert!(policy.contains("  network:\n    allow: [\"pypi.org\", \"files.pythonhosted.org\"]\n"), "{policy}");
    // The workflows are the shipped ones CI checks with actionlint, each naming its spec.
    for (written, shipped, spec) in [
        ("hone-issue-to-pr.yml", "issue-to-pr.yml", "issue.yaml"),
        ("hone-triage.yml", "triage.yml", "triage.yaml"),
        ("hone-review.yml", "review.yml", "review.yaml"),
    ] {
        let workflow = std::fs::read_to_string(repo.path.join(".github/workflows").join(written)).unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(workflow, std::fs::read_to_string(root.join("workflows").join(shipped)).unwrap(), "{written}");
        assert!(workflow.contains(&format!("job: .github/hone/{spec}")), "{written}");
    }
    for (spec, mode) in [("triage", "none"), ("review", "review")] {
        let path = format!(".github/hone/{spec}.yaml");
        let v = validate(&repo, &path).await;
        assert_eq!(v.code, 0, "{path}: {}", v.stderr);
        assert!(v.stdout.contains(&format!("valid job spec (job `{spec}`")), "{}", v.stdout);
        let text = std::fs::read_to_string(repo.path.join(&path)).unwrap();
        assert!(text.contains(&format!("\nchange: {mode}\n")), "{text}");
    }

    // Again, after the user edited the policy: nothing is replaced.
    std::fs::write(repo.path.join(".github/hone/policy.yaml"), "version: 1\nnetwork: false\n").unwrap();
    let again = init(&repo, &[]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.starts_with("hone: init wrote 0 file(s), kept 7"), "{}", again.stdout);
    assert!(again.stderr.contains("kept .github/hone/policy.yaml (it exists; not overwritten)"), "{}", again.stderr);
    assert_eq!(
        std::fs::read_to_string(repo.path.join(".github/hone/policy.yaml")).unwrap(),
        "version: 1\nnetwork: false\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_rust_and_go_repositories_get_their_own_commands() {
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
    let cases: [Case; 3] = [
        (
            &[("package.json", r#"{"scripts": {"test": "node --test", "build": "tsc"}}"#), ("package-lock.json", "{}")],
            &["npm ci --no-audit --no-fund", "npm run build", "npm run test"],
        ),
        (&[("Cargo.toml", "[package]\nname = \"x\"\n")], &["cargo fetch", "cargo test --offline -q"]),
        (&[("go.mod", "module example.com/x\n")], &["go mod download", "go vet ./...", "go test ./..."]),
    ];
    for (files, commands) in cases {
        let repo = TestRepo::new(files);
        let run = init(&repo, &["--model", "claude-sonnet-4-5"]).await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        let job = std::fs::read_to_string(repo.path.join(".github/hone/issue.yaml")).unwrap();
        for c in commands {
            assert!(job.contains(c), "{c} in {job}");
        }
        assert!(job.contains("provider: anthropic, name: claude-sonnet-4-5"), "{job}");
        for w in ["hone-issue-to-pr.yml", "hone-triage.yml", "hone-review.yml"] {
            let workflow = std::fs::read_to_string(repo.path.join(".github/workflows").join(w)).unwrap();
            assert!(
                workflow
                    .contains("api-key: ${{ secrets.ANTHROPIC_API_KEY }}\n          api-key-env: ANTHROPIC_API_KEY"),
                "the key a Claude model reads: {workflow}"
            );
        }
        let review = std::fs::read_to_string(repo.path.join(".github/hone/review.yaml")).unwrap();
        for c in commands {
            assert!(review.contains(c), "the review checks with the project's commands: {c} in {review}");
        }
        for f in [
            ".github/hone/issue.yaml",
            ".github/hone/triage.yaml",
            ".github/hone/review.yaml",
            ".github/hone/policy.yaml",
        ] {
            let v = validate(&repo, f).await;
            assert_eq!(v.code, 0, "{f}: {}\n{job}", v.stderr);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_known_project_or_a_repository_init_says_what_to_do() {
    let repo = TestRepo::new(&[("README.md", "docs only\n")]);
    let run = init(&repo, &[]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("found no Python, Node, Rust or Go project"), "{}", run.stderr);
    assert!(!repo.path.join(".github").exists(), "nothing written");
    // A Node project with no script to check with is not given a spec that verifies nothing.
    let repo = TestRepo::new(&[("package.json", "{}")]);
    assert_eq!(init(&repo, &[]).await.code, 2);
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path(), &["init"], &[], dir.path().join("unused")).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("is not in a git repository"), "{}", run.stderr);
}

/// On GitLab (a gitlab.com remote, or another host with a `.gitlab-ci.yml`), `init` writes the
/// merge request job, its policy and the include of hone's GitLab CI template; a project's own
/// `.gitlab-ci.yml` is never touched, and `--forge` overrides the guess.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gitlab_project_gets_the_merge_request_job_and_the_templates_include() {
    let pyproject = "[project]\nname = \"x\"\n[project.optional-dependencies]\ntest = [\"pytest\"]\n";
    let repo = TestRepo::new(&[("pyproject.toml", pyproject), ("src/x/__init__.py", "")]);
    repo.git(&["remote", "set-url", "origin", "git@gitlab.com:acme/app.git"]);
    let run = init(&repo, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("hone: init wrote 4 file(s), kept 0"), "{}", run.stdout);
    assert!(run.stderr.contains("label a merge request `hone-fix`"), "{}", run.stderr);
    let v = validate(&repo, ".gitlab/hone/job.yaml").await;
    assert_eq!(v.code, 0, "{}", v.stderr);
    assert!(v.stdout.contains("valid job spec (job `fix`, 1 check(s)"), "{}", v.stdout);
    assert_eq!(validate(&repo, ".gitlab/hone/policy.yaml").await.code, 0);
    let ci = std::fs::read_to_string(repo.path.join(".gitlab/hone.gitlab-ci.yml")).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let template = std::fs::read_to_string(root.join("workflows/gitlab/hone.gitlab-ci.yml")).unwrap();
    assert!(ci.contains("raw.githubusercontent.com/hone/hone/v0/workflows/gitlab/hone.gitlab-ci.yml"), "{ci}");
    for input in ["image", "job"] {
        assert!(ci.contains(&format!("      {input}: ")), "{ci}");
        assert!(template.contains(&format!("\n    {input}:\n")), "the template has no input `{input}`");
    }
    assert!(template.contains("default: .gitlab/hone/job.yaml"), "the job is where the template looks by default");
    let pipeline = std::fs::read_to_string(repo.path.join(".gitlab-ci.yml")).unwrap();
    assert!(pipeline.contains("- local: .gitlab/hone.gitlab-ci.yml"), "{pipeline}");

    // Another host, with the project's own pipeline: GitLab, and its pipeline is left alone.
    let own = TestRepo::new(&[("pyproject.toml", pyproject), (".gitlab-ci.yml", "test:\n  script: [pytest]\n")]);
    own.git(&["remote", "set-url", "origin", "https://git.corp.example/acme/app.git"]);
    let run = init(&own, &[]).await;
    assert!(run.stdout.starts_with("hone: init wrote 3 file(s)"), "{}", run.stdout);
    assert!(run.stderr.contains("add `include: [{ local: .gitlab/hone.gitlab-ci.yml }]`"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(own.path.join(".gitlab-ci.yml")).unwrap(), "test:\n  script: [pytest]\n");
    // `--forge github` wins over the guess.
    let gh = TestRepo::new(&[("pyproject.toml", pyproject)]);
    gh.git(&["remote", "set-url", "origin", "git@gitlab.com:acme/app.git"]);
    assert_eq!(init(&gh, &["--forge", "github"]).await.code, 0);
    assert!(gh.path.join(".github/hone/issue.yaml").is_file() && !gh.path.join(".gitlab").exists());
}
