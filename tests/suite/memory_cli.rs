//! `hone memory list|show|forget|clear` (issue 29): the real binary on a store written by hand,
//! as a cache restore or an earlier run leaves it: what it lists and shows, what it removes, and
//! the files it ignores.

use crate::common::repo::TestRepo;
use crate::common::*;
use std::path::{Path, PathBuf};

/// The key hone files this repository's memory under (its `origin`, a local bare repository).
fn key_of(repo: &TestRepo) -> String {
    let r = git2::Repository::open(&repo.path).unwrap();
    ::hone::memory::RepoKey::of(&r, "origin").unwrap().as_str().to_string()
}

fn file_of(dir: &Path, key: &str) -> PathBuf {
    dir.join(::hone::memory::file_name(&::hone::memory::RepoKey::from_stored(key).unwrap()))
}

/// A memory file for `key` with a command that passed and a check failing at the baseline.
fn write_memory(dir: &Path, key: &str) -> PathBuf {
    let entry = |id: &str, fact: &str| {
        format!(
            r#"{{"id":"{id}","fact":{fact},"files":[],"passed":0,"failed":1,"seen":1,"first_seen":"2025-01-01T00:00:00Z","last_seen":"2025-01-02T00:00:00Z","last_run":"r1"}}"#
        )
    };
    let command =
        r#"{"kind":"command","command":"cargo test --features x","exit_code":101,"timed_out":false,"denied":false}"#;
    let check = r#"{"kind":"baseline","check":"test","command":"cargo test","exit_code":101,"passed":false}"#;
    let text = format!(
        r#"{{"version":2,"key":{},"entries":[{},{}]}}"#,
        serde_json::to_string(key).unwrap(),
        entry("stale-id-1", command),
        entry("stale-id-2", check)
    );
    std::fs::create_dir_all(dir).unwrap();
    let path = file_of(dir, key);
    std::fs::write(&path, text).unwrap();
    path
}

