//! What a memory entry says: a typed fact hone observed (a command and its exit code, a setup
//! step, a check at the baseline, how a run ended, a reviewer's feedback), bounded in size, and
//! the one line that shows it to the model and in `hone memory show`.

use crate::markdown::code;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The longest command kept (characters, one line).
pub const MAX_COMMAND: usize = 200;
/// The longest name, status, code, reviewer, state or path kept.
pub const MAX_NAME: usize = 100;
/// The longest path kept.
pub const MAX_PATH: usize = 200;
/// The longest review body kept (one paragraph).
pub const MAX_BODY: usize = 500;
/// The most paths (or check names) an entry keeps.
pub const MAX_FILES: usize = 20;

/// The states of a review, as the forges give them: a review in another is not remembered.
pub const REVIEW_STATES: &[&str] = &["CHANGES_REQUESTED", "COMMENTED", "APPROVED"];

/// A fact hone observed. No field holds the model's prose or a command's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fact {
    /// A `run_cmd` call: the command, its exit code (the last one), a timeout or policy denial.
    Command { command: String, exit_code: Option<i32>, timed_out: bool, denied: bool },
    /// A setup command of the job.
    Setup { name: String, command: String, exit_code: Option<i32>, passed: bool },
    /// A check as it ran at the baseline, before any change.
    Baseline { check: String, command: String, exit_code: Option<i32>, passed: bool },
    /// How a run that did not succeed ended: its status, first error code, the final checks that
    /// failed and the files it changed.
    Outcome { status: String, code: Option<String>, failed_checks: Vec<String>, files: Vec<String> },
    /// A review on one of hone's pull requests.
    Review { pr: u64, reviewer: String, state: String, body: String },
}

impl Fact {
    /// The kind, as serialized.
    pub fn kind(&self) -> &'static str {
        match self {
            Fact::Command { .. } => "command",
            Fact::Setup { .. } => "setup",
            Fact::Baseline { .. } => "baseline",
            Fact::Outcome { .. } => "outcome",
            Fact::Review { .. } => "review",
        }
    }

    /// Whether the fact may be remembered: a review's state is one the forges give (its other
    /// strings are a trusted reviewer's, and hone's own).
    pub(crate) fn is_rememberable(&self) -> bool {
        match self {
            Fact::Review { state, .. } => REVIEW_STATES.iter().any(|s| s.eq_ignore_ascii_case(state)),
            _ => true,
        }
    }

    /// Whether this observation went well (a command or check that passed); an outcome is a
    /// failure by definition, a review neither (`None`).
    pub fn passed(&self) -> Option<bool> {
        match self {
            Fact::Command { exit_code, timed_out, denied, .. } => Some(*exit_code == Some(0) && !timed_out && !denied),
            Fact::Setup { passed, .. } | Fact::Baseline { passed, .. } => Some(*passed),
            Fact::Outcome { .. } => Some(false),
            Fact::Review { .. } => None,
        }
    }

    /// What identifies the fact (entries with the same identity merge): the command, the step or
    /// check and its command, the ending, the review.
    fn identity(&self) -> String {
        match self {
            Fact::Command { command, .. } => command.clone(),
            Fact::Setup { name, command, .. } => format!("{name}\n{command}"),
            Fact::Baseline { check, command, .. } => format!("{check}\n{command}"),
            Fact::Outcome { status, code, failed_checks, .. } => {
                format!("{status}\n{}\n{}", code.as_deref().unwrap_or(""), failed_checks.join("\n"))
            }
            Fact::Review { pr, reviewer, state, body } => format!("{pr}\n{reviewer}\n{state}\n{body}"),
        }
    }

    /// The entry id: the kind and a short hash of the kind and identity (`command-1a2b3c4d`).
    pub fn id(&self) -> String {
        let digest = Sha256::digest(format!("{}\n{}", self.kind(), self.identity()).as_bytes());
        let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        format!("{}-{hex}", self.kind())
    }

    /// Every string of the fact, for redaction and bounds.
    pub(crate) fn map_strings(&mut self, f: &impl Fn(&str, Field) -> String) {
        match self {
            Fact::Command { command, .. } => *command = f(command, Field::Command),
            Fact::Setup { name, command, .. } | Fact::Baseline { check: name, command, .. } => {
                *name = f(name, Field::Name);
                *command = f(command, Field::Command);
            }
            Fact::Outcome { status, code, failed_checks, files } => {
                *status = f(status, Field::Name);
                *code = code.as_deref().map(|c| f(c, Field::Name));
                *failed_checks = bounded_list(failed_checks, |s| f(s, Field::Name));
                *files = bounded_list(files, |s| f(s, Field::Path));
            }
            Fact::Review { reviewer, state, body, .. } => {
                *reviewer = f(reviewer, Field::Name);
                *state = f(state, Field::Name);
                *body = f(body, Field::Body);
            }
        }
    }

    /// The words retrieval matches a task against: what the fact is about, no counts.
    pub fn terms(&self) -> String {
        match self {
            Fact::Command { command, .. } => command.clone(),
            Fact::Setup { name, command, .. } => format!("setup {name} {command}"),
            Fact::Baseline { check, command, .. } => format!("check {check} {command}"),
            Fact::Outcome { status, code, failed_checks, files } => {
                format!("{status} {} {} {}", code.as_deref().unwrap_or(""), failed_checks.join(" "), files.join(" "))
            }
            Fact::Review { reviewer, state, body, .. } => format!("review {reviewer} {state} {body}"),
        }
    }
}

