use super::*;
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::os::unix::fs::OpenOptionsExt;

/// The regular files the walk visits beneath `base`, relative to it, sorted.
fn listed(base: &Path) -> Vec<String> {
    let found = Mutex::new(Vec::new());
    Walk::new(base).run(|| {
        let found = &found;
        move |e: &Entry| {
            if e.file_type().is_file() {
                let rel = e.path().strip_prefix(base).unwrap_or(e.path());
                found.lock().unwrap().push(rel.to_string_lossy().into_owned());
            }
            Step::Continue
        }
    });
    let mut out = found.into_inner().unwrap();
    out.sort();
    out
}

/// [`listed`] on its own thread, given `secs` to end: a walk that blocks fails the test instead
/// of hanging it. `unblock` lets a blocked open go afterwards, so the test process can end.
fn listed_within(base: &Path, secs: u64, unblock: impl FnOnce()) -> Vec<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let b = base.to_path_buf();
    std::thread::spawn(move || tx.send(listed(&b)));
    let got = rx.recv_timeout(std::time::Duration::from_secs(secs));
    if got.is_err() {
        unblock();
    }
    got.expect("the walk ended")
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

fn tree(root: &Path, files: &[&str]) {
    for f in files {
        let p = root.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x").unwrap();
    }
}

#[test]
fn an_ignore_file_that_is_a_link_is_never_read() {
    let d = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("patterns"), "b.txt\n").unwrap();
    let root = d.path();
    tree(root, &["a.txt", "b.txt", "sub/b.txt", "sub/c.txt"]);
    std::fs::write(root.join(".gitignore"), "a.txt\n").unwrap();
    assert_eq!(listed(root), [".gitignore", "b.txt", "sub/b.txt", "sub/c.txt"], "the control");
    assert!(!{
        let w = Walk::new(root);
        w.run(|| |_: &Entry| Step::Continue);
        w.skipped()
    });
    // In a directory below: that directory is left out, and the walk says so.
    std::os::unix::fs::symlink(outside.path().join("patterns"), root.join("sub/.ignore")).unwrap();
    assert_eq!(listed(root), [".gitignore", "b.txt"]);
    let w = Walk::new(root);
    w.run(|| |_: &Entry| Step::Continue);
    assert!(w.skipped());
    // At the start (or above it): no ignore file is read.
    std::os::unix::fs::symlink("/dev/zero", root.join(".ignore")).unwrap();
    assert_eq!(listed(&root.join("sub")), ["b.txt", "c.txt"]);
    assert_eq!(listed(root), [".gitignore", "a.txt", "b.txt", "sub/b.txt", "sub/c.txt"]);
}

/// A FIFO where the walk would read a directory's git excludes (`sub/.git/info/exclude`, which
/// a command can make) never stops the walk: the walk ends, and leaves that directory out.
#[test]
fn a_git_exclude_that_is_a_fifo_never_stops_the_walk() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    tree(root, &["sub/a.txt", "b.txt"]);
    std::fs::create_dir_all(root.join("sub/.git/info")).unwrap();
    let fifo = root.join("sub/.git/info/exclude");
    mkfifo(&fifo);
    let got = listed_within(root, 30, || drop(std::fs::OpenOptions::new().write(true).open(&fifo)));
    assert_eq!(got, ["b.txt"]);
}

/// A FIFO named `.gitignore` (or `.ignore`) never stops the walk either.
#[test]
fn an_ignore_file_that_is_a_fifo_never_stops_the_walk() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    tree(root, &["sub/a.txt", "b.txt", "other/c.txt"]);
    mkfifo(&root.join("sub/.gitignore"));
    mkfifo(&root.join("other/.ignore"));
    let got = listed_within(root, 30, || {
        for f in ["sub/.gitignore", "other/.ignore"] {
            drop(std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(root.join(f)));
        }
    });
    assert_eq!(got, ["b.txt"]);
}

/// A `.git` file (a worktree's, or one a command wrote) names a git directory anywhere: the
/// walk does not follow it to read excludes there.
#[test]
fn a_git_file_is_not_followed_to_excludes_elsewhere() {
    let d = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(outside.path().join("info")).unwrap();
    std::fs::write(outside.path().join("info/exclude"), "a.txt\n").unwrap();
    let root = d.path();
    tree(root, &["sub/a.txt"]);
    std::fs::write(root.join("sub/.git"), format!("gitdir: {}\n", outside.path().display())).unwrap();
    assert_eq!(listed(root), ["sub/a.txt"]);
    // A `.git` directory's own excludes apply, as git's do.
    std::fs::remove_file(root.join("sub/.git")).unwrap();
    std::fs::create_dir_all(root.join("sub/.git/info")).unwrap();
    std::fs::write(root.join("sub/.git/info/exclude"), "a.txt\n").unwrap();
    assert_eq!(listed(root), Vec::<String>::new());
}

