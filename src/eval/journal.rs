//! The journal of `hone eval run` (`eval.state.jsonl` in its out dir): a line per task and job
//! as each finishes, appended and flushed, so a run cut short keeps what it did and `--resume`
//! repeats nothing that finished with the same job spec (errors run again). Read as data: a
//! regular file, bounded; a line that is not an outcome is ignored.

use super::running::{Outcome, Verdict};
use crate::error::{Code, HoneError};
use std::io::Write;
use std::path::Path;

const NAME: &str = "eval.state.jsonl";

/// The outcomes an earlier run journaled in `dir` (none when there is no journal).
pub fn read(dir: &Path) -> Vec<Outcome> {
    let Ok(d) = std::fs::File::open(dir) else { return Vec::new() };
    let bytes = crate::safe_fs::read_regular_at(&d, NAME, 64 << 20).unwrap_or_default();
    String::from_utf8_lossy(&bytes).lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// The journal, to append to (emptied first unless resuming).
pub fn open(dir: &Path, resume: bool) -> Result<std::sync::Mutex<std::fs::File>, HoneError> {
    let io = |e: std::io::Error| HoneError::new(Code::Io, format!("{}/{NAME}: {e}", dir.display()));
    let d = std::fs::File::open(dir).map_err(io)?;
    if !resume {
        crate::safe_fs::remove_at(&d, NAME).map_err(io)?;
    }
    let mut f = crate::safe_fs::open_or_create_at(&d, NAME, 0o644).map_err(io)?;
    std::io::Seek::seek(&mut f, std::io::SeekFrom::End(0)).map_err(io)?;
    Ok(std::sync::Mutex::new(f))
}

/// One finished outcome, appended whole.
pub fn append(journal: &std::sync::Mutex<std::fs::File>, o: &Outcome) -> Result<(), HoneError> {
    let line = format!("{}\n", serde_json::to_string(o).unwrap_or_default());
    let mut f = journal.lock().map_err(|_| HoneError::new(Code::Internal, "the journal's lock was poisoned"))?;
    f.write_all(line.as_bytes()).and_then(|()| f.flush()).map_err(|e| HoneError::new(Code::Io, format!("{NAME}: {e}")))
}

/// What an earlier run finished for `task` with the job at `config` (and the task's settings)
/// as they are now.
pub fn finished(
    carried: &[Outcome],
    task: &super::task::Task,
    config: &Path,
    settings: Option<&super::repos::Repo>,
) -> Option<Outcome> {
    let (digest, instance_id) = (super::running::digest(config, task, settings), &task.instance_id);
    carried
        .iter()
        .rev()
        .find(|o| {
            &o.instance_id == instance_id
                && o.config == config.display().to_string()
                && !digest.is_empty()
                && o.job_sha256 == digest
                && o.verdict != Verdict::Error
                && o.cost_usd.is_none_or(|c| c.is_finite() && c >= 0.0)
        })
        .cloned()
}