/// Which bound a string field has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    Command,
    Name,
    Path,
    Body,
}

impl Field {
    fn max(self) -> usize {
        match self {
            Field::Command => MAX_COMMAND,
            Field::Name => MAX_NAME,
            Field::Path => MAX_PATH,
            Field::Body => MAX_BODY,
        }
    }
}

/// `s` as one line (every run of whitespace and control characters one space), at most the
/// field's characters (an ellipsis when cut).
pub(crate) fn bound(s: &str, field: Field) -> String {
    let one: String =
        s.split(|c: char| c.is_whitespace() || c.is_control()).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ");
    let max = field.max();
    if one.chars().count() <= max {
        return one;
    }
    let mut cut: String = one.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

/// At most `MAX_FILES` items, each mapped, empty ones and repeats dropped, in order.
pub(crate) fn bounded_list(items: &[String], f: impl Fn(&str) -> String) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in items.iter().map(|s| f(s)) {
        if out.len() == MAX_FILES {
            break;
        }
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// A fact a run observed, with the files it concerns (the run's changed files, for retrieval).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub fact: Fact,
    pub files: Vec<String>,
}

/// One remembered fact, merged over the runs that observed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// `<kind>-<8 hex>`: a hash of the kind and what identifies the fact.
    pub id: String,
    /// The last observation.
    pub fact: Fact,
    /// Files the runs that observed it worked on (the most recent first, at most 20).
    #[serde(default)]
    pub files: Vec<String>,
    /// Observations that passed and failed (a review counts in neither).
    #[serde(default)]
    pub passed: u32,
    #[serde(default)]
    pub failed: u32,
    /// Observations in all.
    pub seen: u32,
    /// When it was first and last observed (RFC 3339), and the run that last did.
    pub first_seen: String,
    pub last_seen: String,
    pub last_run: String,
}

impl Entry {
    /// A check seen passing and failing at the baseline.
    pub fn is_flaky(&self) -> bool {
        matches!(self.fact, Fact::Baseline { .. }) && self.passed > 0 && self.failed > 0
    }

    /// The entry in one line: its id in brackets, then the fact with every string in a code span.
    pub fn line(&self) -> String {
        let (id, counts, date) = (&self.id, self.counts(), day(&self.last_seen));
        let what = match &self.fact {
            Fact::Command { command, exit_code, timed_out, denied } => {
                format!("command {} {}", code(command), ended(*exit_code, *timed_out, *denied))
            }
            Fact::Setup { name, command, exit_code, passed } => {
                let last = if *passed { "passed".to_string() } else { ended(*exit_code, false, false) };
                format!("setup step {} ({}): last {last}", code(name), code(command))
            }
            Fact::Baseline { check, command, exit_code, .. } => {
                let state = match (self.passed, self.failed) {
                    (p, f) if p > 0 && f > 0 => "flaky at the baseline (passed and failed)".to_string(),
                    (_, f) if f > 0 => format!("failing at the baseline ({})", ended(*exit_code, false, false)),
                    _ => "passing at the baseline".to_string(),
                };
                format!("check {} ({}) {state}", code(name_or(check)), code(command))
            }
            Fact::Outcome { status, code: c, failed_checks, files } => {
                let mut s = format!("an earlier run ended {}", code(status));
                if let Some(c) = c {
                    s.push_str(&format!(" with {}", code(c)));
                }
                if !failed_checks.is_empty() {
                    s.push_str(&format!("; failing checks: {}", codes(failed_checks)));
                }
                if !files.is_empty() {
                    s.push_str(&format!("; it changed {}", codes(files)));
                }
                s
            }
            Fact::Review { pr, reviewer, state, body } => {
                format!("review on PR #{pr} by {} ({}): {}", code(reviewer), code(state), code(body))
            }
        };
        format!("[{id}] {what} ({counts}; last {date})")
    }

    fn counts(&self) -> String {
        match self.fact {
            Fact::Review { .. } => format!("seen {}×", self.seen),
            Fact::Outcome { .. } => format!("{} run(s)", self.seen),
            _ => format!("passed {}×, failed {}×", self.passed, self.failed),
        }
    }
}

fn name_or(s: &str) -> &str {
    if s.is_empty() { "?" } else { s }
}

/// How a command ended, in words.
fn ended(exit_code: Option<i32>, timed_out: bool, denied: bool) -> String {
    match (exit_code, timed_out, denied) {
        (_, _, true) => "was denied by the policy".into(),
        (_, true, _) => "timed out".into(),
        (Some(0), ..) => "exited 0".into(),
        (Some(c), ..) => format!("failed with exit {c}"),
        (None, ..) => "did not finish".into(),
    }
}

fn codes(items: &[String]) -> String {
    items.iter().map(|s| code(s)).collect::<Vec<_>>().join(", ")
}

/// The date of an RFC 3339 time (`2025-01-31`), or the text as it is.
fn day(at: &str) -> String {
    let d: String = at.chars().take(10).collect();
    if d.len() == 10 && d.chars().all(|c| c.is_ascii_digit() || c == '-') { d } else { code(at) }
}
