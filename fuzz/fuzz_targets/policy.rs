//! Fuzz target: a policy file (YAML), parsed and validated, then deciding a command and a path (`hone::fuzz_entry::policy`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hone::fuzz_entry::policy(data));
