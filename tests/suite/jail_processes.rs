//! Attacks on the jail (issue 10) through what a command runs: no process outliving the run, no
//! host device reachable, no capability for root in the jail, and no command language that slips
//! past the policy. Each test scripts a hostile model's tool calls through the real binary; the
//! shared helpers are in `jail_support`.

use super::jail_support::{cmd, fix, result_of, spec, tool_results, unique, write};
use crate::common::mock_model::{MockModel, Turn};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

/// Wait (bounded) for `path`; true when it appeared. For markers that appear only if an attack
/// got through, so a jail that works makes this wait the whole `limit`: callers only wait when
/// they already know the attacker is alive.
fn appeared(path: &Path, limit: Duration) -> bool {
    let start = std::time::Instant::now();
    while !path.exists() {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::park_timeout(Duration::from_millis(20));
    }
    true
}

// 2. ------------------------------------------------------------------------------------------

/// Item 2: `setsid`, `setpgid` + double fork, `nohup &`, and a daemon started by a verify
/// command all end with their command. None survives hone, so none can plant a hook after hone
/// restored `.git`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_a_command_starts_outlives_it_or_hone() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let marker = unique("hone-daemon");
    let trigger = repo.dir.path().join("trigger");
    let planted = |variant: &str| repo.dir.path().join(format!("planted-by-{variant}"));
    let hook = repo.path.join(".git/hooks/pre-commit");
    // The daemon waits (bounded) for the test to pull the trigger after hone has exited, then
    // plants a pre-commit hook and says so. `$1` names it, for `ps`.
    let daemon = format!(
        "i=0\nwhile [ ! -e {t} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n[ -e {t} ] || exit 0\nprintf '#!/bin/sh\\ntouch {d}/hook-ran\\n' > {h}\nchmod +x {h}\ntouch {d}/planted-by-${{1##*-}}\n",
        t = trigger.display(),
        d = repo.dir.path().display(),
        h = hook.display(),
    );
    let quiet = ">/dev/null 2>&1 </dev/null";
    mock.turn(write("daemon.sh", &daemon), false)
        .turn(cmd(&format!("setsid -f sh daemon.sh {marker}-setsid {quiet}")), false)
        .turn(
            cmd(&format!(
                "python3 -c \"import os; os.fork() or (os.setpgid(0, 0), os.fork() or os.execvp('sh', ['sh', 'daemon.sh', '{marker}-setpgid']))\" {quiet}"
            )),
            false,
        )
        .turn(cmd(&format!("nohup sh daemon.sh {marker}-nohup {quiet} &")), false)
        .turn(write("check.sh", &format!("{CHECK_SH}setsid -f sh daemon.sh {marker}-verify {quiet}\n")), false);
    fix(&mock);
    let yaml = spec(&repo, "daemons", &mock, OPEN_POLICY, "");
    let run = run_job(&repo, &yaml, &[]).await;
    let alive = survivors(&marker);
    // Let any survivor act, as it would once the user's CI moves on.
    std::fs::write(&trigger, "").unwrap();
    let mut acted = Vec::new();
    for v in ["setsid", "setpgid", "nohup", "verify"] {
        if alive.iter().any(|l| l.contains(&format!("{marker}-{v}"))) && appeared(&planted(v), Duration::from_secs(30))
        {
            acted.push(v);
        }
    }
    assert!(
        alive.is_empty(),
        "processes started by commands outlived hone: {alive:#?}; after hone exited, these planted .git/hooks/pre-commit: {acted:?}"
    );
    assert!(
        !hook.exists(),
        "a .git/hooks/pre-commit was planted: {}",
        std::fs::read_to_string(&hook).unwrap_or_default()
    );
    assert_eq!(run.code, 0, "the run should still succeed: {}", run.stdout);
}

// 5. ------------------------------------------------------------------------------------------

