//! A fleet reuses a clone only when its `.git` is what hone's clone made: a tampered config (an
//! `ext::` URL allowed by the clone itself, an `uploadpack` program, a smudge filter, an include,
//! a hook) in a persisted workspace runs nothing on the host; the clone is made afresh.

use crate::common::repo::git;
use crate::common::*;
use crate::suite::fleet_paths::{fleet_file, origin, read_json};
use std::path::Path;

async fn fleet(file: &Path, cwd: &Path) -> Run {
    run_in(cwd, &["fleet", file.to_str().unwrap(), "--dry-run"], &[], cwd.join("unused")).await
}

/// A clone that is still what hone made is reused, after a run that pushed too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untouched_clone_is_reused() {
    let dir = tempfile::tempdir().unwrap();
    let good = origin(&dir.path().join("origins/app.git"));
    let file = fleet_file(&dir.path().join("f"), &[format!("url: {}", good.display())], "ws");
    let first = run_in(dir.path(), &["fleet", file.to_str().unwrap()], &[], dir.path().join("unused")).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(!git(&good, &["branch", "--list", "hone/*"]).is_empty(), "the first run pushed nothing");
    let kept = dir.path().join("f/ws/repos/origins__app/.git/kept-by-the-test");
    std::fs::write(&kept, "").unwrap();
    let run = fleet(&file, dir.path()).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(kept.exists(), "the clone was made afresh: {}", run.stderr);
    assert!(!run.stderr.contains("cloning afresh"), "{}", run.stderr);
}

/// Append `key = value` to the clone's own config (`git config --file`, which runs nothing).
fn set(clone: &Path, key: &str, value: &str) {
    let cfg = clone.join(".git/config");
    git(clone.parent().unwrap(), &["config", "--file", cfg.to_str().unwrap(), key, value]);
}

/// One way to tamper with a clone's `.git`.
type Tamper<'a> = dyn Fn(&Path) + 'a;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_clone_config_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let good = origin(&dir.path().join("origins/app.git"));
    let file = fleet_file(&dir.path().join("f"), &[format!("url: {}", good.display())], "ws");
    let marker = dir.path().join("ran");
    let m = marker.display().to_string();
    let attacks: [(&str, &Tamper); 5] = [
        ("ext url", &|c| {
            set(c, "protocol.ext.allow", "always");
            set(c, "remote.origin.url", &format!("ext::sh -c echo% ext>>{m}% &&% git-upload-pack% {}", good.display()));
        }),
        ("uploadpack", &|c| set(c, "remote.origin.uploadpack", &format!("echo uploadpack >> {m}; git-upload-pack"))),
        ("smudge filter", &|c| {
            std::fs::create_dir_all(c.join(".git/info")).unwrap();
            std::fs::write(c.join(".git/info/attributes"), "* filter=evil\n").unwrap();
            set(c, "filter.evil.smudge", &format!("sh -c 'echo smudge >> {m}; cat'"));
            std::fs::write(c.join("status.txt"), "dirty, so that checkout -f writes it\n").unwrap();
        }),
        ("include", &|c| {
            let inc = c.parent().unwrap().join("included.cfg");
            std::fs::write(
                &inc,
                format!("[remote \"origin\"]\n\tuploadpack = \"echo include >> {m}; git-upload-pack\"\n"),
            )
            .unwrap();
            set(c, "include.path", inc.to_str().unwrap());
        }),
        ("hook", &|c| {
            let hook = c.join(".git/hooks/post-checkout");
            std::fs::write(&hook, format!("#!/bin/sh\necho hook >> {m}\n")).unwrap();
            std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        }),
    ];
    let first = fleet(&file, dir.path()).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let clone = dir.path().join("f/ws/repos/origins__app");
    assert!(clone.join(".git").is_dir(), "no clone to reuse");
    let pristine = std::fs::read(clone.join(".git/config")).unwrap();
    let mut ran = Vec::new();
    for (name, tamper) in attacks {
        // Each attack on its own, on the config the first run left.
        std::fs::write(clone.join(".git/config"), &pristine).unwrap();
        let _ = std::fs::remove_file(clone.join(".git/info/attributes"));
        let _ = std::fs::remove_file(&marker);
        tamper(&clone);
        let run = fleet(&file, dir.path()).await;
        let report = read_json(&dir.path().join("f/ws/fleet.json"));
        if report["repos"][0]["status"] != "succeeded" {
            ran.push(format!("{name}: the run failed: {}\n{}", report["repos"][0], run.stderr));
        }
        if let Ok(what) = std::fs::read_to_string(&marker) {
            ran.push(format!("{name}: ran {}", what.trim()));
        }
        let url = git(&clone, &["config", "--get", "remote.origin.url"]);
        if url != good.display().to_string() {
            ran.push(format!("{name}: the clone kept the URL {url}"));
        }
    }
    assert!(ran.is_empty(), "the clone's own .git was used: {ran:#?}");
}
