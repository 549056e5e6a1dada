//! Issue 22, the fresh-eyes review of "every action hone takes outside the jail": each test is an
//! attack on one row of that table in docs/security.md, by a hostile model (scripted tool calls),
//! a hostile repository (its files, its setup script) or a tampered report dir, that hone must
//! hold against. `tree`: the restore and what the run leaves; `guards`: what is staged, committed
//! and saved; `jail`: what the jail's construction takes from the repository; `limits`: costs
//! and caps; `reports`: report dirs and fleet files read back as data.

mod guards;
mod jail;
mod limits;
mod reports;
mod tree;

use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::json;

/// `update_plan` with one step in `status`.
fn plan(status: &str) -> serde_json::Value {
    json!({"steps": [{"title": "step", "intent": "", "status": status, "expected_files": []}],
           "verification": "the check", "risk": "low"})
}

/// The spec with `setup` commands (each `(name, run)`) before `verify:`.
fn with_setup(yaml: &str, setup: &[(&str, &str)]) -> String {
    let mut s = String::from("setup:\n");
    for (name, run) in setup {
        s.push_str(&format!("  - {{ name: {name}, run: {}, timeout: 30s }}\n", serde_json::to_string(run).unwrap()));
    }
    yaml.replace("verify:\n", &format!("{s}verify:\n"))
}

/// `broken_repo`, but outside `/tmp` (in cargo's temp dir for tests), as repositories usually are:
/// the jail's own `/tmp` is then not an ancestor of the repository. A user who cannot write
/// there (CI's second pass, as `nobody`, whose every writable place is under `/tmp`) gets one
/// under the temp dir: the case of a repository beneath the jail's `/tmp`.
fn broken_repo_outside_tmp() -> TestRepo {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).or_else(|_| tempfile::tempdir()).unwrap();
    let (path, origin) = (dir.path().join("work"), dir.path().join("origin.git"));
    std::fs::create_dir_all(path.join("src")).unwrap();
    crate::common::repo::git(dir.path(), &["init", "-q", "--bare", origin.to_str().unwrap()]);
    crate::common::repo::git(&path, &["init", "-q"]);
    for (name, body) in [("status.txt", "broken\n"), ("check.sh", CHECK_SH), ("src/lib.txt", "hello\n")] {
        std::fs::write(path.join(name), body).unwrap();
    }
    crate::common::repo::git(&path, &["add", "-A"]);
    crate::common::repo::git(&path, &["commit", "-q", "-m", "initial"]);
    crate::common::repo::git(&path, &["remote", "add", "origin", origin.to_str().unwrap()]);
    crate::common::repo::git(&path, &["push", "-q", "origin", "main"]);
    TestRepo { dir, path, origin }
}
