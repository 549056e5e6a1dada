//! The workflows for answers and reviews (triage, review) and the Action's inputs for both
//! modes: each asks for the least permissions, no `${{ }}` is ever expanded inside a script (an
//! issue's or a model's text would become code), the review workflow never checks out or runs
//! the PR's code, and the scripts hand each value on as one argument, never as code.

use crate::common::require::Need;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).unwrap()
}

fn shipped(name: &str) -> Value {
    yaml(&std::fs::read_to_string(root().join("workflows").join(name)).unwrap())
}

/// Every step of a workflow (jobs.*.steps) or of a composite action (runs.steps).
fn steps(w: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = w["runs"]["steps"].as_array().cloned().unwrap_or_default();
    for job in w["jobs"].as_object().into_iter().flat_map(|j| j.values()) {
        out.extend(job["steps"].as_array().cloned().unwrap_or_default());
    }
    out
}

fn uses(step: &Value, what: &str) -> bool {
    step["uses"].as_str().is_some_and(|u| u.starts_with(what))
}

/// Each `run:` script that expands an expression itself (`${{ … }}` is pasted into the script
/// before the shell reads it).
fn expanding_scripts(w: &Value) -> Vec<String> {
    steps(w).iter().filter_map(|s| s["run"].as_str()).filter(|r| r.contains("${{")).map(str::to_string).collect()
}

/// What makes a workflow ask for more than `want`: the workflow's permissions differ, or a job
/// sets its own.
fn permission_problems(w: &Value, want: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if &w["permissions"] != want {
        out.push(format!("permissions {} instead of {want}", w["permissions"]));
    }
    for (name, job) in w["jobs"].as_object().into_iter().flatten() {
        if !job["permissions"].is_null() {
            out.push(format!("job `{name}` sets its own permissions"));
        }
    }
    out
}

/// Why a review workflow could run the PR's code with the base repository's token and secrets.
fn review_problems(w: &Value) -> Vec<String> {
    let mut out = permission_problems(w, &json!({"contents": "read", "pull-requests": "write"}));
    for s in steps(w) {
        if s["run"].is_string() {
            out.push(format!("a `run:` step: {}", s["run"]));
        }
        let known = ["actions/checkout@", "hone/hone@", "actions/upload-artifact@"];
        if !known.iter().any(|k| uses(&s, k)) {
            out.push(format!("a step that is not a checkout, hone or an upload: {s}"));
        }
        if uses(&s, "actions/checkout@") {
            for key in ["ref", "repository"] {
                if !s["with"][key].is_null() {
                    out.push(format!("a checkout of `{key}: {}`, not the base", s["with"][key]));
                }
            }
            if s["with"]["persist-credentials"] != json!(false) {
                out.push("a checkout that leaves the token in .git/config".into());
            }
        }
        let text = s.to_string();
        for head in ["pull_request.head.", "refs/pull/", "github.head_ref"] {
            if text.contains(head) {
                out.push(format!("a step that names the PR's head (`{head}`): {s}"));
            }
        }
    }
    out
}

#[test]
fn no_shipped_workflow_nor_the_action_expands_an_expression_inside_a_script() {
    let mut files: Vec<PathBuf> = vec![root().join("action.yml"), root().join("install/action.yml")];
    for e in std::fs::read_dir(root().join("workflows")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "yml") {
            files.push(p);
        }
    }
    assert!(files.len() >= 7, "{files:?}");
    for f in &files {
        let w = yaml(&std::fs::read_to_string(f).unwrap());
        assert!(!steps(&w).is_empty(), "{}: no steps found", f.display());
        assert_eq!(expanding_scripts(&w), Vec::<String>::new(), "{}", f.display());
    }
    // The check sees one.
    let bad = yaml("jobs:\n  j:\n    steps:\n      - run: echo '${{ steps.hone.outputs.result }}'\n");
    assert_eq!(expanding_scripts(&bad).len(), 1);
}

