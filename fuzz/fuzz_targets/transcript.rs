//! Fuzz target: a saved transcript.jsonl, read for --continue's conversation and replay's answers (`hone::fuzz_entry::transcript`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hone::fuzz_entry::transcript(data));
