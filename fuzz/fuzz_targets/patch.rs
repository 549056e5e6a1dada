//! Fuzz target: the patch tool's unified diff, parsed, then applied to a file's text (after the first NUL) (`hone::fuzz_entry::patch`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hone::fuzz_entry::patch(data));