async fn memory(repo: &TestRepo, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["memory"];
    all.extend_from_slice(args);
    run_in(&repo.path, &all, env, repo.path.join("target/unused-memory")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_show_forget_and_clear_a_repositorys_memory() {
    let repo = TestRepo::new(&[("a.txt", "a\n")]);
    let store = repo.dir.path().join("store");
    let d = store.to_str().unwrap();
    let key = key_of(&repo);
    assert!(key.starts_with("file:///") && key.ends_with("/origin"), "{key}");
    let path = write_memory(&store, &key);

    let list = memory(&repo, &["list", "--dir", d], &[]).await;
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert!(list.stdout.contains(&format!("{key}  2 entries  last seen 2025-01-02T00:00:00Z")), "{}", list.stdout);
    assert!(list.stdout.contains(path.to_str().unwrap()), "{}", list.stdout);

    let show = memory(&repo, &["show", "--dir", d, "--json"], &[]).await;
    assert_eq!(show.code, 0, "{}", show.stderr);
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["key"], key.as_str());
    let ids: Vec<String> = v["entries"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().into()).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.iter().all(|id| !id.starts_with("stale")), "ids are recomputed from the facts: {ids:?}");
    let text = memory(&repo, &["show", "--dir", d], &[]).await;
    assert!(text.stdout.contains(&format!("[{}] ", ids[0])), "{}", text.stdout);
    assert!(text.stdout.contains("`cargo test --features x` failed with exit 101"), "{}", text.stdout);

    let unknown = memory(&repo, &["forget", "command-00000000", "--dir", d], &[]).await;
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(unknown.stderr.contains("hone memory show"), "a hint: {}", unknown.stderr);
    let forget = memory(&repo, &["forget", &ids[0], "--dir", d], &[]).await;
    assert_eq!(forget.code, 0, "{}", forget.stderr);
    assert_eq!(forget.stdout.trim(), format!("hone: forgot 1 entry of {key}"));
    let after = memory(&repo, &["show", "--dir", d], &[]).await;
    assert!(!after.stdout.contains(&ids[0]) && after.stdout.contains(&ids[1]), "{}", after.stdout);

    // From another directory, naming the repository.
    let elsewhere =
        run_in(repo.dir.path(), &["memory", "clear", "--repo", "work", "--dir", d], &[], repo.path.join("x")).await;
    assert_eq!(elsewhere.code, 0, "{}", elsewhere.stderr);
    assert!(elsewhere.stdout.contains(&format!("cleared the memory of {key}")), "{}", elsewhere.stdout);
    assert!(!path.exists());
    let empty = memory(&repo, &["show", "--dir", d], &[]).await;
    assert!(empty.stdout.contains("no memory of"), "{}", empty.stdout);

    // A store that does not exist: nothing to forget, and no directory made to say so.
    let missing = repo.dir.path().join("no-store");
    let none = memory(&repo, &["forget", &ids[1], "--dir", missing.to_str().unwrap()], &[]).await;
    assert_eq!(none.code, 2, "{}", none.stderr);
    assert!(!missing.exists(), "forget made the memory dir");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_dir_comes_from_the_environment_and_clear_all_removes_only_memory_files() {
    let repo = TestRepo::new(&[("a.txt", "a\n")]);
    let home = repo.dir.path().join("home");
    let state = home.join(".local/state/hone/memory");
    write_memory(&state, &key_of(&repo));
    write_memory(&state, "github.com/acme/other");
    std::fs::write(state.join("keep.txt"), "mine").unwrap();
    // A relative HONE_MEMORY_DIR is ignored, with a warning: HOME's dir is used.
    let env = [("HOME", home.to_str().unwrap()), ("HONE_MEMORY_DIR", "relative"), ("XDG_STATE_HOME", "")];
    let list = memory(&repo, &["list"], &env).await;
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert!(list.stderr.contains("HONE_MEMORY_DIR is not an absolute path"), "{}", list.stderr);
    assert_eq!(list.stdout.lines().count(), 2, "{}", list.stdout);
    let json = memory(&repo, &["list", "--json"], &env).await;
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    let clear = memory(&repo, &["clear", "--all"], &env).await;
    assert_eq!(clear.code, 0, "{}", clear.stderr);
    assert!(clear.stdout.contains("removed 2 memory file(s)"), "{}", clear.stdout);
    assert!(state.join("keep.txt").exists());
    let none = memory(&repo, &["list"], &[("HOME", "relative"), ("HONE_MEMORY_DIR", ""), ("XDG_STATE_HOME", "")]).await;
    assert_eq!(none.code, 2, "{}", none.stderr);
    assert!(none.stderr.contains("--dir"), "{}", none.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_for_another_repository_or_a_symlink_is_ignored_with_a_warning() {
    let repo = TestRepo::new(&[("a.txt", "a\n")]);
    let store = repo.dir.path().join("store");
    let d = store.to_str().unwrap();
    let key = key_of(&repo);
    // Another repository's memory under this one's name (a cache restored from elsewhere).
    let foreign = write_memory(&repo.dir.path().join("elsewhere"), "github.com/evil/planted");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::copy(&foreign, file_of(&store, &key)).unwrap();
    let show = memory(&repo, &["show", "--dir", d], &[]).await;
    assert_eq!(show.code, 0, "{}", show.stderr);
    assert!(show.stdout.contains("no memory of"), "{}", show.stdout);
    assert!(show.stderr.contains("another repository"), "{}", show.stderr);
    // A symlink to a valid memory of this repository, planted in the work tree.
    std::fs::remove_file(file_of(&store, &key)).unwrap();
    let planted = write_memory(&repo.path.join(".hone"), &key);
    std::os::unix::fs::symlink(&planted, file_of(&store, &key)).unwrap();
    let show = memory(&repo, &["show", "--dir", d], &[]).await;
    assert!(
        show.stdout.contains("no memory of") && show.stderr.contains("symlink"),
        "{}\n{}",
        show.stdout,
        show.stderr
    );
    let outside = memory(&repo, &["show", "--repo", "/", "--dir", d], &[]).await;
    assert_eq!(outside.code, 2, "{}", outside.stderr);
    assert!(outside.stderr.contains("not in a git repository"), "{}", outside.stderr);
}

/// `--json` is one line of JSON whatever a memory holds: a character the runner would show as an
/// escape (a bidirectional override in a remote's name, say) is a JSON `\u` escape, so the output
/// still parses and says the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_output_parses_whatever_the_memory_holds() {
    let repo = TestRepo::new(&[("a.txt", "a\n")]);
    repo.git(&["remote", "set-url", "origin", "https://github.com/acme/w\u{202e}gpj.exe"]);
    let store = repo.dir.path().join("store");
    let d = store.to_str().unwrap();
    let key = key_of(&repo);
    write_memory(&store, &key);
    for args in [vec!["show", "--json", "--dir", d], vec!["list", "--json", "--dir", d]] {
        let out = memory(&repo, &args, &[]).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        let v: serde_json::Value =
            serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
        assert!(v.to_string().contains('\u{202e}'), "the same text: {v}");
    }
}
