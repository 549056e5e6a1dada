//! What a run gets from outside, read once at the edge (`main`): the process environment
//! (`RunEnv`: a CI runner's Actions protocol or not, the repository, the event, the variables
//! that hold keys and tokens). Nothing below `main` reads `std::env` for these.

use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, Default)]
pub struct RunEnv {
    /// Running as a GitHub Actions step (`GITHUB_ACTIONS=true`).
    pub actions: bool,
    /// `GITHUB_REPOSITORY` (`owner/repo`).
    pub actions_repository: Option<String>,
    pub actions_event_name: Option<String>,
    pub actions_event_path: Option<PathBuf>,
    pub actions_output: Option<PathBuf>,
    pub actions_step_summary: Option<PathBuf>,
    /// Every variable, for those a spec or policy names (keys, tokens, the commands' pass list).
    vars: BTreeMap<String, String>,
}

/// The variables that name a file of credentials for hone's own clients: the model's cloud
/// credentials, and the GitHub App's private key (`forge::app`).
pub const CREDENTIAL_FILES: [&str; 7] = [
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "GITHUB_APP_PRIVATE_KEY_FILE",
];

/// The variables that name a directory of a tool's credentials: gcloud's (also read by hone's
/// Vertex client), the Azure CLI's, Docker's and gh's.
pub const CREDENTIAL_DIRS: [&str; 4] = ["CLOUDSDK_CONFIG", "AZURE_CONFIG_DIR", "DOCKER_CONFIG", "GH_CONFIG_DIR"];

/// The variable that names kubectl's config files, a colon-separated list.
pub const KUBECONFIG: &str = "KUBECONFIG";

/// What a credential place the environment names is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    File,
    Dir,
}

/// A credential place the environment names: the variable, the path as named (absolute, made
/// so from where hone runs, `..` taken lexically, links not resolved) and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialPlace {
    pub var: &'static str,
    pub path: PathBuf,
    pub kind: Place,
}

impl RunEnv {
    /// The environment of this process.
    pub fn from_process() -> RunEnv {
        RunEnv::from_vars(std::env::vars().collect())
    }

    /// An environment made of `vars` (tests build one to their liking).
    pub fn from_vars(vars: BTreeMap<String, String>) -> RunEnv {
        let get = |k: &str| vars.get(k).filter(|v| !v.trim().is_empty()).cloned();
        RunEnv {
            actions: vars.get("GITHUB_ACTIONS").is_some_and(|v| v == "true"),
            actions_repository: get("GITHUB_REPOSITORY"),
            actions_event_name: get("GITHUB_EVENT_NAME"),
            actions_event_path: get("GITHUB_EVENT_PATH").map(PathBuf::from),
            actions_output: get("GITHUB_OUTPUT").map(PathBuf::from),
            actions_step_summary: get("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            vars,
        }
    }

    /// The value of `name`, when it is set and not blank.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str).filter(|v| !v.trim().is_empty())
    }

    /// Every variable, by name.
    pub fn vars(&self) -> impl Iterator<Item = (&String, &String)> {
        self.vars.iter()
    }

    /// Every credential place the environment names (`CREDENTIAL_FILES`, `CREDENTIAL_DIRS`, each
    /// file of `KUBECONFIG`), whether or not it exists, sorted by path.
    pub fn credential_places(&self) -> Vec<CredentialPlace> {
        let cwd = std::env::current_dir().unwrap_or_default();
        let at = |p: &str| crate::safe_fs::lexical(&cwd.join(p.trim_end_matches('/')));
        let mut out = Vec::new();
        for var in CREDENTIAL_FILES {
            out.extend(self.var(var).map(|p| CredentialPlace { var, path: at(p), kind: Place::File }));
        }
        for var in CREDENTIAL_DIRS {
            out.extend(self.var(var).map(|p| CredentialPlace { var, path: at(p), kind: Place::Dir }));
        }
        let kube = self.var(KUBECONFIG).unwrap_or_default().split(':').filter(|p| !p.trim().is_empty());
        out.extend(kube.map(|p| CredentialPlace { var: KUBECONFIG, path: at(p), kind: Place::File }));
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out.dedup_by(|a, b| a.path == b.path);
        out
    }

    /// The home directory, when it is an absolute path.
    pub fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from).filter(|h| h.is_absolute())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_values_are_unset_and_defaults_apply() {
        let env = RunEnv::from_vars(BTreeMap::from([
            ("GITHUB_ACTIONS".into(), "true".into()),
            ("GITHUB_REPOSITORY".into(), " ".into()),
            ("HOME".into(), "relative".into()),
            ("TOKEN".into(), "t".into()),
        ]));
        assert!(env.actions);
        assert_eq!(env.actions_repository, None);
        assert_eq!(env.home(), None);
        assert_eq!(env.var("TOKEN"), Some("t"));
    }

    #[test]
    fn credential_places_are_the_named_files_dirs_and_kubeconfig_list_as_named() {
        let env = RunEnv::from_vars(BTreeMap::from([
            ("GOOGLE_APPLICATION_CREDENTIALS".into(), "/w/repo/gha-creds-1.json".into()),
            ("CLOUDSDK_CONFIG".into(), "/runner/_temp/gcloud".into()),
            ("AZURE_CONFIG_DIR".into(), "/x/azure/".into()),
            ("DOCKER_CONFIG".into(), "/x/docker".into()),
            ("GH_CONFIG_DIR".into(), " ".into()),
            ("KUBECONFIG".into(), "/k/a.yaml::/k/../k/b.yaml:".into()),
        ]));
        let got: Vec<(String, Place)> =
            env.credential_places().into_iter().map(|p| (p.path.display().to_string(), p.kind)).collect();
        let want = [
            ("/k/a.yaml", Place::File),
            ("/k/b.yaml", Place::File),
            ("/runner/_temp/gcloud", Place::Dir),
            ("/w/repo/gha-creds-1.json", Place::File),
            ("/x/azure", Place::Dir),
            ("/x/docker", Place::Dir),
        ];
        assert_eq!(got, want.map(|(p, k)| (p.to_string(), k)));
        let relative = RunEnv::from_vars(BTreeMap::from([("DOCKER_CONFIG".into(), "rel/docker".into())]));
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(relative.credential_places()[0].path, cwd.join("rel/docker"), "relative to where hone runs");
    }
}
