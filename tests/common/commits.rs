//! What a successful run committed: the one check every run of the suite goes through.
//!
//! `success` is a promise (docs/run.md): the commit holds the model's change and
//! nothing else. So, for every run that exits 0 with `status: success`, the paths that differ
//! between the run's base and its commit must
//! - be exactly report.json's `files_changed`,
//! - not be empty,
//! - include nothing under `.hone/`, the report dir, or a check's `junit:` file,
//! - and be among the paths the model's tools wrote (`write_file` and `apply_patch` targets),
//!   unless the model also ran commands, which can write anything.
//!
//! A read-only job (`change: none`) promises the opposite: its `success` is a valid answer, with
//! no commit and no change at all.

use super::mock_model::Served;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What the run helper knows about a run besides its report.
#[derive(Default, Clone, Debug)]
pub struct RunContext {
    /// The `junit:` files of the job's checks, relative to the repository.
    pub junit: Vec<String>,
    /// The tool calls the mock model served during the run, when a mock served the run.
    pub served: Option<Vec<Served>>,
}

impl RunContext {
    /// What a job spec tells about a run: its checks' `junit:` files.
    pub fn from_spec(spec: &str) -> RunContext {
        RunContext { junit: junit_files(spec), served: None }
    }
}

/// The `junit:` values in a job spec (flow or block style).
pub fn junit_files(spec: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in spec.match_indices("junit:") {
        let before = spec[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-') {
            continue;
        }
        let rest = spec[i + "junit:".len()..].trim_start_matches([' ', '\t']);
        let value: String = if let Some(q) = rest.strip_prefix('"') {
            q.chars().take_while(|c| *c != '"').collect()
        } else if let Some(q) = rest.strip_prefix('\'') {
            q.chars().take_while(|c| *c != '\'').collect()
        } else {
            rest.chars().take_while(|c| !matches!(c, ',' | '}' | '\n' | ' ' | '#')).collect()
        };
        if !value.is_empty() {
            out.push(normalize(&value));
        }
    }
    out
}

fn normalize(p: &str) -> String {
    let mut p = p.trim();
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    p.trim_end_matches('/').to_string()
}

/// The paths a unified diff touches (both sides, without `a/`/`b/`, never `/dev/null`).
pub fn patch_targets(patch: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in patch.lines() {
        let Some(h) = line.strip_prefix("--- ").or_else(|| line.strip_prefix("+++ ")) else { continue };
        let h = h.split('\t').next().unwrap_or("").trim();
        if h == "/dev/null" || h.is_empty() {
            continue;
        }
        let h = h.strip_prefix("a/").or_else(|| h.strip_prefix("b/")).unwrap_or(h);
        out.push(normalize(h));
    }
    out
}

/// The paths one tool call asks to write, from its raw arguments; None when they cannot be read
/// (arguments that are not JSON write nothing, so they are an empty list).
fn call_targets(name: &str, args: &str) -> Option<Vec<String>> {
    let Ok(v) = serde_json::from_str::<Value>(args) else {
        return None;
    };
    match name {
        "write_file" => Some(v["path"].as_str().map(|p| vec![normalize(p)]).unwrap_or_default()),
        "apply_patch" => Some(v["patch"].as_str().map(patch_targets).unwrap_or_default()),
        _ => Some(vec![]),
    }
}

