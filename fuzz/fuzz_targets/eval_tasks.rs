//! Fuzz target: a tasks file from elsewhere (SWE-bench's JSON Lines) and the issues a commit
//! message says it closes (`hone::fuzz_entry::eval_tasks`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hone::fuzz_entry::eval_tasks(data));
