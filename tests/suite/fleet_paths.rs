//! Fleet ids are safe names, hone clears only its own directories in the workspace, and a
//! password in a target URL appears in no fleet output.

use crate::common::git_http::{GitHttp, Mode, serve_copy_of};
use crate::common::repo::git;
use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A bare origin at `at` whose check fails until status.txt says `fixed`.
pub(crate) fn origin(at: &Path) -> PathBuf {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    git(at.parent().unwrap(), &["init", "-q", "--bare", at.to_str().unwrap()]);
    git(work.path(), &["init", "-q"]);
    std::fs::write(work.path().join("status.txt"), "broken\n").unwrap();
    std::fs::write(work.path().join("check.sh"), CHECK_SH).unwrap();
    git(work.path(), &["add", "-A"]);
    git(work.path(), &["commit", "-q", "-m", "initial"]);
    git(work.path(), &["push", "-q", at.to_str().unwrap(), "HEAD:refs/heads/main"]);
    git(at, &["symbolic-ref", "HEAD", "refs/heads/main"]);
    at.to_path_buf()
}

/// `dir/fleet.yaml` (with its job) listing `repos` (YAML entries), its workspace `workspace`.
pub(crate) fn fleet_file(dir: &Path, repos: &[String], workspace: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("script.yaml"), FIX_SCRIPT).unwrap();
    std::fs::write(
        dir.join("job.yaml"),
        "version: 1\nname: pathjob\ntask: Make check.sh pass.\nmodel: { provider: script, script: script.yaml }\nverify:\n  - { name: check, run: \"sh check.sh\", timeout: 30s }\nlimits: { max_fix_attempts: 0 }\nplan: false\n",
    )
    .unwrap();
    let p = dir.join("fleet.yaml");
    let body = repos.iter().map(|r| format!("  - {r}\n")).collect::<String>();
    std::fs::write(&p, format!("version: 1\njob: job.yaml\nrepos:\n{body}concurrency: 2\nworkspace: {workspace}\n"))
        .unwrap();
    p
}

async fn fleet(args: &[&str], cwd: &Path) -> Run {
    run_in(cwd, args, &[], cwd.join("unused")).await
}

pub(crate) fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

fn ids(report: &Value) -> Vec<String> {
    report["repos"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
}

fn assert_safe_ids(report: &Value) {
    let ids = ids(report);
    for id in &ids {
        let safe = !id.is_empty()
            && id.len() <= 64
            && !id.starts_with(['.', '-'])
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        assert!(safe, "unsafe id {id:?} in {ids:?}");
    }
    let unique: std::collections::HashSet<String> = ids.iter().map(|i| i.to_ascii_lowercase()).collect();
    assert_eq!(unique.len(), ids.len(), "ids clash: {ids:?}");
}

/// `url: ../`, `url: .` and `url: /` with `workspace: .`, the fleet file in its own checkout,
/// and an earlier run's reports and clones of another repository: nothing of those is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_urls_clear_nothing_outside_their_own_directories() {
    let dir = tempfile::tempdir().unwrap();
    let good = origin(&dir.path().join("origins/app.git"));
    let proj = dir.path().join("proj");
    let repos = ["url: ../".to_string(), "url: .".into(), "url: /".into(), format!("url: {}", good.display())];
    let file = fleet_file(&proj, &repos, ".");
    git(&proj, &["init", "-q"]);
    git(&proj, &["add", "-A"]);
    git(&proj, &["commit", "-q", "-m", "the fleet"]);
    for kept in ["reports/other/keep.txt", "repos/other/keep.txt"] {
        std::fs::create_dir_all(proj.join(kept).parent().unwrap()).unwrap();
        std::fs::write(proj.join(kept), "an earlier run's\n").unwrap();
    }
    let run = fleet(&["fleet", file.to_str().unwrap(), "--dry-run"], dir.path()).await;
    assert!(proj.join(".git/HEAD").is_file(), "the fleet file's checkout lost its .git: {}", run.stderr);
    assert_eq!(git(&proj, &["log", "-1", "--format=%s"]), "the fleet");
    assert!(proj.join("fleet.yaml").is_file() && proj.join("job.yaml").is_file());
    for kept in ["reports/other/keep.txt", "repos/other/keep.txt"] {
        assert!(proj.join(kept).is_file(), "{kept} was removed: {}", run.stderr);
    }
    let report = read_json(&proj.join("fleet.json"));
    assert_safe_ids(&report);
    let st: Vec<(String, String)> = report["repos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["source"].as_str().unwrap().to_string(), r["status"].as_str().unwrap().to_string()))
        .collect();
    assert!(st.contains(&(good.display().to_string(), "succeeded".into())), "{st:?}");
}

/// Two repositories whose names give the same id (one only by case) both run, each with its own
/// work tree and report dir.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_clash_gets_a_suffix() {
    let dir = tempfile::tempdir().unwrap();
    let origins: Vec<PathBuf> =
        ["a/x/app.git", "b/x/app.git", "c/X/app.git"].iter().map(|p| origin(&dir.path().join(p))).collect();
    let repos: Vec<String> = origins.iter().map(|o| format!("url: {}", o.display())).collect();
    let file = fleet_file(&dir.path().join("f"), &repos, "ws");
    let run = fleet(&["fleet", file.to_str().unwrap(), "--dry-run"], dir.path()).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let report = read_json(&dir.path().join("f/ws/fleet.json"));
    assert_safe_ids(&report);
    let mut got = ids(&report);
    got.sort();
    assert_eq!(got, ["X__app-3", "x__app", "x__app-2"]);
    for r in report["repos"].as_array().unwrap() {
        assert_eq!(r["status"], "succeeded", "{r}");
        assert!(Path::new(r["report_dir"].as_str().unwrap()).join("report.json").is_file());
    }
}

