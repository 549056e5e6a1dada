//! hone: a headless LLM coding agent for CI. Job spec → tool loop → verify → commit → reports.
#![deny(clippy::print_stdout)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

// Every line hone prints is made neutral for the CI runner (`ci_text`). These macros shadow std's
// in the whole crate, so a new print cannot forget it: `eprintln!`/`eprint!` make their text
// neutral; `println!`/`print!` do not compile outside `commands.rs`, the one module that writes
// stdout (its own `println!` makes the line neutral).
macro_rules! eprintln {
    ($($arg:tt)*) => { ::std::eprintln!("{}", $crate::ci_text::lines(&format!($($arg)*))) };
}
macro_rules! eprint {
    ($($arg:tt)*) => { ::std::eprint!("{}", $crate::ci_text::lines(&format!($($arg)*))) };
}
#[allow(unused_macros)] // a use anywhere but commands.rs is the error it names
macro_rules! println {
    ($($arg:tt)*) => {
        compile_error!("stdout carries only the result line: print it from commands.rs")
    };
}
#[allow(unused_macros)]
macro_rules! print {
    ($($arg:tt)*) => {
        compile_error!("stdout carries only the result line: print it from commands.rs")
    };
}

#[doc(hidden)]
pub mod bench;
pub(crate) mod bound;
pub(crate) mod ci_text;
pub mod cli;
pub mod commands;
pub mod diag;
pub(crate) mod egress;
pub(crate) mod env;
pub(crate) mod error;
pub(crate) mod eval;
pub(crate) mod events;
pub(crate) mod exec;
pub mod exit;
pub(crate) mod fleet;
pub(crate) mod forge;
#[doc(hidden)]
pub mod fuzz_entry;
pub(crate) mod git;
pub(crate) mod guard;
pub mod jail;
pub(crate) mod jwt;
mod logging;
pub(crate) mod markdown;
pub(crate) mod mcp;
pub mod memory;
pub(crate) mod model;
#[doc(hidden)]
pub mod net;
pub mod output;
pub(crate) mod policy;
pub(crate) mod progress;
pub(crate) mod project;
pub(crate) mod protocol;
pub mod record;
pub(crate) mod redact;
pub(crate) mod references;
pub(crate) mod replay;
pub(crate) mod repomap;
pub(crate) mod run;
pub(crate) mod safe_fs;
pub(crate) mod sandbox;
pub(crate) mod schema;
pub(crate) mod screen;
pub(crate) mod shared;
pub(crate) mod spec;
pub(crate) mod telemetry;
pub(crate) mod tools;
pub(crate) mod validate;
pub(crate) mod verify;

#[cfg(test)]
mod durable_tests;

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers shared by the unit tests.

    /// Bytes written to memory, shared by every clone (a progress or event sink under test).
    #[derive(Clone, Default)]
    pub struct Mem(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Mem {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

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
