//! Where a run's change goes: the forge (GitHub or GitLab), its server and REST API, the
//! repository's path there, and the token for it. The servers come from the trusted environment
//! and the job spec only (`GITHUB_SERVER_URL`, `CI_SERVER_URL`, `forge.url`); a remote's
//! URL only chooses among them and names the repository's path, so it cannot send the token
//! anywhere else (`credential.rs` holds git to the server).

use super::credential::{Forge, Token};
use super::github::api::ApiUnknown;
use crate::env::RunEnv;
use crate::forge::Kind;
use crate::spec::forge::ForgeSpec;

/// GitLab's SaaS server, the default GitLab.
pub const GITLAB_COM: &str = "https://gitlab.com";

/// The git user name GitHub takes a token with.
pub const GITHUB_USER: &str = "x-access-token";
/// The git user name for GitLab's access tokens (GitLab ignores it; `oauth2` is customary).
pub const GITLAB_USER: &str = "oauth2";
/// The git user name GitLab requires with `CI_JOB_TOKEN`.
pub const GITLAB_JOB_USER: &str = "gitlab-ci-token";

/// GitLab's job token variable.
pub const CI_JOB_TOKEN: &str = "CI_JOB_TOKEN";

/// The forge, its server, API and the repository on it, and the token for them.
#[derive(Debug, Clone)]
pub struct Place {
    pub kind: Kind,
    /// The HTTPS server the token may go to (its git and its API); None: the token goes nowhere.
    pub server: Option<Forge>,
    /// The REST API's base URL, without a trailing `/` (`github_api.rs`, or GitLab's `/api/v4`),
    /// or why none may be used.
    pub api: Result<String, ApiUnknown>,
    /// Why a GitHub repository whose URL is on another host than the server the environment
    /// names gets no request with this token or App (`api()` says it).
    pub elsewhere: Option<ApiUnknown>,
    /// `owner/repo` on GitHub, `group/sub/project` on GitLab.
    pub repo: Option<String>,
    pub token: Option<Token>,
    /// The login the token acts as, when hone knows it without asking (a GitHub App's bot).
    pub login: Option<String>,
    /// Whether `repo` comes from what hone trusts (the environment, a fleet file), not from a
    /// checkout's remote URL: a GitHub App mints tokens only for such a repository.
    pub repo_trusted: bool,
}

/// What a place is decided from.
pub struct Input<'a> {
    pub env: &'a RunEnv,
    pub spec: &'a ForgeSpec,
    /// `git.token_env` when the job names one.
    pub token_env: Option<&'a str>,
    /// The URL of the remote hone pushes to.
    pub remote_url: Option<&'a str>,
    /// Whether the environment's repository (`GITHUB_REPOSITORY`, `CI_PROJECT_PATH`) is this
    /// one's: not for a fleet's targets, whose remotes say.
    pub env_repo: bool,
    /// Whether `remote_url` is trusted input (a fleet file's URL), not a checkout's config.
    pub remote_trusted: bool,
}

