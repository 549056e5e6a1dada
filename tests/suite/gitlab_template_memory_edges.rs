//! The GitLab template's memory handling where it meets the rest of a setup: a memory dir the
//! project already keeps, a fleet file that is not at the repository's root (its `workspace` is
//! relative to it), and a copy back that fails (a full disk): none may lose hone's memory or
//! change the job's status.

use super::gitlab_template_memory::{CACHE, FILE, checkout, listing, memory_job, restore_cache, seen, stderr};

/// The documented place of the job's files, and so of a fleet file.
const FLEET: &str = ".gitlab/hone/fleet.yaml";

/// A `hone fleet` that finds its workspace as hone does: `--workspace DIR` (from the current
/// directory), else the fleet file's (`workspace:`, default `.hone/fleet`), relative to the fleet
/// file's directory. It says which memory files it found there, then writes `HONE_TEST_WRITE`.
const FLEET_HONE: &str = r#"#!/bin/sh
if [ "$1" = --version ]; then echo "hone 0.1.0"; exit 0; fi
[ "$1" = fleet ] || exit 9
ws="$(dirname "$2")/.hone/fleet"
shift 2
while [ $# -gt 0 ]; do
  case "$1" in --workspace) ws="$2"; shift ;; --workspace=*) ws="${1#--workspace=}" ;; esac
  shift
done
mem="$ws/memory"
{
  echo "dir $mem"
  for f in "$mem"/*.json; do if [ -f "$f" ]; then echo "saw ${f##*/} $(cat "$f")"; fi; done
} > "$HONE_TEST_OUT"
if [ -n "${HONE_TEST_WRITE:-}" ]; then mkdir -p "$mem"; printf '%s' "$HONE_TEST_WRITE" > "$mem/0123456789abcdef.json"; fi
"#;

#[test]
fn a_fleet_file_in_the_jobs_directory_has_its_memory_kept() {
    let first = checkout(&[(FLEET, "version: 1\njob: job.yaml\nrepos: []\n")]);
    let mut job = memory_job(&first, &[("fleet", FLEET)]);
    job.program("hone", FLEET_HONE);
    job.set("HONE_TEST_WRITE", "a fleet's");
    let out = job.run(&first.path);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        listing(&first.path.join(CACHE)),
        [format!("{FILE} a fleet's")],
        "what hone fleet learned (in {}) is saved for the cache",
        seen(&job).dir
    );
    let second = checkout(&[(FLEET, "version: 1\njob: job.yaml\nrepos: []\n")]);
    restore_cache(&first, &second);
    let job = memory_job(&second, &[("fleet", FLEET)]);
    job.program("hone", FLEET_HONE);
    let out = job.run(&second.path);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(seen(&job).entries, [format!("{FILE} a fleet's")], "and the next fleet finds it where it looks");
}

#[test]
fn a_memory_dir_the_project_already_keeps_is_used_not_replaced() {
    // docs/memory.md said, before the template kept memory: "GitLab CI: point HONE_MEMORY_DIR at
    // a directory the job keeps" (a runner's volume): a project that did must keep its memory.
    let repo = checkout(&[]);
    let volume = tempfile::tempdir().unwrap();
    std::fs::write(volume.path().join(FILE), "on the runner's volume").unwrap();
    let mut job = memory_job(&repo, &[]);
    job.set("HONE_MEMORY_DIR", &volume.path().display().to_string());
    let out = job.run(&repo.path);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = seen(&job);
    assert_eq!(s.dir, volume.path().display().to_string(), "the project's HONE_MEMORY_DIR is hone's");
    assert_eq!(s.entries, [format!("{FILE} on the runner's volume")]);
}

/// A `cp` that fails as on a full disk when it copies into the cached path (the copy back), and
/// is `cp` otherwise.
fn failing_copy_back(real: &str) -> String {
    format!(
        "#!/bin/sh\nfor a; do last=\"$a\"; done\ncase \"$last\" in */{CACHE}/) echo 'cp: No space left on device' >&2; exit 1 ;; esac\nexec {real} \"$@\"\n"
    )
}

#[test]
fn a_copy_back_that_fails_leaves_the_jobs_status_hones() {
    let real = ["/usr/bin/cp", "/bin/cp"].into_iter().find(|p| std::path::Path::new(p).exists()).expect("cp");
    for status in [0, 3] {
        let repo = checkout(&[]);
        let mut job = memory_job(&repo, &[]);
        job.program("cp", &failing_copy_back(real));
        job.set("HONE_TEST_WRITE", "learned").set("HONE_TEST_EXIT", &status.to_string());
        let out = job.run(&repo.path);
        assert_eq!(
            out.status.code(),
            Some(status),
            "hone exited {status}; a memory that could not be saved is a warning, not the job's status: {}",
            stderr(&out)
        );
    }
}
