//! Targets from a query: a GitHub organisation listed page by page and filtered, its answer
//! treated as hostile (names outside the organisation, clone URLs elsewhere), the resolved list
//! written to `targets.json` and reused by `--resume`.

use crate::common::git_http::{GitHttp, Mode, test_ca};
use crate::common::*;
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "ghp_querycanary0123456789abcdef";

/// A repository as GitHub lists it, with an attacker's `clone_url` (hone must not use it).
fn listed(full_name: &str, language: &str, topics: &[&str], archived: bool, fork: bool) -> Value {
    json!({
        "full_name": full_name, "name": full_name.rsplit('/').next(), "private": false, "visibility": "public",
        "archived": archived, "fork": fork, "language": language, "topics": topics,
        "clone_url": "https://evil.example/stolen.git", "html_url": "https://evil.example/x",
    })
}

/// Page 1: 100 repositories of which one passes the filters (the rest archived, forks, the wrong
/// language or topic, or names GitHub would not give or outside the organisation); page 2: one
/// more that passes and one that does not.
fn pages() -> (Value, Value) {
    let mut one = vec![listed("acme/app1", "Python", &["service", "python"], false, false)];
    for i in 0..99 {
        one.push(match i % 6 {
            0 => listed(&format!("acme/old{i}"), "Python", &["service"], true, false),
            1 => listed(&format!("acme/fork{i}"), "Python", &["service"], false, true),
            2 => listed(&format!("acme/go{i}"), "Go", &["service"], false, false),
            3 => listed(&format!("acme/lib{i}"), "Python", &["library"], false, false),
            4 => listed(&format!("evil/app{i}"), "Python", &["service"], false, false),
            _ => listed(&format!("acme/../evil{i}"), "Python", &["service"], false, false),
        });
    }
    let two = vec![
        listed("acme/app2", "python", &["SERVICE"], false, false),
        listed("acme/web", "TypeScript", &[], false, false),
    ];
    (Value::Array(one), Value::Array(two))
}

async fn mount_org(gh: &MockServer) {
    let (one, two) = pages();
    for (page, body) in [("1", one), ("2", two)] {
        Mock::given(method("GET"))
            .and(path("/orgs/acme/repos"))
            .and(query_param("per_page", "100"))
            .and(query_param("page", page))
            .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
            .respond_with(ResponseTemplate::new(200).set_body_json(body).insert_header("x-ratelimit-remaining", "4999"))
            .expect(1)
            .mount(gh)
            .await;
    }
}

struct Setup {
    dir: tempfile::TempDir,
    forge: GitHttp,
    gh: MockServer,
}

async fn setup(query: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    for name in ["app1", "app2"] {
        served_repo(dir.path(), &served, "acme", name);
    }
    let forge = GitHttp::start_tls(&served, Mode::GitHub(TOKEN.into())).await;
    std::fs::write(dir.path().join("script.yaml"), FIX_SCRIPT).unwrap();
    let job = "version: 1\nname: fleetjob\ntask: Make check.sh pass.\nmodel: { provider: script, script: script.yaml }\nverify:\n  - { name: check, run: \"sh check.sh\", timeout: 30s }\nplan: false\n";
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let fleet = format!("version: 1\njob: job.yaml\nrepos:\n  - github: {query}\nconcurrency: 2\nworkspace: ws\n");
    std::fs::write(dir.path().join("fleet.yaml"), fleet).unwrap();
    Setup { dir, forge, gh: MockServer::start().await }
}

async fn fleet(s: &Setup, args: &[&str]) -> Run {
    let file = s.dir.path().join("fleet.yaml");
    let mut argv = vec!["fleet", file.to_str().unwrap(), "--dry-run"];
    argv.extend_from_slice(args);
    let (api, ca) = (s.gh.uri(), test_ca().display().to_string());
    let env = [
        ("GITHUB_TOKEN", TOKEN),
        ("GITHUB_API_URL", api.as_str()),
        ("GITHUB_SERVER_URL", s.forge.base.as_str()),
        ("GIT_SSL_CAINFO", ca.as_str()),
    ];
    run_hone_env(&argv, &[], s.dir.path().join("unused"), &env).await
}

