//! GitHub Actions integration: step outputs in `GITHUB_OUTPUT` (heredoc delimiters, so multi-line
//! values round-trip), `summary.md` appended to `GITHUB_STEP_SUMMARY`, `::error` annotations for
//! failing checks, and `::add-mask::` for secret values. The commands are `ci_text::Command`s:
//! what a check printed or the model said is escaped as their data.

use crate::ci_text::Command;
use crate::record::RunRecord;
use crate::redact::Redactor;
use std::io::Write;
use std::path::Path;

/// Append `name<<DELIM` blocks to the file at `path`.
pub fn write_outputs(path: &Path, pairs: &[(&str, String)]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    for (name, value) in pairs {
        // A delimiter that cannot occur in the value.
        let mut delim = format!("ghadelimiter_{}", uuid::Uuid::new_v4().simple());
        while value.contains(&delim) {
            delim = format!("ghadelimiter_{}", uuid::Uuid::new_v4().simple());
        }
        writeln!(f, "{name}<<{delim}\n{value}\n{delim}")?;
    }
    Ok(())
}

/// Read outputs written by `write_outputs` (and `name=value` lines) back.
/// Under GitHub Actions: step outputs, the step summary, annotations. `repo_root` locates the
/// files annotations point at (none before the repository is known); `summary` is the
/// `summary.md` text, when it could be written.
pub fn integrate(
    report: &RunRecord,
    report_dir: Option<&std::path::Path>,
    repo_root: Option<&std::path::Path>,
    env: &crate::env::RunEnv,
    redactor: &crate::redact::Redactor,
    commands: Option<&mut crate::ci_text::Out>,
) {
    if let Some(path) = &env.actions_output {
        let dir = report_dir.unwrap_or(std::path::Path::new(""));
        let outputs = outputs(report, report.pr.as_ref(), dir);
        let outputs: Vec<(&str, String)> = outputs.into_iter().map(|(k, v)| (k, redactor.apply(&v))).collect();
        if let Err(e) = write_outputs(path, &outputs) {
            tracing::warn!("cannot write GITHUB_OUTPUT: {e}");
        }
    }
    if let Some(path) = &env.actions_step_summary {
        let md = redactor.apply(&super::summary::render(report));
        let res =
            std::fs::OpenOptions::new().create(true).append(true).open(path).and_then(|mut f| writeln!(f, "{md}"));
        if let Err(e) = res {
            tracing::warn!("cannot append to GITHUB_STEP_SUMMARY: {e}");
        }
    }
    if let Some(out) = commands {
        for a in annotations(report, repo_root, redactor) {
            let _ = out.command(&a);
        }
    }
}

#[cfg(test)]
pub fn read_outputs(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delim)) = line.split_once("<<") {
            let mut value = Vec::new();
            for l in lines.by_ref() {
                if l == delim {
                    break;
                }
                value.push(l);
            }
            out.push((name.to_string(), value.join("\n")));
        } else if let Some((name, value)) = line.split_once('=') {
            out.push((name.to_string(), value.to_string()));
        }
    }
    out
}

/// The step's outputs (every one `action.yml` declares): the outcome, then what it spent.
pub fn outputs(
    r: &RunRecord,
    pr: Option<&crate::protocol::PrReport>,
    report_dir: &Path,
) -> Vec<(&'static str, String)> {
    let mut out = vec![
        ("status", r.status.as_str().to_string()),
        ("exit-code", r.exit_code.to_string()),
        ("changed", (!r.files_changed.is_empty() && r.commit.is_some()).to_string()),
        ("commit", r.commit.as_ref().map(|c| c.sha.clone()).unwrap_or_default()),
        ("branch", r.branch.clone()),
        ("pr-number", pr.and_then(|p| p.number).map(|n| n.to_string()).unwrap_or_default()),
        ("pr-url", pr.and_then(|p| p.url.clone()).unwrap_or_default()),
        ("pull-request-operation", pr.map_or("none", |p| p.operation.as_str()).to_string()),
        ("report-json", report_dir.join("report.json").display().to_string()),
        ("junit-path", report_dir.join("junit.xml").display().to_string()),
        ("summary", r.summary.clone()),
        // The validated answer, as compact JSON: read it with `fromJSON` or through `env:`.
        ("result", r.output.as_ref().map(|v| v.to_string()).unwrap_or_default()),
        ("review-url", r.review.as_ref().and_then(|v| v.url.clone()).unwrap_or_default()),
        ("trace-id", r.trace.as_ref().map(|t| t.trace_id.clone()).unwrap_or_default()),
    ];
    out.extend(r.spend().outputs());
    out
}

