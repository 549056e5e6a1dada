//! Tests of the guards: paths, limits, links out, secrets in binary files, the `.git` guard.

use super::*;

fn change(path: &str, lines: usize) -> FileChange {
    FileChange {
        path: path.into(),
        status: "modified".into(),
        added: lines,
        removed: 0,
        bytes: 10,
        binary: false,
        raw: None,
    }
}

#[test]
fn diff_guard_checks_paths_and_limits() {
    let mut p = Policy::builtin();
    p.max_files_changed = 2;
    p.max_lines_changed = 10;
    assert!(diff_guard(&p, &[change("src/a.py", 3)]).is_empty());
    let v = diff_guard(&p, &[change(".github/workflows/ci.yml", 1)]);
    assert!(v[0].contains(".github/workflows/ci.yml"), "{v:?}");
    let v = diff_guard(&p, &[change("a", 1), change("b", 1), change("c", 1)]);
    assert!(v[0].contains("3 files changed"), "{v:?}");
    let v = diff_guard(&p, &[change("a", 11)]);
    assert!(v[0].contains("11 lines changed"), "{v:?}");
    p.max_bytes_changed = 100;
    let big = FileChange {
        path: "blob.bin".into(),
        status: "added".into(),
        added: 0,
        removed: 0,
        bytes: 101,
        binary: true,
        raw: None,
    };
    let v = diff_guard(&p, &[change("a", 1), big]);
    assert!(v[0].contains("111 bytes changed (the most in `blob.bin`)"), "a binary file counts by its bytes: {v:?}");
}

#[test]
fn links_that_lead_outside_are_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("a")).unwrap();
    let links = [
        ("a/up", "../b"),
        ("a/out", "../../x"),
        ("abs", "/etc/passwd"),
        ("a/deep", "c/../../b"),
        ("a/trick", "../a/../../y"),
    ];
    let mut changes = Vec::new();
    for (name, to) in links {
        std::os::unix::fs::symlink(to, dir.path().join(name)).unwrap();
        changes.push(FileChange {
            path: name.into(),
            status: "added".into(),
            added: 1,
            removed: 0,
            bytes: 1,
            binary: false,
            raw: None,
        });
    }
    assert_eq!(
        links_out(dir.path(), &changes),
        ["`a/out` -> `../../x`", "`abs` -> `/etc/passwd`", "`a/trick` -> `../a/../../y`"]
    );
}

#[test]
fn binary_files_are_scanned_for_secrets_in_their_forms() {
    let dir = tempfile::tempdir().unwrap();
    let r = crate::redact::Redactor::new();
    r.add("sk-live-0123456789");
    let utf16: Vec<u8> = "sk-live-0123456789".bytes().flat_map(|b| [b, 0]).collect();
    let files: [(&str, Vec<u8>); 4] = [
        ("raw.bin", [&b"\x00\x01GIF"[..], b"sk-live-0123456789"].concat()),
        ("wide.bin", [&b"\xff\xfe"[..], &utf16].concat()),
        ("b64.bin", [&b"\x00"[..], b"c2stbGl2ZS0wMTIzNDU2Nzg5"].concat()),
        ("clean.bin", b"\x00\x01nothing here".to_vec()),
    ];
    let mut changes = Vec::new();
    for (name, bytes) in &files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
        changes.push(FileChange {
            path: (*name).into(),
            status: "added".into(),
            added: 0,
            removed: 0,
            bytes: 1,
            binary: true,
            raw: None,
        });
    }
    let root = dir.path().canonicalize().unwrap();
    let (found, unscanned) = binary_secrets(&root, &changes, &r, 1 << 20);
    assert_eq!(found, ["raw.bin", "wide.bin", "b64.bin"]);
    assert!(unscanned.is_empty());
    // A file larger than what is read cannot be cleared: it is named, whatever it holds.
    let (found, unscanned) = binary_secrets(&root, &changes, &r, 16);
    assert!(found.is_empty());
    assert_eq!(unscanned, ["raw.bin", "wide.bin", "b64.bin"]);
}

#[test]
fn limits_are_inclusive_and_removed_lines_count() {
    let mut p = Policy::builtin();
    p.max_files_changed = 2;
    p.max_lines_changed = 10;
    let edit = |path: &str, added, removed| FileChange {
        path: path.into(),
        status: "modified".into(),
        added,
        removed,
        bytes: 1,
        binary: false,
        raw: None,
    };
    assert!(diff_guard(&p, &[edit("a", 4, 1), edit("b", 2, 3)]).is_empty(), "exactly at both limits");
    assert_eq!(
        diff_guard(&p, &[edit("a", 7, 4)]),
        ["11 lines changed; the policy allows at most 10 (limits.max_lines_changed)"]
    );
}

