//! What hone stages, commits and saves is the model's change and nothing it could not read or
//! hone could not check: files ignored before the run or made by setup, whatever `.gitignore`
//! says by then; names that are not UTF-8; files too large to scan for secrets.

use super::with_setup;
use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use crate::suite::jail_support::{cmd, fix, spec};
use serde_json::json;

/// The user's `.env` is ignored (by the tracked `.gitignore`) and read-denied: no command and no
/// tool of the model can read it. The model empties `.gitignore`, so `.env` looks like a new file
/// of the change: hone's own staging (a checkpoint, the commit, the saved failed work) must not
/// read it into a commit, which would carry it to a branch, a ref or a PR.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_denied_ignored_file_is_never_staged_when_the_model_unignores_it() {
    require!(Need::UserNamespaces);
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), (".gitignore", ".env\n")]);
    std::fs::write(repo.path.join(".env"), "TOKEN=user-env-secret-3b9a\n").unwrap();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": ".gitignore", "content": "# nothing\n"})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Done."), false);
    let yaml = spec(&repo, "unignore", &mock, "version: 1\n", "");
    let run = run_job(&repo, &yaml, &[]).await;
    eprintln!("{}", run.stderr);
    let everything = repo.git(&["log", "--all", "-p", "--format=%H %s"]);
    assert!(!everything.contains("user-env-secret-3b9a"), "the user's .env went into a commit:\n{everything}");
    assert_eq!(repo.file(".env"), "TOKEN=user-env-secret-3b9a\n", "the user's file stays");
}

/// What setup made in an ignored directory (dependencies, a registry login in `.npmrc`) is the
/// checks' ground and never part of the change, even when the model's edit of `.gitignore` stops
/// ignoring it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_setup_made_is_never_staged_when_the_model_unignores_it() {
    require!(Need::UserNamespaces);
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), (".gitignore", "deps/\n")]);
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": ".gitignore", "content": "# nothing\n"})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Done."), false);
    let yaml = with_setup(
        &spec(&repo, "unignore-setup", &mock, "version: 1\n", ""),
        &[("deps", "mkdir -p deps && printf '//registry/:_authToken=setup-made-%s' 7e2f > deps/.npmrc")],
    );
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let everything = repo.git(&["log", "--all", "-p", "--format=%H %s"]);
    assert!(!everything.contains("setup-made-7e2f"), "what setup made went into a commit:\n{everything}");
}

/// A file name that is not UTF-8 (`x\xff`): the guards that read the change's files (a symlink's
/// target, a binary file's content) must read that file, not the one its lossy spelling
/// (`x\u{fffd}`) names, which does not exist. Else a symlink to `/etc/passwd` and a secret after a
/// NUL byte pass the guards and are committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_utf8_name_does_not_slip_past_the_guards() {
    require!(Need::UserNamespaces);
    const CANARY: &str = "hone-nonutf8-canary-Z3x8";
    for (name, command, want) in [
        ("nonutf8-link", "ln -s /etc/passwd \"$(printf 'x\\377')\"", "symlinks that lead outside"),
        (
            "nonutf8-secret",
            "f=\"$(printf 'l\\377.gif')\"; printf 'GIF89a\\000\\001' > \"$f\" && printf '%s' \"$HONE_CANARY_TOKEN\" >> \"$f\"",
            "contains the value of a secret",
        ),
    ] {
        let repo = broken_repo();
        let mock = MockModel::start().await;
        mock.turn(cmd(command), false);
        fix(&mock);
        let policy = format!("{OPEN_POLICY}env:\n  pass_secrets: [HONE_CANARY_TOKEN]\n");
        let yaml = spec(&repo, name, &mock, &policy, "");
        let run = run_job_env(&repo, &yaml, &[("HONE_CANARY_TOKEN", CANARY)]).await;
        let report = run.report();
        assert_eq!(run.code, 1, "{name}: the change was committed: {}", run.stderr);
        assert!(report["errors"].to_string().contains(want), "{name}: {:#}", report["errors"]);
        assert!(report["commit"].is_null(), "{name}");
        let everything = repo.git(&["log", "--all", "-p", "--format=%H"]);
        assert!(!everything.contains(CANARY), "{name}: the secret is in a commit");
        run.assert_no_secret(CANARY);
    }
}

/// With `pass_secrets`, the model's command appends the token to a tracked 2 MiB binary file,
/// past the 1 MiB hone scans of a binary file (the byte limit, set to 1 MiB here). The change is refused for its
/// size, but it must not be saved either (a saved failed run is pushed as a draft PR with
/// `pr.on_failure: draft`): hone cannot tell it holds no secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_past_the_scanned_bytes_of_a_large_file_is_not_saved() {
    require!(Need::UserNamespaces);
    const CANARY: &str = "hone-late-canary-R5t1Y8";
    let big = format!("\u{0}{}", "x".repeat(2 << 20));
    let repo = TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), ("asset.bin", &big)]);
    let mock = MockModel::start().await;
    mock.turn(cmd("printf '%s' \"$HONE_CANARY_TOKEN\" >> asset.bin"), false);
    fix(&mock);
    let policy =
        format!("{OPEN_POLICY}env:\n  pass_secrets: [HONE_CANARY_TOKEN]\nlimits: {{ max_bytes_changed: 1048576 }}\n");
    let yaml = spec(&repo, "late-secret", &mock, &policy, "");
    let run = run_job_env(&repo, &yaml, &[("HONE_CANARY_TOKEN", CANARY)]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let report = run.report();
    assert!(report["saved_ref"].is_null(), "the change was saved: {:#}", report["errors"]);
    let refs = repo.git(&["for-each-ref", "refs/hone/late-secret"]);
    assert!(refs.is_empty() || !refs.contains("failed"), "{refs}");
    run.assert_no_secret(CANARY);
}
