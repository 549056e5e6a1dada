//! The least permissions an installation token is minted with, decided by the job: what it
//! pushes, whether it opens a pull request, whether it labels one, whether it fixes one in place.

use crate::spec::{Job, PrEnabled};
use serde_json::{Map, Value};
use std::fmt;

/// Repository permissions, each `read` or `write` (absent: none). Metadata read, which every
/// installation token has, is not asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permissions {
    /// `(name, level)`, sorted by name.
    grants: Vec<(&'static str, &'static str)>,
}

impl Permissions {
    /// What `job` needs: `contents: write` to push its branch (`read` to clone and fetch
    /// otherwise); `pull_requests: write` to open, update or close its PR, request reviewers and
    /// comment in autofix mode (`read` for autofix without a PR step, which only reads the PR);
    /// `issues: write` only when it adds labels (GitHub's labels live on the Issues endpoints).
    /// Never `workflows`: a change to `.github/workflows/` is refused by GitHub at the push, so
    /// an App token cannot make hone rewrite the repository's CI.
    pub fn for_job(job: &Job, autofix: bool) -> Permissions {
        let pr = job.pr.enabled != PrEnabled::No;
        let mut grants = vec![("contents", if job.git.push { "write" } else { "read" })];
        if pr {
            grants.push(("pull_requests", "write"));
        } else if autofix {
            grants.push(("pull_requests", "read"));
        }
        if pr && !job.pr.labels.is_empty() {
            grants.push(("issues", "write"));
        }
        grants.sort();
        Permissions { grants }
    }

    /// The `permissions` object of the token request.
    pub fn json(&self) -> Value {
        Value::Object(self.grants.iter().map(|(k, v)| (k.to_string(), Value::from(*v))).collect::<Map<_, _>>())
    }
}

impl fmt::Display for Permissions {
    /// `contents: write, pull_requests: write`, as the App's settings name them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: Vec<String> = self.grants.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        f.write_str(&shown.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use super::super::test_job as job;

    #[test]
    fn the_least_the_job_needs() {
        let cases = [
            ("", false, json!({"contents": "write", "pull_requests": "write"})),
            (
                "pr: { labels: [bot] }\n",
                false,
                json!({"contents": "write", "pull_requests": "write", "issues": "write"}),
            ),
            ("pr: { enabled: false, labels: [bot] }\n", false, json!({"contents": "write"})),
            ("pr: { enabled: false }\n", true, json!({"contents": "write", "pull_requests": "read"})),
            ("git: { push: false }\npr: { enabled: false }\n", false, json!({"contents": "read"})),
        ];
        for (yaml, autofix, want) in cases {
            assert_eq!(Permissions::for_job(&job(yaml), autofix).json(), want, "{yaml}");
        }
        let p = Permissions::for_job(&job("pr: { labels: [bot] }\n"), false);
        assert_eq!(p.to_string(), "contents: write, issues: write, pull_requests: write");
    }
}
