//! `attempts:`: how many independent tries of the task the job makes, the model of each, and
//! whether they run at once (`parallel`) or each only when the earlier ones failed their checks
//! (`cascade`). One try (the default) is the job as it always ran.

use super::raw::{RawLimits, RawModel};
use super::{Checker, ModelSpec};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The most tries a job may make (each is a worktree, a jail and a model session).
pub const MAX_TRIES: usize = 8;

/// How the tries run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Every try at once; the checks choose among those that end.
    #[default]
    Parallel,
    /// One after another: the next try starts only when every earlier one failed a verification
    /// round (or ended without success); once one passes, no other starts and those running stop.
    Cascade,
}

/// `attempts:`: a number of tries of the job's model; a list of tries (`{}` for the job's model,
/// `{model: {…}}` for another); or `{tries: NUMBER | LIST, strategy: parallel | cascade}`.
#[derive(Debug, schemars::JsonSchema)]
#[serde(untagged)]
pub enum RawAttempts {
    /// How many tries, each with the job's `model` (1 to 8).
    Count(u32),
    /// One entry per try.
    Tries(Vec<RawTry>),
    /// The tries, and how they run.
    Block(RawAttemptsBlock),
}

/// One try: its own model (a whole model block, as `model:` is), or the job's; and limits of
/// its own.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTry {
    /// The try's model; without it, the job's `model`.
    pub model: Option<RawModel>,
    /// Limits of this try alone (`max_turns`, `max_fix_attempts`, `max_wall_time` from its start, `max_tokens` and `max_cost_usd` of its own spend); the job's `limits` still hold for every try together.
    pub limits: Option<RawLimits>,
}

/// `attempts: {tries: …, strategy: …}`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAttemptsBlock {
    /// A number of tries of the job's model, or one entry per try (default 1).
    pub tries: Option<RawTries>,
    /// parallel (default): every try at once; cascade: the next only when the earlier failed.
    pub strategy: Option<Strategy>,
}

/// `tries:`: a number, or one entry per try.
#[derive(Debug, schemars::JsonSchema)]
#[serde(untagged)]
pub enum RawTries {
    Count(u32),
    List(Vec<RawTry>),
}

/// Read by hand, so that a wrong value says what is expected (an untagged enum's error names
/// only the enum).
impl<'de> Deserialize<'de> for RawAttempts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RawAttempts;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number of tries, a list of tries (`- model: {...}`), or `{ tries: ..., strategy: ... }`")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RawAttempts, E> {
                u32::try_from(v).map(RawAttempts::Count).map_err(|_| E::custom("too many tries"))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RawAttempts, E> {
                u32::try_from(v).map(RawAttempts::Count).map_err(|_| E::custom("the number of tries is 1 or more"))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<RawAttempts, A::Error> {
                Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(RawAttempts::Tries)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawAttempts, A::Error> {
                RawAttemptsBlock::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(RawAttempts::Block)
            }
        }
        d.deserialize_any(Visit)
    }
}

impl<'de> Deserialize<'de> for RawTries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match RawAttempts::deserialize(d)? {
            RawAttempts::Count(n) => Ok(RawTries::Count(n)),
            RawAttempts::Tries(t) => Ok(RawTries::List(t)),
            RawAttempts::Block(_) => Err(serde::de::Error::custom("`tries:` is a number or a list of tries")),
        }
    }
}

/// A try's own limits (none: the job's, which hold for every try together anyway).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct TryLimits {
    pub max_turns: Option<u32>,
    pub max_fix_attempts: Option<u32>,
    /// From the try's start.
    #[serde(skip)]
    pub max_wall_time: Option<std::time::Duration>,
    /// Of the try's own spend.
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
}

/// One try as checked: its model (the job's unless it names its own) and its own limits.
#[derive(Debug, Clone, Serialize)]
pub struct TrySpec {
    pub model: ModelSpec,
    pub limits: TryLimits,
}

/// The job's tries as checked.
#[derive(Debug, Clone, Serialize)]
pub struct AttemptsSpec {
    /// At least one.
    pub tries: Vec<TrySpec>,
    pub strategy: Strategy,
}

impl AttemptsSpec {
    /// One try of `model`: the job as it always ran.
    pub fn one(model: &ModelSpec) -> Self {
        AttemptsSpec { tries: vec![TrySpec::of(model)], strategy: Strategy::Parallel }
    }

    /// `--attempts N`: the first `n` of the spec's tries, then the job's model for the rest;
    /// `--attempts 1` is the job as it always ran (its `model` and `limits`).
    pub fn resized(&mut self, n: usize, model: &ModelSpec) {
        if n <= 1 {
            *self = AttemptsSpec::one(model);
            return;
        }
        self.tries.truncate(n);
        while self.tries.len() < n {
            self.tries.push(TrySpec::of(model));
        }
    }

    pub fn several(&self) -> bool {
        self.tries.len() > 1
    }
}

