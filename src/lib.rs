//! hone: a headless LLM coding agent for CI. Job spec → tool loop → verify → commit → reports.
#![deny(clippy::print_stdout)]

pub mod agent;
pub mod cli;
pub mod commands;
pub mod env;
pub mod error;
pub mod events;
pub mod exec;
pub mod exit;
pub mod fleet;
pub mod forge;
pub mod git;
pub mod guard;
pub mod jail;
mod logging;
pub mod model;
pub mod policy;
pub mod progress;
pub mod protocol;
pub mod redact;
pub mod report;
pub mod safe_fs;
pub mod sandbox;
pub mod spec;
pub mod tools;
pub mod validate;
pub mod verify;

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers shared by the unit tests.

    /// A proptest config with `cases` cases and a seed that is printed, so a failure can be
    /// repeated: `PROPTEST_RNG_SEED` when set (CI pins it), else a fresh random one.
    pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
        let seed =
            std::env::var("PROPTEST_RNG_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random::<u64>);
        eprintln!("proptest seed: {seed} (PROPTEST_RNG_SEED={seed} repeats this run)");
        proptest::test_runner::Config {
            cases,
            rng_seed: proptest::test_runner::RngSeed::Fixed(seed),
            failure_persistence: None,
            ..Default::default()
        }
    }
}
