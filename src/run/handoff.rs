//! What the stages of a run hand forward: the scope every stage reads (settled at intake, never
//! changed after), and each stage's result, which is the next stage's input. A stage never reaches
//! into a sibling: what it needs of an earlier stage is in what that stage returned.

use crate::egress::Ledger;
use crate::env::RunEnv;
use crate::events::Events;
use crate::forge::autofix;
use crate::git::{OriginalHead, Saved, Workspace};
use crate::model::chain::Models;
use crate::output::dir::ReportDir;
use crate::policy::Policy;
use crate::protocol::Message;
use crate::redact::Redactor;
use crate::sandbox::{Sandbox, SandboxReport};
use crate::shared::Shared;
use crate::spec::Job;
use crate::tools::ToolContext;
use std::sync::Arc;
use tokio::task::JoinHandle;

/// What every stage reads: the job as intake settled it, the repository, the policy, and the
/// run's handles and bounds.
pub struct Scope {
    pub job: Job,
    pub ws: Workspace,
    pub policy: Policy,
    pub redactor: Redactor,
    pub events: Events,
    pub env: Arc<RunEnv>,
    pub shared: Shared,
    /// The end of the run's wall-time budget and its cancellation: the loop, commands and git
    /// work all stop by then.
    pub bound: crate::bound::Bound,
    pub report_dir: ReportDir,
    /// Every connection through the jails' proxies (policies that list hosts).
    pub egress: Ledger,
    /// Where the repository's memory is (or why the run has none).
    pub memory: super::remember::Settled,
    /// This run's marker in the git dir, removed once the checkout is put back.
    pub marker: crate::git::Held,
    /// What the job's tries have spent together (one try: its own spend).
    pub meter: super::meter::Meter,
}

/// The one work tree a stage works in, with what is tied to it: its repository handle, the
/// policy as it applies there, the events it emits and the bound it keeps. For a job of one try
/// it is the main checkout's ([`Scope::lane`]); each of a job's tries (`attempts:`) has its own.
#[derive(Clone, Copy)]
pub struct Lane<'a> {
    /// The try's number (1, 2, …); 0 for the one try of a job without `attempts`.
    pub number: u32,
    pub ws: &'a Workspace,
    pub policy: &'a Policy,
    pub events: &'a Events,
    pub bound: &'a crate::bound::Bound,
    /// What every try of the job has spent, against the job's budgets.
    pub meter: &'a super::meter::Meter,
    /// The limits the lane's session keeps: the job's, with a try's own turns, fix attempts
    /// and wall time in their place; `max_tokens` and `max_cost_usd` are the whole job's.
    pub limits: &'a crate::spec::Limits,
    /// A try's caps on its own spend (none for the job's one try).
    pub own: &'a crate::spec::attempts::TryLimits,
}

/// No limits of a try's own: the job's one try.
static NO_OWN_LIMITS: crate::spec::attempts::TryLimits = crate::spec::attempts::TryLimits {
    max_turns: None,
    max_fix_attempts: None,
    max_wall_time: None,
    max_tokens: None,
    max_cost_usd: None,
};

impl Scope {
    /// The main checkout's lane: the only one of a job of one try.
    pub fn lane(&self) -> Lane<'_> {
        Lane {
            number: 0,
            ws: &self.ws,
            policy: &self.policy,
            events: &self.events,
            bound: &self.bound,
            meter: &self.meter,
            limits: &self.job.limits,
            own: &NO_OWN_LIMITS,
        }
    }
}

impl Lane<'_> {
    /// Where this lane's checkpoints are kept: the job's own place for its one try, a place
    /// of each try's own when the job has several (`refs/hone/<job>/attempts/<k>` is a try's
    /// result, so nothing can live below it).
    pub fn checkpoint_ref(&self, job: &str, id: u32) -> String {
        match self.number {
            0 => format!("refs/hone/{job}/checkpoints/{id}"),
            k => format!("refs/hone/{job}/tries/{k}/checkpoints/{id}"),
        }
    }
}

