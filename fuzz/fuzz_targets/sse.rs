//! Fuzz target: a model's streamed answer (server-sent events), read as OpenAI's, Anthropic's and the Responses API's (`hone::fuzz_entry::sse`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hone::fuzz_entry::sse(data));
