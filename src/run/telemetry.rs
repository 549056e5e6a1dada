//! The run's trace and metrics handed to `telemetry` when the record is sealed (an intake
//! failure's too), before the reports are written: the trace's id goes in the report, and what
//! failed is one warning there.

use super::request::Request;
use crate::events::Events;
use crate::protocol::transcript::Entry;
use crate::record::RunRecord;
use crate::redact::Redactor;
use crate::spec::telemetry::TelemetrySpec;
use crate::telemetry::{Finished, Link, run_ended};
use std::path::Path;
use std::time::Duration;

/// A run that ended, as its telemetry needs it.
pub struct Ended<'a> {
    pub req: &'a Request,
    pub events: &'a Events,
    pub said: &'a [Entry],
    pub redactor: &'a Redactor,
    /// The job's `telemetry:` (the defaults when the job could not be read).
    pub job: &'a TelemetrySpec,
    /// The repository's root, when known.
    pub root: Option<&'a Path>,
    pub budget_left: Duration,
}

/// The repository as reports name it: a fleet's id; where the CI names this repository,
/// `owner/name`; else its directory's name.
fn repository(e: &Ended<'_>, record: &RunRecord) -> String {
    if let Link::Fleet { repository, .. } = &e.req.telemetry {
        return repository.clone();
    }
    let ci = e.req.env_repo.then(|| crate::forge::ci::of(&e.req.env).and_then(|c| c.repository)).flatten();
    let dir = || e.root.and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
    ci.or_else(dir).unwrap_or_else(|| record.repo.clone())
}

/// Export the run's telemetry; its trace and any warning go in `record`.
pub async fn export(e: Ended<'_>, record: &mut RunRecord) {
    let repository = repository(&e, record);
    let events = e.events.jsonl();
    let finished = Finished {
        record,
        events: &events,
        said: e.said,
        redactor: e.redactor,
        job: e.job,
        env: &e.req.env,
        repository: &repository,
        // A cancelled run's reports come first: the collector gets at most a second.
        budget_left: if e.req.cancel.is_cancelled() { Duration::ZERO } else { e.budget_left },
    };
    let exported = run_ended(&e.req.telemetry, finished).await;
    if let Some(w) = &exported.warning {
        tracing::warn!("{w}");
    }
    record.trace = exported.trace;
    record.warnings.extend(exported.warning);
}
