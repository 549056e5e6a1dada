//! The plan: steps with title, intent, status and expected files, a verification
//! strategy and a risk level; the `update_plan` and `request_clarification` tools the model uses;
//! and the scores that decide whether a checkpoint got worse. Pure: no I/O.

use crate::protocol::{Plan, Risk, Step, StepStatus, ToolSpec};
use crate::verify::CheckResult;
use serde::Deserialize;
use serde_json::json;

/// The `update_plan` arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanArgs {
    pub steps: Vec<Step>,
    #[serde(default)]
    pub verification: Option<String>,
    #[serde(default)]
    pub risk: Option<Risk>,
}

pub const MAX_STEPS: usize = 30;

/// Why `update_plan`'s plan was refused (the model's arguments: `Code::InvalidArgs`).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the plan was not updated: a plan has 1 to {MAX_STEPS} steps")]
    Steps,
    #[error("the plan was not updated: every step needs a title")]
    Untitled,
    #[error("the plan was not updated: at most one step can be in_progress")]
    InProgress,
}

impl Refused {
    pub fn code(&self) -> crate::error::Code {
        crate::error::Code::InvalidArgs
    }
}

impl PlanArgs {
    /// The same plan with every secret (in any registered form) masked.
    pub fn redacted(self, r: &crate::redact::Redactor) -> PlanArgs {
        let steps = self
            .steps
            .into_iter()
            .map(|s| Step {
                title: r.apply(&s.title),
                intent: r.apply(&s.intent),
                expected_files: s.expected_files.iter().map(|f| r.apply(f)).collect(),
                ..s
            })
            .collect();
        PlanArgs { steps, verification: self.verification.map(|v| r.apply(&v)), risk: self.risk }
    }
}

impl Plan {
    /// Replace the plan; returns the titles of steps that became done with this update.
    pub fn update(&mut self, a: PlanArgs) -> Result<Vec<String>, Refused> {
        if a.steps.is_empty() || a.steps.len() > MAX_STEPS {
            return Err(Refused::Steps);
        }
        if a.steps.iter().any(|s| s.title.trim().is_empty()) {
            return Err(Refused::Untitled);
        }
        if a.steps.iter().filter(|s| s.status == StepStatus::InProgress).count() > 1 {
            return Err(Refused::InProgress);
        }
        let newly_done = a
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Done)
            .filter(|s| !self.steps.iter().any(|o| o.title == s.title && o.status == StepStatus::Done))
            .map(|s| s.title.clone())
            .collect();
        self.steps = a.steps;
        if let Some(v) = a.verification {
            self.verification = v;
        }
        if let Some(r) = a.risk {
            self.risk = r;
        }
        self.updates += 1;
        Ok(newly_done)
    }

    pub fn render(&self) -> String {
        self.render_with(str::to_string)
    }

    /// `render` for markdown people read (the PR body, summary.md): the step titles (the
    /// model's words) made inert, one line each.
    pub fn render_md(&self) -> String {
        self.render_with(crate::markdown::inline)
    }

    fn render_with(&self, title: impl Fn(&str) -> String) -> String {
        let mut s = String::new();
        for (i, st) in self.steps.iter().enumerate() {
            let mark = match st.status {
                StepStatus::Done => "[x]",
                StepStatus::InProgress => "[>]",
                StepStatus::Blocked => "[!]",
                StepStatus::Skipped => "[-]",
                StepStatus::Pending => "[ ]",
            };
            s.push_str(&format!("{}. {mark} {}\n", i + 1, title(&st.title)));
        }
        s
    }
}

/// How bad a set of check results is: (checks not accepted, failing tests). Lower is better.
pub fn score(results: &[CheckResult]) -> (usize, usize) {
    let failing = results.iter().filter(|r| !r.accepted).count();
    let tests = results
        .iter()
        .map(|r| match (&r.failing, &r.failing_tests) {
            (Some(f), _) => f.count(),
            (None, Some(shown)) => shown.len(),
            (None, None) => usize::from(!r.passed),
        })
        .sum();
    (failing, tests)
}