/// Why a job of several tries cannot run as written, with what to do; `None` when it can.
/// Pure: the spec checker and `--attempts` both ask it.
pub fn refusal(tries: usize, allow_dirty: bool, change: super::answer::Change) -> Option<(&'static str, &'static str)> {
    if tries <= 1 {
        return None;
    }
    if tries > MAX_TRIES {
        return Some((
            "a job makes at most 8 tries",
            "lower `attempts` (each try is a worktree, a jail and a model session)",
        ));
    }
    if allow_dirty {
        return Some((
            "`attempts` above 1 cannot be used with `repo.allow_dirty`: each try starts from the base commit in its own worktree, without the uncommitted changes",
            "commit the changes first, or make one try",
        ));
    }
    if change != super::answer::Change::Commit {
        return Some((
            "`attempts` above 1 is for jobs that change the repository (`change: commit`): the checks choose between changes",
            "make one try for a review or a read-only job",
        ));
    }
    None
}

impl Checker<'_> {
    /// `attempts:` checked: each try's model block where it is, and the refusals above.
    pub(super) fn attempts(&mut self, raw: Option<RawAttempts>, job: &JobParts<'_>, dir: &Path) -> AttemptsSpec {
        let (raw_tries, strategy) = match raw {
            None => return AttemptsSpec::one(job.model),
            Some(RawAttempts::Count(n)) => (RawTries::Count(n), Strategy::Parallel),
            Some(RawAttempts::Tries(t)) => (RawTries::List(t), Strategy::Parallel),
            Some(RawAttempts::Block(b)) => (b.tries.unwrap_or(RawTries::Count(1)), b.strategy.unwrap_or_default()),
        };
        let at = if self.map.has("attempts.tries") { "attempts.tries" } else { "attempts" };
        let list = match raw_tries {
            RawTries::Count(n) => (0..n).map(|_| RawTry::default()).collect::<Vec<_>>(),
            RawTries::List(l) => l,
        };
        if list.is_empty() {
            self.err(at, "a job makes at least one try", "give `attempts:` a number from 1, or a list of tries");
            return AttemptsSpec::one(job.model);
        }
        let mut tries = Vec::new();
        let alone = list.len() == 1;
        for (k, t) in list.into_iter().enumerate() {
            if alone && (t.model.is_some() || t.limits.is_some()) {
                self.err(
                    &format!("{at}[0]"),
                    "a job of one try runs with the job's own `model` and `limits`",
                    "put this try's model in `model:` and its limits in `limits:`, or add tries",
                );
            }
            let spec = match t.model {
                None => job.model.clone(),
                Some(m) => self.model_at(m, &format!("{at}[{k}].model"), dir),
            };
            let limits = self.try_limits(t.limits, &format!("{at}[{k}].limits"));
            if (job.max_cost || limits.max_cost_usd.is_some()) && spec.unpriced().is_some() {
                self.err(
                    &format!("{at}[{k}].model"),
                    "this try's model has no prices, and a cost budget (`max_cost_usd`) is set",
                    "give the model (and each of its fallbacks) `pricing:`, so the cost budget can hold across tries",
                );
            }
            tries.push(TrySpec { model: spec, limits });
        }
        if let Some((msg, help)) = refusal(tries.len(), job.allow_dirty, job.change) {
            self.err("attempts", msg, help);
        }
        AttemptsSpec { tries, strategy }
    }
}

impl TrySpec {
    /// A try of `model` with the job's limits.
    pub fn of(model: &ModelSpec) -> Self {
        TrySpec { model: model.clone(), limits: TryLimits::default() }
    }
}

impl Checker<'_> {
    /// A try's `limits:` at `at`, each as the job's own would be checked.
    fn try_limits(&mut self, raw: Option<RawLimits>, at: &str) -> TryLimits {
        let Some(l) = raw else { return TryLimits::default() };
        let limits = TryLimits {
            max_turns: l.max_turns,
            max_fix_attempts: l.max_fix_attempts,
            max_wall_time: l.max_wall_time.map(|d| d.0),
            max_tokens: l.max_tokens,
            max_cost_usd: l.max_cost_usd,
        };
        if limits.max_turns == Some(0) {
            self.err(&format!("{at}.max_turns"), "must be at least 1", "or leave it out: the job's holds");
        }
        if limits.max_wall_time.is_some_and(|d| d.is_zero()) {
            self.err(&format!("{at}.max_wall_time"), "must be more than zero", "or leave it out: the job's holds");
        }
        if limits.max_tokens == Some(0) {
            self.err(&format!("{at}.max_tokens"), "must be at least 1", "or leave it out: the job's holds");
        }
        if limits.max_cost_usd.is_some_and(|c| !(c > 0.0 && c.is_finite())) {
            self.err(&format!("{at}.max_cost_usd"), "must be more than zero", "a cost in US dollars, like 0.50");
        }
        limits
    }
}

/// What checking `attempts:` needs of the rest of the job.
pub(super) struct JobParts<'a> {
    pub model: &'a ModelSpec,
    pub max_cost: bool,
    pub allow_dirty: bool,
    pub change: super::answer::Change,
}

impl<'a> JobParts<'a> {
    pub fn of(
        model: &'a ModelSpec,
        limits: &super::Limits,
        repo: &super::RepoSpec,
        change: super::answer::Change,
    ) -> Self {
        JobParts { model, max_cost: limits.max_cost_usd.is_some(), allow_dirty: repo.allow_dirty, change }
    }
}

#[cfg(test)]
#[path = "attempts_tests.rs"]
mod tests;
