//! The fleet's journal, `fleet.state.jsonl` in the out dir: a header line naming the run, then
//! one line per repository as it finishes, each written whole and synced (file and directory)
//! before the repository counts as done. A run killed at any point leaves what it finished for
//! `--resume`, and the aggregate reports can be rebuilt from it (`hone fleet merge`).
//!
//! It is read as a record, never as instructions: `--resume` takes from it only whether a
//! repository of the fleet file finished (`resume::select`); every path and id comes from the
//! fleet file.

use super::aggregate::{FleetReport, RepoResult, RepoStatus};
use crate::safe_fs;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{Seek, Write};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Mutex;

/// The journal's file name in the out dir.
pub const FILE: &str = "fleet.state.jsonl";

/// A repository the run set out to do.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Planned {
    pub id: String,
    pub source: String,
}

/// The first line: which run this is, and every repository it covers (carried or to run).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    pub version: u32,
    pub job: String,
    pub job_hash: String,
    pub started_at: String,
    pub repos: Vec<Planned>,
}

/// One line of the journal.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Line {
    Fleet(Header),
    /// A repository's outcome, and when it was recorded (ms after the run started).
    Repo {
        result: Box<RepoResult>,
        at_ms: u64,
    },
}

/// The out dir, opened by descriptor as a report dir is: made when missing, and a symlink below
/// its parent replaced by a real directory, never followed.
pub fn open_out(out: &Path) -> std::io::Result<OwnedFd> {
    let abs = safe_fs::absolute(out);
    let (Some(parent), Some(name)) = (abs.parent(), abs.file_name()) else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("`{}` cannot be an out dir", abs.display()),
        ));
    };
    safe_fs::open_dir_below(parent, Path::new(name))
}

/// Write `name` in `dir` durably: temp file, fsync, rename, fsync of the directory. A kill at
/// any point leaves the old file or the new one, and once this returns the new one stays.
pub fn write_durably(dir: &OwnedFd, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    safe_fs::write_at(dir, name, bytes, 0o644)?;
    sync_dir(dir)
}

fn sync_dir(dir: &OwnedFd) -> std::io::Result<()> {
    File::from(dir.try_clone()?).sync_all()
}

fn line(l: &Line) -> std::io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec(l).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The journal of one run, appended as repositories finish.
pub struct Journal {
    file: Mutex<File>,
    started: std::time::Instant,
}

impl Journal {
    /// A fresh journal: the header and the results carried over (`kept`), written durably in one
    /// step, so a kill now leaves the last run's journal or this one whole.
    pub fn start(out: &Path, header: Header, kept: &[RepoResult]) -> std::io::Result<Journal> {
        let dir = open_out(out)?;
        let mut bytes = line(&Line::Fleet(header))?;
        for r in kept {
            bytes.extend(line(&Line::Repo { result: Box::new(r.clone()), at_ms: 0 })?);
        }
        write_durably(&dir, FILE, &bytes)?;
        let mut file = safe_fs::open_or_create_at(&dir, FILE, 0o644)?;
        file.seek(std::io::SeekFrom::End(0))?;
        Ok(Journal { file: Mutex::new(file), started: std::time::Instant::now() })
    }

    /// Record `r` with one write, and sync it before returning. (The directory entry was synced
    /// when the journal was made; an append changes only the file.)
    pub fn add(&self, r: &RepoResult) -> std::io::Result<()> {
        let at_ms = self.started.elapsed().as_millis() as u64;
        let bytes = line(&Line::Repo { result: Box::new(r.clone()), at_ms })?;
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(&bytes)?;
        f.sync_data()
    }
}

/// What a journal recorded: its run, and the last outcome of each repository.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub header: Header,
    pub results: Vec<RepoResult>,
    /// When the last line was recorded (ms after the run started).
    pub last_ms: u64,
}

