//! The GitLab template keeps hone's memory across jobs in GitLab's cache: the cached files are
//! taken out of the checkout into a fresh directory before hone runs and put back after, however
//! hone ends; a repository that tracks or links the cached path gives hone no memory, and only
//! regular `<16 hex>.json` files are ever taken in or put back.

use super::gitlab_template::{Job, template};
use crate::common::repo::TestRepo;
use std::path::Path;

/// Where the job keeps the memory in the checkout for GitLab's cache.
pub(crate) const CACHE: &str = ".hone/memory-cache";
/// A memory file's name, as hone writes them.
pub(crate) const FILE: &str = "0123456789abcdef.json";

/// A hone that says what memory it was given and writes some: its memory dir (HONE_MEMORY_DIR,
/// or a fleet's `<workspace>/memory`), whether that is in the checkout, whether the cached path
/// is in the checkout while it runs, and each entry of its memory dir (`saw NAME CONTENT`). Then
/// it writes `HONE_TEST_WRITE` into FILE, links `HONE_TEST_LINK` there as another memory file,
/// and exits with `HONE_TEST_EXIT`.
const MEMORY_HONE: &str = r#"#!/bin/sh
if [ "$1" = --version ]; then echo "hone 0.1.0"; exit 0; fi
mem="${HONE_MEMORY_DIR:-}"
if [ "$1" = fleet ]; then mem="$CI_PROJECT_DIR/.hone/fleet/memory"; fi
{
  echo "dir $mem"
  case "$mem" in "$CI_PROJECT_DIR"/*) [ "$1" = fleet ] || echo inside ;; esac
  if [ -e "$CI_PROJECT_DIR/.hone/memory-cache" ] || [ -L "$CI_PROJECT_DIR/.hone/memory-cache" ]; then echo cache-in-checkout; fi
  if [ -n "$mem" ] && [ -d "$mem" ]; then
    for f in "$mem"/* "$mem"/.[!.]*; do
      if [ -f "$f" ] && [ ! -L "$f" ]; then echo "saw ${f##*/} $(cat "$f")";
      elif [ -e "$f" ] || [ -L "$f" ]; then echo "saw ${f##*/}"; fi
    done
  fi
} > "$HONE_TEST_OUT"
if [ -n "${HONE_TEST_WRITE:-}" ]; then mkdir -p "$mem"; printf '%s' "$HONE_TEST_WRITE" > "$mem/0123456789abcdef.json"; fi
if [ -n "${HONE_TEST_LINK:-}" ]; then ln -s "$HONE_TEST_LINK" "$mem/fedcba9876543210.json"; fi
exit "${HONE_TEST_EXIT:-0}"
"#;

/// A project checked out as a job has it (with the files the test adds to it).
pub(crate) fn checkout(files: &[(&str, &str)]) -> TestRepo {
    let mut all = vec![(".gitlab/hone/job.yaml", "name: t\n"), ("src/app.py", "x = 1\n")];
    all.extend_from_slice(files);
    TestRepo::new(&all)
}

/// The job (hone from the image, `MEMORY_HONE`) on `repo`, with `inputs`.
pub(crate) fn memory_job(repo: &TestRepo, inputs: &[(&str, &str)]) -> Job {
    let mut all = vec![("install", "image")];
    all.extend_from_slice(inputs);
    let mut job = Job::new(&all);
    job.program("hone", MEMORY_HONE);
    job.set("CI_PROJECT_DIR", &repo.path.display().to_string());
    job
}

/// What the fake hone said about its memory.
pub(crate) struct Seen {
    pub(crate) dir: String,
    inside: bool,
    cache_in_checkout: bool,
    pub(crate) entries: Vec<String>,
}

pub(crate) fn seen(job: &Job) -> Seen {
    let text = std::fs::read_to_string(job.dir.path().join("hone-was-given")).expect("hone ran");
    let lines: Vec<&str> = text.lines().collect();
    Seen {
        dir: lines[0].strip_prefix("dir ").unwrap_or("").to_string(),
        inside: lines.contains(&"inside"),
        cache_in_checkout: lines.contains(&"cache-in-checkout"),
        entries: lines.iter().filter_map(|l| l.strip_prefix("saw ")).map(str::to_string).collect(),
    }
}

