//! What a run gets from outside, read once at the edge (`main`): the process environment
//! (`RunEnv`: GitHub Actions or not, the repository, the API URL, the event, the variables
//! that hold keys and tokens) and what the runs of one process share (`Shared`: one queue for
//! the forges' mutating requests, an optional cap on model requests). Nothing below `main` reads
//! `std::env` for these.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{Mutex, Semaphore};
use tokio::time::Instant;

pub const DEFAULT_GITHUB_API: &str = "https://api.github.com";

#[derive(Debug, Clone, Default)]
pub struct RunEnv {
    /// Running as a GitHub Actions step (`GITHUB_ACTIONS=true`).
    pub actions: bool,
    /// `GITHUB_REPOSITORY` (`owner/repo`).
    pub github_repository: Option<String>,
    /// `GITHUB_API_URL`, else api.github.com.
    pub github_api_url: String,
    pub github_event_name: Option<String>,
    pub github_event_path: Option<PathBuf>,
    pub github_output: Option<PathBuf>,
    pub github_step_summary: Option<PathBuf>,
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
            github_repository: get("GITHUB_REPOSITORY"),
            github_api_url: get("GITHUB_API_URL").unwrap_or_else(|| DEFAULT_GITHUB_API.into()),
            github_event_name: get("GITHUB_EVENT_NAME"),
            github_event_path: get("GITHUB_EVENT_PATH").map(PathBuf::from),
            github_output: get("GITHUB_OUTPUT").map(PathBuf::from),
            github_step_summary: get("GITHUB_STEP_SUMMARY").map(PathBuf::from),
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

    /// The files of credentials the environment names (`CREDENTIAL_FILES`) that exist, by their
    /// real paths: for hone's own clients only, hidden from every command and tool.
    pub fn credential_files(&self) -> Vec<PathBuf> {
        let cwd = std::env::current_dir().unwrap_or_default();
        let mut out: Vec<PathBuf> = CREDENTIAL_FILES
            .iter()
            .filter_map(|var| self.var(var))
            .filter_map(|p| cwd.join(p).canonicalize().ok())
            .filter(|p| p.is_file())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The home directory, when it is an absolute path.
    pub fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from).filter(|h| h.is_absolute())
    }
}

/// What the runs of one process share.
#[derive(Debug, Clone, Default)]
pub struct Shared {
    /// At most this many model requests at once (a fleet's `model_concurrency`); none: no cap.
    pub model_slots: Option<Arc<Semaphore>>,
    /// The forges' mutating requests (GitHub's and GitLab's) go one at a time, at least a second
    /// apart (GitHub's secondary rate limits): the time the last one went out (`forge::pace`).
    pub forge_queue: Arc<Mutex<Option<Instant>>>,
    /// A GitHub App's installations (one per owner), tokens (one per repository) and bot
    /// identity, minted once for every run of the process.
    pub github_app: crate::forge::app::Cache,
}

impl Shared {
    /// Shared state with at most `n` model requests at once.
    pub fn with_model_limit(n: usize) -> Shared {
        Shared { model_slots: Some(Arc::new(Semaphore::new(n.max(1)))), ..Default::default() }
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
        assert_eq!(env.github_repository, None);
        assert_eq!(env.github_api_url, DEFAULT_GITHUB_API);
        assert_eq!(env.home(), None);
        assert_eq!(env.var("TOKEN"), Some("t"));
    }
}
