//! `hone init` for a repository on Forgejo (or Gitea): a job that makes the checks pass, its
//! policy, and a Forgejo Actions workflow that runs it as autofix on a pull request labelled
//! `hone-fix`, with the job spec and policy read from the base commit, never the PR's.

use crate::project::Project;
use std::path::PathBuf;

/// Where the job spec goes.
pub const JOB: &str = ".forgejo/hone/autofix.yaml";
/// The workflow Forgejo Actions runs.
pub const WORKFLOW: &str = ".forgejo/workflows/hone-autofix.yml";

const NEXT: &str = "next: `hone validate .forgejo/hone/autofix.yaml`, add the model's key as a repository secret \
     (Settings → Actions → Secrets), enable Actions and a runner with the label `docker`, commit, and label a PR `hone-fix`";

/// The job spec: the task is to make the checks pass, on the Forgejo server the runner names.
fn job_yaml(p: &Project, model: &str) -> String {
    let issue = crate::forge::github::init::job_yaml(p, model);
    let head = format!(
        "# Written by `hone init` for a {} project on Forgejo: {WORKFLOW} runs it on pull\n\
         # requests labelled `hone-fix` (hone fixes them in place). Check it with `hone validate`.\n\
         version: 1\nname: fix\ntask: |\n  Make the repository's checks pass. Keep the change as small as the fix allows, and never\n  weaken, skip or delete a check or a test.\nforge: {{ kind: forgejo }}\n",
        p.found[0].name()
    );
    let body = issue.split_once("\nmodel:").map(|(_, rest)| format!("model:{rest}")).unwrap_or_default();
    let schema = issue.lines().next().unwrap_or_default();
    format!("{schema}\n{head}{body}")
}

/// The autofix workflow for Forgejo Actions: actions by full URL (Forgejo's default action host
/// is its own), the base commit's spec and policy, the PR's head as the repository hone works on.
fn workflow(model: &str) -> String {
    let key = if model.starts_with("claude") {
        "api-key: ${{ secrets.ANTHROPIC_API_KEY }}\n          api-key-env: ANTHROPIC_API_KEY"
    } else {
        "api-key: ${{ secrets.OPENAI_API_KEY }}"
    };
    format!(
        "# Written by `hone init` (docs/forgejo.md): label a pull request `hone-fix` and hone pushes a fix\n\
         # to its branch and keeps one comment on it. The job spec and policy come from the PR's base\n\
         # commit (`trusted/`), never from the PR; hone never pushes to a fork's branch. The token is the\n\
         # one Forgejo Actions makes for this run (GITHUB_TOKEN), sent only to this Forgejo server.\n\
         name: hone autofix\n\non:\n  pull_request:\n    types: [labeled]\n\n\
         jobs:\n  autofix:\n    if: github.event.label.name == 'hone-fix'\n    runs-on: docker\n    timeout-minutes: 30\n    steps:\n\
         \x20     - uses: https://code.forgejo.org/actions/checkout@v4\n        with:\n          ref: ${{{{ github.event.pull_request.base.sha }}}}\n          path: trusted\n          persist-credentials: false\n\
         \x20     - uses: https://code.forgejo.org/actions/checkout@v4\n        with:\n          ref: ${{{{ github.event.pull_request.head.sha }}}}\n          path: pr\n          fetch-depth: 0\n          persist-credentials: false\n\
         \x20     - uses: https://github.com/hone/hone@v0\n        with:\n          job: trusted/{JOB}\n          repo: ${{{{ github.workspace }}}}/pr\n          report-dir: ${{{{ github.workspace }}}}/hone-reports\n          {key}\n          pr-number: ${{{{ github.event.pull_request.number }}}}\n\
         \x20     - uses: https://code.forgejo.org/actions/upload-artifact@v3\n        if: always()\n        with:\n          name: hone-reports\n          path: hone-reports\n"
    )
}

/// The files and next step for Forgejo: the job, its policy and the autofix workflow.
pub fn scaffold(p: &Project, model: &str) -> crate::project::Scaffold {
    let files = vec![
        (PathBuf::from(JOB), job_yaml(p, model)),
        (PathBuf::from(".forgejo/hone/policy.yaml"), crate::project::policy_yaml(p)),
        (PathBuf::from(WORKFLOW), workflow(model)),
    ];
    crate::project::Scaffold { files, next: NEXT.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::Ecosystem;

    #[test]
    fn the_job_names_forgejo_and_the_workflow_reads_the_base_commits_spec() {
        let p = Project {
            found: vec![Ecosystem::Rust],
            setup: vec![("crates".into(), "cargo fetch".into())],
            verify: vec![("test".into(), "cargo test -q".into())],
        };
        let s = scaffold(&p, "claude-sonnet-4-5");
        let names: Vec<String> = s.files.iter().map(|(f, _)| f.display().to_string()).collect();
        assert_eq!(names, [JOB, ".forgejo/hone/policy.yaml", WORKFLOW]);
        let job = &s.files[0].1;
        assert!(job.contains("\nforge: { kind: forgejo }\n") && job.contains("\nname: fix\n"), "{job}");
        let w = &s.files[2].1;
        assert!(w.contains("job: trusted/.forgejo/hone/autofix.yaml") && w.contains("ANTHROPIC_API_KEY"), "{w}");
        assert!(w.contains("ref: ${{ github.event.pull_request.base.sha }}"), "{w}");
        let parsed: serde_json::Value = serde_saphyr::from_str(w).unwrap();
        assert_eq!(parsed["jobs"]["autofix"]["steps"].as_array().map(Vec::len), Some(4));
    }
}