/// `::error file=…,line=…::` for failing checks, where output names a file in the repo (≤ 10).
/// Every text is redacted before it is escaped into the command.
pub fn annotations(r: &RunRecord, repo_root: Option<&Path>, redactor: &Redactor) -> Vec<Command> {
    let red = |s: &str| redactor.apply(s);
    let mut out: Vec<Command> = Vec::new();
    for c in super::findings::failing(r) {
        // Every failing check gets one annotation, with file positions or without.
        let how = crate::verify::failure_summary(std::slice::from_ref(c));
        let last = c.output_tail.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        out.push(Command::error(
            &[("title", &red(&format!("hone: check {} failed", c.name)))],
            &red(&format!("{how}: `{}`; last line of output: {}", c.command, last.trim())),
        ));
    }
    if !matches!(
        r.status,
        crate::record::Status::Success | crate::record::Status::NoChange | crate::record::Status::Skipped
    ) && let Some(why) = r.reason()
    {
        out.push(Command::error(&[("title", &format!("hone: {}", r.status.as_str()))], &red(&why)));
    }
    let Some(repo_root) = repo_root else { return out };
    for f in super::findings::findings(r, repo_root) {
        if out.len() >= 10 {
            break;
        }
        let cmd = Command::error(
            &[
                ("file", &red(&f.path)),
                ("line", &f.line.to_string()),
                ("title", &red(&format!("hone: {} failed", f.check))),
            ],
            &red(f.message),
        );
        if !out.contains(&cmd) {
            out.push(cmd);
        }
    }
    out
}

/// `::add-mask::` for each secret value (and its encoded forms), exactly as the value is.
pub fn mask_commands(values: &[String]) -> Vec<Command> {
    values.iter().filter(|v| !v.trim().is_empty()).map(|v| Command::add_mask(v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_round_trip_multi_line_values() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out");
        std::fs::write(&p, "earlier=1\n").unwrap();
        let tricky = "line one\nname<<EOF\nEOF\n%0A literal\n\nend".to_string();
        write_outputs(&p, &[("summary", tricky.clone()), ("status", "success".into())]).unwrap();
        let back = read_outputs(&std::fs::read_to_string(&p).unwrap());
        assert_eq!(
            back,
            vec![("earlier".into(), "1".into()), ("summary".into(), tricky), ("status".into(), "success".into())]
        );
    }

    /// Every output hone writes is one `action.yml` declares, read from the step that runs hone.
    #[test]
    fn action_yml_declares_every_output_hone_writes() {
        let yml: serde_json::Value = serde_saphyr::from_str(include_str!("../../action.yml")).unwrap();
        let declared = yml["outputs"].as_object().expect("action.yml has outputs");
        let r = RunRecord::new("j", "r", String::new());
        let written = outputs(&r, None, Path::new("out"));
        for (name, _) in &written {
            let value = declared.get(*name).map(|o| o["value"].as_str().unwrap_or_default());
            assert_eq!(value, Some(format!("${{{{ steps.run.outputs.{name} }}}}").as_str()), "{name}");
        }
        for name in ["input-tokens", "output-tokens", "cached-tokens", "cost-usd", "turns", "model-requests"] {
            assert!(written.iter().any(|(n, _)| *n == name), "{name} is written");
        }
    }
}
