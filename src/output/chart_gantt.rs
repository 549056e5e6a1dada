//! A Mermaid gantt: tasks in sections on a clock, for a run's timeline.
//!
//! In a gantt the task's text starts its line, where Mermaid reads keywords (`click`, `section`,
//! `excludes`, a date…). So a task's text is hone's own word (`kind`, a `&'static str`) and
//! then its [`label`](super::label), never the label alone.

use super::{fence, label};

/// How a task is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Plain,
    /// In red (`crit`): a check that failed, a state that ended the run badly.
    Failed,
    /// A point in time (a diamond), not a span.
    Milestone,
}

/// One bar: `kind` (hone's word) and `name` (any text) from `start_ms` to `end_ms`, counted
/// from the run's start.
#[derive(Debug, Clone)]
pub struct Task {
    pub kind: &'static str,
    pub name: String,
    pub start_ms: u64,
    pub end_ms: u64,
    pub mark: Mark,
}

/// A gantt chart being built: its title, when its clock starts (Unix milliseconds: the axis
/// shows the reader's local time of day), and its sections in order.
#[derive(Debug, Clone)]
pub struct Gantt {
    title: String,
    origin_ms: i64,
    sections: Vec<(&'static str, Vec<Task>)>,
}

impl Gantt {
    pub fn new(title: &str, origin_ms: i64) -> Self {
        Gantt { title: title.into(), origin_ms: origin_ms.max(0), sections: Vec::new() }
    }

    /// Add a section (left out when it has no task).
    pub fn section(&mut self, name: &'static str, tasks: Vec<Task>) {
        if !tasks.is_empty() {
            self.sections.push((name, tasks));
        }
    }

    /// The fenced block; `None` when no section has a task.
    pub fn render(&self) -> Option<String> {
        if self.sections.is_empty() {
            return None;
        }
        let mut body = format!("gantt\n    title {}\n    dateFormat x\n    axisFormat %H:%M:%S\n", label(&self.title));
        let mut id = 0;
        for (name, tasks) in &self.sections {
            body.push_str(&format!("    section {}\n", label(name)));
            for t in tasks {
                id += 1;
                let start = self.origin_ms.saturating_add(t.start_ms.min(i64::MAX as u64) as i64);
                let end = self.origin_ms.saturating_add(t.end_ms.max(t.start_ms).min(i64::MAX as u64) as i64);
                let tag = match t.mark {
                    Mark::Plain => "",
                    Mark::Failed => "crit, ",
                    Mark::Milestone => "milestone, ",
                };
                let text =
                    if t.name.is_empty() { label(t.kind) } else { format!("{} {}", label(t.kind), label(&t.name)) };
                body.push_str(&format!("    {text} :{tag}t{id}, {start}, {end}\n"));
            }
        }
        Some(fence(&body))
    }
}
