//! Memory across runs: the facts hone observed in earlier runs on a repository (commands and
//! their exit codes, setup steps, checks at the baseline, why attempts failed, reviewers'
//! feedback), stored per repository outside the work tree, bounded and redacted, and retrieved
//! into the next run's first message as data. See docs/memory.md.

mod fact;
mod key;
mod observe;
mod retrieve;
mod store;
mod vocabulary;
mod words;

pub use fact::{Entry, Fact, MAX_BODY, MAX_COMMAND, MAX_FILES, MAX_NAME, MAX_PATH, Observed};
pub use key::RepoKey;
pub use observe::{observed, rememberable};
pub use retrieve::{Query, render, tokens_of};
pub use store::{MAX_FILE_BYTES, Store, Summary, default_dir, default_dir_checked, file_name};
pub use vocabulary::{ELIDED, Vocabulary};
pub use words::is_tool;

use crate::redact::Redactor;
use fact::{Field, bound, bounded_list};
use serde::{Deserialize, Serialize};

/// The version of the memory file's format. 2: a command is told in hone's vocabulary (issue
/// 41); a file of version 1 may hold words a model chose, and is not read.
pub const VERSION: u32 = 2;
/// The most entries a repository keeps (the least recently seen go first).
pub const MAX_ENTRIES: usize = 200;
/// The most outcomes (why earlier runs failed) kept.
pub const MAX_OUTCOMES: usize = 10;
/// The most reviews kept.
pub const MAX_REVIEWS: usize = 20;

/// The run that observed facts: its id and when it started (RFC 3339).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunStamp {
    pub run_id: String,
    pub at: String,
}

impl RunStamp {
    /// The stamp of a finished run's record.
    pub fn of(record: &crate::record::RunRecord) -> RunStamp {
        RunStamp { run_id: record.run_id.clone(), at: record.started_at.clone() }
    }
}

/// One repository's memory: what a memory file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub version: u32,
    /// The repository's key (`RepoKey`).
    pub key: String,
    pub entries: Vec<Entry>,
}

impl Memory {
    /// An empty memory for `key`.
    pub fn new(key: &RepoKey) -> Memory {
        Memory { version: VERSION, key: key.as_str().to_string(), entries: vec![] }
    }

    /// Merge what a run observed: every string redacted with the run's redactor, then bounded;
    /// entries merged by id (counts, first and last seen, last run); then the bounds applied.
    pub fn observe(&mut self, seen: Vec<Observed>, run: &RunStamp, redactor: &Redactor) {
        let at = bound(&run.at, Field::Name);
        let run_id = bound(&run.run_id, Field::Name);
        for o in seen.into_iter().filter(|o| o.fact.is_rememberable()) {
            let mut fact = o.fact;
            fact.map_strings(&|s, _| redactor.apply(s));
            fact.map_strings(&|s, f| bound(s, f));
            let files = bounded_list(&o.files, |s| bound(&redactor.apply(s), Field::Path));
            let id = fact.id();
            let passed = fact.passed();
            let e = match self.entries.iter().position(|e| e.id == id) {
                Some(i) => &mut self.entries[i],
                None => {
                    self.entries.push(Entry {
                        id,
                        fact: fact.clone(),
                        files: vec![],
                        passed: 0,
                        failed: 0,
                        seen: 0,
                        first_seen: at.clone(),
                        last_seen: at.clone(),
                        last_run: run_id.clone(),
                    });
                    let last = self.entries.len() - 1;
                    &mut self.entries[last]
                }
            };
            e.fact = fact;
            let mut all = files;
            all.extend(e.files.iter().cloned());
            e.files = bounded_list(&all, str::to_string);
            e.seen = e.seen.saturating_add(1);
            match passed {
                Some(true) => e.passed = e.passed.saturating_add(1),
                Some(false) => e.failed = e.failed.saturating_add(1),
                None => {}
            }
            (e.last_seen, e.last_run) = (at.clone(), run_id.clone());
        }
        self.evict();
    }

    /// Remove the entries `ids` names; the ids it does not know.
    pub fn forget(&mut self, ids: &[String]) -> Vec<String> {
        let unknown: Vec<String> =
            ids.iter().filter(|id| !self.entries.iter().any(|e| &e.id == *id)).cloned().collect();
        self.entries.retain(|e| !ids.contains(&e.id));
        unknown
    }

    /// The entry with this id.
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.id == id)
    }

    /// Apply the bounds: the most recent `MAX_OUTCOMES` outcomes and `MAX_REVIEWS` reviews, the
    /// most recent `MAX_ENTRIES` entries, and as many as fit in `MAX_FILE_BYTES`. The entries end
    /// most recently seen first (ties by id).
    pub fn evict(&mut self) {
        self.entries.sort_by(|a, b| recency(b).cmp(&recency(a)).then_with(|| a.id.cmp(&b.id)));
        let (mut outcomes, mut reviews) = (0, 0);
        self.entries.retain(|e| match e.fact {
            Fact::Outcome { .. } => {
                outcomes += 1;
                outcomes <= MAX_OUTCOMES
            }
            Fact::Review { .. } => {
                reviews += 1;
                reviews <= MAX_REVIEWS
            }
            _ => true,
        });
        self.entries.truncate(MAX_ENTRIES);
        let mut size = 256 + self.key.len();
        let fits = self.entries.iter().take_while(|e| {
            size += serde_json::to_string(e).map_or(usize::MAX / 2, |s| s.len() + 1);
            size <= MAX_FILE_BYTES as usize
        });
        let n = fits.count();
        self.entries.truncate(n);
    }

    /// A memory read from a file, made to hold what `observe` would have written: every string
    /// bounded, each id recomputed from its fact (a repeated one dropped), the bounds applied.
    pub(crate) fn sanitized(mut self) -> Memory {
        let mut seen = std::collections::BTreeSet::new();
        self.entries.retain_mut(|e| {
            e.fact.map_strings(&|s, f| bound(s, f));
            e.files = bounded_list(&e.files, |s| bound(s, Field::Path));
            for s in [&mut e.first_seen, &mut e.last_seen, &mut e.last_run] {
                *s = bound(s, Field::Name);
            }
            e.id = e.fact.id();
            e.fact.is_rememberable() && seen.insert(e.id.clone())
        });
        self.evict();
        self
    }
}

/// When an entry was last seen, for ordering: its time (nanoseconds), else the earliest.
fn recency(e: &Entry) -> i128 {
    time::OffsetDateTime::parse(&e.last_seen, &time::format_description::well_known::Rfc3339)
        .map_or(i128::MIN, |t| t.unix_timestamp_nanos())
}

#[cfg(test)]
mod tests;
