//! The store's refusals: a file that is corrupt, a symlink, another repository's, too large or
//! of another version is ignored (never followed, never a panic), and writes are private and
//! atomic.

use super::*;
use std::os::unix::fs::PermissionsExt;

fn key() -> RepoKey {
    RepoKey::from_stored("github.com/acme/widgets").unwrap()
}

fn one_entry(k: &RepoKey) -> Memory {
    let mut m = Memory::new(k);
    let fact = Fact::Command { command: "cargo test".into(), exit_code: Some(0), timed_out: false, denied: false };
    let stamp = RunStamp { run_id: "r1".into(), at: "2025-01-01T00:00:00Z".into() };
    m.observe(vec![Observed { fact, files: vec![] }], &stamp, &crate::redact::Redactor::new());
    m
}

#[test]
fn a_saved_memory_is_private_and_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state/hone/memory");
    let store = Store::at(dir.clone());
    assert_eq!(store.load(&key()), (Memory::new(&key()), vec![]), "no dir yet: empty, no warning");
    let m = one_entry(&key());
    let path = store.save(&m).unwrap();
    assert_eq!(path, dir.join(file_name(&key())));
    assert_eq!(file_name(&key()).len(), 21);
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(store.load(&key()), (m, vec![]));
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, [".lock".into(), std::ffi::OsString::from(file_name(&key()))], "no temp file left");
    let lock = std::fs::metadata(dir.join(".lock")).unwrap();
    assert!(lock.is_file() && lock.permissions().mode() & 0o777 == 0o600, "the lock file is private");
}

#[test]
fn a_corrupt_large_or_foreign_file_is_ignored_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::at(tmp.path().to_path_buf());
    let path = store.path_of(&key());
    let other = RepoKey::from_stored("github.com/evil/planted").unwrap();
    let foreign = serde_json::to_string(&one_entry(&other)).unwrap();
    let mut future = one_entry(&key());
    future.version = VERSION + 1;
    // Version 1 remembered commands as the model typed them (issue 41): never read.
    let mut old = one_entry(&key());
    old.version = 1;
    let cases = [
        ("{not json".to_string(), "not a memory file"),
        (format!("{{\"version\":{VERSION},\"key\":\"{}\",\"entries\":[{{\"id\":1}}]}}", key()), "not a memory file"),
        (foreign, "another repository"),
        (serde_json::to_string(&future).unwrap(), "version 3"),
        (serde_json::to_string(&old).unwrap(), "version 1"),
        (" ".repeat(MAX_FILE_BYTES as usize + 1), "larger than 256 KiB"),
    ];
    for (text, why) in cases {
        std::fs::write(&path, &text).unwrap();
        let (m, warnings) = store.load(&key());
        assert_eq!(m, Memory::new(&key()), "{why}");
        assert_eq!(warnings.len(), 1, "{why}");
        assert!(warnings[0].contains(why) && warnings[0].contains("ignored"), "{why}: {warnings:?}");
    }
}

#[test]
fn a_symlink_in_the_files_place_is_never_followed_read_or_written_through() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mem");
    std::fs::create_dir(&dir).unwrap();
    let store = Store::at(dir.clone());
    // A valid memory elsewhere (say, planted in a work tree), linked in the file's place.
    let planted = tmp.path().join("planted.json");
    let text = serde_json::to_string(&one_entry(&key())).unwrap();
    std::fs::write(&planted, &text).unwrap();
    std::os::unix::fs::symlink(&planted, store.path_of(&key())).unwrap();
    let (m, warnings) = store.load(&key());
    assert!(m.entries.is_empty(), "the link was not followed");
    assert!(warnings[0].contains("symlink"), "{warnings:?}");
    store.save(&Memory::new(&key())).unwrap();
    assert_eq!(std::fs::read_to_string(&planted).unwrap(), text, "the target is untouched");
    assert!(!std::fs::symlink_metadata(store.path_of(&key())).unwrap().file_type().is_symlink());
}

