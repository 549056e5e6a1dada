//! A job's tries (`attempts:` in the job spec) as the report tells them: each try's model,
//! how it ended, its checks, its change, what it cost and where its work is kept; and which try
//! won and what set it apart.

use crate::error::HoneError;
use crate::protocol::Usage;
use crate::verify::CheckResult;
use serde::{Deserialize, Serialize};

/// The rung of the documented order that set the winner apart from the next best try.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// It was the only try that could win (the others were refused, empty or never ended).
    OnlyOne,
    /// Its checks all met their expectation; the next best's did not.
    Checks,
    /// Fewer new failures against the baseline.
    NewFailures,
    /// Fewer changed lines.
    Lines,
    /// A lower cost.
    Cost,
    /// Equal in all of the above: the earlier try.
    Earlier,
}

impl Why {
    /// The reason in words, for the summary and the PR body.
    pub fn words(self) -> &'static str {
        match self {
            Why::OnlyOne => "the only try whose change could land",
            Why::Checks => "every check met its expectation, and the next best try's did not",
            Why::NewFailures => "fewer new failures against the baseline than the next best try",
            Why::Lines => "checks as good as the next best try's, with fewer changed lines",
            Why::Cost => "checks and size as the next best try's, at a lower cost",
            Why::Earlier => "equal to the next best try in every respect, and earlier",
        }
    }
}

/// The winning try and why it won.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Choice {
    /// The winner's number (from 1).
    pub number: u32,
    /// What set it apart from the next best try.
    pub why: Why,
}

/// Where a try ended up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TryOutcome {
    /// Its change is the one landed (committed, or saved as the run's failed work).
    Chosen,
    /// It ended, and another try's change was chosen (or none was).
    NotChosen,
    /// A guard refused its change: it could not win.
    Refused,
    /// Stopped before it ended: another try had already passed its checks (`cascade`).
    Stopped,
    /// Never started: an earlier try passed (`cascade`), the cost budget would not have
    /// allowed it, or the run was cancelled first.
    NotStarted,
}

/// One try of the job.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TryRecord {
    /// The try's number, from 1.
    pub number: u32,
    /// Its model's provider.
    pub provider: String,
    /// Its model's name (the id asked for).
    pub model: String,
    /// Where it ended up.
    pub outcome: TryOutcome,
    /// How its session ended, as a run's status (null when it never started).
    pub status: Option<super::Status>,
    /// Why it did not succeed (or never started), first cause first.
    pub errors: Vec<HoneError>,
    /// Its checks in its last verification round (empty when it never verified).
    pub checks: Vec<CheckResult>,
    /// Every check met its expectation in that round.
    pub accepted: bool,
    /// Tests or checks that passed at the baseline and fail after its change.
    pub new_failures: usize,
    /// Files its change touches.
    pub files_changed: usize,
    /// Lines its change adds and removes, together.
    pub lines_changed: u64,
    /// What the guards refused in its change (empty when nothing was).
    pub refused: Vec<String>,
    /// Model requests it made.
    pub turns: u32,
    /// Tokens its model used, as the provider reported them.
    pub usage: Usage,
    /// What its model requests cost, in US dollars (null: its model has no prices).
    pub cost_usd: Option<f64>,
    /// Wall time from its start to its end, in milliseconds.
    pub duration_ms: u64,
    /// The ref its change is kept on (`refs/hone/<job>/attempts/<k>`); null when it made none,
    /// or its change carries a secret (then it is kept nowhere).
    pub refname: Option<String>,
    /// Its change as a patch: the file's name in the report dir (`try-<k>.patch`).
    pub patch: Option<String>,
}

impl TryRecord {
    /// A try that never started, and why.
    pub fn not_started(number: u32, provider: &str, model: &str, why: HoneError) -> Self {
        TryRecord {
            number,
            provider: provider.into(),
            model: model.into(),
            outcome: TryOutcome::NotStarted,
            status: None,
            errors: vec![why],
            checks: vec![],
            accepted: false,
            new_failures: 0,
            files_changed: 0,
            lines_changed: 0,
            refused: vec![],
            turns: 0,
            usage: Usage::default(),
            cost_usd: None,
            duration_ms: 0,
            refname: None,
            patch: None,
        }
    }
}

