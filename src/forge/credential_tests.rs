use super::*;

fn env(vars: &[(&str, &str)]) -> RunEnv {
    RunEnv::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

fn gh(secret: &str) -> Token {
    Token::new(secret, "GITHUB_TOKEN", "x-access-token")
}

fn github() -> Forge {
    Forge { authority: "github.com".into() }
}

#[test]
fn the_token_goes_only_to_the_forge_over_https() {
    let f = Some(github());
    for (url, sent) in [
        ("https://github.com/acme/app.git", "https://github.com/acme/app.git"),
        ("https://GitHub.COM/acme/app", "https://github.com/acme/app"),
        ("https://github.com:443/acme/app", "https://github.com/acme/app"),
        ("https://github.com", "https://github.com"),
    ] {
        assert_eq!(token_may_go(url, f.as_ref()), Ok(sent.to_string()), "{url}");
    }
    let other = |h: &str| Err(Withheld::OtherHost(h.to_string()));
    for (url, why) in [
        // Look-alike hosts, paths and trailing dots are other hosts.
        ("https://github.com.evil.example/acme/app", other("github.com.evil.example")),
        ("https://evil.example/github.com/acme/app", other("evil.example")),
        ("https://evil-github.com/acme/app", other("evil-github.com")),
        ("https://github.com./acme/app", other("github.com.")),
        ("https://api.github.com/acme/app", other("api.github.com")),
        ("https://github.com:8443/acme/app", other("github.com:8443")),
        ("https://github.com:0443/acme/app", other("github.com:443")),
        ("https://127.0.0.1/acme/app", other("127.0.0.1")),
        // Credentials of its own, before or after a look-alike.
        ("https://x@github.com/acme/app", Err(Withheld::Userinfo)),
        ("https://user:pw@github.com/acme/app", Err(Withheld::Userinfo)),
        ("https://github.com@evil.example/acme/app", Err(Withheld::Userinfo)),
        // Other transports.
        ("http://github.com/acme/app", Err(Withheld::NotHttps)),
        ("HTTPS://github.com/acme/app", Err(Withheld::NotHttps)),
        ("git@github.com:acme/app.git", Err(Withheld::NotHttps)),
        ("ssh://git@github.com/acme/app", Err(Withheld::NotHttps)),
        ("git://github.com/acme/app", Err(Withheld::NotHttps)),
        ("file:///srv/app.git", Err(Withheld::NotHttps)),
        ("/srv/app.git", Err(Withheld::NotHttps)),
        ("", Err(Withheld::NotHttps)),
        // Anything a parser could read two ways.
        ("https://[::1]/acme/app", Err(Withheld::Malformed)),
        ("https://[2606:50c0::1]:443/acme/app", Err(Withheld::Malformed)),
        ("https://github.com%2eevil.example/acme/app", Err(Withheld::Malformed)),
        ("https://github.com\\@evil.example/acme/app", Err(Withheld::Malformed)),
        ("https://github.com /acme/app", Err(Withheld::Malformed)),
        ("https://github.com/acme/app\nhost=evil.example", Err(Withheld::Malformed)),
        ("https://gith\u{fc}b.com/acme/app", Err(Withheld::Malformed)),
        ("https://github.com:/acme/app", Err(Withheld::Malformed)),
        ("https://github.com:99999/acme/app", Err(Withheld::Malformed)),
        ("https://github.com:+443/acme/app", Err(Withheld::Malformed)),
        ("https:///acme/app", Err(Withheld::Malformed)),
    ] {
        assert_eq!(token_may_go(url, f.as_ref()), why, "{url:?}");
    }
    assert_eq!(token_may_go("https://github.com/acme/app", None), Err(Withheld::NoForge));
}

#[test]
fn the_forge_comes_from_the_environment() {
    let forge = |vars: &[(&str, &str)]| Forge::from_env(&env(vars)).map(|f| f.url());
    assert_eq!(forge(&[]).as_deref(), Some("https://github.com"));
    assert_eq!(forge(&[("GITHUB_API_URL", "https://api.github.com")]).as_deref(), Some("https://github.com"));
    let ghes = [("GITHUB_API_URL", "https://ghe.example.com/api/v3")];
    assert_eq!(forge(&ghes).as_deref(), Some("https://ghe.example.com"));
    let server = [("GITHUB_SERVER_URL", "https://GHE.example.com:8443/"), ("GITHUB_API_URL", "https://x/api")];
    assert_eq!(forge(&server).as_deref(), Some("https://ghe.example.com:8443"), "the server URL wins");
    // Not HTTPS: no forge, and no fallback to github.com.
    assert_eq!(forge(&[("GITHUB_SERVER_URL", "http://ghe.example.com")]), None);
    assert_eq!(forge(&[("GITHUB_API_URL", "http://127.0.0.1:8080")]), None);
    // On GHES the token does not go to github.com.
    let ghes_forge = Forge::from_env(&env(&ghes));
    assert!(token_may_go("https://ghe.example.com/acme/app.git", ghes_forge.as_ref()).is_ok());
    assert!(token_may_go("https://github.com/acme/app.git", ghes_forge.as_ref()).is_err());
}

/// libgit2 applies `insteadOf` when it reads a remote: the decision sees the rewritten URL,
/// which is the one git is given.
#[test]
fn an_insteadof_rewrite_is_judged_after_rewriting() {
    let dir = tempfile::tempdir().unwrap();
    let repo = git2::Repository::init(dir.path()).unwrap();
    let mut cfg = repo.config().unwrap();
    cfg.set_str("remote.origin.url", "https://github.com/acme/app.git").unwrap();
    cfg.set_str("url.http://127.0.0.1:9/.insteadOf", "https://github.com/").unwrap();
    let url = repo.find_remote("origin").unwrap().url().unwrap().to_string();
    assert_eq!(url, "http://127.0.0.1:9/acme/app.git");
    assert_eq!(token_may_go(&url, Some(&github())), Err(Withheld::NotHttps));
}

#[test]
fn the_token_is_granted_only_with_a_token_and_explained_when_held_back() {
    let e = env(&[]);
    let a = Access::decide("https://github.com/acme/app", Forge::from_env(&e).as_ref(), None);
    assert!(a.credential.is_none() && a.withheld.is_none() && a.git_env().is_none());
    let a = Access::decide("https://github.com/acme/app", Forge::from_env(&e).as_ref(), Some(&gh("ghp_secret123")));
    assert_eq!(a.git_env(), Some((TOKEN_VAR, "ghp_secret123")));
    assert!(!format!("{a:?}").contains("ghp_secret123"), "Debug hides the token");
    assert!(a.git_config().iter().all(|(k, v)| !k.contains("ghp_") && !v.contains("ghp_secret123")));
    let a =
        Access::decide("http://user:pw@127.0.0.1:9/app.git", Forge::from_env(&e).as_ref(), Some(&gh("ghp_secret123")));
    assert!(a.credential.is_none() && a.git_env().is_none());
    let why = a.explain("GITHUB_TOKEN").unwrap();
    assert!(why.contains("`http://127.0.0.1:9/app.git`") && !why.contains("pw"), "{why}");
    assert!(why.contains("GITHUB_TOKEN") && why.contains("https://github.com") && why.contains("not HTTPS"), "{why}");
}

/// GitLab's runner writes the job token into the remote's URL: hone drops it for the forge's
/// token, and a user part cannot move the host the decision sees.
#[test]
fn a_urls_own_credentials_are_dropped_for_the_forges_token() {
    let gitlab = Forge::from_url("https://gitlab.example.com").unwrap();
    let token = Token::new("glpat-x", "GITLAB_TOKEN", "oauth2");
    let a = Access::decide("https://gitlab-ci-token:job123@gitlab.example.com/g/p.git", Some(&gitlab), Some(&token));
    assert_eq!(a.url, "https://gitlab.example.com/g/p.git");
    assert_eq!(a.git_env(), Some((TOKEN_VAR, "glpat-x")));
    for other in [
        "https://gitlab.example.com@evil.example/g/p",
        "https://u:p@evil.example/g/p",
        "https://gitlab.example.com\\@evil.example/p",
    ] {
        let a = Access::decide(other, Some(&gitlab), Some(&token));
        assert!(a.credential.is_none(), "{other}");
    }
    assert_eq!(
        fill(
            &Access::decide("https://gitlab.example.com/g/p", Some(&gitlab), Some(&token)),
            &[],
            "protocol=https\nhost=gitlab.example.com\n\n"
        )
        .as_deref(),
        Some("glpat-x")
    );
}

/// Ask real git for a credential, with the config `access` gives (optionally an extra helper
/// setting), as hone's git processes are: no system or global config, no prompt.
fn fill(access: &Access, extra: &[(String, String)], input: &str) -> Option<String> {
    fill_with(std::process::Command::new("git"), access, extra, input)
}

/// `fill` with `c`, a git command that may carry settings of its own before hone's.
fn fill_with(mut c: std::process::Command, access: &Access, extra: &[(String, String)], input: &str) -> Option<String> {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    c.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default());
    c.env("GIT_CONFIG_NOSYSTEM", "1").env("GIT_CONFIG_GLOBAL", "/dev/null").env("GIT_TERMINAL_PROMPT", "0");
    c.env("GIT_CEILING_DIRECTORIES", dir.path()).current_dir(dir.path());
    for (k, v) in access.git_config().iter().chain(extra) {
        c.arg("-c").arg(format!("{k}={v}"));
    }
    if let Some((k, v)) = access.git_env() {
        c.env(k, v);
    }
    let mut child = c
        .args(["credential", "fill"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines().find_map(|l| l.strip_prefix("password=")).map(str::to_string)
}

#[test]
fn git_asks_the_helper_only_for_the_forge() {
    let a = Access::decide("https://github.com/acme/app.git", Some(&github()), Some(&gh("ghp_tok_0123456789")));
    let ask = |input: &str| fill(&a, &[], input);
    assert_eq!(ask("protocol=https\nhost=github.com\n\n").as_deref(), Some("ghp_tok_0123456789"));
    assert_eq!(ask("url=https://github.com/acme/app.git\n\n").as_deref(), Some("ghp_tok_0123456789"));
    for other in [
        "protocol=http\nhost=github.com\n\n",
        "protocol=https\nhost=github.com.evil.example\n\n",
        "protocol=https\nhost=evil.example\n\n",
        "protocol=https\nhost=github.com:8443\n\n",
        "url=https://evil.example/github.com/acme/app\n\n",
        "url=http://127.0.0.1:9/acme/app\n\n",
    ] {
        assert_eq!(ask(other), None, "{other:?}");
    }
    // Defence in depth: were the helper registered for every host, it still answers only for
    // the forge's.
    let unscoped = [("credential.helper".to_string(), helper("github.com", "x-access-token"))];
    assert_eq!(fill(&a, &unscoped, "protocol=https\nhost=evil.example\n\n"), None);
    assert_eq!(fill(&a, &unscoped, "protocol=http\nhost=github.com\n\n"), None);
    assert!(fill(&a, &unscoped, "protocol=https\nhost=github.com\n\n").is_some());
    // A helper or askpass program from a config read earlier (a clone's own) is cleared.
    let script = tempfile::tempdir().unwrap();
    let leak = script.path().join("leak.sh");
    std::fs::write(&leak, "#!/bin/sh\necho \"password=$HONE_GIT_TOKEN\"\n").unwrap();
    std::fs::set_permissions(&leak, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let shown = leak.display().to_string();
    let mut c = std::process::Command::new("git");
    let earlier = [("credential.helper", format!("!{shown}")), ("core.askPass", shown.clone())];
    for (k, v) in &earlier {
        c.arg("-c").arg(format!("{k}={v}"));
    }
    let evil = "protocol=https\nhost=evil.example\n\n";
    assert_eq!(fill_with(c, &a, &[], evil), None, "an earlier helper or askpass answered");
    // No token, no helper.
    let none = Access::decide("http://127.0.0.1:9/app", Some(&github()), Some(&gh("ghp_tok_0123456789")));
    assert_eq!(fill(&none, &[], "protocol=http\nhost=127.0.0.1:9\n\n"), None);
}

#[test]
fn credentials_are_taken_out_of_urls_in_text() {
    for (text, shown) in [
        ("https://user:pw@github.com/acme/app", "https://github.com/acme/app"),
        ("https://tok@host", "https://host"),
        ("fatal: 'https://u:p%40ss@h:8/x' not found", "fatal: 'https://h:8/x' not found"),
        ("two: ssh://git@h/a and http://a:b@c/d", "two: ssh://h/a and http://c/d"),
        ("https://github.com/acme/app", "https://github.com/acme/app"),
        ("mail me@example.com, see https://h/x@y", "mail me@example.com, see https://h/x@y"),
        ("no url here", "no url here"),
        ("https://u:p@", "https://"),
    ] {
        assert_eq!(without_userinfo(text), shown, "{text}");
    }
}

#[test]
fn the_secrets_of_a_url_are_its_password_or_its_token() {
    assert_eq!(url_secrets("https://user:s3cret@h/x"), ["s3cret"]);
    assert_eq!(url_secrets("https://user:p%40ss@h/x"), ["p%40ss", "p@ss"]);
    assert_eq!(url_secrets("https://ghp_abcdef@github.com/x"), ["ghp_abcdef"]);
    assert_eq!(url_secrets("https://a:b@c@h/x"), ["b@c"]);
    assert!(url_secrets("ssh://git@h/x").is_empty(), "a bare ssh user is not a secret");
    assert!(url_secrets("https://h/x@y").is_empty() && url_secrets("/srv/x").is_empty());
    assert!(url_secrets("https://user:@h/x").is_empty());
}
