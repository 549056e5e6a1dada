//! What the forges share across the runs of one process: the pace of their mutating requests
//! (`pace.rs`) and a GitHub App's installations and tokens (`github/app/cache.rs`). It lives in
//! the forge layer, so that nothing below the forge reaches back up for it.

/// The forges' state shared by every run of one process.
#[derive(Debug, Clone, Default)]
pub struct Shared {
    /// The forges' mutating requests go one at a time, at least a second apart (GitHub's
    /// secondary rate limits): the time the last one went out (`pace.rs`).
    pub queue: super::pace::Queue,
    /// A GitHub App's installations (one per owner), tokens (one per repository) and bot
    /// identity, minted once for every run of the process.
    pub app: super::github::app::Cache,
}
