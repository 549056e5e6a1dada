//! Attacks on the jail (issue 10) on secrets: none is read from hone's environment through
//! `/proc/*/environ`, and none is left in another form (JSON-escaped, hex, upper case, reversed,
//! base64) in any sink: outputs, reports, commits on any ref, or what the model was sent. The
//! shared helpers are in `jail_support`.

use super::jail_support::{all_tool_results, cmd, fix, result_of, spec, write};
use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use base64::Engine;
use serde_json::json;
use std::path::Path;

/// `git log -p` of every ref (branches, `refs/hone/*` checkpoints and saved failures) with full
/// commit messages; empty when the repository has no refs.
fn history(git_dir: &Path) -> String {
    let out = std::process::Command::new("git")
        .args(["log", "-p", "--all", "--format=commit %H%n%B"])
        .current_dir(git_dir)
        .output()
        .expect("git runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Everywhere a secret could end up: hone's outputs, the reports, every commit on every ref (in
/// the repository and on origin), and what the model was sent.
fn sinks(run: &Run, repo: &TestRepo, mock: &MockModel) -> Vec<(String, String)> {
    let mut s = vec![("stdout".to_string(), run.stdout.clone()), ("stderr".to_string(), run.stderr.clone())];
    for f in ["report.json", "junit.xml", "summary.md", "events.jsonl"] {
        s.push((f.to_string(), run.read(f)));
    }
    for f in ["pr.md", "change.patch"] {
        s.push((f.to_string(), run.read_optional(f)));
    }
    s.push(("the repository's commits (all refs, messages and diffs)".into(), history(&repo.path)));
    s.push(("origin's commits".into(), history(&repo.origin)));
    s.push(("tool results sent to the model".into(), all_tool_results(mock)));
    s
}

/// The forms a secret leaks in: as it is, JSON-escaped once, twice (a value inside tool-call
/// arguments, serialized again) and three times (JSON the model wrote, inside arguments, inside an
/// event), hex, upper case, reversed and base64.
fn forms(secret: &str) -> Vec<(&'static str, String)> {
    let esc = |s: &str| serde_json::to_string(s).unwrap().trim_matches('"').to_string();
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    vec![
        ("raw", secret.to_string()),
        ("JSON-escaped", esc(secret)),
        ("JSON-escaped twice", esc(&esc(secret))),
        ("JSON-escaped three times", esc(&esc(&esc(secret)))),
        ("hex", hex.clone()),
        ("upper-case hex", hex.to_uppercase()),
        ("upper case", secret.to_uppercase()),
        ("reversed", secret.chars().rev().collect()),
        ("base64", base64::engine::general_purpose::STANDARD.encode(secret).trim_end_matches('=').to_string()),
    ]
}

/// Every (sink, form) pair in which `secret` appears.
fn leaks(sinks: &[(String, String)], label: &str, secret: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (sink, content) in sinks {
        for (form, f) in forms(secret) {
            if content.contains(&f) {
                out.push(format!("{label} ({form} form) is in {sink}"));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

// 3. ------------------------------------------------------------------------------------------

/// Item 3: a command that scans `/proc/*/environ` for hone's secrets finds none. As root (CI
/// containers) hone's environ is readable by any root process in its PID namespace; as a user, by
/// any process of that user. Either way only a PID namespace of the jail's own hides it, so the
/// test is the same; it says which one ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hones_environment_is_invisible_to_commands() {
    require!(Need::UserNamespaces);
    let as_root = nix::unistd::geteuid().is_root();
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let token = "ghp_jailenvcanary0123456789abcdef";
    let scan = r#"import glob
names = (b"HONE_TEST_API_KEY=", b"GITHUB_TOKEN=")
found = set()
for p in glob.glob("/proc/[0-9]*/environ"):
    try:
        data = open(p, "rb").read()
    except OSError:
        continue
    for kv in data.split(b"\0"):
        if kv.startswith(names):
            found.add(kv.split(b"=", 1)[1])
with open("found.txt", "w") as f:
    for v in sorted(found):
        f.write(v.hex() + "\n")
print("FOUND", len(found))
"#;
    mock.turn(write("scan.py", scan), false).turn(cmd("python3 scan.py && cat found.txt"), false);
    fix(&mock);
    let yaml = spec(&repo, "environ", &mock, OPEN_POLICY, "pr: { enabled: false }\n");
    let run = run_job_env(&repo, &yaml, &[("GITHUB_TOKEN", token)]).await;
    let scanned = result_of(&mock, 1);
    let s = sinks(&run, &repo, &mock);
    let mut leaked = leaks(&s, "the model API key", KEY);
    leaked.extend(leaks(&s, "GITHUB_TOKEN", token));
    assert!(
        leaked.is_empty(),
        "hone's secrets were read from /proc/*/environ (hone as {}): {leaked:#?}\nthe scan said: {scanned}",
        if as_root { "root" } else { "a user" }
    );
    assert!(
        scanned.contains("FOUND 0"),
        "the scan found secrets in some process's environment (or did not run): {scanned}"
    );
}

// 10. -----------------------------------------------------------------------------------------

/// A secret with a quote and a backslash, so that its JSON-escaped form differs from it.
const QUOTED_SECRET: &str = r#"hone"jail\tok-Q7x9Lm"#;

/// Item 10: a secret in other forms reaches no sink: in plan text (pr.md, checkpoint commit
/// messages, events), JSON-escaped in tool arguments, hex, upper case or reversed in files
/// (never committed, never on `refs/hone/<name>/failed`), or as it is in a file the diff guard
/// refuses (not saved on the failed ref either).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_in_other_forms_reach_no_sink() {
    require!(Need::UserNamespaces);
    let env = [("HONE_JAIL_TOKEN", QUOTED_SECRET)];
    let mut leaked = Vec::new();

    // A: the secret in plan text, in a run that succeeds (dry run: pr.md and change.patch).
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let title = format!("fix status.txt for {QUOTED_SECRET}");
    let plan = |status: &str| {
        json!({"steps": [{"title": title, "intent": format!("use {QUOTED_SECRET}"), "status": status, "expected_files": ["status.txt"]}],
               "verification": format!("check.sh with {QUOTED_SECRET}"), "risk": "low"})
    };
    mock.turn(call("update_plan", plan("in_progress")), false)
        .turn(write("status.txt", "fixed\n"), false)
        .turn(call("update_plan", plan("done")), false)
        .turn(text("Set status.txt to fixed."), false);
    let yaml = spec(&repo, "plansecret", &mock, OPEN_POLICY, "").replace("plan: false\n", "");
    let run = run_job_with(&repo, &yaml, &["--dry-run"], &env).await;
    assert!(
        !repo.git(&["for-each-ref", "refs/hone/plansecret/checkpoints"]).is_empty(),
        "the plan run made no checkpoint (exit {}): {}",
        run.code,
        run.stdout
    );
    assert!(
        run.read("pr.md").contains("status.txt"),
        "the plan run wrote no pr.md (exit {}): {}",
        run.code,
        run.stdout
    );
    leaked.extend(leaks(&sinks(&run, &repo, &mock), "plan run: the secret", QUOTED_SECRET));

    // B: JSON-escaped, hex, upper-case and reversed forms written into files.
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let escaped = serde_json::to_string(QUOTED_SECRET).unwrap();
    let forms_py = "import json; s = json.load(open('token.json'))['token']; open('hex.txt', 'w').write(s.encode().hex() + '\\n'); open('upper.txt', 'w').write(s.upper() + '\\n'); open('rev.txt', 'w').write(s[::-1] + '\\n')";
    mock.turn(write("token.json", &format!("{{\"token\": {escaped}}}\n")), false)
        .turn(cmd(&format!("python3 -c \"{forms_py}\"")), false);
    fix(&mock);
    let yaml = spec(&repo, "formsecret", &mock, OPEN_POLICY, "");
    let run = run_job_with(&repo, &yaml, &["--dry-run"], &env).await;
    assert!(result_of(&mock, 1).starts_with("exit code: 0"), "the forms were not written: {}", result_of(&mock, 1));
    leaked.extend(leaks(&sinks(&run, &repo, &mock), "forms run: the secret", QUOTED_SECRET));

    // C: the secret as it is, in a change the diff guard refuses: it must not be saved on a ref.
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(write("config.txt", &format!("token = {QUOTED_SECRET}\n")), false);
    fix(&mock);
    let yaml = spec(&repo, "refusedsecret", &mock, OPEN_POLICY, "");
    let run = run_job_env(&repo, &yaml, &env).await;
    assert_eq!(run.code, 1, "the diff guard should refuse the change: {}", run.stdout);
    leaked.extend(leaks(&sinks(&run, &repo, &mock), "refused run: the secret", QUOTED_SECRET));

    assert!(leaked.is_empty(), "{leaked:#?}");
}
