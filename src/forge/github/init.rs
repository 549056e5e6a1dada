//! `hone init` for a project on GitHub: three jobs and their workflows. An issue labelled `hone`
//! becomes a PR (issue), every new issue is labelled from a read-only answer (triage), and a PR
//! labelled `hone-review` gets a review with suggested changes (review).

use crate::project::{Project, quote};
use std::path::PathBuf;

const SCHEMA: &str = "https://raw.githubusercontent.com/hone/hone/v0/docs/schemas";

/// What to do once the files are written (the last line `init` prints on stderr).
const NEXT: &str = "next: `hone validate` each spec in .github/hone/, edit the label list in triage.yaml, commit; \
     then new issues are triaged, an issue labelled `hone` becomes a PR, and a PR labelled `hone-review` gets a review";

/// The spec's first lines: the schema comment, then `comment` (already `# `-prefixed lines).
fn head(comment: &str, name: &str, model: &str) -> String {
    let provider = if model.starts_with("claude") { "anthropic" } else { "openai" };
    format!(
        "# yaml-language-server: $schema={SCHEMA}/job.schema.json\n{comment}version: 1\nname: {name}\n\
         model: {{ provider: {provider}, name: {model} }}\n"
    )
}

/// The project's `setup:` and `verify:` blocks.
fn commands(p: &Project) -> String {
    let mut s = String::from("setup:\n");
    for (name, run) in &p.setup {
        s.push_str(&format!("  - {{ name: {name}, run: {}, timeout: 10m }}\n", quote(run)));
    }
    s.push_str("verify:\n");
    for (name, run) in &p.verify {
        s.push_str(&format!("  - {{ name: {name}, run: {}, timeout: 10m }}\n", quote(run)));
    }
    s
}

/// The job spec for `p`: the issue-to-PR job (the task comes from the issue, `--task`).
pub fn job_yaml(p: &Project, model: &str) -> String {
    let eco = p.found[0].name();
    let comment = format!(
        "# Written by `hone init` for a {eco} project: the job .github/workflows/hone-issue-to-pr.yml runs\n\
         # when an issue is labelled `hone` (the issue is the task). Check it with `hone validate`.\n"
    );
    // 25 minutes in all, setup included: inside the workflow's 30, with room to install hone,
    // so that a run out of time still writes its reports and saves its work.
    format!(
        "{}{}limits: {{ max_turns: 60, max_wall_time: 25m, max_fix_attempts: 3 }}\npolicy: policy.yaml\n\
         pr:\n  enabled: auto\n  labels: [hone]\n  on_failure: draft\n",
        head(&comment, "issue", model),
        commands(p)
    )
}

/// The review job: the project's checks, `change: review` (the task, the PR to review, comes from
/// the workflow).
pub fn review_yaml(p: &Project, model: &str) -> String {
    let eco = p.found[0].name();
    let comment = format!(
        "# Written by `hone init` for a {eco} project: the job .github/workflows/hone-review.yml runs\n\
         # on a pull request labelled `hone-review` (and on each push to it while labelled). hone\n\
         # fixes what is wrong on the PR's head, verifies the fix with the checks below, pushes\n\
         # nothing, and posts one review with suggested changes (docs/answers-and-reviews.md).\n\
         # Check it with `hone validate`.\n"
    );
    format!(
        "{}change: review\n{}limits: {{ max_turns: 60, max_wall_time: 25m, max_fix_attempts: 3 }}\npolicy: policy.yaml\n",
        head(&comment, "review", model),
        commands(p)
    )
}

/// The labels triage may pick: GitHub's default labels, which a new repository has.
pub const TRIAGE_LABELS: &[&str] =
    &["bug", "enhancement", "documentation", "question", "duplicate", "invalid", "good first issue", "help wanted"];

