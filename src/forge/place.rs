//! Where a run's change goes: the forge (GitHub or GitLab), its server and REST API, the
//! repository's path there, and the token for it. The servers come from the trusted environment
//! and the job spec only (`GITHUB_SERVER_URL`, `CI_SERVER_URL`, `forge.gitlab_url`); a remote's
//! URL only chooses among them and names the repository's path, so it cannot send the token
//! anywhere else (`credential.rs` holds git to the server).

use super::credential::{Forge, Token};
use crate::env::RunEnv;
use crate::spec::forge::{ForgeKind, ForgeSpec};

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
    pub kind: ForgeKind,
    /// The HTTPS server the token may go to (its git and its API); None: the token goes nowhere.
    pub server: Option<Forge>,
    /// The REST API's base URL, without a trailing `/`: `GITHUB_API_URL`, or GitLab's `/api/v4`.
    pub api: String,
    /// `owner/repo` on GitHub, `group/sub/project` on GitLab.
    pub repo: Option<String>,
    pub token: Option<Token>,
}

/// What a place is decided from.
pub struct Input<'a> {
    pub env: &'a RunEnv,
    pub spec: &'a ForgeSpec,
    /// `git.token_env` when the job names one.
    pub token_env: Option<&'a str>,
    /// The URL of the remote hone pushes to.
    pub remote_url: Option<&'a str>,
    /// The repository's path when known better than the environment says (a fleet's target).
    pub repo: Option<&'a str>,
}

impl Place {
    /// Decide the place for one repository. Pure: reads only `input`.
    pub fn decide(input: &Input<'_>) -> Place {
        let env = input.env;
        let host = input.remote_url.and_then(host_of);
        let github = Forge::from_env(env);
        let gitlabs = gitlab_servers(env, input.spec);
        let gitlab_default = in_gitlab_ci(env) || input.spec.gitlab_url.is_some();
        let kind = kind_for(input.spec.kind, host.as_deref(), github.as_ref(), &gitlabs, gitlab_default);
        let path = input.remote_url.and_then(repo_path);
        match kind {
            ForgeKind::Github => {
                let from_url = || super::github::owner_repo(None, input.remote_url).map(|(o, r)| format!("{o}/{r}"));
                let repo = input.repo.map(last_two).or_else(|| env.github_repository.clone()).or_else(from_url);
                let var = input.token_env.unwrap_or("GITHUB_TOKEN");
                let token = env.var(var).map(|t| Token::new(t, var, GITHUB_USER));
                let api = env.github_api_url.trim_end_matches('/').to_string();
                Place { kind, server: github, api, repo, token }
            }
            ForgeKind::Gitlab => {
                let server = gitlabs.iter().find(|s| host_of(s) == host).or(gitlabs.first()).cloned();
                let ci_server = env.var("CI_SERVER_URL").map(|s| s.trim_end_matches('/').to_string());
                let api = match (env.var("CI_API_V4_URL"), &server) {
                    (Some(api), Some(s)) if ci_server.as_ref() == Some(s) => api.trim_end_matches('/').to_string(),
                    (_, Some(s)) => format!("{s}/api/v4"),
                    (_, None) => format!("{GITLAB_COM}/api/v4"),
                };
                let in_ci_project = server.is_some() && server == ci_server;
                let env_path = env.var("CI_PROJECT_PATH").filter(|_| in_ci_project).map(str::to_string);
                let repo = input.repo.map(str::to_string).or(env_path).or(path);
                let token = gitlab_token(env, input.token_env);
                Place { kind, server: server.as_deref().and_then(Forge::from_url), api, repo, token }
            }
        }
    }

    /// The forge's name for messages.
    pub fn forge_name(&self) -> &'static str {
        match self.kind {
            ForgeKind::Github => "GitHub",
            ForgeKind::Gitlab => "GitLab",
        }
    }

    /// The variable (or variables) a token would come from, for messages.
    pub fn token_source(&self, token_env: Option<&str>) -> String {
        match (&self.token, self.kind, token_env) {
            (Some(t), _, _) => t.var.clone(),
            (None, _, Some(v)) => v.to_string(),
            (None, ForgeKind::Github, None) => "GITHUB_TOKEN".into(),
            (None, ForgeKind::Gitlab, None) => format!("GITLAB_TOKEN (or {CI_JOB_TOKEN})"),
        }
    }
}

/// The token for GitLab: the job's own variable if it names one, else `GITLAB_TOKEN` (a
/// project, group or personal access token), else GitLab CI's job token.
fn gitlab_token(env: &RunEnv, token_env: Option<&str>) -> Option<Token> {
    if let Some(var) = token_env {
        let user = if var == CI_JOB_TOKEN { GITLAB_JOB_USER } else { GITLAB_USER };
        return env.var(var).map(|t| Token::new(t, var, user));
    }
    env.var("GITLAB_TOKEN")
        .map(|t| Token::new(t, "GITLAB_TOKEN", GITLAB_USER))
        .or_else(|| env.var(CI_JOB_TOKEN).map(|t| Token::new(t, CI_JOB_TOKEN, GITLAB_JOB_USER)))
}

/// Running in GitLab CI (`GITLAB_CI=true`).
pub fn in_gitlab_ci(env: &RunEnv) -> bool {
    env.var("GITLAB_CI") == Some("true")
}

/// The GitLab servers hone knows, first the one to use when the remote names none of them:
/// `forge.gitlab_url`, `CI_SERVER_URL`, gitlab.com. Only plain HTTPS addresses count.
fn gitlab_servers(env: &RunEnv, spec: &ForgeSpec) -> Vec<String> {
    let ci = env.var("CI_SERVER_URL").map(|s| s.trim_end_matches('/').to_string());
    let mut out: Vec<String> = [spec.gitlab_url.clone(), ci, Some(GITLAB_COM.to_string())]
        .into_iter()
        .flatten()
        .filter(|u| crate::spec::forge::is_server_url(u))
        .collect();
    out.dedup();
    out
}

/// Which forge: the spec's word, else the one whose server is the remote's host, else GitLab
/// when `gitlab_default` (in GitLab CI, or the spec names a GitLab server), else GitHub.
pub fn kind_for(
    spec: Option<ForgeKind>,
    host: Option<&str>,
    github: Option<&Forge>,
    gitlabs: &[String],
    gitlab_default: bool,
) -> ForgeKind {
    if let Some(k) = spec {
        return k;
    }
    if let Some(h) = host {
        if github.is_some_and(|g| g.authority() == h) || h == "github.com" {
            return ForgeKind::Github;
        }
        if gitlabs.iter().any(|s| host_of(s).as_deref() == Some(h)) {
            return ForgeKind::Gitlab;
        }
    }
    if gitlab_default { ForgeKind::Gitlab } else { ForgeKind::Github }
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

/// The last two segments (`owner/repo`) of a path.
fn last_two(path: &str) -> String {
    let parts: Vec<&str> = path.rsplit('/').take(2).collect();
    match parts.as_slice() {
        [repo, owner] => format!("{owner}/{repo}"),
        _ => path.to_string(),
    }
}

#[cfg(test)]
#[path = "place_tests.rs"]
mod tests;
