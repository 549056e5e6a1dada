//! Issue 22, items 6 and 7: the guards count what matters. A secret in a binary file is found
//! (the diff only says "Binary files differ"); a file git calls binary counts by its bytes, not
//! as 0 lines; and a change of very many files is known too large without being diffed, saved
//! or left behind, with the reports written.

use super::jail_support::{cmd, fix, spec};
use crate::common::mock_model::MockModel;
use crate::common::*;

const CANARY: &str = "hone-bin-canary-Q7w2e9R4t6";

/// With `pass_secrets`, the model's command can write the token; after a NUL byte it is
/// "binary" to git. It must be found, not committed, and saved nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_in_a_binary_file_is_neither_committed_nor_saved() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(cmd("printf 'GIF89a\\000\\001' > logo.gif && printf '%s' \"$HONE_CANARY_TOKEN\" >> logo.gif"), false);
    fix(&mock);
    let policy = format!("{OPEN_POLICY}env:\n  pass_secrets: [HONE_CANARY_TOKEN]\n");
    let yaml = spec(&repo, "binary-secret", &mock, &policy, "");
    let run = run_job_env(&repo, &yaml, &[("HONE_CANARY_TOKEN", CANARY)]).await;
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let report = run.report();
    assert!(report["commit"].is_null(), "{report:#}");
    assert!(report["saved_ref"].is_null(), "a change with a secret is saved nowhere: {report:#}");
    let error = report["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(error.contains("contains the value of a secret") && error.contains("logo.gif"), "{error}");
    assert!(repo.git(&["for-each-ref", "refs/hone/binary-secret"]).is_empty());
    assert!(!repo.git(&["branch", "--list"]).contains("hone/binary-secret"));
    run.assert_no_secret(CANARY);
    assert!(repo.is_clean());
}

/// A file git treats as binary (a NUL byte first, then a million lines) is not "0 lines": its
/// bytes count, and the change is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_file_counts_by_its_bytes_not_as_zero_lines() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let write = "python3 -c \"open('data.txt','wb').write(b'\\0' + b'line\\n' * 1000000)\"";
    mock.turn(cmd(write), false);
    fix(&mock);
    let policy = format!("{OPEN_POLICY}limits: {{ max_lines_changed: 100, max_bytes_changed: 1000000 }}\n");
    let yaml = spec(&repo, "binary-bytes", &mock, &policy, "");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let report = run.report();
    let error = report["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(error.contains("limits.max_bytes_changed") && error.contains("data.txt"), "{error}");
    assert!(report["commit"].is_null());
    assert!(repo.is_clean());
}

/// 60,000 new files: the change is known too large after counting one file past the limit; it
/// is not diffed or saved, the reports say so, and the files are gone afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_of_very_many_files_is_refused_without_being_read_and_is_cleaned_up() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let many = "python3 -c \"import os\nos.makedirs('many/deep', exist_ok=True)\nfor i in range(60000): open(f'many/deep/f{i}.txt', 'w').write('x')\"";
    mock.turn(cmd(many), false);
    fix(&mock);
    let yaml = spec(&repo, "many-files", &mock, OPEN_POLICY, "");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let report = run.report();
    let error = report["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(error.contains("more than 100 files changed") && error.contains("neither diffed nor saved"), "{error}");
    assert_eq!(report["files_changed"].as_array().map(Vec::len), Some(0), "nothing was diffed");
    assert!(report["saved_ref"].is_null(), "{report:#}");
    assert!(!repo.path.join("many").exists(), "the files the run made are gone");
    assert!(repo.is_clean());
    assert_junit_valid(&run.report_dir.join("junit.xml"));
}
