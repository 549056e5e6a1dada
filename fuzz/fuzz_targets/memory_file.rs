//! Fuzz target: a memory file, loaded and listed, then retrieved into a first message (`hone::fuzz_entry::memory_file`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hone::fuzz_entry::memory_file(data));