/// An ignore file larger than hone reads is not read: its directory is left out.
#[test]
fn an_ignore_file_too_large_to_read_leaves_its_directory_out() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    tree(root, &["sub/a.txt", "b.txt"]);
    let f = std::fs::File::create(root.join("sub/.gitignore")).unwrap();
    f.set_len(rules::MAX_IGNORE_FILE + 1).unwrap();
    assert_eq!(listed(root), ["b.txt"]);
}

#[test]
fn a_start_that_is_a_file_is_visited_alone_and_a_quit_stops_the_walk() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    tree(root, &["a/1", "a/2", "b/3", "c/4", "d/5"]);
    assert_eq!(listed(&root.join("a/1")), [""], "the start itself");
    let seen = std::sync::atomic::AtomicUsize::new(0);
    Walk::new(root).run(|| {
        let seen = &seen;
        move |_: &Entry| {
            seen.fetch_add(1, Ordering::Relaxed);
            Step::Quit
        }
    });
    assert!(seen.load(Ordering::Relaxed) <= MAX_THREADS, "each thread stops at its first quit");
}

/// A visitor that panics ends the walk for every thread, and the panic reaches the caller: no
/// thread waits for ever for the directories the panicking one would have added.
#[test]
fn a_panicking_visitor_ends_the_walk_and_the_panic_reaches_the_caller() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().to_path_buf();
    let names: Vec<String> = (0..40).map(|i| format!("d{i}/e/f.txt")).collect();
    tree(&root, &names.iter().map(String::as_str).collect::<Vec<_>>());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // One visitor panics, once: the others go on, and must not wait for its directories.
        let once = std::sync::atomic::AtomicBool::new(false);
        let ran = std::panic::catch_unwind(|| {
            Walk::new(&root).run(|| {
                let once = &once;
                move |e: &Entry| {
                    if e.file_type().is_dir() && e.path().ends_with("e") && !once.swap(true, Ordering::Relaxed) {
                        panic!("a visitor's fault");
                    }
                    Step::Continue
                }
            })
        });
        tx.send(ran.is_err()).unwrap();
    });
    let panicked = rx.recv_timeout(std::time::Duration::from_secs(30)).expect("the walk ended");
    assert!(panicked, "the panic reached the caller");
}

/// The `ignore` crate's walk with the options hone used before it read ignore files itself.
fn crate_listed(base: &Path) -> Vec<String> {
    let mut w = ignore::WalkBuilder::new(base);
    w.hidden(false).require_git(false).filter_entry(|e| e.file_name() != ".git");
    let mut out: Vec<String> = w
        .build()
        .flatten()
        .filter(|e| e.depth() > 0 && !e.file_type().is_some_and(|t| t.is_dir()))
        .map(|e| e.path().strip_prefix(base).unwrap().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

const DIRS: &[&str] = &["", "a", "x", "a/a", "x/a"];
const NAMES: &[&str] = &["a", "b.rs", "c.txt", "x", ".h"];
const PATTERNS: &[&str] = &[
    "*.rs", "!b.rs", "a", "a/", "/a", "x", "!x", "**/c.txt", "a/*", "!a/b.rs", "a/**/x", "/b.rs", "*", "!*.txt", ".h",
    "# c", "", "b.rs/", "\\!x", "[ab]*",
];

/// An ignore file: its directory, its name and its lines.
type IgnoreFile = (String, &'static str, Vec<&'static str>);

/// A tree of files under up to two levels of directories, and ignore files with patterns.
fn arb_tree() -> impl Strategy<Value = (Vec<String>, Vec<IgnoreFile>)> {
    let path = prop::collection::vec(prop::sample::select(NAMES), 1..=3).prop_map(|p| p.join("/"));
    let ignores = prop::collection::vec(
        (
            prop::sample::select(DIRS).prop_map(String::from),
            prop::sample::select(&[".gitignore", ".ignore", ".git/info/exclude"][..]),
            prop::collection::vec(prop::sample::select(PATTERNS), 1..4),
        ),
        0..4,
    );
    (prop::collection::vec(path, 1..12), ignores)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// On trees whose ignore files are all regular, hone's walk finds what the `ignore` crate's
    /// (ripgrep's) walk finds.
    #[test]
    fn the_walk_decides_as_ripgreps(t in arb_tree()) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let (files, ignores) = t;
        for f in &files {
            let p = root.join(f);
            if std::fs::create_dir_all(p.parent().unwrap()).is_ok() && !p.exists() {
                let _ = std::fs::write(&p, "x");
            }
        }
        for (dir, name, lines) in &ignores {
            let p = root.join(dir).join(name);
            if std::fs::create_dir_all(p.parent().unwrap()).is_ok() && !p.is_dir() {
                let _ = std::fs::write(&p, lines.join("\n"));
            }
        }
        let ours: BTreeSet<String> = listed(root).into_iter().collect();
        let theirs: BTreeSet<String> = crate_listed(root).into_iter().collect();
        prop_assert_eq!(ours, theirs);
    }
}
