//! The campaign's PRs in each of a fleet's target repositories, read from the forge for the
//! fleet's pace (`forge::pace_campaign`): the same places, clients and proof of "this PR is the
//! campaign's" as `hone fleet prs` uses, and only reads.

use super::drive::Ctx;
use super::{Command, PrsOptions};
use crate::error::HoneError;
use crate::forge::pace_campaign::{Seen, unix_seconds};
use crate::redact::Redactor;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Reads the campaign's PRs, one target at a time, with one identity lookup per token.
pub struct Reader(Ctx);

impl Reader {
    pub fn new(
        env: Arc<crate::env::RunEnv>,
        job: crate::spec::Job,
        (redactor, cancel): (Redactor, CancellationToken),
        shared: crate::env::Shared,
        out: &crate::output::dir::ReportDir,
    ) -> Reader {
        let opts = PrsOptions {
            file: Default::default(),
            command: Command::Status,
            out: None,
            workspace: None,
            resume: false,
            concurrency: None,
            cancel,
            redactor,
            quiet: true,
            env,
        };
        Reader(Ctx::reading(opts, job, shared, out))
    }

    /// The campaign's PRs in the repository at `url` (the fleet file's URL), as the pace counts
    /// them: when each was opened, and whether it is open.
    pub async fn seen(&self, url: &str) -> Result<Vec<Seen>, HoneError> {
        let prs = self.0.campaign_prs(url).await?;
        Ok(prs
            .iter()
            .map(|p| Seen { created_at: unix_seconds(&p.created_at), open: p.state == "open" && !p.merged })
            .collect())
    }
}