/// The triage job: read-only (`change: none`), answering with labels from a fixed list, a
/// priority and a reason; no checks (nothing changes), so no setup either.
pub fn triage_yaml(model: &str) -> String {
    let comment = "# Written by `hone init`: the job .github/workflows/hone-triage.yml runs on each new issue\n\
         # (the issue is the task). It is read-only (`change: none`): hone reads the issue and the\n\
         # code, changes nothing, and answers with the `output` below, which it validates; the\n\
         # workflow then adds the labels. Make the label list your repository's labels (a label\n\
         # that does not exist cannot be added). Check it with `hone validate`.\n";
    let labels: Vec<String> = TRIAGE_LABELS.iter().map(|l| quote(l)).collect();
    format!(
        "{}change: none\noutput:\n  schema:\n    type: object\n    additionalProperties: false\n    \
         required: [labels, priority, reason]\n    properties:\n      labels:\n        type: array\n        \
         maxItems: 3\n        uniqueItems: true\n        items: {{ enum: [{}] }}\n      \
         priority: {{ enum: [low, medium, high] }}\n      reason: {{ type: string, maxLength: 300 }}\n  \
         max_attempts: 3\nlimits: {{ max_turns: 20, max_wall_time: 10m }}\npolicy: policy.yaml\n",
        head(comment, "triage", model),
        labels.join(", ")
    )
}

/// The files `init` writes, relative to the repository root, with their contents.
/// The files and next step for GitHub.
pub fn scaffold(p: &Project, model: &str) -> crate::project::Scaffold {
    crate::project::Scaffold { files: files(p, model), next: NEXT.to_string() }
}

pub fn files(p: &Project, model: &str) -> Vec<(PathBuf, String)> {
    let workflow = |text: &str| keyed(text, model);
    vec![
        (PathBuf::from(".github/hone/issue.yaml"), job_yaml(p, model)),
        (PathBuf::from(".github/hone/triage.yaml"), triage_yaml(model)),
        (PathBuf::from(".github/hone/review.yaml"), review_yaml(p, model)),
        (PathBuf::from(".github/hone/policy.yaml"), crate::project::policy_yaml(p)),
        (
            PathBuf::from(".github/workflows/hone-issue-to-pr.yml"),
            workflow(include_str!("../../../workflows/issue-to-pr.yml")),
        ),
        (PathBuf::from(".github/workflows/hone-triage.yml"), workflow(include_str!("../../../workflows/triage.yml"))),
        (PathBuf::from(".github/workflows/hone-review.yml"), workflow(include_str!("../../../workflows/review.yml"))),
    ]
}

/// A shipped workflow, with the key a Claude model needs.
fn keyed(w: &str, model: &str) -> String {
    if !model.starts_with("claude") {
        return w.to_string();
    }
    w.replace(
        "api-key: ${{ secrets.OPENAI_API_KEY }}",
        "api-key: ${{ secrets.ANTHROPIC_API_KEY }}\n          api-key-env: ANTHROPIC_API_KEY",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::Ecosystem;

    fn rust() -> Project {
        Project {
            found: vec![Ecosystem::Rust],
            setup: vec![("crates".into(), "cargo fetch".into())],
            verify: vec![("test".into(), "cargo test -q".into())],
        }
    }

    #[test]
    fn every_shipped_workflow_is_written_and_keyed_for_claude() {
        let written = files(&rust(), "claude-sonnet-4-5");
        let workflows: Vec<&String> =
            written.iter().filter(|(p, _)| p.starts_with(".github/workflows")).map(|(_, t)| t).collect();
        assert_eq!(workflows.len(), 3);
        for w in workflows {
            assert!(!w.contains("OPENAI_API_KEY"), "{w}");
            assert!(w.contains("api-key-env: ANTHROPIC_API_KEY"), "{w}");
        }
    }

    #[test]
    fn the_specs_name_their_mode_and_triage_its_labels() {
        let review = review_yaml(&rust(), "gpt-4.1");
        assert!(review.contains("\nname: review\n") && review.contains("\nchange: review\n"), "{review}");
        assert!(review.contains(r#"run: "cargo test -q""#), "{review}");
        let triage = triage_yaml("gpt-4.1");
        assert!(triage.contains("\nchange: none\n"), "{triage}");
        assert!(triage.contains(r#"items: { enum: ["bug", "enhancement", "#), "{triage}");
        assert!(triage.contains(r#""good first issue", "help wanted"] }"#), "{triage}");
        assert!(!triage.contains("verify:") && !triage.contains("setup:"), "{triage}");
    }
}
