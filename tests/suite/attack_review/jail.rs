//! What the jail is built from that the repository or its setup names (directory names in
//! mount options), and what the jail keeps commands from making (hard links to masked files,
//! FIFOs that hone's walks would open).

use super::{broken_repo_outside_tmp, with_setup};
use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use crate::suite::jail_support::{all_tool_results, cmd, result_of, spec};
use serde_json::json;

/// The repository's setup makes a directory `a:/tmp/<victim>` (under tracked directories): the
/// run's jail puts an overlay on what setup made, and the overlay's `lowerdir=` option is built
/// from that path. Unescaped, the `:` would add the host's `/tmp/<victim>` as a second lower
/// layer: a command would read, through the overlay, a directory of the host the jail hides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_colon_in_a_directory_name_adds_no_host_directory_to_the_jail() {
    require!(Need::UserNamespaces);
    let outside = tempfile::Builder::new().prefix("hone-victim-").tempdir_in("/tmp").unwrap();
    std::fs::write(outside.path().join("secret.txt"), "victim-secret-5d1e\n").unwrap();
    let name = outside.path().file_name().unwrap().to_str().unwrap().to_string();
    let repo = TestRepo::new(&[
        ("status.txt", "broken\n"),
        ("check.sh", CHECK_SH),
        ("a/README", "a\n"),
        ("a:/tmp/keep", "a colon\n"),
    ]);
    let mock = MockModel::start().await;
    mock.turn(cmd(&format!("cat 'a:/tmp/{name}/secret.txt'; ls 'a:/tmp/{name}'")), false).turn(text("Done."), false);
    let made = format!("mkdir 'a:/tmp/{name}' && echo x > 'a:/tmp/{name}/made'");
    let yaml = with_setup(&spec(&repo, "overlay-colon", &mock, OPEN_POLICY, ""), &[("made", made.as_str())]);
    let run = run_job(&repo, &yaml, &[]).await;
    let seen = result_of(&mock, 0);
    assert!(!seen.contains("victim-secret-5d1e"), "a host directory was shown in the jail: {seen}");
    assert!(seen.contains("made"), "the control: the command saw setup's directory: {seen}\n{}", run.stderr);
}

/// Setup makes a directory whose path carries `,upperdir=<victim>,workdir=…\`: put into the
/// overlay's options unescaped, it is parsed as options of its own (an `upperdir=` of the
/// attacker's choosing; here the overlay then failed, the swallowed `workdir` not existing).
/// Escaped, the overlay is made on the directory as named, and a command's write lands in hone's
/// upper layer, never in a host directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comma_in_a_directory_name_sets_no_overlay_option() {
    require!(Need::UserNamespaces);
    let outside = tempfile::Builder::new().prefix("hone-victim-").tempdir_in("/tmp").unwrap();
    let up = outside.path().join("up");
    std::fs::create_dir(&up).unwrap();
    std::fs::create_dir(outside.path().join("work")).unwrap();
    // `b,upperdir=/tmp/V/up,workdir=/tmp/V/work\`: each directory but the last holds a tracked
    // file, so git names the last one as what setup made.
    let rel = format!("b,upperdir={},workdir={}\\", up.display(), outside.path().join("work").display());
    let (tracked_parent, last) = rel.rsplit_once('/').unwrap();
    let keep = format!("{tracked_parent}/keep");
    let repo =
        TestRepo::new(&[("status.txt", "broken\n"), ("check.sh", CHECK_SH), ("b/keep", "b\n"), (keep.as_str(), "k\n")]);
    let mock = MockModel::start().await;
    let quoted = rel.replace('\'', r"'\''");
    mock.turn(cmd(&format!("{{ echo pwned > '{quoted}/pwned.txt'; }} 2>/dev/null; ls '{quoted}'")), false)
        .turn(text("Done."), false);
    let made = format!("mkdir -p '{tracked_parent}/{last}' && echo x > '{tracked_parent}/{last}/made'");
    let yaml = with_setup(&spec(&repo, "overlay-comma", &mock, OPEN_POLICY, ""), &[("made", made.as_str())]);
    let run = run_job(&repo, &yaml, &[]).await;
    let seen = result_of(&mock, 0);
    assert_eq!(std::fs::read_dir(&up).unwrap().count(), 0, "a command wrote into a host directory: {seen}");
    assert!(
        seen.lines().any(|l| l == "pwned.txt"),
        "the overlay is made on the directory as named: {seen}\n{}",
        run.stderr
    );
}

