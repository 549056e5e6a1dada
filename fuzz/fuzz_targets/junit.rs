//! Fuzz target: a JUnit report a check wrote, read for its failing cases (`hone::fuzz_entry::junit`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hone::fuzz_entry::junit(data));
