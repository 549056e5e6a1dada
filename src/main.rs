//! The `hone` binary: the jail's own entry points first, then parse the command line and hand
//! it to `hone::commands`, which returns the exit code (`src/exit.rs`).

#![deny(clippy::unwrap_used, clippy::expect_used)]

use clap::Parser;

fn main() {
    // The jail's own processes: single-threaded, before anything else starts.
    if let Some(code) = hone::jail::dispatch(&std::env::args().collect::<Vec<_>>()) {
        std::process::exit(code);
    }
    let code = match hone::cli::Cli::try_parse() {
        Ok(cli) => hone::commands::main(cli),
        Err(e) => hone::commands::usage(&e),
    };
    std::process::exit(code);
}
