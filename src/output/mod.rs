//! The outputs of a run, and the only code that writes them: the report dir (`report.json`,
//! `junit.xml`, `gl-code-quality.json`, `summary.md`, `transcript.jsonl`, `events.jsonl`), and
//! the files it is read back from. Every text is redacted on its way out.

pub mod actions;
pub mod chart;
pub mod code_quality;
pub mod dir;
pub mod dotenv;
pub mod findings;
pub mod junit;
pub mod summary;
pub mod timeline;
pub mod transcript;
pub mod tries;

use crate::events::Events;
use crate::protocol::Event;
use crate::protocol::transcript::Entry;
use crate::record::RunRecord;
use crate::redact::Redactor;
use dir::ReportDir;
use std::path::Path;

/// Where a run's outputs go.
pub struct Sinks<'a> {
    /// The report dir; `None` when even that could not be settled.
    pub dir: Option<&'a ReportDir>,
    pub events: &'a Events,
    pub redactor: &'a Redactor,
    pub env: &'a crate::env::RunEnv,
    /// The repository's root, which annotations point into (none before it is known).
    pub repo_root: Option<&'a Path>,
    /// Where GitHub Actions workflow commands go, under Actions.
    pub commands: Option<&'a mut crate::ci_text::Out>,
    /// Each try's patch and transcript (`attempts:`; none for a job of one try).
    pub tries: &'a [TryFiles],
}

/// One try's files in the report dir: `try-<k>.patch` and `try-<k>.transcript.jsonl`.
pub struct TryFiles {
    pub number: u32,
    /// Its change as a patch (redacted), when it made one that is kept.
    pub patch: Option<String>,
    /// What was said in it, after its header.
    pub said: Vec<Entry>,
}

/// What publishing a record leaves for the command line: the one result line for stdout and
/// the exit code (the record's, unless the reports could not be written).
pub struct Published {
    pub line: String,
    pub exit_code: i32,
}

/// Publish a sealed record: the `run_completed` event, the report dir (with what was said,
/// `said`, as `transcript.jsonl`), the Actions outputs, step summary and annotations, and the
/// result line. A run whose reports cannot be written is an infrastructure failure; one that
/// never got past intake keeps its status, the line saying the reports are missing.
pub fn publish(record: &RunRecord, said: &[Entry], sinks: Sinks<'_>) -> Published {
    let Sinks { dir, events, redactor, env, repo_root, commands, tries } = sinks;
    events.emit(Event::RunCompleted {
        status: record.status.as_str().into(),
        exit_code: record.exit_code,
        duration_ms: record.duration_ms,
    });
    let mut out = Published { line: record.one_line(dir.map(ReportDir::path)), exit_code: record.exit_code };
    if let Some(dir) = dir
        && let Err(e) = write_reports(dir, record, events, redactor, said, repo_root)
            .and_then(|()| write_tries(dir, tries, redactor))
    {
        tracing::error!("cannot write the reports to {}: {e}", dir.path().display());
        if record.status == crate::record::Status::InvalidInput {
            out.line = format!("{} (the reports could not be written: {e})", out.line);
        } else {
            out.exit_code = crate::exit::INFRA_FAILURE;
            out.line = format!("hone: error: cannot write reports to {}: {e}", dir.path().display());
        }
    }
    if env.actions {
        actions::integrate(record, dir.map(ReportDir::path), repo_root, env, redactor, commands);
    }
    out.line = redactor.apply(&out.line);
    out
}

/// Write `report.json`, `junit.xml`, `gl-code-quality.json` (its paths inside `repo_root`),
/// `summary.md`, `transcript.jsonl` and the whole `events.jsonl` (replacing the live one, so
/// nothing a command did to it survives).
fn write_reports(
    dir: &ReportDir,
    record: &RunRecord,
    events: &Events,
    redactor: &Redactor,
    said: &[Entry],
    repo_root: Option<&Path>,
) -> std::io::Result<()> {
    events.detach_file();
    let json = serde_json::to_string_pretty(record).map_err(std::io::Error::other)?;
    dir.write("report.json", redactor.apply(&json).as_bytes())?;
    dir.write("junit.xml", redactor.apply(&junit::render(record)?).as_bytes())?;
    let findings = code_quality::render(record, repo_root, redactor)?;
    dir.write("gl-code-quality.json", redactor.apply(&findings).as_bytes())?;
    dir.write("summary.md", redactor.apply(&summary::render(record)).as_bytes())?;
    dir.write("hone.env", redactor.apply(&dotenv::render(&dotenv_pairs(record))).as_bytes())?;
    if !said.is_empty() {
        dir.write("transcript.jsonl", transcript::jsonl(said, redactor).as_bytes())?;
    }
    dir.write("events.jsonl", events.jsonl().as_bytes())
}

/// What GitLab's dotenv report carries: the step outputs but the long texts (`summary`, the
/// answer) and the report paths (the job's artifacts hold the files).
fn dotenv_pairs(r: &RunRecord) -> Vec<(&'static str, String)> {
    let left_out = ["summary", "result", "report-json", "junit-path", "pull-request-operation", "review-url"];
    actions::outputs(r, r.pr.as_ref(), Path::new("")).into_iter().filter(|(k, _)| !left_out.contains(k)).collect()
}

/// Each try's patch and transcript.
fn write_tries(dir: &ReportDir, tries: &[TryFiles], redactor: &Redactor) -> std::io::Result<()> {
    for t in tries {
        if let Some(patch) = &t.patch {
            dir.write(&format!("try-{}.patch", t.number), redactor.apply(patch).as_bytes())?;
        }
        if !t.said.is_empty() {
            dir.write(&format!("try-{}.transcript.jsonl", t.number), transcript::jsonl(&t.said, redactor).as_bytes())?;
        }
    }
    Ok(())
}

/// A proposed change for review: `pr.md` (title and body) and `change.patch`, written before
/// anything is pushed, and all a dry run leaves.
pub fn write_change(dir: &ReportDir, title: &str, body: &str, patch: &str) -> crate::error::Result<()> {
    use crate::error::{Code, HoneError};
    // The title is the model's first line: text in a heading, not markup.
    let md = format!("# {}\n\n{body}", crate::markdown::text(title));
    dir.write("pr.md", md.as_bytes()).map_err(|e| HoneError::new(Code::Io, format!("cannot write pr.md: {e}")))?;
    dir.write("change.patch", patch.as_bytes())
        .map_err(|e| HoneError::new(Code::Io, format!("cannot write change.patch: {e}")))
}
