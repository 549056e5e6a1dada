//! The checks around every run of the suite: before it, what its spec says (the checks'
//! JUnit files, the mock that serves it, a fleet's workspace); after it, that a successful run
//! committed the model's change and nothing else (`commits`).

use super::run::Run;
use super::{Need, commits, mock_model};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The file a `run`/`validate`/`fleet` command line names (its first positional argument).
pub fn spec_arg(args: &[String]) -> Option<String> {
    const TAKES_VALUE: &[&str] = &[
        "--repo",
        "--report-dir",
        "--task",
        "--model",
        "--name",
        "--verify",
        "--pr",
        "--only",
        "--emit-matrix",
        "--shard",
        "--out",
    ];
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        if TAKES_VALUE.contains(&a.as_str()) {
            it.next();
        } else if !a.starts_with('-') {
            return Some(a.clone());
        }
    }
    None
}

/// The value of the first `key:` line in a YAML file's text (unquoted).
fn yaml_value(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let v = l.trim_start().strip_prefix(key)?.strip_prefix(':')?.trim();
        Some(v.trim_matches(['"', '\'']).to_string())
    })
}

/// What the run helper learns before a run: the spec's checks and the mock that serves it.
pub(super) struct Before {
    ctx: commits::RunContext,
    mock: Option<(std::sync::Arc<mock_model::Shared>, usize)>,
    fleet_workspace: Option<PathBuf>,
}

pub(super) fn before_run(cwd: &Path, args: &[String], env: &[(String, String)]) -> Before {
    let mut b = Before { ctx: Default::default(), mock: None, fleet_workspace: None };
    let command = args.first().map(String::as_str);
    let file = spec_arg(args).map(|f| cwd.join(f));
    let text = file.as_ref().and_then(|f| std::fs::read_to_string(f).ok()).unwrap_or_default();
    match command {
        Some("run") => {
            b.ctx = commits::RunContext::from_spec(&text);
            let url = yaml_value(&text, "base_url").or_else(|| {
                env.iter().find(|(k, _)| k == "OPENAI_BASE_URL" || k == "ANTHROPIC_BASE_URL").map(|(_, v)| v.clone())
            });
            if let Some(m) = url.as_deref().and_then(mock_model::served_by) {
                let n = m.served().len();
                b.mock = Some((m, n));
            }
        }
        Some("fleet") if !matches!(args.get(1).map(String::as_str), Some("merge" | "prs")) => {
            let dir = file.as_ref().and_then(|f| f.parent()).unwrap_or(cwd).to_path_buf();
            let ws = yaml_value(&text, "workspace").unwrap_or_else(|| ".hone/fleet".into());
            if let Some(job) = yaml_value(&text, "job") {
                b.ctx = commits::RunContext::from_spec(&std::fs::read_to_string(dir.join(job)).unwrap_or_default());
            }
            b.fleet_workspace = Some(dir.join(ws));
        }
        _ => {}
    }
    b
}

/// Every run of the suite ends here: after a `run` that exits 0 with `success`, and after every
/// fleet, what was committed is checked (`commits::commit_problems`). A run refused because the
/// machine cannot jail fails loudly here, naming the capability, whatever the test expected.
pub(super) fn after_run(run: &Run, args: &[String], before: Before) {
    assert!(
        !run.stderr.contains("this machine cannot jail commands"),
        "hone cannot jail commands here: every test that runs commands needs Need::UserNamespaces ({})\n{}",
        Need::UserNamespaces.check().err().unwrap_or_default(),
        run.stderr
    );
    match args.first().map(String::as_str) {
        Some("run") if run.code == 0 => {
            let path = run.report_dir.join("report.json");
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                panic!(
                    "hone exited 0 but {} cannot be read ({e}): does the test pass the right report dir?",
                    path.display()
                )
            });
            let report: Value = serde_json::from_str(&text).expect("report.json is JSON");
            let mut ctx = before.ctx;
            if let Some((mock, n)) = before.mock {
                ctx.served = Some(mock.served()[n..].to_vec());
            }
            commits::assert_commit_is_the_change(&report, &run.report_dir, &ctx, "hone run");
        }
        Some("fleet") => {
            if let Some(ws) = before.fleet_workspace {
                commits::assert_fleet_commits(&ws, &before.ctx);
            }
        }
        _ => {}
    }
}