#[test]
fn triage_runs_on_new_issues_and_may_only_read_the_code_and_label_issues() {
    let w = shipped("triage.yml");
    assert_eq!(w["on"], json!({"issues": {"types": ["opened"]}}));
    assert_eq!(permission_problems(&w, &json!({"contents": "read", "issues": "write"})), Vec::<String>::new());
    let all = steps(&w);
    let hone = all.iter().find(|s| uses(s, "hone/hone@")).expect("a hone step");
    assert_eq!(hone["with"]["job"], ".github/hone/triage.yaml");
    assert!(hone["with"]["task"].as_str().unwrap().contains("${{ github.event.issue.body }}"));
    // The answer reaches the script through env only.
    let label = all.iter().find(|s| s["run"].as_str().is_some_and(|r| r.contains("gh issue edit"))).unwrap();
    assert_eq!(label["env"]["RESULT"], format!("${{{{ steps.{}.outputs.result }}}}", hone["id"].as_str().unwrap()));
    for s in &all {
        if uses(s, "actions/checkout@") {
            assert_eq!(s["with"]["persist-credentials"], json!(false), "{s}");
        }
    }
    // The check sees a wider token.
    let mut wide = w.clone();
    wide["permissions"]["contents"] = json!("write");
    assert_eq!(permission_problems(&wide, &json!({"contents": "read", "issues": "write"})).len(), 1);
}

#[test]
fn review_checks_out_the_base_only_and_runs_no_code_of_the_pr() {
    let w = shipped("review.yml");
    assert_eq!(w["on"].as_object().unwrap().keys().collect::<Vec<_>>(), ["pull_request_target"]);
    assert_eq!(review_problems(&w), Vec::<String>::new());
    let all = steps(&w);
    let hone = all.iter().find(|s| uses(s, "hone/hone@")).expect("a hone step");
    assert_eq!(hone["with"]["review"], "true");
    assert_eq!(hone["with"]["pr-number"], "${{ github.event.pull_request.number }}");
    assert!(hone["with"]["job"].as_str().unwrap().starts_with(".github/hone/"), "the base's spec");
    assert_eq!(all.iter().filter(|s| uses(s, "actions/checkout@")).count(), 1);

    // What a maintainer must not add is each caught.
    let attacks: [(&str, Value); 4] = [
        (
            "head checkout",
            json!({"uses": "actions/checkout@v4", "with": {"ref": "${{ github.event.pull_request.head.sha }}", "path": "pr"}}),
        ),
        (
            "merge ref",
            json!({"uses": "actions/checkout@v4", "with": {"ref": "refs/pull/1/merge", "persist-credentials": false}}),
        ),
        ("build step", json!({"run": "npm ci && npm test"})),
        ("setup action", json!({"uses": "./.github/actions/setup"})),
    ];
    for (what, step) in attacks {
        let mut bad = w.clone();
        bad["jobs"]["review"]["steps"].as_array_mut().unwrap().insert(1, step);
        assert!(!review_problems(&bad).is_empty(), "{what} not caught");
    }
    let mut wide = w.clone();
    wide["permissions"]["contents"] = json!("write");
    assert!(!review_problems(&wide).is_empty());
}

/// A `run:` script of `w` (the first that contains `needle`).
fn script(w: &Value, needle: &str) -> String {
    steps(w).iter().filter_map(|s| s["run"].as_str()).find(|r| r.contains(needle)).unwrap().to_string()
}

