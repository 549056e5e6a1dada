//! Fuzz target: a command line the model asks to run, analysed and decided by the built-in policy (`hone::fuzz_entry::shell`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hone::fuzz_entry::shell(data));