/// Git in `dir`, its stdout; None when git fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        // The repository may belong to another user (a run as nobody, checked as root).
        .args(["-c", "core.quotepath=off", "-c", "safe.directory=*", "-c", "core.fsmonitor=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// Everything wrong with what a `success` run committed (empty when the commit is right), from
/// its report, its report dir and what the run helper saw.
pub fn commit_problems(report: &Value, report_dir: &Path, ctx: &RunContext) -> Vec<String> {
    let mut problems = Vec::new();
    if report["status"] != "success" {
        return problems;
    }
    if report["change"] == "none" {
        if !report["commit"].is_null() || report["files_changed"].as_array().is_some_and(|f| !f.is_empty()) {
            problems.push(format!("a read-only `success` with a commit or a change: {report}"));
        }
        if report["output_check"].is_object() && (report["output"].is_null() || report["output_check"]["valid"] != true)
        {
            problems.push("a read-only `success` without a valid answer".into());
        }
        return problems;
    }
    let (Some(repo), Some(base)) = (report["repo"].as_str(), report["base_sha"].as_str()) else {
        return vec![format!("a success report without `repo` and `base_sha`: {report}")];
    };
    let Some(sha) = report["commit"]["sha"].as_str() else {
        return vec!["`success` without a commit".into()];
    };
    let repo = PathBuf::from(repo);
    let Some(diff) = git(&repo, &["diff", "--name-only", "--no-renames", base, sha]) else {
        return vec![format!("cannot diff {base}..{sha} in {}", repo.display())];
    };
    let committed: BTreeSet<String> = diff.lines().filter(|l| !l.is_empty()).map(str::to_string).collect();
    if committed.is_empty() {
        problems.push(format!("the `success` commit {sha} changes nothing against the base {base}"));
    }
    let reported: BTreeSet<String> = report["files_changed"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["path"].as_str())
        .map(str::to_string)
        .collect();
    if committed != reported {
        problems.push(format!("committed paths {committed:?} are not report.json's files_changed {reported:?}"));
    }
    // hone's own outputs and the checks' JUnit files.
    let (repo_c, dir_c) = (canonical(&repo), canonical(report_dir));
    let report_rel = dir_c.strip_prefix(&repo_c).ok().map(|r| r.to_string_lossy().into_owned());
    for p in &committed {
        if p == ".hone" || p.starts_with(".hone/") {
            problems.push(format!("hone's own directory was committed: {p}"));
        }
        if let Some(rel) = &report_rel
            && (rel.is_empty() || p == rel || p.starts_with(&format!("{rel}/")))
        {
            problems.push(format!("the report dir ({rel}) was committed: {p}"));
        }
        if ctx.junit.iter().any(|j| j == p) {
            problems.push(format!("a check's JUnit file was committed: {p}"));
        }
    }
    // What the model's tools wrote: from the mock's served calls and report.json's tool_calls.
    let calls: Vec<&Value> = report["tool_calls"].as_array().into_iter().flatten().collect();
    // A hook the job ran (not refused) is a command too: its edits are part of the change.
    let hooks_ran = report["hooks"].as_array().into_iter().flatten().any(|h| h["denied"].is_null());
    let commands_ran = hooks_ran || calls.iter().any(|c| c["name"] == "run_cmd" && c["code"] != "E_POLICY_DENIED");
    // A second attempt (`--continue`) starts from saved work: that is part of the change too.
    let took_up = report["continued_from"].is_string();
    if !commands_ran && !took_up {
        let mut written: BTreeSet<String> = BTreeSet::new();
        let mut unreadable = Vec::new();
        for (name, args) in ctx.served.iter().flatten() {
            written.extend(call_targets(name, args).unwrap_or_default());
        }
        for c in &calls {
            let name = c["name"].as_str().unwrap_or("");
            match call_targets(name, c["args"].as_str().unwrap_or("")) {
                Some(t) => written.extend(t),
                // Cut to 200 characters in the report: the served calls must account for it.
                None if matches!(name, "write_file" | "apply_patch") => unreadable.push(name.to_string()),
                None => {}
            }
        }
        let known = unreadable.is_empty() || ctx.served.is_some();
        if known {
            let extra: Vec<&String> = committed.iter().filter(|p| !written.contains(*p)).collect();
            if !extra.is_empty() {
                problems.push(format!(
                    "committed paths {extra:?} were never written by the model's tools (they wrote {written:?}) and it ran no command"
                ));
            }
        }
    }
    problems
}

/// Assert `commit_problems` is empty for a run's report.
pub fn assert_commit_is_the_change(report: &Value, report_dir: &Path, ctx: &RunContext, what: &str) {
    let problems = commit_problems(report, report_dir, ctx);
    assert!(problems.is_empty(), "{what}: the `success` commit is not the model's change:\n{problems:#?}");
}

/// Every `success` in a fleet workspace's `fleet.json`, checked like a single run.
pub fn assert_fleet_commits(workspace: &Path, ctx: &RunContext) {
    let Ok(text) = std::fs::read_to_string(workspace.join("fleet.json")) else { return };
    let fleet: Value = serde_json::from_str(&text).expect("fleet.json is JSON");
    for r in fleet["repos"].as_array().into_iter().flatten() {
        let Some(dir) = r["report_dir"].as_str() else { continue };
        let Ok(text) = std::fs::read_to_string(Path::new(dir).join("report.json")) else { continue };
        let report: Value = serde_json::from_str(&text).expect("report.json is JSON");
        assert_commit_is_the_change(&report, Path::new(dir), ctx, &format!("fleet repo {}", r["id"]));
    }
}
