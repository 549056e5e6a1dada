//! A second attempt (`hone run --continue REF|REPORT_DIR`), as intake finds it: the work a failed
//! run saved (applied after the baseline, by the environment stage) and, given the failed run's
//! report dir, that run's conversation, from its transcript.

use crate::error::{Code, HoneError};
use crate::git::{Saved, Workspace};
use crate::protocol::transcript::Entry;
use crate::protocol::{Message, Role};
use std::path::Path;

/// The saved work to go on from, and (from a report dir) the conversation that made it.
pub struct Resumed {
    pub saved: Saved,
    /// The failed run's messages, its system prompt left out (this run has its own).
    pub history: Vec<Message>,
}

/// What `--continue ARG` names: the ref of the saved work, and the conversation that made it
/// (empty when `ARG` named the ref itself).
pub struct Named {
    pub refname: String,
    pub history: Vec<Message>,
}

/// What `--continue ARG` names, read before anything else (a report dir is cleared for this run's
/// reports): a ref (`failed` for `refs/hone/{job}/failed`), or a failed run's report dir, whose
/// `report.json` names the ref and whose `transcript.jsonl` gives the conversation.
pub fn read(arg: &str) -> Result<Named, HoneError> {
    let dir = Path::new(arg);
    // `failed` and `refs/…` are refs, whatever the current directory holds: a repository could
    // commit a `failed/` with a report and a made-up conversation.
    if is_ref_spelling(arg) || !dir.join("report.json").is_file() {
        return Ok(Named { refname: arg.to_string(), history: vec![] });
    }
    // The report dir is reached as given (the user named it); its file is read only if it is a
    // regular file, never through a symlink or from a FIFO, and at most 64 MB of it.
    let unreadable =
        |why: String| HoneError::new(Code::Io, format!("cannot read {}/report.json: {why}", dir.display()));
    let text = std::fs::File::open(dir)
        .and_then(|d| crate::safe_fs::read_regular_at(&d, "report.json", 64 << 20))
        .map_err(|e| unreadable(e.to_string()))?;
    let report: crate::record::RunRecord =
        serde_json::from_slice(&text).map_err(|e| unreadable(format!("not a report hone wrote ({e})")))?;
    let Some(refname) = report.saved_ref.as_deref() else {
        let msg =
            format!("the run reported in {} saved no work to continue from (its `saved_ref` is null)", dir.display());
        return Err(HoneError::new(Code::Git, msg));
    };
    // A report dir is data (perhaps a downloaded artifact): it can only name a ref a failed run
    // of hone saves, never another revision (`main`, `HEAD~3`, a PR's branch).
    if !is_saved_ref(refname) {
        let msg = format!(
            "{}/report.json names `{refname}` as its saved work, which is not a ref hone saves (refs/hone/<job>/failed); name the ref itself with --continue if you mean it",
            dir.display()
        );
        return Err(HoneError::new(Code::Git, msg));
    }
    let entries = crate::output::transcript::read(dir)?;
    Ok(Named { refname: refname.to_string(), history: conversation(&entries) })
}

/// Whether `arg` names a ref (`failed`, `refs/…`), never a report dir.
fn is_ref_spelling(arg: &str) -> bool {
    arg == "failed" || arg.starts_with("refs/")
}

/// Whether `name` is a ref of the form a failed run saves its work on: `refs/hone/<job>/failed`,
/// with a valid job name.
fn is_saved_ref(name: &str) -> bool {
    name.strip_prefix("refs/hone/").and_then(|r| r.strip_suffix("/failed")).is_some_and(crate::spec::valid_name)
}

/// The saved work `read` named, found in the repository.
pub fn find(ws: &Workspace, named: Named, job: &crate::spec::Job) -> Result<Resumed, HoneError> {
    if job.repo.scratch {
        let msg = "`--continue` does not work with `repo.scratch: true`: the scratch repository (and the work saved in it) is made again for each run; run the second attempt on a repository of its own";
        return Err(HoneError::new(Code::Git, msg));
    }
    Ok(Resumed { saved: ws.find_saved(&named.refname, &job.name)?, history: named.history })
}

/// The conversation a transcript records, as the model last saw it, with the last answer and
/// its tool results; without system messages.
pub fn conversation(entries: &[Entry]) -> Vec<Message> {
    let mut msgs: Vec<Message> = Vec::new();
    // Each request holds what came since the one before (the answer and its results): the
    // requests alone make the history, and what followed the last one is added after.
    let last = entries.iter().rposition(|e| matches!(e, Entry::Request { .. }));
    for (i, e) in entries.iter().enumerate() {
        let after_last = last.is_none_or(|l| i > l);
        match e {
            Entry::Request { reset: true, messages, .. } => msgs = messages.clone(),
            Entry::Request { messages, .. } => msgs.extend(messages.iter().cloned()),
            Entry::Response { message, .. } if after_last => msgs.push(message.clone()),
            Entry::ToolResult { call_id, content, .. } if after_last => {
                msgs.push(Message::tool(call_id.clone(), content.clone()));
            }
            _ => {}
        }
    }
    msgs.retain(|m| m.role != Role::System);
    msgs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{FinishReason, ToolCall};

    #[test]
    fn a_report_dir_names_only_a_saved_ref() {
        for ok in ["refs/hone/fix-bug/failed", "refs/hone/a.b_c/failed"] {
            assert!(is_saved_ref(ok), "{ok}");
        }
        for bad in [
            "main",
            "HEAD~3",
            "refs/hone//failed",
            "refs/hone/x/failed^{/evil}",
            "refs/heads/failed",
            ":/text",
            "refs/hone/../heads/x/failed",
        ] {
            assert!(!is_saved_ref(bad), "{bad}");
        }
    }

    #[test]
    fn the_conversation_comes_back_once_in_order() {
        let call = ToolCall { id: "c1".into(), name: "read_file".into(), arguments: "{}".into() };
        let a1 = Message::assistant("", vec![call]);
        let a2 = Message::assistant("I give up", vec![]);
        let resp = |m: &Message| Entry::Response {
            turn: 1,
            message: m.clone(),
            finish_reason: FinishReason::Stop,
            usage: None,
            model: None,
        };
        let entries = vec![
            Entry::Request {
                turn: 1,
                reset: false,
                messages: vec![Message::system("s"), Message::user("go")],
                tools: vec![],
            },
            resp(&a1),
            Entry::ToolResult {
                turn: 1,
                call_id: "c1".into(),
                tool: "read_file".into(),
                ok: true,
                content: "text".into(),
            },
            Entry::Request {
                turn: 2,
                reset: false,
                messages: vec![a1.clone(), Message::tool("c1", "text")],
                tools: vec![],
            },
            resp(&a2),
        ];
        let got = conversation(&entries);
        let roles: Vec<Role> = got.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
        assert_eq!(got[3].content, "I give up");
    }
}