/// The names (and contents, for regular files) in `dir`, sorted; none when it is missing.
pub(crate) fn listing(dir: &Path) -> Vec<String> {
    let Ok(read) = std::fs::read_dir(dir) else { return vec![] };
    let mut out: Vec<String> = read
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            match e.file_type().unwrap() {
                t if t.is_file() => format!("{name} {}", std::fs::read_to_string(e.path()).unwrap()),
                t if t.is_symlink() => format!("{name} -> link"),
                _ => format!("{name}/"),
            }
        })
        .collect();
    out.sort();
    out
}

pub(crate) fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// GitLab's cache restore: the cached path of `from`'s checkout, into `to`'s.
pub(crate) fn restore_cache(from: &TestRepo, to: &TestRepo) {
    std::fs::create_dir_all(to.path.join(CACHE)).unwrap();
    for e in std::fs::read_dir(from.path.join(CACHE)).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.path.join(CACHE).join(e.file_name())).unwrap();
    }
}

#[test]
fn the_memory_is_kept_across_two_jobs_and_is_outside_the_checkout_while_hone_runs() {
    let first = checkout(&[]);
    let mut job = memory_job(&first, &[]);
    job.set("HONE_TEST_WRITE", "learned in job 1");
    let out = job.run(&first.path);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = seen(&job);
    assert!(!s.dir.is_empty() && !s.inside, "HONE_MEMORY_DIR is set, outside the checkout: {}", s.dir);
    assert!(s.entries.is_empty(), "a first job starts with no memory: {:?}", s.entries);
    assert_eq!(listing(&first.path.join(CACHE)), [format!("{FILE} learned in job 1")], "saved for the cache");

    let second = checkout(&[]);
    restore_cache(&first, &second);
    let job = memory_job(&second, &[]);
    let out = job.run(&second.path);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = seen(&job);
    assert_eq!(s.entries, [format!("{FILE} learned in job 1")], "job 2's hone has job 1's memory");
    assert!(!s.inside && !s.cache_in_checkout, "the cached path is out of the work tree while hone runs");
    assert_eq!(listing(&second.path.join(CACHE)), [format!("{FILE} learned in job 1")], "and saved again");
}

#[test]
fn a_failing_hone_still_has_its_memory_saved_and_the_job_fails_with_its_status() {
    let repo = checkout(&[]);
    let mut job = memory_job(&repo, &[]);
    job.set("HONE_TEST_WRITE", "why it failed").set("HONE_TEST_EXIT", "1");
    let out = job.run(&repo.path);
    assert_eq!(out.status.code(), Some(1), "hone's status is the job's: {}", stderr(&out));
    assert_eq!(listing(&repo.path.join(CACHE)), [format!("{FILE} why it failed")]);
    // A job that fails before hone runs (the target branch cannot be fetched) keeps what it had.
    let next = checkout(&[]);
    restore_cache(&repo, &next);
    let mut job = memory_job(&next, &[]);
    job.set("CI_MERGE_REQUEST_IID", "7").set("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "gone");
    let out = job.run(&next.path);
    assert!(!out.status.success(), "the fetch fails the job");
    assert!(!job.dir.path().join("hone-was-given").exists(), "hone did not run");
    assert_eq!(listing(&next.path.join(CACHE)), [format!("{FILE} why it failed")], "the memory is kept");
}

#[test]
fn a_repository_that_tracks_files_at_the_cached_path_gives_hone_no_memory() {
    let planted = format!("{CACHE}/{FILE}");
    let repo = checkout(&[(planted.as_str(), "planted by the merge request")]);
    let job = memory_job(&repo, &[]);
    let out = job.run(&repo.path);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(seen(&job).entries.is_empty(), "nothing tracked reaches hone's memory: {:?}", seen(&job).entries);
    assert!(stderr(&out).contains("memory starts empty"), "{}", stderr(&out));
    assert!(listing(&repo.path.join(CACHE)).is_empty(), "and nothing planted is saved for the next job");
}

/// The repository tracks `link` as a symlink to a directory outside it that holds a memory file
/// at `inner`.
fn linked_checkout(link: &str, inner: &str) -> (TestRepo, tempfile::TempDir) {
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(outside.path().join(inner)).unwrap();
    std::fs::write(outside.path().join(inner).join(FILE), "through a link").unwrap();
    let repo = checkout(&[]);
    std::fs::create_dir_all(repo.path.join(link).parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.path.join(link)).unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "a link at the cached path"]);
    (repo, outside)
}

