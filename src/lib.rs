//! hone: a headless LLM coding agent for CI. Job spec → tool loop → verify → commit → reports.
#![deny(clippy::print_stdout)]

pub mod agent;
pub mod cli;
pub mod error;
pub mod events;
pub mod exec;
pub mod exit;
pub mod fleet;
pub mod forge;
pub mod git;
pub mod guard;
pub mod jail;
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
