//! The fuzz targets' doors into the parsers of hostile input (fuzz/, docs/fuzzing.md): one
//! function per parser, taking the fuzzer's bytes and going through the very code hone runs on
//! such input; each ignores the result (an error is a right answer), so only a panic, a hang or
//! unbounded memory is a finding. Not an API: hidden, and used only by fuzz/fuzz_targets.

use crate::memory::{Query, RepoKey, Store};
use crate::policy::Policy;
use std::path::Path;
use std::time::Duration;

/// The idle limit of the stream readers: far more than an in-memory body ever takes.
const IDLE: Duration = Duration::from_secs(60);

/// The bytes as text, as hone reads a file: lossily (the readers given text take `&str`).
fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// A job spec (`hone run JOB.yaml`): parsed and validated (`spec::parse`), its inline output
/// schema compiled.
pub fn job_spec(data: &[u8]) {
    let _ = crate::spec::parse(Path::new("/nonexistent/hone-fuzz/job.yaml"), &text(data));
}

/// A policy file: parsed and validated (`policy::parse`); when valid, a few commands and paths
/// decided by it.
pub fn policy(data: &[u8]) {
    if let Ok(p) = crate::policy::parse("policy.yaml", &text(data)) {
        let _ = crate::policy::decide_command(&p, "cargo test --all && git status");
        let _ = crate::policy::decide_path(&p, "src/lib.rs", crate::policy::Access::Write);
    }
}

/// The patch tool's input: a unified diff (`tools::patch::parse`), then applied to a file's
/// text (`apply_hunks`). The bytes up to the first NUL are the diff, the rest the file.
pub fn patch(data: &[u8]) {
    let all = text(data);
    let (diff, file) = all.split_once('\0').unwrap_or((&all, ""));
    if let Ok(files) = crate::tools::patch::parse(diff) {
        for f in &files {
            let _ = crate::tools::patch::apply_hunks(file, &f.hunks);
        }
    }
}

/// A current-thread runtime with time (the stream readers' idle timeout), one per thread.
fn block_on<F: std::future::Future>(f: F) -> Option<F::Output> {
    thread_local! {
        static RT: Option<tokio::runtime::Runtime> =
            tokio::runtime::Builder::new_current_thread().enable_time().build().ok();
    }
    RT.with(|rt| rt.as_ref().map(|rt| rt.block_on(f)))
}

/// A response whose body arrives in pieces: the first byte sets the piece size (1 to 256), so
/// a line or a frame can be split anywhere.
fn response(data: &[u8]) -> reqwest::Response {
    let (size, body) = data.split_first().map_or((1, &[][..]), |(s, b)| (usize::from(*s) + 1, b));
    let pieces: Vec<Result<Vec<u8>, std::io::Error>> = body.chunks(size).map(|c| Ok(c.to_vec())).collect();
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(pieces));
    reqwest::Response::from(http::Response::new(body))
}

/// A streamed model answer (server-sent events, `model::http::events`), read as each provider
/// that streams SSE reads it: OpenAI's chat chunks, Anthropic's events, the Responses API's.
pub fn sse(data: &[u8]) {
    use crate::model::{anthropic, http, responses_read, stream};
    let _ = block_on(async {
        let mut chat = stream::Assembler::default();
        if http::events(response(data), IDLE, |_, c| chat.push(c).map(|()| false)).await.is_ok() {
            let _ = chat.finish();
        }
        let _ = anthropic::read(response(data), true, IDLE).await;
        let mut resp = responses_read::Assembler::default();
        if http::events(response(data), IDLE, |_, e| resp.push(e)).await.is_ok() {
            let _ = resp.finish();
        }
    });
}

/// A Bedrock ConverseStream answer: AWS event-stream frames (`eventstream::read`), each handed
/// to the answer's assembler as `Bedrock::complete` does. After the first byte (the piece
/// size), a byte 0 means the rest is raw frames; any other means the rest is a list of frames'
/// insides (`u16` header length, headers, `u16` payload length, payload), framed here with
/// right lengths and CRCs, so that the headers and payloads behind the checksums are reached.
pub fn bedrock_stream(data: &[u8]) {
    use crate::model::bedrock::{answer, eventstream, on_frame};
    let Some((&size, rest)) = data.split_first() else { return };
    let body = match rest.split_first() {
        Some((0, raw)) => raw.to_vec(),
        Some((_, inner)) => frames(inner),
        None => vec![],
    };
    let mut bytes = vec![size];
    bytes.extend_from_slice(&body);
    let _ = block_on(async {
        let mut asm = answer::Assembler::default();
        if eventstream::read(response(&bytes), IDLE, |f| on_frame(&mut asm, &f)).await.is_ok() {
            let _ = asm.finish();
        }
    });
}

