//! The ready-to-copy files under `examples/` work: each spec a workflow names runs (with a
//! scripted model, from `.github/hone/` in a fresh clone), and every starter policy validates.

use crate::common::repo::TestRepo;
use crate::common::*;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

const MODEL_LINE: &str = "model: { provider: openai, name: gpt-4.1 }";

/// The `.github/hone/FILE` paths the workflows name.
fn named_by_workflows() -> Vec<String> {
    let mut out = Vec::new();
    // The GitHub workflows (workflows/gitlab/ holds the GitLab template, which names none).
    for e in std::fs::read_dir(root().join("workflows")).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        for (i, _) in text.match_indices(".github/hone/") {
            let rest = &text[i + ".github/hone/".len()..];
            let name: String =
                rest.chars().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')).collect();
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out.sort();
    out
}

/// The quickstart's buggy project, with the example specs copied to `.github/hone/`, each
/// pointed at the quickstart's scripted model instead of a real one.
fn repo_with_examples() -> TestRepo {
    let quick = root().join("examples/quickstart");
    let script = quick.join("script.yaml");
    let mut files: Vec<(String, String)> = ["calc.py", "test_calc.py"]
        .iter()
        .map(|f| (f.to_string(), std::fs::read_to_string(quick.join("repo").join(f)).unwrap()))
        .collect();
    for e in std::fs::read_dir(root().join("examples/github/hone")).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let scripted = format!("model: {{ provider: script, script: \"{}\" }}", script.display());
        let text = if text.contains("\nrepos:") {
            text
        } else {
            assert!(text.contains(MODEL_LINE), "{} has no `{MODEL_LINE}` line to swap", p.display());
            text.replace(MODEL_LINE, &scripted)
        };
        files.push((format!(".github/hone/{}", p.file_name().unwrap().to_string_lossy()), text));
    }
    let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    TestRepo::new(&refs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_spec_a_workflow_names_exists_and_runs_from_dot_github() {
    let named = named_by_workflows();
    assert_eq!(
        named,
        ["autofix.yaml", "fleet.yaml", "issue.yaml", "review.yaml", "triage.yaml"],
        "the workflows changed: update this test"
    );
    let repo = repo_with_examples();
    for (spec, extra) in [
        ("autofix.yaml", vec![]),
        ("issue.yaml", vec!["--task", "Resolve issue #7: add() subtracts", "--name", "issue-7"]),
        ("refactor.yaml", vec![]),
    ] {
        let path = format!(".github/hone/{spec}");
        let mut args = vec!["run", path.as_str(), "--dry-run"];
        args.extend(extra);
        let run = run_in(&repo.path, &args, &[], repo.path.join(".hone/reports")).await;
        assert_eq!(run.code, 0, "{spec}: stdout: {}\nstderr: {}", run.stdout, run.stderr);
        let branch = run.report()["branch"].as_str().unwrap().to_string();
        assert_eq!(committed(&repo, &branch), ["calc.py"], "{spec}");
        assert!(repo.path.join(".hone/reports/pr.md").is_file(), "{spec}: a dry run writes pr.md");
    }
    assert!(repo.git(&["branch", "--list", "hone/issue-7"]).contains("hone/issue-7"), "--name names the branch");
    // The fleet file validates, with the job it names.
    let v = run_in(&repo.path, &["validate", ".github/hone/fleet.yaml"], &[], repo.path.join("r")).await;
    assert_eq!(v.code, 0, "{}", v.stderr);
    assert!(
        v.stdout.contains("valid fleet file (2 repositories") && v.stdout.contains("job `weekly-refactor`"),
        "{}",
        v.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_starter_policy_validates_with_examples_both_ways() {
    let dir = root().join("examples/policies");
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["go.yaml", "node.yaml", "python.yaml", "rust.yaml"]);
    for n in names {
        let path = dir.join(&n);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("  examples:\n    allow:") && text.contains("    deny:\n      - "),
            "{n} shows both ways"
        );
        let v = run_hone(&["validate", path.to_str().unwrap()], &[], dir.join("unused")).await;
        assert_eq!(v.code, 0, "{n}: {}", v.stderr);
        assert!(v.stdout.contains("valid policy (commands: default deny"), "{n}: {}", v.stdout);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_tells_fleet_and_policy_files_from_job_specs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("job.yaml"), "version: 1\ntask: t\nmodel: { provider: script, script: s.yaml }\n").unwrap();
    std::fs::write(d.join("fleet.yaml"), "version: 1\njob: job.yaml\nrepos:\n  - path: .\nconcurrency: 2\n").unwrap();
    std::fs::write(d.join("policy.yaml"), "version: 1\ncommands: { default: deny, allow: [\"ls *\"] }\n").unwrap();
    let run = |f: &str| {
        let path = d.join(f).display().to_string();
        let report = d.join("r");
        async move { run_hone(&["validate", &path], &[], report).await }
    };
    let fleet = run("fleet.yaml").await;
    assert_eq!(fleet.code, 0, "{}", fleet.stderr);
    assert!(fleet.stdout.contains("valid fleet file (1 repositories, concurrency 2)"), "{}", fleet.stdout);
    let policy = run("policy.yaml").await;
    assert_eq!(policy.code, 0, "{}", policy.stderr);
    assert!(policy.stdout.contains("valid policy (commands: default deny, 1 allowed"), "{}", policy.stdout);
    // Errors are reported as what the file is, not as unknown keys of a job spec.
    std::fs::write(d.join("fleet.yaml"), "version: 1\njob: job.yaml\nrepos:\n  - path: .\nconcurrenc: 2\n").unwrap();
    let bad = run("fleet.yaml").await;
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("`concurrenc`") && bad.stderr.contains("did you mean `concurrency`"), "{}", bad.stderr);
    assert!(!bad.stderr.contains("unknown key `repos`"), "{}", bad.stderr);
}

/// The setup and hooks example validates (its policy's examples too), and its policy gives setup
/// (only) the network.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_setup_example_validates() {
    for f in ["job.yaml", "policy.yaml"] {
        let path = root().join("examples/setup").join(f);
        let v = run_hone(&["validate", path.to_str().unwrap()], &[], root().join("target/unused-setup")).await;
        assert_eq!(v.code, 0, "{f}: {}", v.stderr);
        assert!(v.stdout.contains("network off"), "{}", v.stdout);
    }
    let policy = std::fs::read_to_string(root().join("examples/setup/policy.yaml")).unwrap();
    assert!(policy.contains("setup:\n  network:\n    allow: [\"pypi.org\", \"files.pythonhosted.org\"]"));
    let job = std::fs::read_to_string(root().join("examples/setup/job.yaml")).unwrap();
    assert!(job.contains("after_edit:") && job.contains("before_verify:") && job.contains("{files}"));
}