/// A try's checks in its last verification round.
fn last_round(r: &super::RunRecord) -> Vec<CheckResult> {
    let last = r.verify.iter().map(|c| c.attempt).max().unwrap_or(0);
    r.verify.iter().filter(|c| c.attempt == last && last > 0).cloned().collect()
}

/// Tests that passed at the baseline and fail after the change, counted in `checks`; a check
/// without test detail that met its expectation at the baseline and fails now counts as one.
pub fn new_failures(checks: &[CheckResult], baseline: &[CheckResult]) -> usize {
    checks
        .iter()
        .map(|c| {
            let was_fine = baseline.iter().any(|b| b.name == c.name && b.accepted);
            match (&c.failing_tests, c.accepted) {
                (Some(_), _) => c.new_failures.len(),
                (None, false) if was_fine => 1,
                (None, _) => 0,
            }
        })
        .sum()
}

impl TryRecord {
    /// Try `number` (run with `model`) as its own record `r` tells it, `ms` long; where it ended
    /// up is decided later (`NotChosen` until then).
    pub fn of(number: u32, model: &crate::spec::ModelSpec, r: &super::RunRecord, ms: u64) -> Self {
        let checks = last_round(r);
        let accepted = !checks.is_empty() && checks.iter().all(|c| c.accepted);
        TryRecord {
            number,
            provider: model.provider.as_str().into(),
            model: model.name.clone(),
            outcome: if r.policy.guard.is_empty() { TryOutcome::NotChosen } else { TryOutcome::Refused },
            status: Some(r.status),
            errors: r.errors.clone(),
            new_failures: new_failures(&checks, &r.baseline),
            accepted,
            checks,
            files_changed: r.files_changed.len(),
            lines_changed: r.files_changed.iter().map(|f| (f.added + f.removed) as u64).sum(),
            refused: r.policy.guard.clone(),
            turns: r.turns,
            usage: r.usage,
            // Known when its model (and each fallback) has prices, even before any request.
            cost_usd: model.unpriced().is_none().then(|| r.spent_usd()),
            duration_ms: ms,
            refname: None,
            patch: None,
        }
    }
}

impl super::RunRecord {
    /// Take in try `k`'s record: what every try adds to (turns, tokens, the models used and
    /// their cost, retries and faults, warnings) from each; the account of the work (its tool
    /// calls, checks, plan, checkpoints, last word, errors) from the winner alone.
    pub fn absorb_try(&mut self, k: u32, t: &super::RunRecord, winner: bool) {
        self.turns += t.turns;
        self.usage.add(t.usage);
        self.models.extend(t.models.iter().cloned());
        self.model_retries.total += t.model_retries.total;
        for (kind, n) in &t.model_retries.by_kind {
            *self.model_retries.by_kind.entry(*kind).or_default() += n;
        }
        for (kind, n) in &t.faults {
            *self.faults.entry(*kind).or_default() += n;
        }
        self.policy.decisions += t.policy.decisions;
        self.policy.denied += t.policy.denied;
        self.warnings.extend(t.warnings.iter().map(|w| format!("try {k}: {w}")));
        if self.baseline.is_empty() {
            self.baseline = t.baseline.clone();
            self.setup = t.setup.clone();
        }
        if !winner {
            return;
        }
        self.policy.denials = t.policy.denials.clone();
        self.model_id = t.model_id.clone();
        (self.tool_calls, self.verify, self.hooks, self.mcp) =
            (t.tool_calls.clone(), t.verify.clone(), t.hooks.clone(), t.mcp.clone());
        (self.plan, self.checkpoints, self.rollbacks) = (t.plan.clone(), t.checkpoints.clone(), t.rollbacks.clone());
        (self.finish, self.final_message, self.fix_attempts) =
            (t.finish.clone(), t.final_message.clone(), t.fix_attempts);
        (self.output, self.output_check, self.clarification) =
            (t.output.clone(), t.output_check.clone(), t.clarification.clone());
        (self.instructions, self.instructions_commit) = (t.instructions.clone(), t.instructions_commit.clone());
        (self.compactions, self.prefix_reuse_avg) = (t.compactions, t.prefix_reuse_avg);
        self.turn_started_ms = t.turn_started_ms.clone();
        self.errors.extend(t.errors.iter().cloned());
    }
}
