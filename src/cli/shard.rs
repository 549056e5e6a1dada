//! `--shard i/N` (or `auto/N`, for a Kubernetes Indexed Job): which part of a fleet this
//! process runs, and why a shard cannot be read or resolved (`ShardError`, `E_SPEC`).

use crate::error::{Code, HoneError};

/// `--shard i/N`: shard `index` of `count`, 1-based; `index` is `None` for `auto/N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: Option<usize>,
    pub count: usize,
}

/// Why `--shard` cannot be read, or `auto/N` cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("`{0}` is not a shard: write i/N with 1 <= i <= N, like 2/8, or auto/N")]
    NotAShard(String),
    /// `auto/N`, with N, outside an Indexed Job.
    #[error("`--shard auto/{0}` takes the shard from JOB_COMPLETION_INDEX, which is not set")]
    NoIndex(usize),
    #[error("JOB_COMPLETION_INDEX is `{index}`, not an index from 0 to {} for `--shard auto/{count}`", count - 1)]
    BadIndex { index: String, count: usize },
}

impl ShardError {
    /// The shard is part of what the fleet is given to run.
    pub const fn code(&self) -> Code {
        Code::Spec
    }
}

impl From<ShardError> for HoneError {
    fn from(e: ShardError) -> Self {
        let hint = match &e {
            ShardError::NoIndex(n) => Some(format!(
                "run it as a Kubernetes Indexed Job with `completions: {n}`, or give the shard: `--shard 1/{n}`"
            )),
            _ => None,
        };
        let err = HoneError::new(e.code(), e.to_string());
        match hint {
            Some(h) => err.hint(h),
            None => err,
        }
    }
}

impl Shard {
    /// The 1-based shard index: given, or for `auto/N`, `JOB_COMPLETION_INDEX` (0-based) + 1.
    pub fn resolve(self, completion_index: Option<&str>) -> Result<(usize, usize), ShardError> {
        if let Some(i) = self.index {
            return Ok((i, self.count));
        }
        let n = self.count;
        let raw = completion_index.ok_or(ShardError::NoIndex(n))?;
        match raw.trim().parse::<usize>() {
            Ok(i) if i < n => Ok((i + 1, n)),
            _ => Err(ShardError::BadIndex { index: raw.to_string(), count: n }),
        }
    }
}

impl std::str::FromStr for Shard {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Self, ShardError> {
        let bad = || ShardError::NotAShard(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let count = n.trim().parse::<usize>().map_err(|_| bad())?;
        if i.trim() == "auto" && count > 0 {
            return Ok(Shard { index: None, count });
        }
        let index = i.trim().parse::<usize>().map_err(|_| bad())?;
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index: Some(index), count })
    }
}
