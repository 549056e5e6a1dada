//! A campaign's pace on GitLab: the campaign's merge requests (its token's user's, by id, on the
//! job's branch) counted from the stand-in, every request checked against GitLab's API
//! description; two an hour of five projects, then two more an hour later.

use crate::common::git_http::test_ca;
use crate::common::mock_gitlab::{Kind, MockGitLab, Token};
use crate::common::*;
use serde_json::Value;
use std::path::Path;

const TOKEN: &str = "glpat-pacecanary0123456789";

fn statuses(dir: &Path) -> Vec<(String, String)> {
    let r: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("ws/fleet.json")).unwrap()).unwrap();
    let repos = r["repos"].as_array().unwrap();
    repos.iter().map(|x| (x["id"].as_str().unwrap().to_string(), x["status"].as_str().unwrap().to_string())).collect()
}

fn count(s: &[(String, String)], status: &str) -> usize {
    s.iter().filter(|(_, st)| st == status).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_an_hour_of_five_projects_on_gitlab() {
    let dir = tempfile::tempdir().unwrap();
    let gl = MockGitLab::start(&dir.path().join("gitlab")).await;
    let src = broken_repo();
    let names: Vec<String> = (1..=5).map(|i| format!("acme/r{i}")).collect();
    for n in &names {
        gl.add_project(n, &src.origin);
    }
    gl.add_token(TOKEN, Token { kind: Kind::Personal, scopes: &["api"], user: "hone-bot", project: None });
    std::fs::write(dir.path().join("script.yaml"), FIX_SCRIPT).unwrap();
    let job = format!(
        "version: 1\nname: pacejob\ntask: Make check.sh pass.\nmodel: {{ provider: script, script: script.yaml }}\nverify:\n  - {{ name: check, run: \"sh check.sh\", timeout: 30s }}\nplan: false\npr: {{ enabled: true, hourly_limit: 2 }}\nforge: {{ gitlab_url: \"{}\" }}\ngit: {{ token_env: GL_BOT }}\n",
        gl.base
    );
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let repos: Vec<String> = names.iter().map(|n| format!("  - url: {}", gl.git_url(n))).collect();
    let fleet = dir.path().join("fleet.yaml");
    std::fs::write(
        &fleet,
        format!("version: 1\njob: job.yaml\nrepos:\n{}\nworkspace: ws\nconcurrency: 2\n", repos.join("\n")),
    )
    .unwrap();
    let ca = test_ca().display().to_string();
    let t0 = time::OffsetDateTime::now_utc().unix_timestamp();
    let run = |now: i64| {
        let (fleet, ca, cwd) = (fleet.clone(), ca.clone(), dir.path().join("unused"));
        async move {
            let now = now.to_string();
            let env = [
                ("GL_BOT", TOKEN),
                ("SSL_CERT_FILE", ca.as_str()),
                ("GIT_SSL_CAINFO", ca.as_str()),
                ("HONE_TEST_NOW", now.as_str()),
            ];
            run_hone_env(&["fleet", fleet.to_str().unwrap()], &[], cwd, &env).await
        }
    };
    let first = run(t0).await;
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    let s = statuses(dir.path());
    assert_eq!((count(&s, "pr_created"), count(&s, "waiting")), (2, 3), "{s:?}");
    let opened: usize = names.iter().map(|n| gl.mrs(n).len()).sum();
    assert_eq!(opened, 2);
    // The merge requests were listed by source branch, as GitLab's API describes it.
    let listed = gl.requests().iter().filter(|r| r.method == "GET" && r.path.ends_with("/merge_requests")).count();
    assert!(listed >= 5, "each project's merge requests were read");

    let second = run(t0 + 3600 + 120).await;
    assert_eq!(second.code, 0, "{}\n{}", second.stdout, second.stderr);
    let s2 = statuses(dir.path());
    assert_eq!((count(&s2, "pr_updated"), count(&s2, "pr_created"), count(&s2, "waiting")), (2, 2, 1), "{s2:?}");
    let opened: usize = names.iter().map(|n| gl.mrs(n).len()).sum();
    assert_eq!(opened, 4, "no duplicate merge request");
    assert!(gl.violations().is_empty(), "{:#?}", gl.violations());
}
