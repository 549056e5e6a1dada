//! What outlives one `hone fleet prs` run in the out dir: the journal of results as they come
//! in (`prs-<command>.state.jsonl`, one whole line each, so a killed run leaves what it did for
//! `--resume`), the last report, and the ledger of PRs closed by choice (`prs-closed.json`).

use super::report::{PrResult, PrsReport};
use crate::output::dir::ReportDir;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Mutex;

/// The journal's file name for `command`.
pub fn journal_name(command: &str) -> String {
    format!("prs-{command}.state.jsonl")
}

/// Results appended one line at a time, each with a single write.
pub struct Journal {
    file: Mutex<std::fs::File>,
}

impl Journal {
    /// A fresh journal holding `kept` (the results a resume carries over) first.
    pub fn start(dir: &ReportDir, command: &str, kept: &[PrResult]) -> std::io::Result<Journal> {
        let j = Journal { file: Mutex::new(dir.create(&journal_name(command))?) };
        for r in kept {
            j.add(r)?;
        }
        Ok(j)
    }

    pub fn add(&self, r: &PrResult) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(r).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(&line)
    }
}

/// The results an earlier run of `command` left: its report, then its journal (a killed run
/// has only the journal), the later line winning. A line cut short by a kill is ignored.
pub fn previous(dir: &ReportDir, command: &str) -> Vec<PrResult> {
    let mut by_id: BTreeMap<String, PrResult> = BTreeMap::new();
    if let Ok(bytes) = dir.read(&format!("prs-{command}.json"))
        && let Ok(r) = serde_json::from_slice::<PrsReport>(&bytes)
    {
        by_id.extend(r.prs.into_iter().map(|p| (p.id.clone(), p)));
    }
    if let Ok(bytes) = dir.read(&journal_name(command)) {
        for line in bytes.split(|b| *b == b'\n') {
            if let Ok(p) = serde_json::from_slice::<PrResult>(line) {
                by_id.insert(p.id.clone(), p);
            }
        }
    }
    by_id.into_values().collect()
}

/// One PR closed by `hone fleet prs close`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Closed {
    pub id: String,
    pub number: u64,
    pub at: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct LedgerFile {
    closed: Vec<Closed>,
}

/// The PRs closed by choice, kept across runs; rewritten by rename at each one recorded.
pub struct Ledger {
    dir: ReportDir,
    closed: Mutex<Vec<Closed>>,
}

pub const LEDGER: &str = "prs-closed.json";

impl Ledger {
    pub fn read(dir: &ReportDir) -> Ledger {
        let closed = dir
            .read(LEDGER)
            .ok()
            .and_then(|b| serde_json::from_slice::<LedgerFile>(&b).ok())
            .map(|l| l.closed)
            .unwrap_or_default();
        Ledger { dir: dir.clone(), closed: Mutex::new(closed) }
    }

    /// Whether PR `number` of repository `id` was closed by hone.
    pub fn has(&self, id: &str, number: u64) -> bool {
        self.closed.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|c| c.id == id && c.number == number)
    }

    pub fn record(&self, id: &str, number: u64) -> std::io::Result<()> {
        let mut closed = self.closed.lock().unwrap_or_else(|e| e.into_inner());
        if !closed.iter().any(|c| c.id == id && c.number == number) {
            closed.push(Closed { id: id.into(), number, at: crate::events::now_rfc3339() });
        }
        let file = LedgerFile { closed: closed.clone() };
        let bytes = serde_json::to_vec_pretty(&file).map_err(std::io::Error::other)?;
        self.dir.write(LEDGER, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_runs_journal_is_read_back_and_a_cut_line_ignored() {
        let d = tempfile::tempdir().unwrap();
        let dir = ReportDir::new(d.path(), None).unwrap();
        let r = |id: &str| PrResult { id: id.into(), number: 1, ..Default::default() };
        let j = Journal::start(&dir, "status", &[r("a")]).unwrap();
        j.add(&r("b")).unwrap();
        drop(j);
        let mut f = std::fs::OpenOptions::new().append(true).open(d.path().join(journal_name("status"))).unwrap();
        f.write_all(b"{\"id\":\"c\",\"num").unwrap();
        let ids: Vec<String> = previous(&dir, "status").into_iter().map(|p| p.id).collect();
        assert_eq!(ids, ["a", "b"]);
        let l = Ledger::read(&dir);
        l.record("a", 7).unwrap();
        assert!(Ledger::read(&dir).has("a", 7) && !Ledger::read(&dir).has("a", 8));
    }
}