pub fn specs(job: &crate::spec::Job) -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "update_plan".into(),
            description: "Set or update your plan: the full list of steps with their status. Call it first, then again whenever a step starts or finishes. When a step is marked done, hone checks the work and keeps a checkpoint.".into(),
            parameters: json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["steps"],
                "properties": {
                    "steps": {"type": "array", "description": "Every step, in order", "items": {
                        "type": "object", "additionalProperties": false, "required": ["title", "status"],
                        "properties": {
                            "title": {"type": "string", "description": "What the step does, briefly"},
                            "intent": {"type": "string", "description": "Why the step is needed"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "done", "blocked", "skipped"], "description": "The step's status"},
                            "expected_files": {"type": "array", "items": {"type": "string"}, "description": "Files the step will change"}
                        }
                    }},
                    "verification": {"type": "string", "description": "How the work will be verified"},
                    "risk": {"type": "string", "enum": ["low", "medium", "high"], "description": "The risk of the change"}
                }
            }),
        },
        ToolSpec {
            name: "request_clarification".into(),
            description: "Stop because the task is too ambiguous to do without guessing. Ask the questions a person must answer; the run ends and reports them.".into(),
            parameters: json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["questions"],
                "properties": {"questions": {"type": "array", "items": {"type": "string"}, "description": "1 to 3 precise questions"}}
            }),
        },
        finish_spec(job),
    ]
}

/// `finish`, with the job's answer (`result`, as `output.schema` says) when it has an `output:`.
fn finish_spec(job: &crate::spec::Job) -> ToolSpec {
    use crate::spec::answer::Change;
    let summary = match job.change {
        Change::None => "Your answer in words: what you found and why, in a few sentences",
        Change::Review => "What you changed and why, in a few sentences (it becomes the review's summary)",
        Change::Commit => "What you changed and why, in a few sentences (it becomes the commit message)",
    };
    let mut properties = json!({
        "outcome": {"type": "string", "enum": ["done", "blocked"], "description": "done, or blocked when the task cannot be done"},
        "summary": {"type": "string", "description": summary},
        "reason": {"type": "string", "description": "For blocked: what stops the task, and what a person would need to do"}
    });
    let mut description = match job.change {
        Change::None => "End your work with your answer. `done`: you have the answer. `blocked`: the task cannot be done here; give the reason. This job is read-only: change nothing.".to_string(),
        _ => "End your work. `done`: the task is done; hone then runs the checks (and you may get their failures to fix). `blocked`: the task cannot be done here; give the reason, and the run ends as failed with your work saved for a person.".to_string(),
    };
    if let Some(out) = &job.output {
        let mut schema = out.schema.clone();
        if let Some(o) = schema.as_object_mut() {
            o.entry("description").or_insert_with(|| {
                json!("The task's answer, exactly as this schema requires (required with outcome done)")
            });
        }
        properties["result"] = schema;
        description.push_str(" With `done`, give `result`: the task's answer, which must satisfy its schema; hone checks it and tells you what to correct.");
    }
    ToolSpec {
        name: "finish".into(),
        description,
        parameters: json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["outcome", "summary"],
            "properties": properties,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(title: &str, status: StepStatus) -> Step {
        Step { title: title.into(), intent: String::new(), status, expected_files: vec![] }
    }

    #[test]
    fn updates_report_newly_done_steps_and_validate() {
        let mut p = Plan::default();
        let done = p
            .update(PlanArgs {
                steps: vec![step("a", StepStatus::InProgress), step("b", StepStatus::Pending)],
                verification: Some("tests".into()),
                risk: Some(Risk::Medium),
            })
            .unwrap();
        assert!(done.is_empty());
        let done = p
            .update(PlanArgs {
                steps: vec![step("a", StepStatus::Done), step("b", StepStatus::InProgress)],
                verification: None,
                risk: None,
            })
            .unwrap();
        assert_eq!(done, ["a"]);
        assert_eq!((p.updates, p.risk, p.verification.as_str()), (2, Risk::Medium, "tests"));
        let again = p
            .update(PlanArgs {
                steps: vec![step("a", StepStatus::Done), step("b", StepStatus::Done)],
                verification: None,
                risk: None,
            })
            .unwrap();
        assert_eq!(again, ["b"]);
        assert_eq!(p.update(PlanArgs { steps: vec![], verification: None, risk: None }), Err(Refused::Steps));
        let two = PlanArgs {
            steps: vec![step("x", StepStatus::InProgress), step("y", StepStatus::InProgress)],
            verification: None,
            risk: None,
        };
        assert_eq!(p.update(two), Err(Refused::InProgress));
        let untitled = PlanArgs { steps: vec![step(" ", StepStatus::Pending)], verification: None, risk: None };
        assert_eq!(p.update(untitled).map_err(|e| e.code()), Err(crate::error::Code::InvalidArgs));
        assert_eq!(p.render(), "1. [x] a\n2. [x] b\n");
    }
}
