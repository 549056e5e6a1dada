//! Per-repository settings for `hone eval run` (`--repos FILE`), for task files from elsewhere:
//! SWE-bench's name a repository `owner/name`, and each repository needs its own setup and test
//! command. For each `repo` a task names: where it is (`source`, a local path or a URL), the
//! setup commands its tasks' trees need (in place of the job's `setup`), and the command that
//! runs its tests (in place of the `run` of the job's check with `junit:`; `junit` its report).

use crate::error::{Code, HoneError};
use crate::spec::yaml;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// How long one setup command from the file may run.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(30 * 60);

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    version: Option<u32>,
    repos: Option<BTreeMap<String, Repo>>,
}

/// One repository's settings.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Repo {
    /// Where the repository is: a local path (relative to the file) or a URL.
    pub source: Option<String>,
    /// Shell commands run, in order, in every tree of its tasks before their tests.
    pub setup: Option<Vec<String>>,
    /// The command that runs its tests (it may name `{test_files}` or `{test_dirs}`).
    pub test: Option<String>,
    /// The JUnit report that command writes (relative to the work tree).
    pub junit: Option<String>,
}

impl Repo {
    /// The setup commands as the job's are.
    pub fn setup_commands(&self) -> Option<Vec<crate::spec::CommandSpec>> {
        self.setup.as_ref().map(|list| {
            list.iter()
                .enumerate()
                .map(|(i, run)| crate::spec::CommandSpec {
                    name: format!("setup-{}", i + 1),
                    run: run.clone(),
                    timeout: SETUP_TIMEOUT,
                })
                .collect()
        })
    }
}

/// Every repository's settings, by the name tasks give it.
#[derive(Debug, Default, Clone)]
pub struct Repos(pub BTreeMap<String, Repo>);

impl Repos {
    /// The settings for a task's `repo`, if the file has any.
    pub fn get(&self, repo: &str) -> Option<&Repo> {
        self.0.get(repo)
    }
}

/// Read the file at `path`; every problem says where it is.
pub fn load(path: &Path) -> Result<Repos, HoneError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        let d = crate::diag::Diagnostic::unreadable(&file, "repositories file", &e, "name it with --repos FILE");
        HoneError::located(Code::Spec, vec![d])
    })?;
    let loaded = yaml::load::<RawFile>(&file, &text).map_err(|d| HoneError::located(Code::Spec, vec![d]))?;
    let (map, mut errors) = (loaded.map, loaded.errors);
    if loaded.value.version != Some(1) && !loaded.removed.contains("version") {
        errors.push(map.at_key("", "`version: 1` is required at the top level", Some("add `version: 1`".into())));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut repos = loaded.value.repos.unwrap_or_default();
    for (name, r) in repos.iter_mut() {
        let at = yaml::join("repos", name);
        if r.test.as_deref().is_some_and(|t| t.trim().is_empty()) {
            errors.push(map.at_value(&yaml::join(&at, "test"), "an empty test command", None));
        }
        // A local source is relative to the file, as every path in hone's files is.
        if let Some(s) = r.source.as_mut()
            && !is_url(s)
            && Path::new(s.as_str()).is_relative()
        {
            *s = dir.join(s.as_str()).display().to_string();
        }
    }
    if !errors.is_empty() {
        return Err(HoneError::located(Code::Spec, errors));
    }
    Ok(Repos(repos))
}

/// Whether `s` names a remote repository rather than a local path: a URL with a scheme git
/// fetches over (`https`, `http`, `ssh`, `git`) or scp's `user@host:path`.
pub fn is_url(s: &str) -> bool {
    let scheme = ["https://", "http://", "ssh://", "git://"].iter().any(|p| s.starts_with(p));
    let scp = s.split_once(':').is_some_and(|(host, _)| host.contains('@') && !host.contains('/'));
    scheme || scp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_repositories_reads_and_its_mistakes_say_where() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("repos.yaml");
        let text = "version: 1\nrepos:\n  acme/alpha:\n    source: mirrors/alpha\n    setup: [\"pip install -e .\"]\n    test: \"pytest {test_files}\"\n    junit: j.xml\n  acme/beta:\n    source: https://git.example/beta.git\n";
        std::fs::write(&p, text).unwrap();
        let r = load(&p).unwrap();
        let alpha = r.get("acme/alpha").unwrap();
        assert_eq!(alpha.source.as_deref(), Some(dir.path().join("mirrors/alpha").to_str().unwrap()));
        assert_eq!(alpha.setup_commands().unwrap()[0].run, "pip install -e .");
        assert_eq!(r.get("acme/beta").unwrap().source.as_deref(), Some("https://git.example/beta.git"));
        std::fs::write(&p, "version: 1\nrepos:\n  a/b:\n    sorce: x\n").unwrap();
        let e = load(&p).unwrap_err();
        assert!(e.message.contains("repos.yaml:4:5"), "{}", e.message);
        assert!(e.message.contains("sorce"), "{}", e.message);
    }

    #[test]
    fn urls_are_told_from_paths() {
        for u in ["https://h/x.git", "http://h/x", "ssh://git@h/x", "git@github.com:o/r.git", "git://h/x"] {
            assert!(is_url(u), "{u}");
        }
        for p in ["/srv/x", "mirrors/x", "./a:b", "owner/name"] {
            assert!(!is_url(p), "{p}");
        }
    }
}
