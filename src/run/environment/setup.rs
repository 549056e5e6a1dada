//! The job's setup commands (`setup:`, installing dependencies): run in order after the checkout
//! and before the baseline, in setup's jail (network as the policy's `setup.network` says); then
//! the run's own jail is built, protecting what setup made, which is never part of the change.

use super::super::handoff::{Lane, Scope};
use super::super::state::{Run, State};
use crate::error::Code;
use crate::error::HoneError;
use crate::protocol::Event;
use crate::record::Status;
use crate::sandbox::Sandbox;

/// How many lines of a failed setup command's output the error shows.
const TAIL_LINES: usize = 12;

/// Run the setup commands, then build the run's jail. `Err` is the run's status when setup
/// failed or was cut short (recorded in `run`); nothing else runs then.
pub async fn run(
    p: &Scope,
    lane: Lane<'_>,
    jail: &Sandbox,
    ignored: &[String],
    run: &mut Run,
) -> Result<Sandbox, Status> {
    let (ws, cancel) = (lane.ws, &lane.bound.cancel);
    let before =
        if p.job.repo.allow_dirty { ws.blocking(|ws| ws.dirty_entries()).await.unwrap_or_default() } else { vec![] };
    let env = crate::sandbox::command_env(lane.policy, &p.env, ws.root());
    // Setup's proxy serves setup alone: closed when setup ends, however it ends.
    let _close = CloseProxy(jail);
    for s in &p.job.setup {
        let started = run.machine.elapsed_ms();
        let mut r =
            crate::verify::run_check(&s.as_check(), 0, ws.root(), &env, lane.bound.deadline, cancel, jail).await;
        r.started_ms = Some(started);
        r.output_tail = p.redactor.apply(&r.output_tail);
        r.accepted = r.passed;
        lane.events.emit(Event::SetupCompleted {
            name: s.name.clone(),
            passed: r.passed,
            exit_code: r.exit_code,
            timed_out: r.timed_out,
            cancelled: r.cancelled,
            duration_ms: r.duration_ms,
        });
        let failed = !r.passed;
        let why = match (r.cancelled, r.timed_out, r.exit_code) {
            (true, _, _) => "was cancelled".to_string(),
            (_, true, _) => format!("ran past its timeout ({})", crate::spec::duration::format(s.timeout)),
            (_, _, Some(c)) => format!("exited with {c}"),
            _ => "was killed by a signal".into(),
        };
        let mut tail: Vec<String> = r.output_tail.lines().rev().take(TAIL_LINES).map(str::to_string).collect();
        tail.reverse();
        run.record.setup.push(r);
        if failed {
            if cancel.is_cancelled() {
                run.record
                    .errors
                    .push(HoneError::new(Code::Cancelled, "the run was cancelled by a signal during setup"));
                run.enter(lane.events, State::Aborted, "cancelled by a signal");
                return Err(Status::Cancelled);
            }
            if tokio::time::Instant::now() >= lane.bound.deadline {
                let budget = crate::spec::duration::format(p.job.limits.max_wall_time);
                let message = format!("the wall-time budget ({budget}) ran out during setup command `{}`", s.name);
                run.record.errors.push(HoneError::new(Code::Budget, message));
                run.enter(lane.events, State::Summarizing, "the wall-time budget ran out");
                return Err(Status::BudgetExhausted);
            }
            let message = format!(
                "setup command `{}` ({}) {why}; no model request was made. Its output ended:\n{}",
                s.name,
                s.run,
                tail.join("\n")
            );
            run.record.errors.push(HoneError::new(Code::Setup, message).hint(
                "fix the command in the job spec's `setup:`, or the policy (`setup.network` if it downloads: `{ allow: [HOST, ...] }` names the hosts it needs)",
            ));
            run.enter(lane.events, State::Summarizing, "a setup command failed");
            return Err(Status::InvalidInput);
        }
    }
    protect_and_jail(p, lane, ignored, &before, run).await
}

/// Closes setup's proxy (if it has one) when dropped.
struct CloseProxy<'a>(&'a Sandbox);

impl Drop for CloseProxy<'_> {
    fn drop(&mut self) {
        if let Some(proxy) = &self.0.egress {
            proxy.close();
        }
    }
}

/// What setup made is the checks' ground, not the change: new untracked and new ignored entries
/// become artifacts (left out of the change, removed at the end), and are protected in the run's
/// jail like ignored entries that were there before.
async fn protect_and_jail(
    p: &Scope,
    lane: Lane<'_>,
    ignored_before: &[String],
    before: &[String],
    run: &mut Run,
) -> Result<Sandbox, Status> {
    let before = before.to_vec();
    let made = lane.ws.blocking(move |ws| ws.mark_artifacts(&before)).await;
    let status = lane.ws.blocking(|ws| ws.intake_status()).await;
    let (made, (_, ignored)) = match (made, status) {
        (Ok(m), Ok(s)) => (m, s),
        (Err(e), _) | (_, Err(e)) => {
            run.record.errors.push(e);
            return Err(Status::Error);
        }
    };
    let setup_ignored: Vec<String> = ignored.iter().filter(|e| !ignored_before.contains(e)).cloned().collect();
    lane.ws.add_artifacts(&setup_ignored);
    let policy = hide_what_setup_left(p, lane, &made, &setup_ignored, run).await;
    let mut protected = ignored;
    protected.extend(made);
    protected.sort();
    protected.dedup();
    let site =
        crate::sandbox::Site { ws: lane.ws, env: &p.env, report_dir: p.report_dir.path(), run_id: p.events.run_id() };
    match crate::sandbox::start(&policy, &site, &protected, "commands", &p.egress).await {
        Ok((sandbox, report)) => {
            run.record.policy.sandbox = report;
            Ok(sandbox)
        }
        Err(e) => {
            run.record.errors.push(e);
            Err(Status::InvalidInput)
        }
    }
}

/// The credentials files setup left in the checkout (`redact::found`, as for what CI left before
/// the run): their secrets are registered with the redactor, they are hidden from the commands'
/// jail (the policy it is built from), and the report says so. The file tools' policy is the
/// run's, settled at intake: what they read of such a file reaches the model redacted.
async fn hide_what_setup_left(
    p: &Scope,
    lane: Lane<'_>,
    made: &[String],
    ignored: &[String],
    run: &mut Run,
) -> crate::policy::Policy {
    let mut policy = lane.policy.clone();
    let (root, made, ignored, redactor) =
        (lane.ws.root().to_path_buf(), made.to_vec(), ignored.to_vec(), p.redactor.clone());
    let scan = move || crate::redact::found::scan_paths(&root, &made, &ignored, &redactor);
    let found = tokio::task::spawn_blocking(scan).await.unwrap_or_default();
    for rel in &found {
        policy.hide_file(&lane.ws.root().join(rel), lane.ws.root(), crate::redact::found::WHY);
    }
    if !found.is_empty() {
        let shown: Vec<String> = found.iter().take(10).map(|f| format!("`{f}`")).collect();
        run.record.warnings.push(format!(
            "setup left credentials in the checkout: {} (hidden from the commands and redacted; have setup write them outside the checkout)",
            shown.join(", ")
        ));
    }
    policy
}
