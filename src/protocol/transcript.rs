//! `transcript.jsonl`: what was said in a run, line by line: each model request's new messages,
//! each answer, each tool result as the model saw it, each check. Versioned, redacted like every
//! sink, and the input of `hone replay`. Plain data.

use super::{FinishReason, Message, Usage};
use serde::{Deserialize, Serialize};

/// The format's version, in the header line; readers refuse others.
pub const VERSION: u32 = 1;

/// What a request adds to the one before: the messages past `previous` when the history only
/// grew, else all of them (it was rewritten: `true`).
pub fn new_since<'m>(previous: &[Message], messages: &'m [Message]) -> (&'m [Message], bool) {
    let grown = previous.len() <= messages.len() && messages[..previous.len()] == *previous;
    if grown { (&messages[previous.len()..], false) } else { (messages, true) }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// The first line: what ran, where, from what.
    Header {
        version: u32,
        hone_version: String,
        job: String,
        /// The task as the run had it (a `--task` included).
        task: String,
        run_id: String,
        /// The job spec, as given to `hone run` (made absolute).
        spec: String,
        /// The repository's root.
        repo: String,
        /// The commit the run started from.
        base_sha: String,
        provider: String,
        model: String,
        /// `--continue`: the saved work the run started from (`REF (sha)`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        continued_from: Option<String>,
        /// SHA-256 (hex) of the job spec's bytes as the run read them; replay runs a recorded
        /// spec only when it matches. Absent in transcripts of older hones.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spec_sha256: Option<String>,
        /// SHA-256 (hex) of the policy file's bytes as the run read them; absent for the
        /// built-in policy (and in transcripts of older hones).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        policy_sha256: Option<String>,
        /// The commit the instruction files were read from, when the run read any: the base, or
        /// a pull request's base as its forge named it (the run itself worked from the PR's
        /// head). Absent in transcripts of older hones.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions_commit: Option<String>,
        /// Where the conversation's work tree was when it is not `repo`: a try's worktree
        /// (`attempts:`), whose paths replay reads as the repository's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        work_tree: Option<String>,
        /// With `attempts:`: the try whose conversation this is (from 1).
        #[serde(rename = "try", default, skip_serializing_if = "Option::is_none")]
        try_no: Option<u32>,
    },
    /// A model request: the messages added since the previous request (all of them when the
    /// history was rewritten, `reset`, as compaction does), and the tools offered.
    Request {
        turn: u32,
        #[serde(default)]
        reset: bool,
        messages: Vec<Message>,
        tools: Vec<String>,
    },
    /// The answer to the turn's request.
    Response { turn: u32, message: Message, finish_reason: FinishReason, usage: Option<Usage>, model: Option<String> },
    /// The turn's model stayed unavailable after its retries (`kind`, a `ModelErrorKind`'s
    /// name): the run went on with the next model, `to`.
    ModelSwitched { turn: u32, from: String, to: String, kind: String },
    /// A tool call's result, as the model saw it.
    ToolResult { turn: u32, call_id: String, tool: String, ok: bool, content: String },
    /// A check's result (attempt 0 is the baseline).
    Check { attempt: u32, name: String, passed: bool, accepted: bool, exit_code: Option<i32>, output_tail: String },
}
