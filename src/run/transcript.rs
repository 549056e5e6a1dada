//! The run's transcript (`protocol::transcript`): each request, answer, tool result and check is
//! noted as it happens; `output` writes it out, redacted.

use crate::protocol::transcript::{Entry, VERSION};
use crate::protocol::{Message, Reply};

#[derive(Default, Clone)]
pub struct Transcript {
    entries: Vec<Entry>,
    /// Where the conversation's work tree was, when it is not the checkout (a try's worktree).
    pub work_tree: Option<String>,
    /// The try whose conversation this is (`attempts:`).
    pub try_no: Option<u32>,
}

impl Transcript {
    /// A request: the messages added since the last one (all, when the history was rewritten).
    pub fn request(&mut self, turn: u32, previous: &[Message], messages: &[Message], tools: &[String]) {
        let (new, reset) = crate::protocol::transcript::new_since(previous, messages);
        self.entries.push(Entry::Request { turn, reset, messages: new.to_vec(), tools: tools.to_vec() });
    }

    pub fn reply(&mut self, turn: u32, r: &Reply) {
        self.entries.push(Entry::Response {
            turn,
            message: r.message.clone(),
            finish_reason: r.finish_reason.clone(),
            usage: r.usage,
            model: r.model.clone(),
        });
    }

    pub fn switched(&mut self, turn: u32, from: &str, to: &str, kind: crate::protocol::ModelErrorKind) {
        let (from, to, kind) = (from.to_string(), to.to_string(), kind.as_str().to_string());
        self.entries.push(Entry::ModelSwitched { turn, from, to, kind });
    }

    pub fn tool(&mut self, turn: u32, call_id: &str, tool: &str, ok: bool, content: &str) {
        let (call_id, tool, content) = (call_id.to_string(), tool.to_string(), content.to_string());
        self.entries.push(Entry::ToolResult { turn, call_id, tool, ok, content });
    }

    pub fn checks(&mut self, results: &[crate::verify::CheckResult]) {
        for c in results {
            self.entries.push(Entry::Check {
                attempt: c.attempt,
                name: c.name.clone(),
                passed: c.passed,
                accepted: c.accepted,
                exit_code: c.exit_code,
                output_tail: c.output_tail.clone(),
            });
        }
    }

    /// Everything said, after the header of the run's record.
    pub fn with_header(
        self,
        record: &crate::record::RunRecord,
        job: &crate::spec::Job,
        policy: &crate::policy::Policy,
    ) -> Vec<Entry> {
        let mut all = vec![header(record, job, policy, self.work_tree.as_deref(), self.try_no)];
        all.extend(self.entries);
        all
    }
}

/// The header line of a run's transcript.
fn header(
    m: &crate::record::RunRecord,
    job: &crate::spec::Job,
    policy: &crate::policy::Policy,
    work_tree: Option<&str>,
    try_no: Option<u32>,
) -> Entry {
    let spec = &job.spec_path;
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
        instructions_commit: m.instructions_commit.clone(),
        work_tree: work_tree.map(str::to_string),
        try_no,
    }
}
