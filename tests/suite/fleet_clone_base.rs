//! A fleet target's `base:` is the branch its clone starts from: on the first clone (made on
//! that branch) and on the clone's reuse (fetched and reset to it).

use crate::common::repo::git;
use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_base_is_where_the_clone_starts_fresh_or_reused() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = fleet_of_one(dir.path(), "based", "");
    // `develop` already passes the check: a run there has nothing to change; `main` does not.
    let work = dir.path().join("work");
    let origin = dir.path().join("origins/app.git");
    git(dir.path(), &["clone", "-q", origin.to_str().unwrap(), work.to_str().unwrap()]);
    std::fs::write(work.join("status.txt"), "fixed\n").unwrap();
    git(&work, &["commit", "-qam", "fixed on develop"]);
    git(&work, &["push", "-q", "origin", "HEAD:refs/heads/develop"]);
    let text = std::fs::read_to_string(&fleet).unwrap().replace(".git\n", ".git\n    base: develop\n");
    std::fs::write(&fleet, text).unwrap();
    for pass in ["fresh", "reused"] {
        let run = run_hone(&["fleet", fleet.to_str().unwrap(), "--dry-run"], &[], dir.path().join("unused")).await;
        assert_eq!(run.code, 0, "{pass}: {}", run.stderr);
        assert!(run.stdout.contains("1 no_change"), "{pass}: the clone is on develop: {}", run.stdout);
        let clone = dir.path().join("ws/repos/origins__app");
        assert_eq!(git(&clone, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "develop", "{pass}");
    }
}