impl Place {
    /// Decide the place for one repository. Pure: reads only `input`.
    pub fn decide(input: &Input<'_>) -> Place {
        let env = input.env;
        let host = input.remote_url.and_then(host_of);
        let github = Forge::from_env(env);
        let gitlab = gitlab_server(env, input.spec);
        let gitlab_default = in_gitlab_ci(env) || input.spec.url.is_some();
        // Under Forgejo (Gitea) Actions, the runner's server is Forgejo's, not GitHub's.
        let forgejo_actions = super::forgejo::place::actions_server(env);
        let kind = match (input.spec.kind, &forgejo_actions) {
            (None, Some(f)) if host.is_none() || host_of(f) == host => Kind::Forgejo,
            _ => kind_for(input.spec.kind, host.as_deref(), github.as_ref(), &gitlab, gitlab_default),
        };
        // `git.token_env` is the token of the job's own forge; a fleet's targets on the other
        // forge use that forge's variables, so no token is handed to the other forge.
        let default_kind = input.spec.kind.unwrap_or(match forgejo_actions {
            Some(_) => Kind::Forgejo,
            None if gitlab_default => Kind::Gitlab,
            None => Kind::Github,
        });
        let token_env = input.token_env.filter(|_| kind == default_kind);
        match kind {
            Kind::Github => {
                let from_url = || super::github::owner_repo(None, input.remote_url).map(|(o, r)| format!("{o}/{r}"));
                let from_env = env.actions_repository.clone().filter(|_| input.env_repo);
                let repo_trusted = from_env.is_some() || input.remote_trusted;
                let repo = from_env.or_else(from_url);
                let var = token_env.unwrap_or("GITHUB_TOKEN");
                let token = env.var(var).map(|t| Token::new(t, var, GITHUB_USER));
                let api = super::github::api::of(env);
                let elsewhere = github.as_ref().zip(input.remote_url).and_then(|(s, u)| off_server(s, u));
                Place { kind, server: github, api, elsewhere, repo, token, login: None, repo_trusted }
            }
            Kind::Gitlab => {
                let ci_server = env.var("CI_SERVER_URL").map(|s| s.trim_end_matches('/').to_string());
                let on_ci_server = ci_server.as_deref() == Some(gitlab.as_str());
                let api = match env.var("CI_API_V4_URL") {
                    Some(api) if on_ci_server => Ok(api.trim_end_matches('/').to_string()),
                    _ => Ok(format!("{gitlab}/api/v4")),
                };
                // The project: the remote's path on this very server; else, for a checkout whose
                // remote names no host (a local path), CI's project.
                let repo = match (&host, input.remote_url) {
                    (Some(h), Some(url)) if host_of(&gitlab).as_ref() == Some(h) => repo_path_under(url, &gitlab),
                    (None, _) if input.env_repo && on_ci_server => env.var("CI_PROJECT_PATH").map(str::to_string),
                    _ => None,
                };
                let token = gitlab_token(env, token_env, on_ci_server);
                let repo_trusted = input.remote_trusted || (input.env_repo && on_ci_server);
                let server = Forge::from_url(&gitlab);
                Place { kind, server, api, elsewhere: None, repo, token, login: None, repo_trusted }
            }
            Kind::Forgejo => {
                let server = super::forgejo::place::server(env, input.spec.url.as_deref());
                forgejo_place(input, server.as_deref(), token_env)
            }
        }
    }

    /// The REST API's base URL, or the error that says why the token may go to none.
    pub fn api(&self) -> crate::error::Result<&str> {
        if let Some(e) = &self.elsewhere {
            return Err(e.error());
        }
        self.api.as_deref().map_err(ApiUnknown::error)
    }

    /// The forge's name for messages.
    pub fn forge_name(&self) -> &'static str {
        self.kind.name()
    }

    /// Intake: a GitHub token whose API is unknown (a server's token and github.com's API)
    /// stops the run before any work, naming the variable to set. A repository on another host
    /// than the server is refused only when hone first asks the API (`api`), so a push-only job
    /// there still runs.
    pub fn refuse_unknown_api(&self) -> crate::error::Result<()> {
        if self.kind == Kind::Github && self.token.is_some() {
            self.api.as_ref().map_err(ApiUnknown::error)?;
        }
        Ok(())
    }

    /// The variable (or variables) a token would come from, for messages.
    pub fn token_source(&self, token_env: Option<&str>) -> String {
        match (&self.token, self.kind, token_env) {
            (Some(t), _, _) => t.var.clone(),
            (None, _, Some(v)) => v.to_string(),
            (None, Kind::Github, None) => "GITHUB_TOKEN".into(),
            (None, Kind::Gitlab, None) => format!("GITLAB_TOKEN (or {CI_JOB_TOKEN})"),
            (None, Kind::Forgejo, None) => "FORGEJO_TOKEN (or GITEA_TOKEN)".into(),
        }
    }
}