/// What a command may find in `/dev`: the harmless character devices, a private `shm`, and the
/// pty and stdio entries a shell expects. Nothing else: no block device, no `loop-control`,
/// `kvm`, `fuse`, `kmsg`, `mem`, consoles or host ttys.
const DEV_ALLOWED: &[&str] =
    &["null", "zero", "full", "random", "urandom", "tty", "shm", "pts", "ptmx", "fd", "stdin", "stdout", "stderr"];

/// Item 5: `/dev` holds only `DEV_ALLOWED`, and no loop or other block device can be opened for
/// writing, made with `mknod`, or attached to a file Landlock forbids the command to write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_holds_only_the_harmless_devices() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    // Next to the repository, not in it: outside every root the jail lets commands write (the
    // repository, private temp dirs, the home overlay), for root and for a user alike.
    let forbidden = repo.dir.path().join("forbidden");
    std::fs::create_dir(&forbidden).unwrap();
    let victim = forbidden.join("victim.img");
    std::fs::write(&victim, vec![0u8; 64 * 1024]).unwrap();
    let mock = MockModel::start().await;
    // Open without creating (a `<>` redirect would create a regular file where no device is).
    let script = format!(
        r#"for d in /dev/loop-control /dev/loop0 /dev/loop1; do
  if [ -b "$d" ] || [ -c "$d" ]; then (exec 3<>"$d") 2>/dev/null && echo "OPENED-RW $d"; fi
done
p=/dev/hone-probe-$$
if mknod "$p" b 7 0 2>/dev/null; then
  [ -b "$p" ] && (exec 3<>"$p") 2>/dev/null && echo "OPENED-RW mknod $p"
  rm -f "$p"
fi
if dev=$(losetup -f --show {v} 2>/dev/null); then
  echo "ATTACHED $dev"
  printf PWNED | dd of="$dev" conv=notrunc,fsync 2>/dev/null && echo "WROTE $dev"
  losetup -d "$dev"
fi
echo PROBED
"#,
        v = victim.display()
    );
    mock.turn(cmd("ls -A1 /dev"), false)
        .turn(write("dev.sh", &script), false)
        .turn(cmd("sh dev.sh; rm -f dev.sh"), false);
    fix(&mock);
    let yaml = spec(&repo, "devices", &mock, OPEN_POLICY, "");
    let run = run_job(&repo, &yaml, &[]).await;
    let listing = result_of(&mock, 0);
    let probe = result_of(&mock, 2);
    let mut problems = Vec::new();
    if !listing.starts_with("exit code: 0") {
        problems.push(format!("`ls -A1 /dev` did not run: {listing}"));
    }
    let extra: Vec<&str> = listing.lines().skip(2).filter(|l| !l.is_empty() && !DEV_ALLOWED.contains(l)).collect();
    if !extra.is_empty() {
        problems.push(format!("/dev shows entries beyond {DEV_ALLOWED:?}: {extra:?}"));
    }
    if !probe.contains("PROBED") {
        problems.push(format!("the device probe did not run: {probe}"));
    }
    for l in probe.lines().filter(|l| ["OPENED-RW", "ATTACHED", "WROTE"].iter().any(|p| l.starts_with(p))) {
        problems.push(format!("a command got hold of a device it must not have: {l}"));
    }
    if std::fs::read(&victim).unwrap().iter().any(|b| *b != 0) {
        problems.push("a command wrote a file outside its writable roots through a loop device".into());
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(run.code, 0, "{}", run.stdout);
}

// 9. ------------------------------------------------------------------------------------------

