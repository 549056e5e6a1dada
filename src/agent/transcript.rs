//! Keeping the run's transcript (`protocol::transcript`): the loop notes each request, answer,
//! tool result and check as it happens; `output` writes it out, redacted.

use super::turns::Loop;
use crate::protocol::transcript::{Entry, VERSION};
use crate::protocol::{Message, Reply};

impl Loop<'_> {
    /// A request: the messages added since the last one (all, when the history was rewritten).
    pub(super) fn note_request(&mut self, turn: u32, previous: &[Message], messages: &[Message], tools: &[String]) {
        let (new, reset) = crate::protocol::transcript::new_since(previous, messages);
        self.run.transcript.push(Entry::Request { turn, reset, messages: new.to_vec(), tools: tools.to_vec() });
    }

    pub(super) fn note_reply(&mut self, turn: u32, r: &Reply) {
        self.run.transcript.push(Entry::Response {
            turn,
            message: r.message.clone(),
            finish_reason: r.finish_reason.clone(),
            usage: r.usage,
            model: r.model.clone(),
        });
    }

    pub(super) fn note_tool(&mut self, turn: u32, call_id: &str, tool: &str, ok: bool, content: &str) {
        let (call_id, tool, content) = (call_id.to_string(), tool.to_string(), content.to_string());
        self.run.transcript.push(Entry::ToolResult { turn, call_id, tool, ok, content });
    }

    pub(super) fn note_checks(&mut self, results: &[crate::verify::CheckResult]) {
        for c in results {
            self.run.transcript.push(Entry::Check {
                attempt: c.attempt,
                name: c.name.clone(),
                passed: c.passed,
                accepted: c.accepted,
                exit_code: c.exit_code,
                output_tail: c.output_tail.clone(),
            });
        }
    }
}

/// The header line of a run's transcript.
pub fn header(run: &super::run::Run, job: &crate::spec::Job, policy: &crate::policy::Policy) -> Entry {
    let (m, spec) = (&run.record, &job.spec_path);
    Entry::Header {
        version: VERSION,
        hone_version: env!("CARGO_PKG_VERSION").into(),
        job: m.job.clone(),
        task: job.task.clone(),
        run_id: m.run_id.clone(),
        spec: std::fs::canonicalize(spec).unwrap_or_else(|_| spec.to_path_buf()).display().to_string(),
        repo: m.repo.clone(),
        base_sha: m.base_sha.clone(),
        provider: m.provider.clone(),
        model: m.model.clone(),
        continued_from: m.continued_from.clone(),
        spec_sha256: Some(job.spec_sha256.clone()),
        policy_sha256: policy.sha256.clone(),
    }
}