fn read_json(p: std::path::PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_organisation_is_listed_page_by_page_filtered_and_cloned_from_the_forge_it_is_on() {
    let s = setup("{ org: acme, language: python, topics: [service] }").await;
    mount_org(&s.gh).await;
    let run = fleet(&s, &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    s.gh.verify().await;
    let ws = s.dir.path().join("ws");
    let report = read_json(ws.join("fleet.json"));
    let ids: Vec<&str> = report["repos"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["acme__app1", "acme__app2"], "{report:#}");
    for r in report["repos"].as_array().unwrap() {
        assert_eq!(r["status"], "succeeded", "{r:#}");
    }
    let targets = read_json(ws.join("targets.json"));
    assert_eq!(targets["queries"][0]["repos"], json!(["acme/app1", "acme/app2"]), "{targets:#}");
    assert_eq!(targets["queries"][0]["server"], s.forge.base.as_str());
    assert_eq!(targets["queries"][0]["requests"], 2);
    assert_eq!(targets["queries"][0]["query"]["github"]["org"], "acme");
    let git_paths: Vec<String> = s.forge.seen().into_iter().map(|x| x.path).collect();
    assert!(
        git_paths.iter().all(|p| p.starts_with("/acme/app1.git") || p.starts_with("/acme/app2.git")),
        "{git_paths:?}"
    );
    assert!(!run.stderr.contains("evil") && !run.stderr.contains(TOKEN), "{}", run.stderr);
    assert!(run.stderr.contains("a GitHub query gave 2 repositories (2 requests)"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_runs_over_the_repositories_the_last_run_listed_without_asking_again() {
    let s = setup("{ org: acme, language: python, topics: [service] }").await;
    mount_org(&s.gh).await;
    let first = fleet(&s, &[]).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    s.gh.reset().await;
    // The organisation's listing is gone (an outage, or a renamed team): resume still knows.
    Mock::given(method("GET")).respond_with(ResponseTemplate::new(500)).mount(&s.gh).await;
    let again = fleet(&s, &["--only", "failed"]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    let asked = s.gh.received_requests().await.unwrap();
    assert!(asked.is_empty(), "{asked:?}");
    assert!(again.stderr.contains("from the last run's targets.json"), "{}", again.stderr);
    let report = read_json(s.dir.path().join("ws/fleet.json"));
    assert_eq!(report["repos"].as_array().unwrap().len(), 2, "{report:#}");
    // A different query is a different list: asked again (and here, refused with a clear error).
    let fleet_file = s.dir.path().join("fleet.yaml");
    let text = std::fs::read_to_string(&fleet_file).unwrap().replace("topics: [service]", "topics: [web]");
    std::fs::write(&fleet_file, text).unwrap();
    let changed = fleet(&s, &["--only", "failed"]).await;
    assert_ne!(changed.code, 0);
    assert!(changed.stderr.contains("cannot list the organisation `acme` on GitHub: HTTP 500"), "{}", changed.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_without_a_token_says_which_variable_to_set() {
    let s = setup("{ org: acme }").await;
    let file = s.dir.path().join("fleet.yaml");
    let api = s.gh.uri();
    let env = [("GITHUB_API_URL", api.as_str()), ("GITHUB_SERVER_URL", s.forge.base.as_str())];
    let run = run_hone_env(&["fleet", file.to_str().unwrap()], &[], s.dir.path().join("unused"), &env).await;
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("no GitHub token to list the fleet's repositories"), "{}", run.stderr);
    assert!(run.stderr.contains("GITHUB_TOKEN"), "{}", run.stderr);
    assert!(s.gh.received_requests().await.unwrap().is_empty());
}

/// A GitLab group with a subgroup, an archived project, a project outside the group, another
/// group whose name starts the same, and one more page than fits in one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gitlab_group_is_listed_with_its_subgroups_and_only_its_own_projects_run() {
    use crate::common::mock_gitlab::{Kind, MockGitLab, Token};
    const GL_TOKEN: &str = "glpat-querycanary0123456789";
    let dir = tempfile::tempdir().unwrap();
    let src = broken_repo();
    let gl = MockGitLab::start(&dir.path().join("gitlab")).await;
    for p in ["platform/api", "platform/be/worker", "platform/old", "platformx/api", "other/api"] {
        gl.add_project(p, &src.origin);
    }
    // Enough more to need a second page of 100.
    for i in 0..100 {
        gl.add_project(&format!("platform/be/gen/p{i:03}"), &src.origin);
        gl.describe(&format!("platform/be/gen/p{i:03}"), false, &["generated"]);
    }
    gl.describe("platform/api", false, &["service"]);
    gl.describe("platform/be/worker", false, &["Service", "go"]);
    gl.describe("platform/old", true, &["service"]);
    gl.describe("platformx/api", false, &["service"]);
    gl.add_token(
        GL_TOKEN,
        Token { kind: Kind::Personal, scopes: &["read_api", "write_repository"], user: "bot", project: None },
    );
    std::fs::write(dir.path().join("script.yaml"), FIX_SCRIPT).unwrap();
    let job = format!(
        "version: 1\nname: grouped\ntask: Make check.sh pass.\nmodel: {{ provider: script, script: script.yaml }}\nverify:\n  - {{ name: check, run: \"sh check.sh\", timeout: 30s }}\nplan: false\nforge: {{ gitlab_url: \"{}\" }}\n",
        gl.base
    );
    std::fs::write(dir.path().join("job.yaml"), job).unwrap();
    let fleet = dir.path().join("fleet.yaml");
    let text = "version: 1\njob: job.yaml\nrepos:\n  - gitlab: { group: platform, topics: [service] }\nworkspace: ws\n";
    std::fs::write(&fleet, text).unwrap();
    let ca = test_ca().display().to_string();
    let env = [("GITLAB_TOKEN", GL_TOKEN), ("SSL_CERT_FILE", ca.as_str()), ("GIT_SSL_CAINFO", ca.as_str())];
    let run =
        run_hone_env(&["fleet", fleet.to_str().unwrap(), "--dry-run"], &[], dir.path().join("unused"), &env).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(gl.violations().is_empty(), "{:#?}", gl.violations());
    let report = read_json(dir.path().join("ws/fleet.json"));
    let ids: Vec<&str> = report["repos"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["be__worker", "platform__api"], "{report:#}");
    let targets = read_json(dir.path().join("ws/targets.json"));
    assert_eq!(targets["queries"][0]["repos"], json!(["platform/api", "platform/be/worker"]), "{targets:#}");
    assert_eq!(targets["queries"][0]["server"], gl.base.as_str());
    let listings: Vec<String> = gl
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/api/v4/groups/"))
        .map(|r| format!("{} {}", r.path, r.query))
        .collect();
    assert_eq!(listings.len(), 2, "two pages: {listings:?}");
    assert!(
        listings.iter().all(|l| l.contains("include_subgroups=true") && l.contains("per_page=100")),
        "{listings:?}"
    );
}

/// A code search answers files: each repository runs once, and what GitHub says the search
/// missed (more than 1,000 results; a search that timed out on its side) is said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_search_runs_each_repository_once_and_says_what_the_search_missed() {
    let s = setup("{ code_search: \"org:acme filename:check.sh\" }").await;
    let file = |repo: &str, p: &str| json!({"name": p, "path": p, "repository": {"full_name": repo, "fork": false, "private": false}});
    let items = json!([file("acme/app1", "check.sh"), file("acme/app2", "check.sh"), file("acme/app1", "ci/check.sh")]);
    Mock::given(method("GET"))
        .and(path("/search/code"))
        .and(query_param("q", "org:acme filename:check.sh"))
        .and(query_param("page", "1"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"total_count": 1500, "incomplete_results": true, "items": items})),
        )
        .expect(1)
        .mount(&s.gh)
        .await;
    let run = fleet(&s, &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    s.gh.verify().await;
    let targets = read_json(s.dir.path().join("ws/targets.json"));
    assert_eq!(targets["queries"][0]["repos"].as_array().unwrap().len(), 2, "{targets:#}");
    for said in ["matched 1500 results", "at most 1000", "incomplete"] {
        assert!(run.stderr.contains(said), "{said}: {}", run.stderr);
    }
    assert_eq!(targets["queries"][0]["warnings"].as_array().unwrap().len(), 2, "{targets:#}");
}

/// GitHub's primary rate limit runs out between two pages: hone waits for the reset GitHub names
/// and goes on; nothing fails and no page is asked twice once answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_waits_out_a_rate_limit_between_pages() {
    let s = setup("{ org: acme, language: python, topics: [service] }").await;
    let reset = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 1;
    Mock::given(method("GET"))
        .and(path("/orgs/acme/repos"))
        .and(query_param("page", "2"))
        .respond_with(
            ResponseTemplate::new(403)
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-reset", reset.to_string().as_str())
                .set_body_json(json!({"message": "API rate limit exceeded"})),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&s.gh)
        .await;
    mount_org(&s.gh).await;
    let run = fleet(&s, &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    s.gh.verify().await;
    let pages: Vec<String> =
        s.gh.received_requests().await.unwrap().iter().map(|r| r.url.query().unwrap_or("").to_string()).collect();
    assert_eq!(pages.len(), 3, "page 1, page 2 refused, page 2 again: {pages:?}");
    let report = read_json(s.dir.path().join("ws/fleet.json"));
    assert_eq!(report["repos"].as_array().unwrap().len(), 2, "{report:#}");
}
