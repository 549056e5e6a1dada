//! The job's hooks around the model's edits (`hooks:`): `after_edit` after each successful write
//! tool, `before_verify` before each verification round. Each runs in the run's jail, is checked
//! against the command policy, and is recorded; what it changes in the files it was given is
//! shown to the model as a short diff, so that the model's view of those files stays true.

use super::turns::Loop;
use crate::protocol::Event;
use crate::record::HookRecord;
use crate::spec::CommandSpec;
use std::fmt::Write as _;

/// How much of a hook's diff (lines, bytes) and failing output (lines) the model is shown.
const DIFF_LINES: usize = 40;
const DIFF_BYTES: usize = 4000;
const TAIL_LINES: usize = 15;
/// The most bytes (old and new content together) one hook's diffs are computed from: a line
/// diff of two large files with many changes takes minutes (hours on the 64 MiB a read allows),
/// on the run's own thread, past its wall time. Past this, the model is told the sizes.
const DIFF_INPUT: usize = 512 * 1024;

/// `files`, each as `./path` (so that no name reads as an option) quoted for a POSIX shell,
/// space-separated.
pub fn quote_all(files: &[String]) -> String {
    files.iter().map(|f| format!("'./{}'", f.replace('\'', r"'\''"))).collect::<Vec<_>>().join(" ")
}

/// The unified diff of `rel` from `old` to `new`, at most `DIFF_LINES` lines.
fn short_diff(rel: &str, old: &[u8], new: &[u8]) -> String {
    let patch =
        git2::Patch::from_buffers(old, Some(std::path::Path::new(rel)), new, Some(std::path::Path::new(rel)), None);
    let text = patch.and_then(|mut p| p.to_buf()).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    let mut shown = 0;
    for l in &lines {
        // A minified file's single line must not fill the model's context either.
        if shown == DIFF_LINES || out.len() + l.len() > DIFF_BYTES {
            break;
        }
        out.push_str(l);
        out.push('\n');
        shown += 1;
    }
    if shown < lines.len() {
        let _ = write!(out, "[... {} more diff lines; read the file to see it all]", lines.len() - shown);
    }
    out.trim_end().to_string()
}