/// The place on the run's Forgejo server (`server`: the spec's `forge.url`, else Forgejo
/// Actions' own): the repository is the remote's path there, or, for a checkout whose remote names
/// no host, the Actions repository; a remote on another host gets no request and no token
/// (`elsewhere`), so a remote URL never chooses where the token goes.
fn forgejo_place(input: &Input<'_>, server: Option<&str>, token_env: Option<&str>) -> Place {
    use super::forgejo::place as fp;
    let (env, kind) = (input.env, Kind::Forgejo);
    let Some(server) = server else {
        let api = Err(ApiUnknown {
            why: "no Forgejo server is named: hone sends its token to none".into(),
            hint: "set `forge.url` in the job to the Forgejo (or Gitea) server's https:// address (under Forgejo Actions, GITHUB_SERVER_URL names it)".into(),
        });
        return Place {
            kind,
            server: None,
            api,
            elsewhere: None,
            repo: None,
            token: None,
            login: None,
            repo_trusted: false,
        };
    };
    let (host, on) = (input.remote_url.and_then(host_of), host_of(server));
    let actions = fp::on_actions_server(env, server);
    let repo = match (&host, input.remote_url) {
        (Some(h), Some(url)) if on.as_ref() == Some(h) => repo_path_under(url, server),
        (None, _) if input.env_repo && actions => env.actions_repository.clone(),
        _ => None,
    };
    let elsewhere = host.filter(|h| on.as_ref() != Some(h)).map(|h| ApiUnknown {
        why: format!("the repository's URL is on `{h}`, not on `{server}`, the Forgejo server this job's token is for"),
        hint: format!("set `forge.url: https://{h}` in the job to work there"),
    });
    let repo_trusted = input.remote_trusted || (input.env_repo && actions);
    let (token, api) = (fp::token(env, token_env, server), Ok(fp::api(server)));
    Place { kind, server: Forge::from_url(server), api, elsewhere, repo, token, login: None, repo_trusted }
}

/// Why a GitHub repository at `url` gets no request with the environment's token, API or App:
/// its host is not `server`, the GitHub server they are for, and the repository of the same name
/// there is not this one. `None` when the hosts agree (any port; github.com's `www.` and `ssh.`
/// are github.com) or the URL names no host (a local path).
fn off_server(server: &Forge, url: &str) -> Option<ApiUnknown> {
    let name = |a: &str| {
        let a = a.trim_end_matches('.');
        let host = a.rsplit_once(':').filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit())).map_or(a, |(h, _)| h);
        let github = host.strip_prefix("www.").or_else(|| host.strip_prefix("ssh.")).filter(|h| *h == "github.com");
        github.unwrap_or(host).to_string()
    };
    let host = host_of(url)?;
    (name(&host) != name(server.authority())).then(|| ApiUnknown {
        why: format!(
            "the repository's URL is on `{host}`, not on `{}`, the GitHub server this environment's token and API are for",
            server.authority()
        ),
        hint: format!("set GITHUB_SERVER_URL=https://{host} (and GITHUB_API_URL to its API) to work there"),
    })
}

/// The web address of `kind`'s one server for this run (`https://host[/prefix]`): GitHub's from
/// `GITHUB_SERVER_URL` or `GITHUB_API_URL`; GitLab's from `forge.url`, else
/// `CI_SERVER_URL`, else gitlab.com only when neither is set. None when the server named is not
/// a plain HTTPS address: a request about no one repository (a listing) then goes nowhere, never
/// to gitlab.com with the token meant for another server.
pub fn server_url(env: &RunEnv, spec: &ForgeSpec, kind: Kind) -> Option<String> {
    match kind {
        Kind::Github => Forge::from_env(env).map(|f| f.url()),
        Kind::Gitlab => {
            let named = spec.url.is_some() || env.var("CI_SERVER_URL").is_some();
            let server = gitlab_server(env, spec);
            let usable = !named
                || [spec.url.as_deref(), env.var("CI_SERVER_URL")]
                    .into_iter()
                    .flatten()
                    .any(|u| u.trim_end_matches('/') == server.trim_end_matches('/'));
            usable.then_some(server)
        }
        Kind::Forgejo => super::forgejo::place::server(env, spec.url.as_deref()),
    }
}

/// The place for requests about no one repository (listing an organisation or a group) on
/// `kind`'s server, with the token the job would use there; `repo` is None.
pub fn forge_wide(env: &RunEnv, spec: &ForgeSpec, token_env: Option<&str>, kind: Kind) -> Option<Place> {
    if spec.kind.is_some_and(|k| k != kind) {
        return None;
    }
    let server = server_url(env, spec, kind)?;
    let input = Input { env, spec, token_env, remote_url: Some(&server), env_repo: false, remote_trusted: false };
    let place = Place::decide(&input);
    (place.kind == kind).then_some(Place { repo: None, ..place })
}

