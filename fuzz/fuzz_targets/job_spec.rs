//! Fuzz target: a job spec (YAML), parsed and validated (`hone::fuzz_entry::job_spec`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hone::fuzz_entry::job_spec(data));
