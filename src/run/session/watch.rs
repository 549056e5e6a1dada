//! Detects a model that has gone wrong: degenerate repetition inside one answer (long runs of
//! `{` or `[`, the same line over and over) and loops across turns (the same tool call getting
//! the same result again and again). Pure: the loop decides what to do (`watchdog.rs`).

use crate::protocol::Message;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

const BRACKET_RUN: usize = 50;
const SAME_LINE: usize = 8;
/// Identical call + result this many times in a row: warn the model.
pub const LOOP_WARN: usize = 3;
/// ... and this many: give up.
pub const LOOP_FAIL: usize = 5;

/// Why an answer is degenerate, if it is.
pub fn degenerate(m: &Message) -> Option<String> {
    let mut texts = vec![m.content.as_str()];
    texts.extend(m.tool_calls.iter().map(|c| c.arguments.as_str()));
    for t in texts {
        for b in ['{', '[', '}', ']'] {
            let mut run = 0;
            for c in t.chars().filter(|c| !c.is_whitespace()) {
                run = if c == b { run + 1 } else { 0 };
                if run >= BRACKET_RUN {
                    return Some(format!("a run of {BRACKET_RUN}+ `{b}`"));
                }
            }
        }
        let mut last = "";
        let mut count = 0;
        for line in t.lines().map(str::trim).filter(|l| l.len() >= 3) {
            count = if line == last { count + 1 } else { 1 };
            last = line;
            if count >= SAME_LINE {
                let shown: String = line.chars().take(60).collect();
                return Some(format!("the line `{shown}` repeated {SAME_LINE}+ times"));
            }
        }
    }
    None
}

/// The loop's watchdogs: identical tool calls in a row, and degenerate answers in a row.
#[derive(Default, Debug)]
pub struct Watch {
    pub loops: LoopDetector,
    /// Degenerate answers in a row (reset by a sound one).
    pub degenerate: u32,
    /// Answers in a row cut at the output limit before any text or tool call.
    pub cut: u32,
}

/// Answers cut at the output limit before saying anything, in a row, that end the run: the
/// limit is too low for the model's reasoning.
pub const CUT_FAIL: u32 = 3;

/// Counts identical consecutive tool calls with identical results.
#[derive(Default, Debug)]
pub struct LoopDetector {
    last: Option<u64>,
    streak: usize,
}

impl LoopDetector {
    /// Record one call and its result; returns the current streak of identical ones.
    pub fn record(&mut self, name: &str, args: &str, result: &str) -> usize {
        let mut h = DefaultHasher::new();
        (name, args, result).hash(&mut h);
        let key = h.finish();
        self.streak = if self.last == Some(key) { self.streak + 1 } else { 1 };
        self.last = Some(key);
        self.streak
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolCall;

    #[test]
    fn detects_bracket_runs_and_repeated_lines() {
        assert!(degenerate(&Message::assistant("fine answer {x: [1]}", vec![])).is_none());
        assert!(degenerate(&Message::assistant("{".repeat(60), vec![])).is_some());
        let call = ToolCall {
            id: "a".into(),
            name: "write_file".into(),
            arguments: format!("{{\"content\": \"{}\"}}", "[ ".repeat(80)),
        };
        assert!(degenerate(&Message::assistant("", vec![call])).is_some());
        let looped = "I will fix it.\n".repeat(10);
        assert!(degenerate(&Message::assistant(looped, vec![])).unwrap().contains("repeated"));
        let normal_code = (0..20).map(|i| format!("    x{i} = {i}\n")).collect::<String>();
        assert!(degenerate(&Message::assistant(normal_code, vec![])).is_none());
    }

    #[test]
    fn counts_identical_call_streaks() {
        let mut d = LoopDetector::default();
        assert_eq!(d.record("grep", "{}", "none"), 1);
        assert_eq!(d.record("grep", "{}", "none"), 2);
        assert_eq!(d.record("grep", "{}", "none"), 3);
        assert_eq!(d.record("grep", "{}", "one match"), 1, "a different result breaks the streak");
        assert_eq!(d.record("grep", "{}", "one match"), 2);
    }
}
