//! What `hone fleet prs` finds and does, per pull request and in all: the result type, the
//! reports `prs-<command>.json` and `.md`, and the exit code.

use crate::error::Code;
pub use crate::forge::campaign::{Checks, Review, State};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Whether an open PR is hone's to change, as hone proved it against the forge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Owned {
    /// Opened by the campaign's identity, on the job's branch, head and base in the target
    /// repository, its head the commit hone's run pushed.
    Hones,
    /// Opened by someone else, or its head or base is in another repository, or (for a merge)
    /// its base is not the branch hone's run opened it onto.
    NotHonesPr,
    /// Its head is not the job's branch.
    NotTheJobsBranch,
    /// Its head is not the commit hone's run pushed (someone pushed since), or no push is recorded.
    NotHonesHead,
}

/// What `close` or `merge` did with a pull request (or would do, in a dry run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Closed,
    WouldClose,
    Merged,
    WouldMerge,
    /// Added to its base branch's merge queue.
    Queued,
    WouldQueue,
    /// Left as it is, with the reason (already merged or closed, checks failing, …).
    Skipped,
    /// GitHub refused the merge (branch protection, the head moved): its answer is the reason.
    Refused,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PrResult {
    /// The repository's id in the fleet.
    pub id: String,
    /// The target's URL, without credentials.
    pub source: String,
    /// `github` or `gitlab`.
    pub forge: String,
    pub number: u64,
    pub url: Option<String>,
    pub state: Option<State>,
    /// Closed by `hone fleet prs close` (recorded in `prs-closed.json`): closed by choice.
    #[serde(default)]
    pub closed_by_hone: bool,
    pub checks: Option<Checks>,
    pub review: Option<Review>,
    /// `mergeable`, `conflicting`, or `unknown` while GitHub computes it.
    pub mergeable: Option<String>,
    /// GitHub's `mergeable_state` (`clean`, `blocked`, `behind`, `dirty`, `unstable`, …).
    pub mergeable_state: Option<String>,
    /// Whether the base branch requires a merge queue (from its rules), when known.
    pub merge_queue: Option<bool>,
    /// Whole days since the PR was opened.
    pub age_days: Option<u64>,
    /// The head commit the state was read at.
    pub head_sha: Option<String>,
    /// Who opened it (the forge's login or user name).
    #[serde(default)]
    pub author: Option<String>,
    /// The commit hone's run pushed to the job's branch (its `report.json`): the only head hone
    /// merges, and the only commit at which it deletes the branch.
    #[serde(default)]
    pub pushed_sha: Option<String>,
    /// Whether the PR and its head are hone's (open PRs only); `reason` says why not.
    #[serde(default)]
    pub owned: Option<Owned>,
    pub action: Option<Action>,
    /// Why: the action's reason, or what keeps the PR from merging.
    pub reason: Option<String>,
    /// Whether hone deleted the PR's branch (only ever hone's own branch).
    pub branch_deleted: Option<bool>,
    pub code: Option<Code>,
    pub error: Option<String>,
    /// Carried over from an earlier run by `--resume`.
    #[serde(default)]
    pub resumed: bool,
    /// A dry run's result: `--resume` of a real run does it again.
    #[serde(default)]
    pub dry_run: bool,
}

impl PrResult {
    /// Merged, or closed by `hone fleet prs close`: nothing more to follow.
    pub fn settled(&self) -> bool {
        self.error.is_none()
            && (self.state == Some(State::Merged) || (self.closed_by_hone && self.state == Some(State::Closed)))
    }

    /// A result `--resume` keeps: one without error from a run that was not a dry run.
    pub fn finished(&self) -> bool {
        self.error.is_none() && !self.dry_run
    }

    /// What the counts call it: `not_hones` for a PR left alone as not hone's, else its
    /// action, else its state, else `error`.
    pub fn label(&self) -> &'static str {
        if self.error.is_some() {
            return "error";
        }
        let mine = matches!(self.owned, None | Some(Owned::Hones));
        match (self.action, self.state) {
            (None | Some(Action::Skipped), _) if !mine => "not_hones",
            (Some(a), _) => action_name(a),
            (None, Some(State::Closed)) if self.closed_by_hone => "closed_by_choice",
            (None, Some(s)) => state_name(s),
            (None, None) => "unknown",
        }
    }
}

pub const fn state_name(s: State) -> &'static str {
    match s {
        State::Open => "open",
        State::Draft => "draft",
        State::Merged => "merged",
        State::Closed => "closed",
    }
}