/// A hard link to a read-denied file shares its content under another name that the read rules
/// allow. The jail shows the denied file as a mount of its own, so a command cannot make one
/// (`ln` fails across mounts), and hone's tools, grep and the repo map never read the content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hard_link_to_a_read_denied_file_cannot_be_made() {
    require!(Need::UserNamespaces);
    let repo = TestRepo::new(&[
        ("status.txt", "broken\n"),
        ("check.sh", CHECK_SH),
        ("config/.env", "TOKEN=hardlink-secret-4c1d\n"),
    ]);
    let mock = MockModel::start().await;
    mock.turn(
        call(
            "write_file",
            json!({"path": "s.sh", "content": "ln config/.env h.txt; ln config/.env h.py; cat h.txt\n"}),
        ),
        false,
    )
    .turn(cmd("sh s.sh"), false)
    .turn(call("read_file", json!({"path": "h.txt"})), false)
    .turn(call("grep", json!({"pattern": "hardlink-secret"})), false)
    .turn(text("Done."), false);
    let yaml = spec(&repo, "hardlink", &mock, "version: 1\ncommands:\n  default: allow\n", "");
    run_job(&repo, &yaml, &[]).await;
    let seen = all_tool_results(&mock);
    assert!(!seen.contains("hardlink-secret-4c1d"), "{seen}");
    assert!(seen.contains("cross-device"), "the control: `ln` was refused by the kernel: {seen}");
    let prompt = mock.requests().first().map(|r| r.body.to_string()).unwrap_or_default();
    assert!(!prompt.contains("hardlink-secret"), "the repo map");
}

/// The walks hone makes on the host (git's status, the count of a new directory, the search tools
/// and the repo map) read `.gitignore` and `.gitattributes` files: a command makes them FIFOs, in
/// a new directory and at the root. Opening one to read it would block hone's own work after the
/// model, which is awaited to the end, for good (and each search tool until its timeout). No
/// command can make a FIFO in the repository; in the jail's `/tmp` it still can (GNU make's
/// jobserver makes one there), unless the repository lies beneath it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifos_named_like_ignore_files_block_nothing() {
    require!(Need::UserNamespaces);
    for repo in [broken_repo_outside_tmp(), broken_repo()] {
        // The jail's /tmp allows a FIFO only when the repository does not lie beneath it.
        let under_tmp = ["/tmp", "/var/tmp"].iter().any(|t| repo.path.starts_with(t));
        let mock = MockModel::start().await;
        let make = "mkfifo \"$TMPDIR/ok\" && echo TMP-FIFO-OK; mkdir -p newdir && echo x > newdir/f; mkfifo newdir/.gitignore .gitattributes; echo fixed > status.txt";
        mock.turn(cmd(make), false)
            .turn(call("glob_file_search", json!({"pattern": "**/f"})), false)
            .turn(call("grep", json!({"pattern": "x", "path": "newdir"})), false)
            .turn(text("Done."), false);
        let yaml =
            spec(&repo, "fifo-ignore", &mock, OPEN_POLICY, "").replace("max_wall_time: 60s", "max_wall_time: 20s");
        // A blocked walk would run out the wall time (exit 1) or hang until the harness kills hone.
        let run = run_job(&repo, &yaml, &[]).await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        let made = result_of(&mock, 0);
        assert_eq!(made.contains("TMP-FIFO-OK"), !under_tmp, "a FIFO in the jail's /tmp: {made}");
        assert!(!repo.path.join(".gitattributes").exists(), "{made}");
    }
}

/// hone's walks (the search tools, the repo map, the count of a new directory) read every
/// `.ignore` and `.gitignore` they meet, and read it to the end: a link a command made there
/// (to `/dev/zero`, a terminal, a pipe of hone's, a file outside the repository) would fill
/// hone's memory, block it, or read the host. Here the link leads to a file outside whose lines
/// would hide `hidden-by-host.txt` from `glob_file_search`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ignore_file_that_is_a_link_is_never_read_by_hone() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let outside = tempfile::tempdir().unwrap();
    let patterns = outside.path().join("patterns");
    std::fs::write(&patterns, "hidden-by-host.txt\n").unwrap();
    let mock = MockModel::start().await;
    let make = format!(
        "echo x > hidden-by-host.txt && ln -s {p} .ignore && mkdir -p newdir/sub && echo 1 > newdir/sub/f && ln -s {p} newdir/sub/.gitignore",
        p = patterns.display()
    );
    mock.turn(cmd(&make), false)
        .turn(call("glob_file_search", json!({"pattern": "*.txt"})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Done."), false);
    let run = run_job(&repo, &spec(&repo, "ignore-link", &mock, OPEN_POLICY, ""), &[]).await;
    let listed = result_of(&mock, 1);
    assert!(listed.contains("hidden-by-host.txt"), "the file outside was read as ignore rules: {listed}");
    assert_eq!(run.code, 1, "the links are refused: {}", run.stderr);
}
