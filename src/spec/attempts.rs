//! `attempts:`: how many independent tries of the task the job makes, the model of each, and
//! whether they run at once (`parallel`) or each only when the earlier ones failed their checks
//! (`cascade`). One try (the default) is the job as it always ran.

use super::raw::RawModel;
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

/// One try: its own model (a whole model block, as `model:` is), or the job's.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTry {
    /// The try's model; without it, the job's `model`.
    pub model: Option<RawModel>,
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

/// The job's tries as checked.
#[derive(Debug, Clone, Serialize)]
pub struct AttemptsSpec {
    /// Each try's model (the job's `model` unless the try names its own); at least one.
    pub tries: Vec<ModelSpec>,
    pub strategy: Strategy,
}

impl AttemptsSpec {
    /// One try of `model`: the job as it always ran.
    pub fn one(model: &ModelSpec) -> Self {
        AttemptsSpec { tries: vec![model.clone()], strategy: Strategy::Parallel }
    }

    /// `--attempts N`: the first `n` of the spec's tries, then the job's model for the rest.
    pub fn resized(&mut self, n: usize, model: &ModelSpec) {
        self.tries.truncate(n.max(1));
        while self.tries.len() < n {
            self.tries.push(model.clone());
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
        for (k, t) in list.into_iter().enumerate() {
            let spec = match t.model {
                None => job.model.clone(),
                Some(m) => self.model_at(m, &format!("{at}[{k}].model"), dir),
            };
            if job.max_cost && spec.unpriced().is_some() {
                self.err(
                    &format!("{at}[{k}].model"),
                    "this try's model has no prices, and `limits.max_cost_usd` is set",
                    "give the model (and each of its fallbacks) `pricing:`, so the cost budget can hold across tries",
                );
            }
            tries.push(spec);
        }
        if let Some((msg, help)) = refusal(tries.len(), job.allow_dirty, job.change) {
            self.err("attempts", msg, help);
        }
        AttemptsSpec { tries, strategy }
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
