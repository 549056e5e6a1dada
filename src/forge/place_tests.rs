use super::*;

fn env(vars: &[(&str, &str)]) -> RunEnv {
    RunEnv::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

fn place(vars: &[(&str, &str)], spec: &ForgeSpec, url: &str) -> Place {
    let env = env(vars);
    Place::decide(&Input {
        env: &env,
        spec,
        token_env: None,
        remote_url: Some(url),
        env_repo: true,
        remote_trusted: false,
    })
}

const GITLAB_CI: [(&str, &str); 5] = [
    ("GITLAB_CI", "true"),
    ("CI_SERVER_URL", "https://gitlab.example.com"),
    ("CI_API_V4_URL", "https://gitlab.example.com/api/v4"),
    ("CI_PROJECT_PATH", "group/sub/app"),
    ("CI_JOB_TOKEN", "job-token-123"),
];

#[test]
fn the_remotes_host_picks_among_known_servers() {
    let none = ForgeSpec::default();
    let gh = place(&[("GITHUB_TOKEN", "ghp_x")], &none, "https://github.com/acme/app.git");
    assert_eq!((gh.kind, gh.repo.as_deref()), (Kind::Github, Some("acme/app")));
    assert_eq!(gh.api().unwrap(), "https://api.github.com");
    assert_eq!(gh.token.as_ref().map(|t| (t.secret(), t.user)), Some(("ghp_x", GITHUB_USER)));
    let gl = place(&[("GITLAB_TOKEN", "glpat-x")], &none, "git@gitlab.com:group/sub/app.git");
    assert_eq!((gl.kind, gl.repo.as_deref()), (Kind::Gitlab, Some("group/sub/app")));
    assert_eq!(gl.api().unwrap(), "https://gitlab.com/api/v4");
    assert_eq!(gl.server.as_ref().map(Forge::url).as_deref(), Some("https://gitlab.com"));
    assert_eq!(gl.token.as_ref().map(|t| (t.secret(), t.user)), Some(("glpat-x", GITLAB_USER)));
    // A self-managed GitLab named by the spec.
    let spec = ForgeSpec { kind: None, url: Some("https://git.corp.example".into()) };
    let corp = place(&[], &spec, "https://git.corp.example/team/app.git");
    assert_eq!(corp.kind, Kind::Gitlab);
    assert_eq!(corp.api().unwrap(), "https://git.corp.example/api/v4");
    // An unknown host with a GitLab server named: GitLab (the token stays with that server).
    assert_eq!(place(&[], &spec, "https://git.unknown.example/a/b").kind, Kind::Gitlab);
    // An unknown host: GitHub outside GitLab CI, as before.
    assert_eq!(place(&[], &none, "https://git.unknown.example/a/b").kind, Kind::Github);
    assert_eq!(place(&[], &none, "/srv/git/app.git").kind, Kind::Github);
}

#[test]
fn in_gitlab_ci_the_server_api_project_and_job_token_come_from_ci() {
    let none = ForgeSpec::default();
    let p = place(&GITLAB_CI, &none, "https://gitlab.example.com/group/sub/app.git");
    assert_eq!(p.kind, Kind::Gitlab);
    assert_eq!(p.api().unwrap(), "https://gitlab.example.com/api/v4");
    assert_eq!(p.repo.as_deref(), Some("group/sub/app"));
    assert_eq!(
        p.token.as_ref().map(|t| (t.secret(), t.user, t.var.as_str())),
        Some(("job-token-123", GITLAB_JOB_USER, CI_JOB_TOKEN))
    );
    // An access token wins over the job token.
    let mut vars = GITLAB_CI.to_vec();
    vars.push(("GITLAB_TOKEN", "glpat-y"));
    let p = place(&vars, &none, "https://gitlab.example.com/group/sub/app.git");
    assert_eq!(p.token.as_ref().map(|t| t.user), Some(GITLAB_USER));
    // A local remote in GitLab CI: still GitLab, on the CI server.
    let p = place(&GITLAB_CI, &none, "/builds/group/sub/app");
    assert_eq!((p.kind, p.api().unwrap()), (Kind::Gitlab, "https://gitlab.example.com/api/v4"));
    // In a self-managed instance's CI, a remote on gitlab.com is not this server's: no project
    // is taken from it, and the job token (CI's server's) is not offered there.
    let p = place(&GITLAB_CI, &none, "https://gitlab.com/other/proj.git");
    assert_eq!((p.api().unwrap(), p.repo.as_deref()), ("https://gitlab.example.com/api/v4", None));
    assert_eq!(p.server.as_ref().map(Forge::url).as_deref(), Some("https://gitlab.example.com"));
    // The spec's word wins.
    let spec = ForgeSpec { kind: Some(Kind::Github), url: None };
    assert_eq!(place(&GITLAB_CI, &spec, "https://gitlab.example.com/g/p").kind, Kind::Github);
}

#[test]
fn the_token_server_never_comes_from_the_remote() {
    let none = ForgeSpec::default();
    // One GitLab server per run. Without CI_SERVER_URL it is gitlab.com, and the job token
    // (which belongs to CI's own server) is not offered to it.
    let p = place(&[("GITLAB_CI", "true"), ("CI_JOB_TOKEN", "t")], &none, "https://evil.example/g/p.git");
    assert_eq!(p.server.as_ref().map(Forge::url).as_deref(), Some(GITLAB_COM));
    assert!(p.token.is_none() && p.repo.is_none(), "{p:?}");
    // A CI server that is not plain HTTPS is not a server.
    let p = place(&[("GITLAB_CI", "true"), ("CI_SERVER_URL", "http://gitlab.example.com")], &none, "/x");
    assert_eq!(p.server.as_ref().map(Forge::url).as_deref(), Some(GITLAB_COM));
    // With a server named, a gitlab.com remote gets neither the server nor a project.
    let spec = ForgeSpec { kind: None, url: Some("https://git.corp.example".into()) };
    let p = place(&[("GITLAB_TOKEN", "glpat-x")], &spec, "https://gitlab.com/g/p.git");
    assert_eq!((p.kind, p.repo.as_deref()), (Kind::Gitlab, None));
    assert_eq!(p.server.as_ref().map(Forge::url).as_deref(), Some("https://git.corp.example"));
}

#[test]
fn the_jobs_token_variable_is_its_own_forges_only() {
    let env = env(&[("GL_BOT", "glpat-bot"), ("GITHUB_TOKEN", "ghp_x")]);
    let spec = ForgeSpec { kind: None, url: Some("https://git.corp.example".into()) };
    let at = |url: &str| {
        Place::decide(&Input {
            env: &env,
            spec: &spec,
            token_env: Some("GL_BOT"),
            remote_url: Some(url),
            env_repo: false,
            remote_trusted: true,
        })
    };
    let gl = at("https://git.corp.example/g/p.git");
    assert_eq!(gl.token.as_ref().map(Token::secret), Some("glpat-bot"));
    let gh = at("https://github.com/acme/app.git");
    assert_eq!((gh.kind, gh.token.as_ref().map(Token::secret)), (Kind::Github, Some("ghp_x")));
}

#[test]
fn a_fleets_targets_take_their_repository_from_their_remote() {
    let vars = [
        ("GITHUB_REPOSITORY", "acme/runner"),
        ("GITLAB_CI", "true"),
        ("CI_SERVER_URL", "https://gitlab.example.com"),
        ("CI_PROJECT_PATH", "g/runner"),
    ];
    let env = env(&vars);
    let none = ForgeSpec::default();
    let at = |url: &str, env_repo: bool| {
        Place::decide(&Input {
            env: &env,
            spec: &none,
            token_env: None,
            remote_url: Some(url),
            env_repo,
            remote_trusted: false,
        })
        .repo
    };
    assert_eq!(at("https://github.com/acme/lib.git", false).as_deref(), Some("acme/lib"));
    assert_eq!(at("https://github.com/acme/lib.git", true).as_deref(), Some("acme/runner"));
    assert_eq!(at("https://gitlab.example.com/g/lib.git", true).as_deref(), Some("g/lib"));
    assert_eq!(at("/builds/g/lib", false), None);
    assert_eq!(at("/builds/g/runner", true).as_deref(), Some("g/runner"));
}

#[test]
fn a_gitlab_under_a_path_of_its_own() {
    let spec = ForgeSpec { kind: None, url: Some("https://h.example/gitlab".into()) };
    let p = place(&[], &spec, "https://h.example/gitlab/g/sub/p.git");
    assert_eq!((p.kind, p.repo.as_deref()), (Kind::Gitlab, Some("g/sub/p")));
    assert_eq!(p.api().unwrap(), "https://h.example/gitlab/api/v4");
}

#[test]
fn hosts_and_paths_of_urls() {
    for (url, host, path) in [
        ("https://GitLab.com/g/s/p.git", Some("gitlab.com"), Some("g/s/p")),
        ("https://u:pw@gitlab.com:443/g/p/", Some("gitlab.com"), Some("g/p")),
        ("https://h:8443/g/p", Some("h:8443"), Some("g/p")),
        ("ssh://git@h.example/g/p.git", Some("h.example"), Some("g/p")),
        ("git@h.example:g/s/p.git", Some("h.example"), Some("g/s/p")),
        ("https://h/p", Some("h"), None),
        ("https://h/g/../p", Some("h"), None),
        ("/srv/git/p.git", None, None),
        ("file:///srv/g/p.git", None, None),
    ] {
        assert_eq!(host_of(url).as_deref(), host, "{url}");
        assert_eq!(repo_path(url).as_deref(), path, "{url}");
    }
}

#[test]
fn a_request_about_no_one_repository_goes_only_to_the_server_named() {
    let spec = ForgeSpec::default();
    // GitLab CI on a server hone will not send a token to (http): never gitlab.com instead.
    let ci_http = env(&[("CI_SERVER_URL", "http://gitlab.internal"), ("GITLAB_TOKEN", "t")]);
    assert!(server_url(&ci_http, &spec, Kind::Gitlab).is_none());
    assert!(forge_wide(&ci_http, &spec, None, Kind::Gitlab).is_none());
    let named = ForgeSpec { url: Some("https://gl.example/gl/".into()), ..Default::default() };
    assert_eq!(server_url(&ci_http, &named, Kind::Gitlab).as_deref(), Some("https://gl.example/gl/"));
    let nothing_named = env(&[("GITLAB_TOKEN", "t")]);
    let p = forge_wide(&nothing_named, &spec, None, Kind::Gitlab).unwrap();
    assert_eq!((p.api().unwrap(), p.repo.is_none()), ("https://gitlab.com/api/v4", true));
    assert_eq!(p.token.unwrap().var, "GITLAB_TOKEN");
    // The job's forge is the other one: no place, rather than the job's token on the other forge.
    let github_job = ForgeSpec { kind: Some(Kind::Github), ..Default::default() };
    assert!(forge_wide(&nothing_named, &github_job, Some("GH_BOT"), Kind::Gitlab).is_none());
    let gh = forge_wide(&env(&[("GITHUB_TOKEN", "g")]), &spec, None, Kind::Github).unwrap();
    assert_eq!(
        (gh.api().unwrap(), gh.token.as_ref().unwrap().var.as_str()),
        ("https://api.github.com", "GITHUB_TOKEN")
    );
}

#[test]
fn a_github_target_elsewhere_than_the_environments_server_is_refused() {
    let at = |vars: &[(&str, &str)], url: &str| {
        let env = crate::env::RunEnv::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        let spec = Default::default();
        let input = Input {
            env: &env,
            spec: &spec,
            token_env: None,
            remote_url: Some(url),
            env_repo: false,
            remote_trusted: true,
        };
        Place::decide(&input).elsewhere.map(|e| e.why)
    };
    let ghes = [("GITHUB_SERVER_URL", "https://GHE.corp.example:8443/")];
    for url in ["https://ghe.corp.example/a/b", "git@ghe.corp.example:a/b.git", "ssh://git@ghe.corp.example:22/a/b"] {
        assert_eq!(at(&ghes, url), None, "{url}");
    }
    for url in ["https://github.com/a/b", "git@ssh.github.com:a/b.git", "https://www.github.com/a/b"] {
        assert_eq!(at(&[], url), None, "{url}");
        assert!(at(&ghes, url).is_some_and(|m| m.contains("ghe.corp.example")), "{url}");
    }
    let e = at(&[], "https://ghe.corp.example/a/b").unwrap();
    assert!(e.contains("`ghe.corp.example`") && e.contains("`github.com`"), "{e}");
    // A GitLab target is GitLab's to decide; an http server (no token goes to it) is no server.
    let lab = [("GITLAB_TOKEN", "t"), ("CI_SERVER_URL", "https://gitlab.corp.example"), ("GITLAB_CI", "true")];
    assert_eq!(at(&lab, "https://gitlab.corp.example/g/p"), None);
    assert_eq!(at(&[("GITHUB_SERVER_URL", "http://ghe.corp.example")], "https://elsewhere.example/a/b"), None);
}