/// The next length-prefixed (`u16`) piece of `b`, cut short where `b` ends.
fn piece(b: &mut &[u8]) -> Vec<u8> {
    let n = match b {
        [h, l, ..] => usize::from(u16::from_be_bytes([*h, *l])),
        _ => 0,
    };
    let rest = b.get(2..).unwrap_or_default();
    let n = n.min(rest.len());
    *b = &rest[n..];
    rest[..n].to_vec()
}

/// Event-stream frames with valid lengths and CRCs around the (headers, payload) pairs in `b`.
fn frames(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let (headers, payload) = (piece(&mut b), piece(&mut b));
        let total = (16 + headers.len() + payload.len()) as u32;
        let start = out.len();
        out.extend_from_slice(&total.to_be_bytes());
        out.extend_from_slice(&(headers.len() as u32).to_be_bytes());
        let prelude = crc32fast::hash(&out[start..]);
        out.extend_from_slice(&prelude.to_be_bytes());
        out.extend_from_slice(&headers);
        out.extend_from_slice(&payload);
        let message = crc32fast::hash(&out[start..]);
        out.extend_from_slice(&message.to_be_bytes());
    }
    out
}

/// A tasks file from elsewhere (`eval::task::read`, SWE-bench's JSON Lines) and, as a commit
/// message, the issues it says it closes (`eval::linked::closed_by`).
pub fn eval_tasks(data: &[u8]) {
    let t = text(data);
    let _ = crate::eval::task::read("fuzz.jsonl", &t);
    let _ = crate::eval::linked::closed_by(&t);
}

/// A JUnit report a check wrote (`verify::junit_in::failing_cases`).
pub fn junit(data: &[u8]) {
    let _ = crate::verify::junit_in::failing_cases(&text(data));
}

/// A command line the model asks to run: analysed (`policy::shell::analyse`) and decided by the
/// built-in policy with a verify command allowed (`decide_command`).
///
/// A panic inside brush's parser is contained and refused (`policy::parser_guard::contained`), as
/// in hone itself, so only a panic elsewhere reaches the fuzzer's hook (which aborts: a crash).
pub fn shell(data: &[u8]) {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let fuzzer = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !crate::policy::parsing_contained() {
                fuzzer(info);
            }
        }));
    });
    static POLICY: std::sync::OnceLock<Policy> = std::sync::OnceLock::new();
    let p = POLICY.get_or_init(|| {
        let mut p = Policy::builtin();
        p.allow_verify(&[("test".into(), "cargo test".into())]);
        p
    });
    let _ = crate::policy::decide_command(p, &text(data));
}

/// The key of the memory file the memory target writes (its seeds hold this key).
pub const MEMORY_KEY: &str = "example.com/hone/fuzz";

/// A memory file (`memory::Store::load`, as the next run reads it; and `list`, as `hone memory
/// list` does), then retrieved into a first message (`retrieve`, `render`).
pub fn memory_file(data: &[u8]) {
    thread_local! {
        static DIR: Option<tempfile::TempDir> = tempfile::tempdir().ok();
    }
    DIR.with(|dir| {
        let (Some(dir), Some(key)) = (dir, RepoKey::from_stored(MEMORY_KEY)) else { return };
        let store = Store::at(dir.path().to_path_buf());
        if std::fs::write(store.path_of(&key), data).is_err() {
            return;
        }
        let (m, _) = store.load(&key);
        let _ = store.list();
        let files = ["src/lib.rs".to_string()];
        let _ = crate::memory::render(&m.retrieve(&Query { task: "fix the failing test", files: &files }, 2000));
    });
}

/// A saved transcript (`transcript.jsonl` in a report dir, `output::transcript::read`), made
/// into the conversation `--continue` goes on from and the answers `hone replay` gives.
pub fn transcript(data: &[u8]) {
    thread_local! {
        static DIR: Option<tempfile::TempDir> = tempfile::tempdir().ok();
    }
    DIR.with(|dir| {
        let Some(dir) = dir else { return };
        if std::fs::write(dir.path().join("transcript.jsonl"), data).is_err() {
            return;
        }
        if let Ok(entries) = crate::output::transcript::read(dir.path()) {
            let _ = crate::run::intake::saved::conversation(&entries);
            let replay = crate::model::replay::Replay::new(&entries, "/repo");
            let _ = replay.verdict();
        }
    });
}

#[cfg(test)]
mod tests {
    /// Every door takes empty and arbitrary bytes without a panic (the fuzz targets' smoke test).
    #[test]
    fn every_entry_takes_any_bytes() {
        let inputs: [&[u8]; 4] = [b"", b"\0", b"\xff\xfe garbage: [", b"data: {}\n\n--- a\n+++ b\n@@ -1 +1 @@\n"];
        for d in inputs {
            super::job_spec(d);
            super::policy(d);
            super::patch(d);
            super::sse(d);
            super::bedrock_stream(d);
            super::junit(d);
            super::shell(d);
            super::memory_file(d);
            super::transcript(d);
        }
    }
}
