//! Fuzz target: a Bedrock ConverseStream answer (AWS event-stream frames), decoded and assembled (`hone::fuzz_entry::bedrock_stream`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hone::fuzz_entry::bedrock_stream(data));
