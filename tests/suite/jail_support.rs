//! Helpers shared by the jail attack suites of issue 10 (`jail_files`, `jail_processes`,
//! `jail_network`, `jail_secrets`): the job spec under a policy, scripted tool calls, and the tool
//! results the model was sent.
//!
//! Commands run as the model's code would: usually under `OPEN_POLICY` (default allow), so that
//! the command itself runs and only the jail can stop it. Scripts are written into the repository
//! with `write_file` and run with `sh`/`python3`, which no command analysis can see into.

// The Linux suites use every helper; the macOS one a few.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use crate::common::mock_model::{MockModel, Turn, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::json;

/// A name no other test (or earlier run) uses, for markers found by `ps` or on disk.
pub(super) fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}-{}-{nanos}", std::process::id())
}

/// The job spec (`job_yaml`) with `extra` appended and the policy written next to it.
pub(super) fn spec(repo: &TestRepo, name: &str, mock: &MockModel, policy: &str, extra: &str) -> String {
    with_policy(repo, &format!("{}{extra}", job_yaml(name, &mock.base_url, false)), policy)
}

/// Queue the ordinary fix and a final answer.
pub(super) fn fix(mock: &MockModel) {
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Set status.txt to fixed."), false);
}

pub(super) fn write(path: &str, content: &str) -> Turn {
    call("write_file", json!({"path": path, "content": content}))
}

pub(super) fn cmd(command: &str) -> Turn {
    call("run_cmd", json!({"command": command}))
}

/// The content of the tool results at the end of request `request` (the answers to the turn
/// before it), in call order.
pub(super) fn tool_results(mock: &MockModel, request: usize) -> Vec<String> {
    let reqs = mock.requests();
    let Some(r) = reqs.get(request) else { return vec![] };
    let msgs = r.body["messages"].as_array().cloned().unwrap_or_default();
    let mut out = Vec::new();
    for m in msgs.iter().rev() {
        if m["role"] != "tool" {
            break;
        }
        out.insert(0, m["content"].as_str().unwrap_or("").to_string());
    }
    out
}

/// The single tool result that answered turn `turn` (0-based), or a note that there was none.
pub(super) fn result_of(mock: &MockModel, turn: usize) -> String {
    tool_results(mock, turn + 1).pop().unwrap_or_else(|| format!("<no tool result for turn {turn}: the run ended>"))
}

/// Every tool result any request carried to the model.
pub(super) fn all_tool_results(mock: &MockModel) -> String {
    mock.requests()
        .iter()
        .flat_map(|r| {
            r.body["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap_or("").to_string())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// ROT13: how a probe disguises what it read, so that no redactor undoes it and what a command
/// read is what the model is sent.
pub(super) fn rot13(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='z' => (((c as u8 - b'a') + 13) % 26 + b'a') as char,
            'A'..='Z' => (((c as u8 - b'A') + 13) % 26 + b'A') as char,
            _ => c,
        })
        .collect()
}