/// Run `attempts` as one turn of parallel `run_cmd` calls under `policy` and return those that
/// were not denied, with what came back.
async fn not_denied(repo: &TestRepo, name: &str, policy: &str, attempts: &[&str]) -> Vec<String> {
    let mock = MockModel::start().await;
    let mut turn = Turn::default();
    for a in attempts {
        turn = turn.with_call("run_cmd", &json!({"command": a}).to_string());
    }
    mock.turn(turn, false);
    fix(&mock);
    let yaml = spec(repo, name, &mock, policy, "");
    let run = run_job(repo, &yaml, &[]).await;
    let results = tool_results(&mock, 1);
    assert_eq!(results.len(), attempts.len(), "hone did not answer every call (exit {}): {}", run.code, run.stderr);
    attempts
        .iter()
        .zip(results)
        .filter(|(_, r)| !r.starts_with("error E_POLICY_DENIED"))
        .map(|(a, r)| format!("`{a}` was allowed: {}", r.lines().take(4).collect::<Vec<_>>().join(" | ")))
        .collect()
}

/// Item 9, allow lists: sed, awk, tar, git, env and find carry command languages of their own.
/// With only those allowed, none of them may run another program (`id` is not allowed) or write
/// a path the policy denies (`.github/workflows/**`, `.git/`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_interpreters_cannot_run_or_write_what_the_policy_denies() {
    require!(Need::UserNamespaces);
    let repo = TestRepo::new(&[
        ("status.txt", "broken\n"),
        ("check.sh", CHECK_SH),
        ("evil.sed", "1e id\n"),
        ("evil.awk", "BEGIN { \"id\" | getline l; print l }\n"),
    ]);
    // A git alias that arrives with the repository.
    repo.git(&["config", "alias.lg", "!id"]);
    let policy = "version: 1\ncommands:\n  default: deny\n  allow: [\"sed *\", \"awk *\", \"tar *\", \"git *\", \"env *\", \"find *\"]\n";
    let attempts = [
        "sed -n '/broken/e id' status.txt",
        "sed --expression='1e id' status.txt",
        r"sed 's/\/*broken/id/e' status.txt",
        "sed -f evil.sed status.txt",
        "awk 'BEGIN { \"id\" | getline line; print line }'",
        "awk 'BEGIN { while ((\"id\" | getline l) > 0) print l }'",
        "awk -f evil.awk",
        "git -C . -c alias.x='!id' x",
        "git {-c,alias.x=!id} x",
        "git grep --open-files-in-pager=id broken",
        "git lg",
        "tar -cf /dev/null --checkpoint=1 --checkpoint-action=exec=id status.txt",
        "tar -cf - status.txt | tar -xf - --to-command=id",
        "env -iS'sh -c id'",
        "sed -n 'w .github/workflows/evil.yml' status.txt",
        "sed -n 'w .git/hooks/pre-commit' status.txt",
        "git diff --output=.github/workflows/evil.yml",
        "find . -maxdepth 0 -fprintf .github/workflows/evil.yml pwned",
        "find . -maxdepth 0 -fprint .git/hooks/pre-commit",
    ];
    let allowed = not_denied(&repo, "interpreters", policy, &attempts).await;
    assert!(allowed.is_empty(), "{} of {} bypasses got through: {allowed:#?}", allowed.len(), attempts.len());
}

/// Item 9, deny lists: `curl *` denied under a default-allow policy cannot be run through brace
/// expansion, an alias, a computed name, or a runner the analysis does not know.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_list_cannot_be_beaten_by_braces_aliases_or_unlisted_runners() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let policy = "version: 1\ncommands:\n  default: allow\n  deny: [\"curl *\"]\n";
    let url = "http://127.0.0.1:9/";
    let attempts = [
        format!("{{curl,-s,-m,2,{url}}}"),
        format!("shopt -s expand_aliases\nalias c=curl\nc -s -m 2 {url}"),
        format!("taskset -c 0 curl -s -m 2 {url}"),
        format!("setarch linux64 curl -s -m 2 {url}"),
        format!("prlimit --nofile=64:64 curl -s -m 2 {url}"),
        format!("c=curl; $c -s -m 2 {url}"),
        format!("$(printf curl) -s -m 2 {url}"),
    ];
    let attempts: Vec<&str> = attempts.iter().map(String::as_str).collect();
    let allowed = not_denied(&repo, "denylist", policy, &attempts).await;
    assert!(allowed.is_empty(), "{} of {} bypasses got through: {allowed:#?}", allowed.len(), attempts.len());
}

