//! Where a Forgejo run's token may go: the one Forgejo server of the run, from the job spec's
//! server address, else, under Forgejo (or Gitea) Actions, the server the runner names
//! (`GITHUB_SERVER_URL`, which Forgejo Actions sets to itself); never from a remote URL alone
//! and never a default. The token: the job's `git.token_env`, else `FORGEJO_TOKEN`, else
//! `GITEA_TOKEN`, else, under Actions and on the Actions server only, the `GITHUB_TOKEN` the
//! runner made for this repository.

use crate::env::RunEnv;
use crate::forge::credential::Token;

/// The git user name a Forgejo token is presented with (Forgejo takes a token as the password
/// under any user name; this is the one its Actions checkout uses).
pub const FORGEJO_USER: &str = "x-access-token";

/// Under Forgejo Actions (`FORGEJO_ACTIONS=true`) or Gitea Actions (`GITEA_ACTIONS=true`).
pub fn in_actions(env: &RunEnv) -> bool {
    env.var("FORGEJO_ACTIONS") == Some("true") || env.var("GITEA_ACTIONS") == Some("true")
}

/// The Actions runner's server (`GITHUB_SERVER_URL` under Forgejo or Gitea Actions), when it is
/// a plain https address.
pub fn actions_server(env: &RunEnv) -> Option<String> {
    let url = env.var("GITHUB_SERVER_URL").filter(|_| in_actions(env))?.trim_end_matches('/');
    crate::spec::forge::is_server_url(url).then(|| url.to_string())
}

/// The run's Forgejo server: `spec_url` (the job spec's), else the Actions runner's. None: the
/// token goes nowhere (no default server is guessed).
pub fn server(env: &RunEnv, spec_url: Option<&str>) -> Option<String> {
    match spec_url {
        Some(u) => {
            let u = u.trim_end_matches('/');
            crate::spec::forge::is_server_url(u).then(|| u.to_string())
        }
        None => actions_server(env),
    }
}

/// Whether `server` is the one the Actions runner names (its `GITHUB_TOKEN` and
/// `GITHUB_REPOSITORY` are for it only).
pub fn on_actions_server(env: &RunEnv, server: &str) -> bool {
    actions_server(env).is_some_and(|a| a.eq_ignore_ascii_case(server))
}

/// The token for `server`: `token_env` when the job names one, else `FORGEJO_TOKEN`, else
/// `GITEA_TOKEN`, else under Actions on its own server `GITHUB_TOKEN`.
pub fn token(env: &RunEnv, token_env: Option<&str>, server: &str) -> Option<Token> {
    let actions = on_actions_server(env, server);
    let take = |var: &str| env.var(var).filter(|t| !t.is_empty()).map(|t| Token::new(t, var, FORGEJO_USER));
    if let Some(var) = token_env.filter(|v| *v != "GITHUB_TOKEN" || actions) {
        return take(var);
    }
    take("FORGEJO_TOKEN").or_else(|| take("GITEA_TOKEN")).or_else(|| if actions { take("GITHUB_TOKEN") } else { None })
}

/// The API of `server`.
pub fn api(server: &str) -> String {
    format!("{}/api/v1", server.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> RunEnv {
        RunEnv::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    const ACTIONS: [(&str, &str); 4] = [
        ("FORGEJO_ACTIONS", "true"),
        ("GITHUB_SERVER_URL", "https://codeberg.org"),
        ("GITHUB_REPOSITORY", "acme/app"),
        ("GITHUB_TOKEN", "actions-token"),
    ];

    #[test]
    fn the_server_is_the_specs_or_the_runners_never_a_guess() {
        assert_eq!(server(&env(&ACTIONS), None).as_deref(), Some("https://codeberg.org"));
        let spec = Some("https://git.example.com/");
        assert_eq!(server(&env(&ACTIONS), spec).as_deref(), Some("https://git.example.com"));
        assert_eq!(server(&env(&[]), None), None, "outside Actions, only the spec names it");
        // GitHub Actions sets GITHUB_SERVER_URL too: it is no Forgejo server.
        assert_eq!(server(&env(&[("GITHUB_SERVER_URL", "https://github.com")]), None), None);
        assert_eq!(server(&env(&[]), Some("http://git.example.com")), None, "https only");
        assert_eq!(api("https://codeberg.org"), "https://codeberg.org/api/v1");
    }

    #[test]
    fn the_actions_token_goes_only_to_the_actions_server() {
        let e = env(&ACTIONS);
        let t = token(&e, None, "https://codeberg.org").unwrap();
        assert_eq!((t.secret(), t.var.as_str()), ("actions-token", "GITHUB_TOKEN"));
        assert!(token(&e, None, "https://git.example.com").is_none(), "another server gets no Actions token");
        assert!(token(&e, Some("GITHUB_TOKEN"), "https://git.example.com").is_none());
        let mut vars = ACTIONS.to_vec();
        vars.push(("GITEA_TOKEN", "gitea"));
        assert_eq!(token(&env(&vars), None, "https://git.example.com").unwrap().secret(), "gitea");
        vars.push(("FORGEJO_TOKEN", "forgejo"));
        assert_eq!(token(&env(&vars), None, "https://codeberg.org").unwrap().secret(), "forgejo");
        let mine = env(&[("MY_TOKEN", "m"), ("FORGEJO_TOKEN", "f")]);
        assert_eq!(token(&mine, Some("MY_TOKEN"), "https://x.example").unwrap().secret(), "m");
        assert!(token(&env(&[("GITHUB_TOKEN", "gh")]), None, "https://x.example").is_none(), "GitHub's token");
    }
}
