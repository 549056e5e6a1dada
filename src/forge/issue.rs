//! One issue's title and text, read from the forge a repository is on (`hone eval mine
//! --issues`: a task's text from the issue its fix closes), read by `<forge>/issue.rs` (dispatched in
//! `forge/mod.rs`): one GET through the forge's client (paced, timed, cancellable, the place's token only to the
//! place's API); what comes back is the forge's users' words: bounded, data only.

use crate::error::{Code, HoneError, Result};
use serde_json::Value;

/// The most of an issue's text kept (title and body each).
pub const MAX_TEXT: usize = 64 * 1024;

/// An issue as the forge described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub title: String,
    pub body: String,
}

/// The forge's answer for issue `number` read: its title and, under `text`, its body, each
/// bounded; `None` for an issue that is not there.
pub fn from_answer(forge: &str, number: u64, status: u16, body: &Value, text: &str) -> Result<Option<Issue>> {
    if status == 404 || status == 410 {
        return Ok(None);
    }
    if !(200..300).contains(&status) {
        return Err(HoneError::new(Code::Forge, format!("{forge} answered {status} for issue {number}")));
    }
    let field = |k: &str| -> String {
        let s = body.get(k).and_then(Value::as_str).unwrap_or_default();
        let mut end = s.len().min(MAX_TEXT);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s[..end].to_string()
    };
    Ok(Some(Issue { title: field("title"), body: field(text) }))
}