// Capabilities -----------------------------------------------------------------------------------

/// Root in the jail is a user without power: every capability set is empty, and it can neither
/// mount nor make a device. (Only meaningful as root: a user has no capabilities to give up.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn root_in_the_jail_has_no_capabilities() {
    require!(Need::Root);
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    let probe = "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status; id -u; \
                 mkdir -p /tmp/m; mount -t tmpfs none /tmp/m 2>/dev/null && echo MOUNTED || echo MOUNT-REFUSED; \
                 mknod /tmp/nul c 1 3 2>/dev/null && echo MKNOD-OK || echo MKNOD-REFUSED";
    mock.turn(cmd(probe), false);
    fix(&mock);
    let yaml = spec(&repo, "rootcaps", &mock, OPEN_POLICY, "");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stdout);
    let said = result_of(&mock, 0);
    for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert!(said.contains(&format!("{set}:\t0000000000000000")), "{set} is not empty: {said}");
    }
    assert!(said.contains("NoNewPrivs:\t1"), "no_new_privs is not set: {said}");
    assert!(said.lines().any(|l| l.trim() == "0"), "the command should run as (mapped) root: {said}");
    assert!(said.contains("MOUNT-REFUSED") && said.contains("MKNOD-REFUSED"), "{said}");
}

/// The host's System V IPC objects (message queues, shared memory, semaphores: a channel between
/// processes that no file system path names) are out of reach: each jail has an IPC namespace of
/// its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_ipc_objects_are_out_of_reach() {
    require!(Need::UserNamespaces);
    let made = std::process::Command::new("ipcmk").arg("-Q").output().expect("ipcmk runs");
    let said = String::from_utf8_lossy(&made.stdout).to_string();
    let id = said.trim().rsplit(' ').next().unwrap_or_default().to_string();
    assert!(made.status.success() && id.parse::<u32>().is_ok(), "a host message queue: {said}");
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(cmd("ipcs -q; echo listed"), false);
    fix(&mock);
    let yaml = spec(&repo, "hostipc", &mock, OPEN_POLICY, "");
    let run = run_job(&repo, &yaml, &[]).await;
    let _ = std::process::Command::new("ipcrm").args(["-q", &id]).status();
    assert_eq!(run.code, 0, "{}", run.stdout);
    let seen = result_of(&mock, 0);
    assert!(seen.contains("listed"), "{seen}");
    let ids: Vec<&str> = seen.lines().filter_map(|l| l.split_whitespace().nth(1)).collect();
    assert!(!ids.contains(&id.as_str()), "the host's queue {id} is visible: {seen}");
}

// The binary itself ---------------------------------------------------------------------------

/// hone removed from disk while it runs (an upgrade in the middle of a long fleet run) still
/// jails its commands: the jail runs the binary that is running, not the path it started from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hone_removed_from_disk_while_it_runs_still_jails_its_commands() {
    require!(Need::UserNamespaces);
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(cmd("echo jailed-and-running"), false);
    fix(&mock);
    commit_spec(&repo, &spec(&repo, "moved", &mock, OPEN_POLICY, ""));
    let copy = repo.dir.path().join("hone-copy");
    std::fs::copy(env!("CARGO_BIN_EXE_hone"), &copy).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        let child = spawn_job(&copy, &repo.path);
        // spawn() returns once the exec is done; the jail starts at intake, after the spec, the
        // policy and the repository are read: the file is gone by then.
        std::fs::remove_file(&copy).unwrap();
        (child.wait_with_output().unwrap(), repo)
    })
    .await
    .unwrap();
    let (out, _repo) = out;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("cannot jail"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(result_of(&mock, 0).contains("jailed-and-running"), "{}", result_of(&mock, 0));
}