/// A `.git` with a config, a hook sample and `info/exclude`.
fn plain_git_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("hooks")).unwrap();
    std::fs::create_dir_all(dir.path().join("info")).unwrap();
    std::fs::write(dir.path().join("config"), "[core]\n").unwrap();
    std::fs::write(dir.path().join("hooks/pre-commit.sample"), "sample").unwrap();
    std::fs::write(dir.path().join("info/exclude"), "*.o\n").unwrap();
    dir
}

#[test]
fn a_plain_git_dir_snapshots_exactly_its_regular_files() {
    let dir = plain_git_dir();
    let g = GitGuard::snapshot(dir.path());
    let keys: Vec<&str> = g.files.keys().map(String::as_str).collect();
    assert_eq!(keys, ["config", "hooks/pre-commit.sample", "info/exclude"]);
    assert_eq!(g.files["config"], b"[core]\n");
}

#[test]
fn a_config_replaced_by_a_fifo_is_reported_and_put_back() {
    let dir = plain_git_dir();
    let git = dir.path();
    let g = GitGuard::snapshot(git);
    std::fs::remove_file(git.join("config")).unwrap();
    nix::unistd::mkfifo(&git.join("config"), nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    assert_eq!(g.check_and_restore(), [".git/config", ".git/config (not a regular file)"]);
    assert_eq!(std::fs::read_to_string(git.join("config")).unwrap(), "[core]\n");
}

#[test]
fn a_directory_or_symlink_planted_in_hooks_is_reported_and_left_alone() {
    let dir = plain_git_dir();
    let outside = tempfile::tempdir().unwrap();
    let git = dir.path();
    std::fs::write(outside.path().join("target"), "x").unwrap();
    let g = GitGuard::snapshot(git);
    std::fs::create_dir(git.join("hooks/pre-push")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("target"), git.join("hooks/post-checkout")).unwrap();
    assert_eq!(
        g.check_and_restore(),
        [".git/hooks/post-checkout (not a regular file)", ".git/hooks/pre-push (not a regular file)"]
    );
    assert!(git.join("hooks/post-checkout").symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(outside.path().join("target")).unwrap(), "x");
}

#[test]
fn git_guard_restores_planted_hooks_and_config() {
    let dir = tempfile::tempdir().unwrap();
    let git = dir.path();
    std::fs::create_dir_all(git.join("hooks")).unwrap();
    std::fs::write(git.join("config"), "[core]\n").unwrap();
    std::fs::write(git.join("hooks/pre-commit.sample"), "sample").unwrap();
    let g = GitGuard::snapshot(git);
    assert!(g.check_and_restore().is_empty());
    std::fs::write(git.join("hooks/pre-commit"), "curl x").unwrap();
    std::fs::write(git.join("config"), "[core]\nfsmonitor = evil\n").unwrap();
    std::fs::remove_file(git.join("hooks/pre-commit.sample")).unwrap();
    let mut changed = g.check_and_restore();
    changed.sort();
    assert_eq!(changed, [".git/config", ".git/hooks/pre-commit", ".git/hooks/pre-commit.sample"]);
    assert!(!git.join("hooks/pre-commit").exists());
    assert_eq!(std::fs::read_to_string(git.join("config")).unwrap(), "[core]\n");
    assert!(git.join("hooks/pre-commit.sample").exists());
}

#[test]
fn a_symlinked_hooks_dir_or_config_is_reported_never_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let git = dir.path();
    std::fs::create_dir_all(git.join("hooks")).unwrap();
    std::fs::write(git.join("config"), "[core]\n").unwrap();
    std::fs::write(git.join("hooks/pre-commit.sample"), "sample").unwrap();
    std::fs::write(outside.path().join("keep-me"), "x").unwrap();
    std::fs::write(outside.path().join("config"), "theirs").unwrap();
    let g = GitGuard::snapshot(git);
    std::fs::remove_dir_all(git.join("hooks")).unwrap();
    std::os::unix::fs::symlink(outside.path(), git.join("hooks")).unwrap();
    std::fs::remove_file(git.join("config")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("config"), git.join("config")).unwrap();
    let changed = g.check_and_restore();
    assert!(changed.iter().any(|c| c.contains("hooks (a symlink)")), "{changed:?}");
    assert!(changed.iter().any(|c| c.contains("config")), "{changed:?}");
    assert_eq!(std::fs::read_to_string(outside.path().join("config")).unwrap(), "theirs");
    let names: Vec<_> = std::fs::read_dir(outside.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "nothing written or removed outside: {names:?}");
}