#[test]
fn list_shows_each_repository_and_skips_a_file_whose_name_is_not_its_key() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::at(tmp.path().to_path_buf());
    let b = RepoKey::from_stored("file:///srv/git/b").unwrap();
    store.save(&one_entry(&key())).unwrap();
    store.save(&one_entry(&b)).unwrap();
    // A copy of b's file under another name: its key is not its name.
    std::fs::copy(store.path_of(&b), tmp.path().join("0000000000000000.json")).unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "not ours").unwrap();
    let (repos, warnings) = store.list().unwrap();
    let keys: Vec<&str> = repos.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["file:///srv/git/b", "github.com/acme/widgets"]);
    assert_eq!((repos[0].entries, repos[0].last_seen.as_deref()), (1, Some("2025-01-01T00:00:00Z")));
    assert!(warnings.len() == 1 && warnings[0].contains("does not match its name"), "{warnings:?}");
    assert!(store.remove(&b).unwrap());
    assert!(!store.remove(&b).unwrap());
    assert_eq!(store.clear_all().unwrap(), 2);
    assert!(tmp.path().join("notes.txt").exists(), "only memory files are cleared");
}

/// A fact only thread `t`'s `n`th change adds.
fn command(t: usize, n: usize) -> Observed {
    let fact = Fact::Command {
        command: format!("cargo test -p c{t}x{n}"),
        exit_code: Some(0),
        timed_out: false,
        denied: false,
    };
    Observed { fact, files: vec![] }
}

#[test]
fn changes_made_at_once_by_several_processes_all_survive() {
    let tmp = tempfile::tempdir().unwrap();
    let stamp = RunStamp { run_id: "r1".into(), at: "2025-01-01T00:00:00Z".into() };
    std::thread::scope(|scope| {
        for t in 0..8 {
            let (dir, stamp) = (tmp.path().to_path_buf(), stamp.clone());
            scope.spawn(move || {
                // Each its own store, as each run is its own process: the lock is the directory's.
                let store = Store::at(dir);
                for n in 0..5 {
                    let add = |m: &mut Memory| {
                        m.observe(vec![command(t, n)], &stamp, &crate::redact::Redactor::new());
                        Ok(())
                    };
                    store.update(&key(), add).unwrap();
                }
            });
        }
    });
    let (m, warnings) = Store::at(tmp.path().to_path_buf()).load(&key());
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(m.entries.len(), 40, "no change was lost to another made at the same time");
}

#[test]
fn a_store_locked_too_long_is_a_conflict_and_nothing_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::at(tmp.path().to_path_buf()).waiting(std::time::Duration::from_millis(50));
    store.save(&one_entry(&key())).unwrap();
    let before = std::fs::read(store.path_of(&key())).unwrap();
    let clear = |m: &mut Memory| {
        m.entries.clear();
        Ok(())
    };
    let holder = std::fs::File::options().read(true).write(true).open(tmp.path().join(".lock")).unwrap();
    holder.lock().unwrap();
    let err = store.update(&key(), clear).unwrap_err();
    assert_eq!(err.code, crate::error::Code::Conflict, "{err:?}");
    assert!(err.render().contains("locked by another hone"), "{}", err.render());
    assert!(store.remove(&key()).is_err(), "removing waits for the lock too");
    assert_eq!(std::fs::read(store.path_of(&key())).unwrap(), before, "nothing changed");
    holder.unlock().unwrap();
    store.update(&key(), clear).unwrap();
    assert!(store.load(&key()).0.entries.is_empty(), "changed once the holder let go");
}

#[test]
fn a_link_in_the_lock_files_place_is_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mem");
    std::fs::create_dir(&dir).unwrap();
    let target = tmp.path().join("elsewhere");
    std::os::unix::fs::symlink(&target, dir.join(".lock")).unwrap();
    let store = Store::at(dir.clone());
    let err = store.save(&one_entry(&key())).unwrap_err();
    assert!(err.render().contains("cannot use the memory dir"), "{}", err.render());
    assert!(!target.exists(), "the link was not followed to make its target");
    assert!(!store.path_of(&key()).exists(), "nothing written without the lock");
}