#[test]
fn a_cached_path_or_hone_dir_that_is_a_link_gives_hone_no_memory_and_is_never_written_through() {
    for (link, inner) in [(CACHE, "."), (".hone", "memory-cache")] {
        let (repo, outside) = linked_checkout(link, inner);
        let mut job = memory_job(&repo, &[]);
        job.set("HONE_TEST_WRITE", "hone's own");
        let out = job.run(&repo.path);
        assert!(out.status.success(), "{link}: {}", stderr(&out));
        assert!(seen(&job).entries.is_empty(), "{link}: nothing through the link: {:?}", seen(&job).entries);
        assert!(stderr(&out).contains("memory starts empty"), "{link}: {}", stderr(&out));
        let there = listing(&outside.path().join(inner));
        assert_eq!(there, [format!("{FILE} through a link")], "{link}: nothing is written through the link");
    }
}

#[test]
fn only_regular_memory_files_are_taken_in_and_put_back() {
    let repo = checkout(&[]);
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), "a secret of the runner").unwrap();
    let cache = repo.path.join(CACHE);
    std::fs::create_dir_all(cache.join("bbbbbbbbbbbbbbbb.json")).unwrap();
    std::fs::write(cache.join(FILE), "kept").unwrap();
    for name in ["notes.txt", "0123456789ABCDEF.json", "0123456789abcdef0.json", ".0123456789abcde.json"] {
        std::fs::write(cache.join(name), "not a memory file").unwrap();
    }
    std::os::unix::fs::symlink(secret.path(), cache.join("aaaaaaaaaaaaaaaa.json")).unwrap();
    let mut job = memory_job(&repo, &[]);
    job.set("HONE_TEST_LINK", &secret.path().display().to_string());
    let out = job.run(&repo.path);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(seen(&job).entries, [format!("{FILE} kept")], "only the regular memory file is taken in");
    assert_eq!(listing(&cache), [format!("{FILE} kept")], "the link hone's memory dir held is not put back");
}

#[test]
fn a_fleets_memory_is_its_workspaces_and_is_kept_too() {
    let fleet = [("fleet", ".gitlab/hone/fleet.yaml")];
    let first = checkout(&[]);
    let mut job = memory_job(&first, &fleet);
    job.set("HONE_TEST_WRITE", "a fleet's");
    let out = job.run(&first.path);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!seen(&job).cache_in_checkout);
    assert_eq!(listing(&first.path.join(CACHE)), [format!("{FILE} a fleet's")]);
    let second = checkout(&[]);
    restore_cache(&first, &second);
    let job = memory_job(&second, &fleet);
    let out = job.run(&second.path);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(seen(&job).entries, [format!("{FILE} a fleet's")], "in <workspace>/memory, where hone fleet reads it");
}

#[test]
fn memory_false_sets_no_memory_dir_and_keeps_nothing() {
    let repo = checkout(&[]);
    restore_cache(&checkout(&[(&format!("{CACHE}/{FILE}"), "earlier")]), &repo);
    let job = memory_job(&repo, &[("memory", "false")]);
    let out = job.run(&repo.path);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = seen(&job);
    assert!(s.dir.is_empty(), "no HONE_MEMORY_DIR from the template: {}", s.dir);
    assert!(!s.cache_in_checkout, "what GitLab restored is not in the work tree");
    assert!(listing(&repo.path.join(CACHE)).is_empty(), "and nothing is kept");
}

#[test]
fn the_cache_key_holds_nothing_a_merge_request_names_and_is_saved_however_the_job_ends() {
    let (inputs, job) = template();
    let cache = &job["cache"];
    let key = cache["key"].as_str().expect("one key");
    for var in ["CI_MERGE_REQUEST_", "CI_COMMIT_REF", "CI_COMMIT_BRANCH", "CI_COMMIT_SHA"] {
        assert!(!key.contains(var), "{key}");
    }
    assert!(key.starts_with("hone-memory-"), "{key}");
    assert_eq!(cache["when"], "always", "saved when hone fails too");
    assert_eq!(cache["paths"], serde_json::json!([format!("{CACHE}/")]));
    assert!(cache.get("unprotect").is_none_or(|u| u == false), "protected branches keep their own cache");
    assert_eq!(inputs["memory"]["type"], "boolean");
    assert_eq!(inputs["memory"]["default"], true);
}
