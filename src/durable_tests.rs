//! Every file hone keeps outside the work tree survives a kill half-way through its write: the
//! writer is stopped after each step of the durable write (temp created, written, synced; not
//! renamed), as a kill there would stop it, and the file read next is whole: the old one. The
//! next write leaves the new one.

use crate::safe_fs::{Step, stop_at};

const STEPS: [Step; 3] = [Step::Created, Step::Written, Step::Synced];

/// `write` stopped after each step leaves `read` at `old`; unstopped, at `new`.
fn stopped_writes_leave_the_old_file<T: PartialEq + std::fmt::Debug>(
    write: impl Fn() -> bool,
    read: impl Fn() -> T,
    old: &T,
    new: &T,
) {
    for step in STEPS {
        stop_at(Some(step));
        let wrote = write();
        stop_at(None);
        assert!(!wrote, "the write stopped after {step:?}");
        assert_eq!(&read(), old, "after {step:?}");
    }
    assert!(write());
    assert_eq!(&read(), new);
}

#[test]
fn a_report_is_old_or_new_never_torn() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = crate::output::dir::ReportDir::new(&tmp.path().join("reports"), None).unwrap();
    dir.write("report.json", b"{\"old\":true}").unwrap();
    let new = format!("{{\"new\":\"{}\"}}", "x".repeat(1 << 20)).into_bytes();
    for name in crate::output::dir::REPORT_FILES {
        dir.write(name, b"{\"old\":true}").unwrap();
        stopped_writes_leave_the_old_file(
            || dir.write(name, &new).is_ok(),
            || dir.read(name).unwrap(),
            &b"{\"old\":true}".to_vec(),
            &new,
        );
    }
}

#[test]
fn a_memory_file_is_old_or_new_never_torn() {
    use crate::memory::{Fact, Memory, Observed, RepoKey, Store};
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::at(tmp.path().to_path_buf());
    let key = RepoKey::from_stored("github.com/acme/widgets").unwrap();
    let old = Memory::new(&key);
    let path = store.save(&old).unwrap();
    let mut new = Memory::new(&key);
    let fact = Fact::Command { command: "cargo test".into(), exit_code: Some(0), timed_out: false, denied: false };
    let stamp = crate::memory::RunStamp { run_id: "run-1".into(), at: "2025-01-01T10:00:00Z".into() };
    new.observe(vec![Observed { fact, files: vec![] }], &stamp, &crate::redact::Redactor::new());
    let read = || serde_json::from_slice::<serde_json::Value>(&std::fs::read(&path).unwrap()).unwrap();
    let (old_v, new_v) = (serde_json::to_value(&old).unwrap(), serde_json::to_value(&new).unwrap());
    stopped_writes_leave_the_old_file(|| store.save(&new).is_ok(), read, &old_v, &new_v);
}

#[test]
fn the_repo_map_cache_is_old_or_new_never_torn() {
    use crate::repomap::tagcache::TagCache;
    let git = tempfile::tempdir().unwrap();
    let file = git.path().join("hone/repomap.json");
    let cache_of = |source: &[u8], line: &str| {
        let mut c = TagCache::load(git.path());
        c.get_or("python", source, || vec![line.to_string()]);
        c
    };
    cache_of(b"def old(): pass\n", "function old (L1)").save();
    let old = std::fs::read(&file).unwrap();
    let write = || {
        cache_of(b"def new(): pass\n", "function new (L1)").save();
        std::fs::read(&file).unwrap() != old
    };
    let read = || std::fs::read(&file).unwrap();
    for step in STEPS {
        stop_at(Some(step));
        assert!(!write(), "the write stopped after {step:?}");
        stop_at(None);
        assert_eq!(read(), old, "after {step:?}");
        assert!(serde_json::from_slice::<serde_json::Value>(&read()).is_ok());
    }
    assert!(write());
    assert!(String::from_utf8(read()).unwrap().contains("function new (L1)"));
}
