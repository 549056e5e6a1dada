//! hone: a headless LLM coding agent for CI. Job spec → tool loop → verify → commit → reports.
#![deny(clippy::print_stdout)]

pub mod error;
pub mod exit;
pub mod spec;
pub mod model;
pub mod protocol;
pub mod redact;
pub mod exec;
pub mod tools;