/// What claiming the checkout found: a killed run recovered, a marker ignored.
#[derive(Default)]
pub struct Claimed {
    pub recovered: Option<crate::git::Recovered>,
    pub warnings: Vec<String>,
}

/// What intake found to do.
pub enum Work {
    /// Autofix decided to do nothing, and why.
    Skip(String),
    /// Work on the job; in autofix mode, on this PR in place.
    Do(Option<autofix::Target>),
}

/// Intake's result for the stages after it.
pub struct Start {
    pub work: Work,
    pub model: Models,
    /// With `attempts:`, each try's own models (empty for one try, and in a replay: the job's).
    pub try_models: Vec<Models>,
    /// The first jail: the run's, or setup's when the job has setup commands.
    pub jail: Sandbox,
    pub jail_report: SandboxReport,
    /// Ignored entries before the run: anything ignored the run adds is removed at the end.
    pub ignored: Vec<String>,
    /// The repo map, started at intake when the tree it reads is surely the baseline's.
    pub map: Option<JoinHandle<String>>,
    /// `--continue`: the failed run's saved work (applied after the baseline) and conversation.
    pub saved: Option<Saved>,
    pub history: Vec<Message>,
    pub claimed: Claimed,
}

/// The checkout the environment stage made, for the land stage to put back.
pub struct Checkout {
    pub original: OriginalHead,
    /// Where a branch of the run's name pointed before (a person's branch goes back there).
    pub before: Option<git2::Oid>,
    pub base: git2::Oid,
    pub ignored: Vec<String>,
    /// Where the repository's instruction files are read: the base, or for a PR's head (autofix,
    /// review) the PR's base commit as the forge names it, which the PR's author and hone's own
    /// earlier commits on its branch cannot have changed. `Err`: why there is none (the run goes
    /// on without them, never with the head's).
    pub guidance: Result<git2::Oid, crate::error::HoneError>,
}

/// The environment stage's result: the tools in the run's jail, the checks with the baseline
/// taken, and how the session starts.
pub struct Ready {
    pub tools: Arc<ToolContext>,
    pub checks: super::checks::Checks,
    pub map: JoinHandle<String>,
    /// The `.git` guard's snapshot, taken before any command but setup's ran.
    pub git_guard: crate::guard::GitGuard,
    /// Setup's jail (its network already closed), kept until the checkout is put back: what
    /// setup started (a database, a server) stays up for the checks.
    pub setup_jail: Option<Sandbox>,
    /// Why the run stops before the first request (a check that cannot run, a required MCP
    /// server down, saved work that does not apply, the budget or a cancel during the baseline).
    pub stop: Option<crate::record::Status>,
    /// Saved work taken up (`--continue`): the note for the model's first message.
    pub note: Option<String>,
    /// The model's work is already in the tree (saved work taken up).
    pub touched: bool,
}

/// How the session ended.
pub struct Ended {
    pub status: crate::record::Status,
    /// The model changed the work tree at some point.
    pub touched: bool,
}

/// One try's work tree (`attempts:`): a linked worktree of the repository detached at the base,
/// with the policy as it applies there, its events stamped with its number, and its own bound
/// (a child of the run's: a cancel stops every try; `cascade` stops one).
pub struct Tree {
    pub number: u32,
    /// The worktree's name in the git dir (`hone-try-<run>-<k>`).
    pub name: String,
    pub ws: Workspace,
    pub policy: Policy,
    pub events: Events,
    pub bound: crate::bound::Bound,
}

/// What a try's lane keeps besides its tree: the job's meter, its limits and its own bound.
pub struct Keeps<'a> {
    pub meter: &'a super::meter::Meter,
    pub limits: &'a crate::spec::Limits,
    pub own: &'a crate::spec::attempts::TryLimits,
    pub bound: &'a crate::bound::Bound,
}

impl Tree {
    /// This tree's lane.
    pub fn lane<'a>(&'a self, k: Keeps<'a>) -> Lane<'a> {
        Lane {
            number: self.number,
            ws: &self.ws,
            policy: &self.policy,
            events: &self.events,
            bound: k.bound,
            meter: k.meter,
            limits: k.limits,
            own: k.own,
        }
    }
}