impl Loop<'_> {
    /// After a write tool changed `files`: the `after_edit` hooks. Returns what to append to the
    /// tool's result ("" when every hook passed and changed nothing).
    pub(super) async fn after_edit(&mut self, turn: u32, files: &[String]) -> String {
        let hooks = self.s.job.hooks.after_edit.clone();
        self.run_hooks("after_edit", turn, &hooks, files).await
    }

    /// Before verification round `turn`: the `before_verify` hooks, given the change's files.
    pub(super) async fn before_verify(&mut self, turn: u32) -> String {
        if self.s.job.hooks.before_verify.is_empty() {
            return String::new();
        }
        // The change's files that exist, counted no further than the policy allows (a larger
        // change is refused anyway; its names would not fit a command line).
        let cap = self.tools.policy.max_files_changed;
        let root = self.lane.ws.root().to_path_buf();
        let files: Vec<String> = self
            .lane
            .ws
            .blocking(move |ws| ws.count_changed(cap, u64::MAX))
            .await
            .map(|c| c.files.into_iter().filter(|f| std::fs::symlink_metadata(root.join(f)).is_ok()).collect())
            .unwrap_or_default();
        let hooks = self.s.job.hooks.before_verify.clone();
        self.run_hooks("before_verify", turn, &hooks, &files).await
    }

    async fn run_hooks(&mut self, kind: &str, turn: u32, hooks: &[CommandSpec], files: &[String]) -> String {
        let mut note = String::new();
        // A hook made for some files is not run with none: `fmt {files}` would mean everything.
        for h in hooks.iter().filter(|h| !files.is_empty() || !h.run.contains("{files}")) {
            note.push_str(&self.run_hook(kind, turn, h, files).await);
        }
        note
    }

    /// One hook: the policy's word, the run, the record, and the note for the model.
    async fn run_hook(&mut self, kind: &str, turn: u32, h: &CommandSpec, files: &[String]) -> String {
        let cmd = h.run.replace("{files}", &quote_all(files));
        let mut rec =
            HookRecord { kind: kind.into(), name: h.name.clone(), turn, command: cmd.clone(), ..HookRecord::default() };
        let decision = crate::policy::decide_command(&self.tools.policy, &cmd);
        let note = if !decision.allowed {
            rec.denied = Some(decision.rule.clone());
            format!("\n[hook `{}` was not run: the policy denies `{}` ({})]", h.name, decision.subject, decision.rule)
        } else {
            self.execute_hook(h, &cmd, files, &mut rec).await
        };
        self.lane.events.emit(Event::HookCompleted {
            kind: rec.kind.clone(),
            name: rec.name.clone(),
            passed: rec.passed,
            exit_code: rec.exit_code,
            timed_out: rec.timed_out,
            changed: rec.changed.clone(),
            duration_ms: rec.duration_ms,
        });
        self.run.record.hooks.push(rec);
        self.tools.redactor.apply(&note)
    }

    async fn execute_hook(&mut self, h: &CommandSpec, cmd: &str, files: &[String], rec: &mut HookRecord) -> String {
        let root = self.tools.root.path().to_path_buf();
        // What the hook changed is shown to the model: read only what it may read.
        let read = |rel: &String| {
            let dir = crate::tools::beneath::open_root(&root).ok()?;
            let f = self.tools.open_readable(&dir, rel).ok()?;
            crate::tools::beneath::read_whole(f, rel).ok()
        };
        let before: Vec<Option<Vec<u8>>> = files.iter().map(read).collect();
        let timeout = h.timeout.min(self.lane.bound.deadline.saturating_duration_since(tokio::time::Instant::now()));
        let cap = self.tools.limits.max_output_bytes;
        let out =
            crate::exec::run(cmd, &root, &self.tools.env, timeout, cap, &self.tools.bound.cancel, &self.tools.sandbox)
                .await;
        let mut note = String::new();
        match out {
            Ok(o) => {
                (rec.exit_code, rec.duration_ms, rec.timed_out) =
                    (o.exit_code, o.duration.as_millis() as u64, o.timed_out);
                rec.passed = o.exit_code == Some(0) && !o.timed_out;
                if !rec.passed {
                    let tail: Vec<&str> = o.output.lines().rev().take(TAIL_LINES).collect();
                    let how = match (o.timed_out, o.exit_code) {
                        (true, _) => "timed out".to_string(),
                        (_, Some(c)) => format!("exit {c}"),
                        _ => "killed by a signal".into(),
                    };
                    let tail = tail.into_iter().rev().collect::<Vec<_>>().join("\n");
                    let _ = write!(note, "\n[hook `{}` failed ({how}):\n{tail}\n]", h.name);
                }
            }
            Err(e) => {
                let _ = write!(note, "\n[hook `{}` could not run: {e}]", h.name);
            }
        }
        let mut budget = DIFF_INPUT;
        for (rel, old) in files.iter().zip(before) {
            let new = read(rel);
            if new != old {
                rec.changed.push(rel.clone());
                if rec.kind == "after_edit"
                    && let Ok(mut log) = self.tools.changes.lock()
                {
                    log.amend_last(rel, new.clone());
                }
                let (old, new) = (old.as_deref().unwrap_or_default(), new.as_deref().unwrap_or_default());
                if old.len() + new.len() > budget {
                    let _ = write!(
                        note,
                        "\n[hook `{}` changed {rel} ({} bytes before, {} now; too large to diff here): read the file to see it]",
                        h.name,
                        old.len(),
                        new.len()
                    );
                    continue;
                }
                budget -= old.len() + new.len();
                let diff = short_diff(rel, old, new);
                let _ = write!(
                    note,
                    "\n[hook `{}` changed {rel}; the file is now as this diff leaves it:\n{diff}\n]",
                    h.name
                );
            }
        }
        note
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_quoted_so_no_name_can_run_anything() {
        let files = vec!["a b.py".to_string(), "x';touch pwned;'.py".to_string(), "$(id).py".to_string()];
        let q = quote_all(&files);
        assert_eq!(q, r"'./a b.py' './x'\'';touch pwned;'\''.py' './$(id).py'");
        // The shell hands the names back exactly, one argument each.
        let out = std::process::Command::new("sh").arg("-c").arg(format!("printf '%s\\n' {q}")).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "./a b.py\n./x';touch pwned;'.py\n./$(id).py\n");
    }

    #[test]
    fn the_diff_is_short_and_says_when_it_is_cut() {
        let d = short_diff("a.py", b"x=1\n", b"x = 1\n");
        assert!(d.contains("-x=1") && d.contains("+x = 1") && d.contains("a.py"), "{d}");
        let old: String = (0..100).map(|i| format!("{i}\n")).collect();
        let long = short_diff("b.txt", old.as_bytes(), b"");
        assert!(long.lines().count() <= DIFF_LINES + 1 && long.contains("more diff lines"), "{long}");
        let minified = "x".repeat(100_000);
        let wide = short_diff("m.js", b"", minified.as_bytes());
        assert!(wide.len() < DIFF_BYTES + 100 && wide.contains("more diff lines"), "{}", wide.len());
    }
}
