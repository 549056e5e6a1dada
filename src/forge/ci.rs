//! Which CI system runs hone, from its own variables: its name, the forge behind it, the
//! repository, the pipeline and the run (what telemetry's resource names, so a dashboard can
//! group by them). Pure: a `RunEnv` in, the answer out.

use crate::env::RunEnv;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ci {
    /// `github_actions`, `forgejo_actions`, `gitlab_ci`.
    pub system: &'static str,
    /// The forge, as OpenTelemetry's `vcs.provider.name` names it (`gitea` for Forgejo, which
    /// speaks Gitea's API).
    pub forge: &'static str,
    /// `owner/name` (GitLab: the project's path).
    pub repository: Option<String>,
    /// The workflow or pipeline's name.
    pub pipeline: Option<String>,
    pub run_id: Option<String>,
    pub run_url: Option<String>,
}

/// The CI system of `env`, if hone runs in one it knows.
pub fn of(env: &RunEnv) -> Option<Ci> {
    let var = |k: &str| env.var(k).map(str::to_string);
    if super::place::in_gitlab_ci(env) {
        return Some(Ci {
            system: "gitlab_ci",
            forge: "gitlab",
            repository: var("CI_PROJECT_PATH"),
            pipeline: var("CI_PIPELINE_NAME").or_else(|| var("CI_JOB_NAME")),
            run_id: var("CI_PIPELINE_ID"),
            run_url: var("CI_PIPELINE_URL"),
        });
    }
    if env.var("GITHUB_ACTIONS") != Some("true") {
        return None;
    }
    let forgejo = super::forgejo::place::in_actions(env);
    let (repo, run) = (var("GITHUB_REPOSITORY"), var("GITHUB_RUN_ID"));
    let run_url = match (var("GITHUB_SERVER_URL"), &repo, &run) {
        (Some(server), Some(repo), Some(run)) => {
            Some(format!("{}/{repo}/actions/runs/{run}", server.trim_end_matches('/')))
        }
        _ => None,
    };
    Some(Ci {
        system: if forgejo { "forgejo_actions" } else { "github_actions" },
        forge: if forgejo { "gitea" } else { "github" },
        repository: repo,
        pipeline: var("GITHUB_WORKFLOW"),
        run_id: run,
        run_url,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> RunEnv {
        RunEnv::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn each_ci_is_known_by_its_variables() {
        assert_eq!(of(&env(&[])), None);
        let gh = of(&env(&[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_REPOSITORY", "o/r"),
            ("GITHUB_RUN_ID", "7"),
            ("GITHUB_SERVER_URL", "https://github.com/"),
        ]))
        .unwrap();
        assert_eq!((gh.system, gh.forge, gh.repository.as_deref()), ("github_actions", "github", Some("o/r")));
        assert_eq!(gh.run_url.as_deref(), Some("https://github.com/o/r/actions/runs/7"));
        let fj = of(&env(&[("GITHUB_ACTIONS", "true"), ("FORGEJO_ACTIONS", "true")])).unwrap();
        assert_eq!((fj.system, fj.forge), ("forgejo_actions", "gitea"));
        let gl = of(&env(&[("GITLAB_CI", "true"), ("CI_PROJECT_PATH", "g/p"), ("CI_PIPELINE_ID", "9")])).unwrap();
        assert_eq!((gl.system, gl.repository.as_deref(), gl.run_id.as_deref()), ("gitlab_ci", Some("g/p"), Some("9")));
    }
}
