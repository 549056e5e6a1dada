//! A job with no spec file (`hone run --task TEXT --model NAME`): the same defaults and checks as
//! a spec, built from the command line.

use super::{Job, Overrides, SpecError, parse_with};
use std::path::Path;

/// What the command line gives for a one-off job.
#[derive(Debug, Clone)]
pub struct Adhoc {
    pub task: String,
    pub model: String,
    /// `openai`, `openai-compatible`, `anthropic`, `azure`, `bedrock` or `vertex`.
    pub provider: &'static str,
    /// Verify commands, in order.
    pub verify: Vec<String>,
    /// `--name`, else made from the task.
    pub name: Option<String>,
}

/// A job name from the task's first words: `Fix add() so tests pass` -> `fix-add-so-tests-pass`.
pub fn slug(task: &str) -> String {
    let mut out = String::new();
    for word in task.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
        if out.len() + word.len() + 1 > 40 {
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word.to_ascii_lowercase());
    }
    if out.is_empty() { "task".into() } else { out }
}

/// The job, validated like a spec read from `<cwd>/(command line)`.
pub fn job(a: &Adhoc, cwd: &Path) -> Result<Job, SpecError> {
    let verify: Vec<serde_json::Value> = a
        .verify
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let first = run.split_whitespace().next().unwrap_or("check");
            let base = Path::new(first).file_name().and_then(|f| f.to_str()).unwrap_or("check");
            serde_json::json!({"name": format!("{}-{}", i + 1, slug(base)), "run": run})
        })
        .collect();
    // JSON is YAML: the document goes through the spec's own loader and checks.
    let doc = serde_json::json!({
        "version": 1,
        "task": a.task,
        "model": {"provider": a.provider, "name": a.model},
        "verify": verify,
    });
    let name = a.name.clone().unwrap_or_else(|| slug(&a.task));
    let o = Overrides { task: None, name: Some(name), model: None };
    parse_with(&cwd.join("(command line)"), &doc.to_string(), &o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_task() {
        assert_eq!(slug("Make check.sh pass."), "make-check-sh-pass");
        assert_eq!(slug("!!!"), "task");
        assert!(slug(&"word ".repeat(30)).len() <= 40);
    }

    #[test]
    fn a_one_off_job_gets_the_spec_defaults() {
        let a = Adhoc {
            task: "Fix it".into(),
            model: "m".into(),
            provider: "openai-compatible",
            verify: vec!["python3 -m pytest -q".into()],
            name: None,
        };
        let j = job(&a, Path::new("/w")).unwrap();
        assert_eq!((j.name.as_str(), j.git.branch.as_str()), ("fix-it", "hone/fix-it"));
        assert_eq!((j.verify[0].name.as_str(), j.verify[0].run.as_str()), ("1-python3", "python3 -m pytest -q"));
        assert!(j.repo.path.is_none() && j.report_dir.is_none());
    }
}
