//! The job's answer: `finish`'s `result` checked against the job's `output:` schema. An invalid
//! one goes back to the model with the validation errors, within the run's budgets, until
//! `output.max_attempts` results were given; then the run fails with the last errors.

use super::turns::Loop;
use crate::error::Code;
use crate::protocol::{Event, ToolOutput};
use crate::record::answer::OutputCheck;
use crate::redact::Redactor;
use serde_json::Value;

impl Loop<'_> {
    /// Check the result of a `finish` with outcome `done` (`None`: it gave none). `Ok` with the
    /// accepted (redacted) result, or with `None` when the job has no schema; `Err` with the tool
    /// result that tells the model what to correct.
    pub(super) fn check_answer(&mut self, turn: u32, result: Option<Value>) -> Result<Option<Value>, ToolOutput> {
        let Some(out) = self.s.job.output.as_ref() else { return Ok(None) };
        let red = &self.tools.redactor;
        let check = self
            .run
            .record
            .output_check
            .get_or_insert_with(|| OutputCheck { schema: out.source.clone(), ..Default::default() });
        check.attempts += 1;
        let attempt = check.attempts;
        let verdict = match &result {
            None => Err(vec!["`result` is missing: with outcome `done`, give the task's answer as `result`".into()]),
            Some(v) if depth(v) > MAX_DEPTH => {
                Err(vec![format!("at /: nested deeper than {MAX_DEPTH} levels; give a flatter answer")])
            }
            Some(v) => out.check(v),
        };
        match verdict {
            Ok(()) => {
                let v = redact_value(red, result.unwrap_or_default());
                (check.valid, check.errors, check.rejected) = (true, vec![], None);
                self.lane.events.emit(Event::OutputAccepted { turn, attempt, result: v.clone() });
                Ok(Some(v))
            }
            Err(errors) => {
                // The answer is the last one given: an earlier valid one no longer stands.
                self.run.record.output = None;
                let errors: Vec<String> = errors.iter().map(|e| red.apply(e)).collect();
                (check.valid, check.errors) = (false, errors.clone());
                check.rejected = result.map(|v| redact_value(red, v));
                self.lane.events.emit(Event::OutputRejected { turn, attempt, errors: errors.clone() });
                let left = out.max_attempts.saturating_sub(attempt);
                let list = errors.iter().map(|e| format!("- {e}")).collect::<Vec<_>>().join("\n");
                if left == 0 {
                    self.answer_exhausted = true;
                    return Err(ToolOutput::err(
                        Code::Output,
                        format!(
                            "Your `result` does not satisfy the job's output schema, and no attempts are left; the run ends:\n{list}"
                        ),
                    ));
                }
                Err(ToolOutput::err(
                    Code::InvalidArgs,
                    format!(
                        "Your `result` does not satisfy the job's output schema (attempt {attempt} of {}):\n{list}\nCall `finish` again with a corrected `result`.",
                        out.max_attempts
                    ),
                ))
            }
        }
    }

    /// The answer never satisfied the schema: the run's error, with the last problems.
    pub(super) fn answer_failed(&mut self) {
        let check = self.run.record.output_check.clone().unwrap_or_default();
        let shown: Vec<String> = check.errors.iter().take(5).cloned().collect();
        self.fail(
            Code::Output,
            format!(
                "the answer did not satisfy the job's output schema ({}) after {} attempt(s): {}",
                check.schema,
                check.attempts,
                shown.join("; ")
            ),
        );
    }

    /// A plain text answer in a job that wants a `result`: ask for `finish`, as an attempt.
    /// `false` when the attempts are used up.
    pub(super) fn ask_for_result(&mut self, turn: u32) -> bool {
        match self.check_answer(turn, None) {
            Ok(_) => true,
            Err(out) if !self.answer_exhausted => {
                self.messages.push(crate::protocol::Message::user(format!(
                    "{}\n(You answered in text: this job's answer must come through `finish`.)",
                    out.content
                )));
                true
            }
            Err(_) => false,
        }
    }
}

/// The deepest an answer may nest: reports and `fleet.json` hold it a few levels down, and must
/// stay readable (serde_json reads 128 levels).
const MAX_DEPTH: usize = 32;

/// How deep `v` nests (a scalar is 0), counted without recursion.
fn depth(v: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        deepest = deepest.max(d);
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|x| (x, d + 1))),
            Value::Object(o) => stack.extend(o.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    deepest
}

/// `v` with every string (keys too) redacted: the answer reaches reports, outputs and PRs.
pub fn redact_value(r: &Redactor, v: Value) -> Value {
    match v {
        Value::String(s) => Value::String(r.apply(&s)),
        Value::Array(a) => Value::Array(a.into_iter().map(|x| redact_value(r, x)).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, x)| (r.apply(&k), redact_value(r, x))).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn depth_counts_every_level() {
        let mut v = serde_json::json!(1);
        for i in 0..40 {
            v = if i % 2 == 0 { serde_json::json!([v]) } else { serde_json::json!({"k": v}) };
        }
        assert_eq!(super::depth(&v), 40);
        assert_eq!(super::depth(&serde_json::json!({"a": [1, {"b": 2}], "c": 3})), 3);
    }

    #[test]
    fn every_string_of_an_answer_is_redacted_keys_too() {
        let r = crate::redact::Redactor::new();
        r.add("sk-answer-canary-0123456789");
        let v = serde_json::json!({"sk-answer-canary-0123456789": ["x sk-answer-canary-0123456789", 3, {"k": "sk-answer-canary-0123456789"}]});
        let out = super::redact_value(&r, v).to_string();
        assert!(!out.contains("sk-answer-canary"), "{out}");
        assert!(out.contains('3'));
    }
}