/// Every file under `dir`, recursively (not following symlinks), except git's own.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return out };
    for e in rd.flatten() {
        let (p, t) = (e.path(), e.file_type().unwrap());
        if t.is_dir() && e.file_name() != ".git" {
            out.extend(files_under(&p));
        } else if t.is_file() {
            out.push(p);
        }
    }
    out
}

/// A target URL with `user:password@`: the password is in no fleet output (fleet.json,
/// fleet-summary.md, fleet-junit.xml, stdout, stderr, the events, any repository's report).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_in_a_target_url_appears_in_no_output() {
    const PASSWORD: &str = "fleetPassw0rd-canary";
    let dir = tempfile::tempdir().unwrap();
    let good = origin(&dir.path().join("origins/app.git"));
    let served = dir.path().join("served");
    serve_copy_of(&served, "app.git", &good);
    let server = GitHttp::start(&served, Mode::Auth).await;
    let with_password = |repo: &str| server.base.replace("http://", &format!("http://hone-user:{PASSWORD}@")) + repo;
    let repos = [format!("url: {}", with_password("/app.git")), format!("url: {}", with_password("/missing.git"))];
    let file = fleet_file(&dir.path().join("f"), &repos, "ws");
    let run = fleet(&["fleet", file.to_str().unwrap(), "--dry-run", "--json"], dir.path()).await;
    assert!(
        server.credentials().iter().any(|c| c.ends_with(PASSWORD)),
        "the server never asked: the test proves nothing"
    );
    let ws = dir.path().join("f/ws");
    let report = read_json(&ws.join("fleet.json"));
    let statuses: Vec<&str> =
        report["repos"].as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert!(statuses.contains(&"succeeded") && statuses.contains(&"failed"), "{report:#}");
    assert!(!run.stdout.is_empty() && !run.stdout.contains(PASSWORD), "stdout (the events) carries the password");
    assert!(!run.stderr.contains(PASSWORD), "stderr carries the password: {}", run.stderr);
    let mut files = vec![ws.join("fleet.json"), ws.join("fleet-summary.md"), ws.join("fleet-junit.xml")];
    files.extend(files_under(&ws.join("reports")));
    assert!(files.len() > 5, "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        assert!(!text.contains(PASSWORD), "{} carries the password", f.display());
        assert!(!text.contains("hone-user:"), "{} carries the URL's credentials", f.display());
    }
}
