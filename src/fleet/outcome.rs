//! A repository's outcome in the fleet's reports: from its run's record, or from a failure before
//! the run could start (with an error code).

use super::aggregate::{RepoResult, RepoStatus};
use super::spec::{Source, Target};
use crate::error::Code;
use crate::forge::credential::without_userinfo;
use crate::run;
use std::path::Path;

/// Turn a finished run's typed outcome into the repository's outcome.
pub(super) fn result_from_outcome(
    t: &Target,
    o: &run::RunOutcome,
    report_dir: &Path,
    job_hash: &str,
    dry_run: bool,
) -> RepoResult {
    use crate::record::Status;
    let report = &o.record;
    use crate::protocol::PrOperation;
    let operation = report.pr.as_ref().map_or(PrOperation::None, |p| p.operation);
    let status = match (o.record.status, operation) {
        (Status::Success, PrOperation::Created) => RepoStatus::PrCreated,
        (Status::Success, PrOperation::Updated) => RepoStatus::PrUpdated,
        (Status::Success, _) => RepoStatus::Succeeded,
        (Status::NoChange, _) => RepoStatus::NoChange,
        (Status::Skipped, _) => RepoStatus::Skipped,
        (Status::Cancelled, _) => RepoStatus::Cancelled,
        _ => RepoStatus::Failed,
    };
    let first = report.errors.first().filter(|_| !status.ok());
    RepoResult {
        status,
        code: first.map(|e| e.code),
        error: first.map(|e| e.message.lines().find(|l| !l.trim().is_empty()).unwrap_or("").to_string()),
        pr_url: report.pr.as_ref().and_then(|p| p.url.clone()),
        pr_number: report.pr.as_ref().and_then(|p| p.number),
        pr_forge: report.pr.as_ref().and_then(|p| p.forge.clone()),
        branch: (!report.branch.is_empty()).then(|| report.branch.clone()),
        duration_ms: report.duration_ms,
        tokens: report.usage.total_tokens,
        cost_usd: report.cost.map(|c| c.usd),
        spend: report.spend(),
        dry_run,
        output: report.output.clone(),
        rescued_by: report
            .chosen
            .filter(|c| c.number > 1 && status.ok() && report.tries.first().is_some_and(|t| !t.accepted))
            .map(|c| c.number),
        ..failed(t, Code::Internal, "", job_hash, report_dir)
    }
}

/// A target's source as the reports show it: a URL without credentials, or a path.
pub(super) fn shown(t: &Target) -> String {
    match &t.source {
        Source::Url(u) => without_userinfo(u),
        Source::Path(p) => p.display().to_string(),
    }
}

pub(super) fn failed(t: &Target, code: Code, msg: &str, job_hash: &str, report_dir: &Path) -> RepoResult {
    RepoResult {
        id: t.id.clone(),
        source: shown(t),
        status: RepoStatus::Failed,
        code: Some(code),
        error: Some(msg.lines().find(|l| !l.trim().is_empty()).unwrap_or(msg).to_string()),
        pr_url: None,
        pr_number: None,
        pr_forge: None,
        output: None,
        branch: None,
        duration_ms: 0,
        tokens: 0,
        cost_usd: None,
        report_dir: report_dir.display().to_string(),
        job_hash: job_hash.into(),
        resumed: false,
        dry_run: false,
        rescued_by: None,
        spend: Default::default(),
    }
}