/// Run `script` with bash as Actions does (`-e -o pipefail`), `env`, and on PATH a stand-in
/// `name` that writes its arguments, one per line, to the returned file.
fn run_with_stand_in(script: &str, name: &str, env: &[(&str, &str)]) -> (std::process::Output, Vec<String>, PathBuf) {
    let dir = tempfile::tempdir().unwrap().keep();
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let args = dir.join("args");
    let stand_in = bin.join(name);
    std::fs::write(&stand_in, format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n", args.display())).unwrap();
    std::fs::set_permissions(&stand_in, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = std::process::Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
        .current_dir(&dir)
        .env("PATH", path)
        .env("HONE_BIN", &stand_in)
        .env("GITHUB_OUTPUT", dir.join("output"))
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let called = std::fs::read_to_string(&args).map(|t| t.lines().map(str::to_string).collect()).unwrap_or_default();
    (out, called, dir)
}

#[test]
fn the_triage_script_adds_the_answers_labels_as_arguments_and_runs_none_of_them() {
    // The workflow's script runs jq (on every GitHub runner).
    require!(Need::Jq);
    let run = script(&shipped("triage.yml"), "gh issue edit");
    let hostile = json!({"labels": ["bug", "good first issue", "$(touch pwned)", "`touch pwned`", "--repo=x/y"], "priority": "low", "reason": "x"});
    let (out, gh, dir) = run_with_stand_in(&run, "gh", &[("RESULT", &hostile.to_string()), ("ISSUE", "7")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        gh,
        [
            "issue",
            "edit",
            "7",
            "--add-label=bug",
            "--add-label=good first issue",
            "--add-label=$(touch pwned)",
            "--add-label=`touch pwned`",
            "--add-label=--repo=x/y"
        ]
    );
    assert!(!dir.join("pwned").exists());
    // No label, or no answer at all: gh is not called.
    for result in [r#"{"labels": [], "priority": "low", "reason": "x"}"#, ""] {
        let (out, gh, _) = run_with_stand_in(&run, "gh", &[("RESULT", result), ("ISSUE", "7")]);
        assert!(out.status.success(), "{result}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(gh.is_empty(), "{result}: {gh:?}");
    }
}

#[test]
fn the_actions_script_passes_review_and_change_as_hones_arguments() {
    let action = yaml(&std::fs::read_to_string(root().join("action.yml")).unwrap());
    for input in ["review", "change"] {
        assert!(action["inputs"][input].is_object(), "input `{input}`");
    }
    assert_eq!(action["outputs"]["result"]["value"], "${{ steps.run.outputs.result }}");
    assert_eq!(action["outputs"]["review-url"]["value"], "${{ steps.run.outputs.review-url }}");
    let run = steps(&action).into_iter().find(|s| s["id"] == "run").unwrap();
    assert_eq!(run["env"]["REVIEW"], "${{ inputs.review }}");
    assert_eq!(run["env"]["CHANGE"], "${{ inputs.change }}");
    let script = run["run"].as_str().unwrap();
    let base = [("REPO", "/w"), ("REPORT_DIR", "r"), ("TASK", "$(touch pwned); review it"), ("MEMORY", "true")];
    let mut env = base.to_vec();
    env.extend([("PR_NUMBER", "12"), ("REVIEW", "true"), ("CHANGE", "none")]);
    let (out, hone, dir) = run_with_stand_in(script, "hone", &env);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let want = ["run", "--repo", "/w", "--report-dir", "r", "--task", "$(touch pwned); review it", "--pr", "12"];
    let mut with_modes: Vec<&str> = want.to_vec();
    with_modes.extend(["--review", "--change", "none"]);
    assert_eq!(hone, with_modes);
    assert!(!dir.join("pwned").exists());
    // The defaults add neither.
    let mut env = base.to_vec();
    env.extend([("PR_NUMBER", "12"), ("REVIEW", "false"), ("CHANGE", "")]);
    let (out, hone, _) = run_with_stand_in(script, "hone", &env);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(hone, want);
}

/// The Action keeps hone's memory across ephemeral runners in the Actions cache, under a key of
/// the repository's id and the run (never of anything a pull request controls), and restores the
/// newest of this repository's; `memory: false` gives `--no-memory`.
#[test]
fn the_action_keeps_memory_in_the_cache_under_the_repositorys_key() {
    let action = yaml(&std::fs::read_to_string(root().join("action.yml")).unwrap());
    assert_eq!(action["inputs"]["memory"]["default"], "true");
    let all = steps(&action);
    let uses = |name: &str| all.iter().find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with(name))).cloned();
    let (restore, save) = (uses("actions/cache/restore@").unwrap(), uses("actions/cache/save@").unwrap());
    let path = "${{ runner.temp }}/hone-memory";
    let key = "hone-memory-${{ github.repository_id }}-${{ github.run_id }}-${{ github.run_attempt }}";
    for step in [&restore, &save] {
        assert_eq!(step["with"]["path"], path);
        assert_eq!(step["with"]["key"], key);
        assert!(step["if"].as_str().unwrap().contains("inputs.memory == 'true'"));
    }
    assert_eq!(restore["with"]["restore-keys"], "hone-memory-${{ github.repository_id }}-");
    assert!(save["if"].as_str().unwrap().starts_with("always()"), "saved even when the run fails");
    let position = |id: &Value| all.iter().position(|s| s == id).unwrap();
    let run = all.iter().find(|s| s["id"] == "run").unwrap();
    assert!(position(&restore) < position(run) && position(run) < position(&save));
    assert_eq!(run["env"]["HONE_MEMORY_DIR"], path);
    let script = run["run"].as_str().unwrap();
    let env = [("REPO", "/w"), ("REPORT_DIR", "r"), ("MEMORY", "false")];
    let (out, hone, _) = run_with_stand_in(script, "hone", &env);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(hone, ["run", "--repo", "/w", "--report-dir", "r", "--no-memory"]);
}