pub const fn action_name(a: Action) -> &'static str {
    match a {
        Action::Closed => "closed",
        Action::WouldClose => "would_close",
        Action::Merged => "merged",
        Action::WouldMerge => "would_merge",
        Action::Queued => "queued",
        Action::WouldQueue => "would_queue",
        Action::Skipped => "skipped",
        Action::Refused => "refused",
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrsReport {
    pub schema_version: u32,
    /// `status`, `close` or `merge`.
    pub command: String,
    pub dry_run: bool,
    pub started_at: String,
    pub duration_ms: u64,
    pub exit_code: i32,
    /// Stopped by a signal before every PR was seen.
    pub interrupted: bool,
    /// Requests this run made to the forges (rate-limited ones sent again included).
    pub requests: u64,
    /// Requests sent again after a rate limit was waited out.
    pub retries: u64,
    pub counts: BTreeMap<String, usize>,
    pub prs: Vec<PrResult>,
}

/// 130 when interrupted; 3 when a PR could not be read or acted on; 0 when every PR is merged
/// or closed by choice (or, for `close` and `merge`, queued); else `PRS_OPEN`.
pub fn exit_code(command: &str, prs: &[PrResult], interrupted: bool) -> i32 {
    if interrupted {
        crate::exit::INTERRUPTED
    } else if prs.iter().any(|p| p.error.is_some()) {
        crate::exit::INFRA_FAILURE
    } else if prs.iter().all(|p| p.settled() || (command != "status" && p.action == Some(Action::Queued))) {
        crate::exit::SUCCESS
    } else {
        crate::exit::PRS_OPEN
    }
}

pub struct Totals {
    pub started_at: String,
    pub duration_ms: u64,
    pub requests: u64,
    pub retries: u64,
    pub interrupted: bool,
}

pub fn build(command: &str, dry_run: bool, mut prs: Vec<PrResult>, t: Totals) -> PrsReport {
    prs.sort_by(|a, b| a.id.cmp(&b.id));
    let mut counts = BTreeMap::new();
    for p in &prs {
        *counts.entry(p.label().to_string()).or_insert(0) += 1;
    }
    PrsReport {
        schema_version: 1,
        command: command.into(),
        dry_run,
        started_at: t.started_at,
        duration_ms: t.duration_ms,
        exit_code: exit_code(command, &prs, t.interrupted),
        interrupted: t.interrupted,
        requests: t.requests,
        retries: t.retries,
        counts,
        prs,
    }
}

/// The Markdown report: a heading with the counts, and a table, inert whatever a server said.
pub fn markdown(r: &PrsReport) -> String {
    use crate::markdown::{code_cell, text};
    let mut s = String::new();
    let icon = if r.exit_code == 0 { "✅" } else { "⏳" };
    let counts: Vec<String> = r.counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let dry = if r.dry_run { " (dry run)" } else { "" };
    let _ = writeln!(s, "## {icon} hone fleet prs {}{dry}: {} PRs ({})\n", r.command, r.prs.len(), counts.join(", "));
    s.push_str(&charts(r));
    let _ = writeln!(
        s,
        "| Repository | PR | State | Checks | Review | Mergeable | Age | Action | Note |\n|---|---|---|---|---|---|---|---|---|"
    );
    let opt = |v: Option<&str>| v.unwrap_or("-").to_string();
    for p in &r.prs {
        let pr = p.url.as_deref().map_or_else(|| format!("#{}", p.number), |u| pr_link(u, p.number));
        let state = if p.closed_by_hone { "closed by choice" } else { p.state.map_or("-", state_name) };
        let note = p.error.as_deref().or(p.reason.as_deref()).map(text).unwrap_or_default();
        let _ = writeln!(
            s,
            "| {} | {pr} | {state} | {} | {} | {} | {} | {} | {note} |",
            code_cell(&p.source),
            opt(p.checks.map(checks_name)),
            opt(p.review.map(review_name)),
            text(p.mergeable.as_deref().unwrap_or("-")),
            p.age_days.map_or("-".into(), |d| format!("{d}d")),
            opt(p.action.map(action_name)),
        );
    }
    let _ = writeln!(s, "\n{} requests to the forge ({} after a rate limit).", r.requests, r.retries);
    s
}

/// The PRs' states, and the checks of the open ones, as pies (none when there is nothing to draw).
fn charts(r: &PrsReport) -> String {
    let mut states: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut checks: std::collections::BTreeMap<&str, usize> = Default::default();
    for p in &r.prs {
        let state = match (p.state, p.closed_by_hone) {
            _ if p.error.is_some() => "unknown (error)",
            (Some(State::Closed), true) => "closed by choice",
            (Some(st), _) => state_name(st),
            (None, _) => "unknown",
        };
        *states.entry(state).or_default() += 1;
        if matches!(p.state, Some(State::Open | State::Draft)) {
            *checks.entry(p.checks.map_or("unknown", checks_name)).or_default() += 1;
        }
    }
    let states: Vec<(&str, usize)> = states.into_iter().collect();
    let checks: Vec<(&str, usize)> = checks.into_iter().collect();
    let pies = [crate::output::chart::pr_states(&states), crate::output::chart::pr_checks(&checks)];
    pies.into_iter().flatten().collect()
}

pub const fn checks_name(c: Checks) -> &'static str {
    match c {
        Checks::Passing => "passing",
        Checks::Failing => "failing",
        Checks::Pending => "pending",
    }
}

