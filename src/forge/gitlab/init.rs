//! `hone init` for a project on GitLab: a job that makes the checks pass (autofix on merge
//! requests labelled `hone-fix`, and scheduled runs), its policy, and the include of hone's
//! GitLab CI/CD template with the ecosystem's image; `.gitlab-ci.yml` only when there is none.

use crate::project::{Ecosystem, Project};
use std::path::PathBuf;

/// The template's URL at hone's major version (`tests/suite/versions.rs` checks the tag).
const TEMPLATE: &str = "https://raw.githubusercontent.com/hone/hone/v0/workflows/gitlab/hone.gitlab-ci.yml";

/// Where the job spec goes: the template's default `job` input.
pub const JOB: &str = ".gitlab/hone/job.yaml";
/// The file that includes the template.
pub const CI_FILE: &str = ".gitlab/hone.gitlab-ci.yml";

/// An image with the ecosystem's toolchain, git, bash, curl and sha256sum (what the template's
/// release install needs).
fn image(e: Ecosystem) -> &'static str {
    match e {
        Ecosystem::Python => "python:3.13",
        Ecosystem::Node => "node:22",
        Ecosystem::Rust => "rust:1",
        Ecosystem::Go => "golang:1.23",
    }
}

/// The job spec: the task is to make the checks pass, as autofix does on a merge request.
fn job_yaml(p: &Project, model: &str) -> String {
    let issue = crate::forge::github::init::job_yaml(p, model);
    let head = format!(
        "# Written by `hone init` for a {} project on GitLab: the job in {CI_FILE} runs it on merge\n\
         # requests labelled `hone-fix` (hone fixes them in place) and on scheduled pipelines. Check it\n\
         # with `hone validate`.\nversion: 1\nname: fix\ntask: |\n  Make the repository's checks pass. Keep the change as small as the fix allows, and never\n  weaken, skip or delete a check or a test.\n",
        p.found[0].name()
    );
    // The issue job's lines after its head (the model, setup, verify, limits, policy, pr).
    let body = issue.split_once("\nmodel:").map(|(_, rest)| format!("model:{rest}")).unwrap_or_default();
    let schema = issue.lines().next().unwrap_or_default();
    format!("{schema}\n{head}{body}")
}

/// The include of the template, with the ecosystem's image.
fn ci_yaml(p: &Project, model: &str) -> String {
    let key = if model.starts_with("claude") { "ANTHROPIC_API_KEY" } else { "OPENAI_API_KEY" };
    format!(
        "# Written by `hone init`: hone's GitLab CI/CD template for this {} project (docs/gitlab.md).\n\
         # Include this file from .gitlab-ci.yml:  include: [{{ local: {CI_FILE} }}]\n\
         # Set these CI/CD variables, masked: {key}, and GITLAB_TOKEN (a project access token,\n\
         # role Developer, scopes api and write_repository).\n\
         include:\n  - remote: {TEMPLATE}\n    inputs:\n      image: {}\n      job: {JOB}\n",
        p.found[0].name(),
        image(p.found[0])
    )
}

/// The files `init` writes for GitLab, relative to the repository root; `.gitlab-ci.yml` only
/// when the project has none (`init` never replaces a file, and a pipeline of the project's own
/// is not edited: the next step says to include the file).
/// The files and next step for GitLab: the job, policy and CI template, and `.gitlab-ci.yml`
/// unless the project has one (then the next step says to include the template).
pub fn scaffold(p: &Project, model: &str, root: &std::path::Path) -> crate::project::Scaffold {
    let has_gitlab_ci = std::fs::symlink_metadata(root.join(".gitlab-ci.yml")).is_ok_and(|m| m.is_file());
    let include = if has_gitlab_ci {
        format!(", add `include: [{{ local: {CI_FILE} }}]` to .gitlab-ci.yml")
    } else {
        String::new()
    };
    let next = format!(
        "next: `hone validate {JOB}`{include}, set the CI/CD variables the include names, commit, and label a merge request `hone-fix`"
    );
    crate::project::Scaffold { files: files(p, model, has_gitlab_ci), next }
}

pub fn files(p: &Project, model: &str, has_gitlab_ci: bool) -> Vec<(PathBuf, String)> {
    let mut out = vec![
        (PathBuf::from(JOB), job_yaml(p, model)),
        (PathBuf::from(".gitlab/hone/policy.yaml"), crate::project::policy_yaml(p)),
        (PathBuf::from(CI_FILE), ci_yaml(p, model)),
    ];
    if !has_gitlab_ci {
        let text = format!("# hone (written by `hone init`; add your own jobs here)\ninclude:\n  - local: {CI_FILE}\n");
        out.push((PathBuf::from(".gitlab-ci.yml"), text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn python() -> Project {
        Project {
            found: vec![Ecosystem::Python],
            setup: vec![("deps".into(), "pip install -e .".into())],
            verify: vec![("tests".into(), "pytest -q".into())],
        }
    }

    #[test]
    fn the_job_makes_the_checks_pass_and_the_ci_file_includes_the_template() {
        let written = files(&python(), "gpt-4.1", false);
        let names: Vec<String> = written.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(names, [JOB, ".gitlab/hone/policy.yaml", CI_FILE, ".gitlab-ci.yml"]);
        let job = &written[0].1;
        assert!(job.starts_with("# yaml-language-server: $schema="), "{job}");
        assert!(job.contains("\nname: fix\ntask: |\n  Make the repository's checks pass."), "{job}");
        assert!(job.contains("run: \"pytest -q\"") && job.contains("policy: policy.yaml"), "{job}");
        assert_eq!(job.matches("version: 1").count(), 1, "{job}");
        let ci = &written[2].1;
        assert!(ci.contains(&format!("remote: {TEMPLATE}")) && ci.contains("image: python:3.13"), "{ci}");
        assert!(files(&python(), "claude-sonnet-4-5", true).iter().all(|(p, _)| p != &PathBuf::from(".gitlab-ci.yml")));
        assert!(files(&python(), "claude-sonnet-4-5", true)[2].1.contains("ANTHROPIC_API_KEY"));
    }
}
