//! Claiming a checkout for a run (or for `hone recover`): under the marker's lock, a marker whose
//! run is alive refuses; one whose run is gone is recovered; then this run's marker is written,
//! held until the checkout is put back.

use super::Workspace;
use super::marker::{Found, Marker, Place};
use super::recover::Recovered;
use crate::error::{Code, HoneError, Result};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// What claiming found and did.
#[derive(Default)]
pub struct Claim {
    /// A killed run's checkout, recovered.
    pub recovered: Option<Recovered>,
    /// A marker hone would not have written, ignored and replaced: why.
    pub ignored: Option<String>,
    /// This run's marker (none for `hone recover`).
    pub held: Option<Held>,
}

/// Who claims: the run's id, its job's name and its branch.
pub struct Claimant<'a> {
    pub run_id: &'a str,
    pub job: &'a str,
    pub branch: &'a str,
}

/// A hone run working in the checkout at `root` right now, as the error a run refused for it
/// gets: asked before a run writes anything of its own (its report dir may be the live run's,
/// which preparing it would empty). The claim still decides, under its lock.
pub fn live_run_in(root: &Path) -> Option<HoneError> {
    let repo = git2::Repository::open(root).ok()?;
    match Place::new(repo.path()).read() {
        Found::Marker(m) if m.alive() => Some(busy(&m)),
        _ => None,
    }
}

fn busy(m: &Marker) -> HoneError {
    HoneError::new(
        Code::Conflict,
        format!("another hone run (run {}, job `{}`, pid {}) is working in this checkout now", m.run_id, m.job, m.pid),
    )
    .hint("wait for it to finish, or run this job in another checkout")
}

impl Workspace {
    /// Claim the checkout: recover what a killed run left, refuse while another run works here,
    /// and (for a run) write its marker, durably, before the checkout changes.
    pub fn claim_checkout(&self, who: Option<Claimant<'_>>) -> Result<Claim> {
        let place = Place::new(&self.git_dir());
        let io = |e: std::io::Error| HoneError::new(Code::Io, format!("cannot use {}: {e}", place.path().display()));
        let lock = place.lock().map_err(io)?;
        let mut out = Claim::default();
        match place.read() {
            Found::None => {}
            Found::Unreadable(why) => {
                out.ignored = Some(format!("ignored {}: {why}", place.path().display()));
                place.remove().map_err(io)?;
            }
            Found::Marker(m) if m.alive() => return Err(busy(&m)),
            Found::Marker(m) => {
                out.recovered = Some(self.recover_killed(&m)?);
                place.remove().map_err(io)?;
            }
        }
        if let Some(w) = who {
            let marker = Marker::new(w.run_id, w.job, w.branch, self.original_head()?);
            place.write(&marker).map_err(io)?;
            out.held = Some(Held { place, marker: Mutex::new(marker), armed: AtomicBool::new(true) });
        }
        drop(lock);
        Ok(out)
    }
}

/// This run's marker, from intake until the checkout is put back. Dropped while still armed
/// (the run ended before it changed the checkout), it is removed; kept (`keep`) when the checkout
/// could not be put back, so that the next run recovers it; never removed during a panic.
pub struct Held {
    place: Place,
    marker: Mutex<Marker>,
    armed: AtomicBool,
}

impl Held {
    /// Record the run's branch (autofix's is the PR's), where it starts and where it was before,
    /// before the checkout moves.
    pub fn set_start(&self, branch: &str, base: git2::Oid, before: Option<git2::Oid>) -> Result<()> {
        let Ok(mut m) = self.marker.lock() else { return Ok(()) };
        m.branch = branch.to_string();
        m.base = Some(base.to_string());
        m.branch_before = before.map(|o| o.to_string());
        self.place.write(&m).map_err(|e| HoneError::new(Code::Io, format!("cannot write the run marker: {e}")))
    }

    /// The checkout is back: remove the marker (only if it is still this run's).
    pub fn release(&self) -> Result<()> {
        if !self.armed.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        let io = |e: std::io::Error| HoneError::new(Code::Io, format!("cannot remove the run marker: {e}"));
        let _lock = self.place.lock().map_err(io)?;
        let mine = self.marker.lock().map(|m| m.run_id.clone()).unwrap_or_default();
        match self.place.read() {
            Found::Marker(m) if m.run_id == mine => self.place.remove().map_err(io),
            _ => Ok(()),
        }
    }

    /// The checkout was not put back: the marker stays for the next run (or `hone recover`).
    pub fn keep(&self) {
        self.armed.store(false, Ordering::SeqCst);
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        if let Err(e) = self.release() {
            tracing::warn!("{}", e.message);
        }
    }
}