pub const fn review_name(r: Review) -> &'static str {
    match r {
        Review::Approved => "approved",
        Review::ChangesRequested => "changes_requested",
        Review::ReviewRequired => "review_required",
        Review::None => "none",
    }
}

/// A PR's URL in a table cell: a link only when it is a plain web URL, else code.
fn pr_link(url: &str, n: u64) -> String {
    let plain = url.starts_with("https://")
        && url.chars().all(|c| c.is_ascii_alphanumeric() || "-._~:/?#@!$&'*+,;=%".contains(c))
        && !url.contains(')');
    if plain { format!("[#{n}]({url})") } else { crate::markdown::code_cell(url) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(id: &str, state: State) -> PrResult {
        PrResult {
            id: id.into(),
            source: id.into(),
            forge: "github".into(),
            number: 1,
            state: Some(state),
            ..Default::default()
        }
    }

    #[test]
    fn done_means_merged_or_closed_by_choice() {
        let t = |v: Vec<PrResult>| exit_code("status", &v, false);
        assert_eq!(t(vec![pr("a", State::Merged)]), 0);
        assert_eq!(t(vec![pr("a", State::Merged), pr("b", State::Closed)]), crate::exit::PRS_OPEN);
        let by_hone = PrResult { closed_by_hone: true, ..pr("b", State::Closed) };
        assert_eq!(t(vec![pr("a", State::Merged), by_hone]), 0);
        assert_eq!(t(vec![pr("a", State::Open)]), crate::exit::PRS_OPEN);
        let broken = PrResult { error: Some("x".into()), ..pr("a", State::Merged) };
        assert_eq!(t(vec![broken]), crate::exit::INFRA_FAILURE);
        assert_eq!(exit_code("status", &[], true), crate::exit::INTERRUPTED);
        let queued = PrResult { action: Some(Action::Queued), ..pr("a", State::Open) };
        assert_eq!(exit_code("merge", std::slice::from_ref(&queued), false), 0);
        assert_eq!(exit_code("status", &[queued], false), crate::exit::PRS_OPEN);
        let theirs = PrResult { owned: Some(Owned::NotHonesHead), ..pr("a", State::Open) };
        assert_eq!((theirs.label(), exit_code("merge", std::slice::from_ref(&theirs), false)), ("not_hones", 4));
        let skipped = PrResult { action: Some(Action::Skipped), ..theirs.clone() };
        assert_eq!(skipped.label(), "not_hones");
        let closed = PrResult { action: Some(Action::Closed), ..theirs };
        assert_eq!(closed.label(), "closed", "hone's PR, closed with its moved branch kept");
    }

    #[test]
    fn the_markdown_renders_nothing_a_server_said() {
        let mut p = pr("x|y", State::Open);
        p.url = Some("https://x/)![i](http://attacker.example/a.png)".into());
        p.reason = Some("<img src=x> | ![](http://a.example/)".into());
        p.mergeable = Some("`<b>`|".into());
        let t = Totals { started_at: String::new(), duration_ms: 0, requests: 1, retries: 0, interrupted: false };
        let md = markdown(&build("status", false, vec![p], t));
        assert!(crate::markdown::is_inert(&md), "{md}");
        assert_eq!(md.lines().filter(|l| l.starts_with('|')).count(), 3, "{md}");
    }
}