/// The token for GitLab: the job's own variable if it names one, else `GITLAB_TOKEN` (a
/// project, group or personal access token), else GitLab CI's job token, which belongs to CI's
/// own server only (`on_ci_server`).
fn gitlab_token(env: &RunEnv, token_env: Option<&str>, on_ci_server: bool) -> Option<Token> {
    let job = |var: &str| var == CI_JOB_TOKEN && !on_ci_server;
    if let Some(var) = token_env.filter(|v| !job(v)) {
        let user = if var == CI_JOB_TOKEN { GITLAB_JOB_USER } else { GITLAB_USER };
        return env.var(var).map(|t| Token::new(t, var, user));
    }
    let job_token = || env.var(CI_JOB_TOKEN).filter(|_| on_ci_server);
    env.var("GITLAB_TOKEN")
        .map(|t| Token::new(t, "GITLAB_TOKEN", GITLAB_USER))
        .or_else(|| job_token().map(|t| Token::new(t, CI_JOB_TOKEN, GITLAB_JOB_USER)))
}

/// Running in GitLab CI (`GITLAB_CI=true`).
pub fn in_gitlab_ci(env: &RunEnv) -> bool {
    env.var("GITLAB_CI") == Some("true")
}

/// The one GitLab server of a run: `forge.url`, else `CI_SERVER_URL`, else gitlab.com.
/// Only a plain HTTPS address counts.
fn gitlab_server(env: &RunEnv, spec: &ForgeSpec) -> String {
    let ci = env.var("CI_SERVER_URL").map(|s| s.trim_end_matches('/').to_string());
    [spec.url.clone(), ci]
        .into_iter()
        .flatten()
        .find(|u| crate::spec::forge::is_server_url(u))
        .unwrap_or_else(|| GITLAB_COM.to_string())
}

/// Which forge: the spec's word, else the one whose server is the remote's host, else GitLab
/// when `gitlab_default` (in GitLab CI, or the spec names a GitLab server), else GitHub.
pub fn kind_for(
    spec: Option<Kind>,
    host: Option<&str>,
    github: Option<&Forge>,
    gitlab: &str,
    gitlab_default: bool,
) -> Kind {
    if let Some(k) = spec {
        return k;
    }
    if let Some(h) = host {
        if github.is_some_and(|g| g.authority() == h) || h == "github.com" {
            return Kind::Github;
        }
        if host_of(gitlab).as_deref() == Some(h) {
            return Kind::Gitlab;
        }
    }
    if gitlab_default { Kind::Gitlab } else { Kind::Github }
}

/// The lower-case `host[:port]` of an https, http, ssh or scp-like URL.
pub fn host_of(url: &str) -> Option<String> {
    let rest = ["https://", "http://", "ssh://", "git://"].iter().find_map(|p| url.strip_prefix(p));
    let authority = match rest {
        Some(r) => r.split(['/', '?', '#']).next()?.rsplit('@').next()?.to_string(),
        None => {
            let (login, _) = url.split_once(':').filter(|(l, p)| !l.contains('/') && !p.starts_with("//"))?;
            login.rsplit('@').next()?.to_string()
        }
    };
    let authority = authority.to_ascii_lowercase();
    let authority = authority.strip_suffix(":443").unwrap_or(&authority).to_string();
    (!authority.is_empty()).then_some(authority)
}

/// The repository's path on its server (`group/sub/project`), from an https, ssh or scp-like
/// URL, without `.git`; a relative URL root (`https://h/gitlab/g/p`) is not told apart here.
pub fn repo_path(url: &str) -> Option<String> {
    let shown = super::credential::without_userinfo(url);
    let rest = ["https://", "http://", "ssh://", "git://"].iter().find_map(|p| shown.strip_prefix(p));
    let path = match rest {
        Some(r) => r.split_once('/')?.1.to_string(),
        None => shown.split_once(':').filter(|(l, _)| l.contains('@') && !l.contains('/'))?.1.to_string(),
    };
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let parts: Vec<&str> = path.split('/').collect();
    (parts.len() >= 2 && parts.iter().all(|p| !p.is_empty() && *p != "." && *p != "..")).then(|| parts.join("/"))
}

/// The project path of `url` on `server`, which may live under a path of its own
/// (`https://h/gitlab`): that prefix is not part of the project's path.
fn repo_path_under(url: &str, server: &str) -> Option<String> {
    let path = repo_path(url)?;
    let prefix = repo_path(&format!("{server}/x")).and_then(|p| p.strip_suffix("/x").map(str::to_string));
    match prefix {
        Some(pre) => path.strip_prefix(&format!("{pre}/")).map(str::to_string).filter(|p| p.contains('/')),
        None => Some(path),
    }
}

#[cfg(test)]
#[path = "place_tests.rs"]
mod tests;