/// The journal in `out`: `None` when there is none. Only whole lines count (a line a kill cut
/// short has no newline, and is ignored), as does any line that is not one of hone's; a later
/// line for a repository wins. A file whose first line is not a header is not a journal hone
/// wrote: an error.
pub fn read(out: &Path) -> std::io::Result<Option<Recorded>> {
    let abs = safe_fs::absolute(out);
    let bytes = match abs.parent().zip(abs.file_name()) {
        Some((parent, name)) => match safe_fs::open_existing_dir_below(parent, Path::new(name)) {
            Ok(dir) => safe_fs::read_regular_at(&dir, FILE, 256 << 20),
            Err(e) => Err(e),
        },
        None => return Ok(None),
    };
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    parse(&bytes).map(Some)
}

/// The whole lines of a journal's bytes, parsed (see [`read`]).
pub fn parse(bytes: &[u8]) -> std::io::Result<Recorded> {
    let mut whole = bytes.split_inclusive(|b| *b == b'\n').filter(|l| l.ends_with(b"\n"));
    let header = match whole.next().map(serde_json::from_slice::<Line>) {
        Some(Ok(Line::Fleet(h))) => h,
        _ => return Err(std::io::Error::other("its first line is not the header of a fleet's journal")),
    };
    let mut by_id: std::collections::BTreeMap<String, RepoResult> = Default::default();
    let mut last_ms = 0;
    for l in whole {
        if let Ok(Line::Repo { result, at_ms }) = serde_json::from_slice::<Line>(l) {
            last_ms = last_ms.max(at_ms);
            by_id.insert(result.id.clone(), *result);
        }
    }
    Ok(Recorded { header, results: by_id.into_values().collect(), last_ms })
}

impl Recorded {
    /// The aggregate report of what was recorded: each repository of the run with its recorded
    /// outcome, or `cancelled` when the run never finished it (it was killed first).
    pub fn report(&self) -> FleetReport {
        let mut repos: Vec<RepoResult> = self.results.clone();
        for p in &self.header.repos {
            if !repos.iter().any(|r| r.id == p.id) {
                repos.push(unfinished(p));
            }
        }
        let h = &self.header;
        super::aggregate::build(&h.job, &h.job_hash, h.started_at.clone(), self.last_ms, repos, false)
    }
}

/// The aggregate report of the run recorded in `dir`: its `fleet.json` when that is the one the
/// journal's run wrote at its end (the same run, the same outcomes), else the report rebuilt from
/// the journal (a run killed before its end wrote none, or an older one); the `fleet.json` alone
/// when there is no journal.
pub fn report_in(dir: &Path) -> std::io::Result<FleetReport> {
    let Some(j) = read(dir)? else { return super::aggregate::read(dir) };
    let rebuilt = j.report();
    let outcomes = |r: &FleetReport| r.repos.iter().map(|x| (x.id.clone(), x.status)).collect::<Vec<_>>();
    match super::aggregate::read(dir) {
        Ok(f)
            if f.started_at == rebuilt.started_at
                && f.job_hash == rebuilt.job_hash
                && outcomes(&f) == outcomes(&rebuilt) =>
        {
            Ok(f)
        }
        _ => Ok(rebuilt),
    }
}

/// A repository the recorded run never finished.
fn unfinished(p: &Planned) -> RepoResult {
    RepoResult {
        id: p.id.clone(),
        source: p.source.clone(),
        status: RepoStatus::Cancelled,
        code: Some(crate::error::Code::Cancelled),
        error: Some("not finished: the fleet was stopped before this repository's outcome was recorded".into()),
        pr_url: None,
        pr_number: None,
        pr_forge: None,
        branch: None,
        duration_ms: 0,
        tokens: 0,
        cost_usd: None,
        report_dir: String::new(),
        job_hash: String::new(),
        resumed: false,
        dry_run: false,
        rescued_by: None,
        output: None,
        spend: Default::default(),
    }
}

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
