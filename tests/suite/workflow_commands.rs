//! A hostile model tries to speak to the GitHub Actions runner through what hone prints: command
//! lines, a file name and its `finish` reason carry `##[…]` commands, `::…::` commands behind a
//! carriage return or leading spaces, and ignorable characters between the marks. Whatever the
//! runner would read in hone's stdout and stderr (emulated by `common::runner`) must be a command
//! hone meant: its groups, its own `::error` annotations and `::add-mask::` for the secrets.

use crate::common::mock_model::{MockModel, call};
use crate::common::runner::{Found, unintended};
use crate::common::*;
use serde_json::json;

/// Every payload carries this, so a forged command is told from hone's own.
const MARK: &str = "FORGED";

/// The model's tool calls: commands and a path holding workflow commands, then `finish` blocked
/// with a reason and a summary that hold them behind carriage returns and leading spaces.
fn script(mock: &MockModel) {
    let cmd = |c: &str| json!({ "command": c });
    mock.turn(
        call("run_cmd", cmd("echo '##[error file=status.txt;line=1]FORGED-hash'"))
            .with_call("run_cmd", &cmd("echo start\r::error file=status.txt,line=1::FORGED-cr").to_string())
            .with_call("run_cmd", &cmd("echo '##[add-mask]FORGED-mask'").to_string())
            .with_call("run_cmd", &cmd("echo '#\u{200B}#[warning]FORGED-zero-width'").to_string())
            .with_call("run_cmd", &cmd("echo a\u{2028}   ::notice::FORGED-line-separator").to_string()),
        false,
    )
    .turn(call("write_file", json!({"path": "FORGED##[warning]name.txt", "content": "x\n"})), false)
    .turn(call("run_cmd", cmd("echo '##[stop-commands]FORGEDTOKEN'")), false)
    .turn(
        call(
            "finish",
            json!({
                "outcome": "blocked",
                "summary": "Blocked.\r::error::FORGED-summary",
                "reason": "cannot\r::error file=status.txt,line=1::FORGED-reason\n   ::stop-commands::FORGED2\r\u{00A0}::add-mask::FORGED3",
            }),
        ),
        false,
    );
}

/// The run, and the repository (its reports go when it is dropped).
async fn attack(extra_args: &[&str]) -> (Run, crate::common::repo::TestRepo) {
    let mock = MockModel::start().await;
    script(&mock);
    let repo = broken_repo();
    let yaml = with_policy(&repo, &job_yaml("wfc", &mock.base_url, false), OPEN_POLICY);
    let out = repo.dir.path().join("gh-output");
    let summary = repo.dir.path().join("gh-summary");
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_OUTPUT", out.to_str().unwrap()),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
        ("RUST_LOG", "hone=trace"),
    ];
    let run = run_job_with(&repo, &yaml, extra_args, &env).await;
    assert_eq!(run.code, 1, "the model said it is blocked: {}", run.stderr);
    (run, repo)
}

/// A forged `::add-mask::` carries the mark; hone masks only the key's forms.
fn is_secret(data: &str) -> bool {
    !data.contains(MARK) && data.len() >= 6
}

fn assert_only_hone_commands(run: &Run) {
    let forged: Vec<Found> =
        [&run.stdout, &run.stderr].into_iter().flat_map(|out| unintended(out, &is_secret)).collect();
    assert!(forged.is_empty(), "the runner would obey commands hone did not mean: {forged:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_text_in_progress_logs_and_the_result_line_is_no_workflow_command() {
    let (run, _repo) = attack(&[]).await;
    assert_only_hone_commands(&run);
    // The log still shows what the model did, and hone's own commands still work.
    for shown in ["FORGED-hash", "FORGED-mask", "FORGEDTOKEN", "FORGED-zero-width", "name.txt"] {
        assert!(run.stderr.contains(shown), "`{shown}` is not shown in the log:\n{}", run.stderr);
    }
    assert!(run.stderr.contains("::group::hone EXECUTING"), "{}", run.stderr);
    let result = run.stdout.lines().last().unwrap_or_default();
    assert!(result.starts_with("hone: failed (exit 1): E_BLOCKED") && result.contains("FORGED-reason"), "{result}");
    let errors: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("::error title=hone")).collect();
    assert!(errors.iter().any(|l| l.contains("E_BLOCKED")), "hone's own annotation is there: {}", run.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_json_event_stream_is_no_workflow_command_and_decodes_to_the_same_text() {
    let (run, _repo) = attack(&["--json"]).await;
    assert_only_hone_commands(&run);
    let events: Vec<serde_json::Value> =
        run.stdout.lines().map(|l| serde_json::from_str(l).expect("each stdout line is JSON")).collect();
    let args: Vec<&str> = events.iter().filter_map(|e| e["args"].as_str()).collect();
    assert!(
        args.iter().any(|a| a.contains("echo '##[error file=status.txt;line=1]FORGED-hash'")),
        "the events carry the model's text as it was: {args:?}"
    );
    assert!(args.iter().any(|a| a.contains("#\u{200B}#[warning]")), "{args:?}");
    assert_eq!(run.events().len(), events.len(), "events.jsonl holds the same events");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_command_line_is_quoted_but_not_obeyed() {
    // A workflow that passes an issue's text as `--task` hands it to clap, whose error quotes it.
    let task = "--x\r::error::FORGED-argument";
    let run = run_hone_env(&["run", "--task", task], &[], std::env::temp_dir(), &[("GITHUB_ACTIONS", "true")]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("FORGED-argument"), "{}", run.stderr);
    assert_only_hone_commands(&run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setup_scripts_output_quoted_in_the_error_is_no_workflow_command() {
    // The repository's own script: its output ends the error hone prints on stderr, line by line,
    // behind leading white space.
    let setup = "printf '   ::error file=status.txt,line=1::FORGED-spaces\\n\\t::stop-commands::FORGED-tab\\nx ##[warning]FORGED-hash\\n'; exit 1\n";
    let mock = MockModel::start().await;
    let repo = user_repo("job.yaml", "", &[("setup.sh", setup)]);
    let yaml = job_yaml("wfc-setup", &mock.base_url, false)
        .replace("verify:\n", "setup:\n  - { name: deps, run: \"sh setup.sh\" }\nverify:\n");
    let run = run_job_env(&repo, &yaml, &[("GITHUB_ACTIONS", "true")]).await;
    assert_eq!(run.code, 2, "setup failed: {}", run.stderr);
    assert!(run.stderr.contains("FORGED-spaces") && run.stderr.contains("FORGED-hash"), "{}", run.stderr);
    assert_only_hone_commands(&run);
}