/// The MCP example runs offline as its header says: the tracker server starts in the jail, the
/// model reads issue 12 through it, and the policy keeps `close_issue` from the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_example_reads_its_issue_through_mcp_and_fixes_the_bug() {
    require!(Need::UserNamespaces);
    let src = root().join("examples/mcp");
    let dir = tempfile::tempdir().unwrap();
    for f in ["job.yaml", "policy.yaml", "script.yaml", "repo/temp.py", "repo/test_temp.py", "repo/tools/tracker.py"] {
        let to = dir.path().join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(src.join(f), &to).unwrap();
    }
    let run = run_in(dir.path(), &["run", "job.yaml"], &[], dir.path().join(".hone/reports")).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let report = run.report();
    let mcp = &report["mcp"][0];
    assert_eq!((mcp["status"].as_str(), mcp["calls"].as_u64()), (Some("running"), Some(1)), "{mcp:#}");
    assert_eq!(mcp["denied"], serde_json::json!(["tracker/close_issue"]));
    assert!(
        run.read("summary.md")
            .contains("| `tracker` | running | `tracker__get_issue` `tracker__search_issues` | 1 | 1 |"),
        "{}",
        run.read("summary.md")
    );
    assert!(run.stderr.contains("MCP server `tracker`: 2 tool(s) offered"), "{}", run.stderr);
    let scratch = dir.path().join(".hone/scratch/mcp-issue");
    let fixed = crate::common::repo::git(&scratch, &["show", "hone/mcp-issue:temp.py"]);
    assert!(fixed.contains("c * 9 / 5 + 32"), "{fixed}");
    for f in ["job.yaml", "policy.yaml"] {
        let v = run_hone(&["validate", src.join(f).to_str().unwrap()], &[], root().join("target/unused-mcp")).await;
        assert_eq!(v.code, 0, "{f}: {}", v.stderr);
    }
}

/// Every example file starts with the `yaml-language-server` comment naming the schema of its
/// kind (as `hone validate` tells kinds apart), so editors complete and check it; a relative one
/// points at the committed schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_names_the_schema_of_its_kind() {
    let mut files = Vec::new();
    let mut dirs = vec![root().join("examples")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_dir() && !["kubernetes", "repo", ".hone"].contains(&name.as_str()) {
                dirs.push(p);
            } else if name.ends_with(".yaml") && name != "script.yaml" {
                files.push(p);
            }
        }
    }
    assert!(files.len() >= 13, "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let first = text.lines().next().unwrap();
        let target = first
            .strip_prefix("# yaml-language-server: $schema=")
            .unwrap_or_else(|| panic!("{}: {first}", f.display()));
        let v = run_hone(&["validate", f.to_str().unwrap()], &[], root().join("target/unused-schemas")).await;
        assert_eq!(v.code, 0, "{}: {}", f.display(), v.stderr);
        let kind = if v.stdout.contains("valid fleet file") {
            "fleet"
        } else if v.stdout.contains("valid policy") {
            "policy"
        } else {
            "job"
        };
        assert!(target.ends_with(&format!("/{kind}.schema.json")), "{}: {target} for a {kind}", f.display());
        if !target.starts_with("https://") {
            assert!(f.parent().unwrap().join(target).is_file(), "{}: {target}", f.display());
        }
    }
}
