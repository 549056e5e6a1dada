//! A shipped GitHub workflow's job as a runner takes it, for tests: each `actions/checkout` step
//! made with git from a local origin (its `ref`, `path`, `fetch-depth` and `sparse-checkout`, as
//! actions/checkout v4 fetches a commit), and the `hone/hone` step run through the Action's own
//! `Run hone` script (`action.yml`) with the real binary. `${{ … }}` expressions are looked up in
//! the values the test gives (`a || b` takes the first that is set); one it does not know fails
//! the test, so a workflow the emulation cannot follow is noticed.

use super::repo::git;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The YAML file at `rel` from the crate's root, parsed.
pub fn yaml_file(rel: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every step of every job of workflow `w`, in order.
pub fn job_steps(w: &Value) -> Vec<Value> {
    w["jobs"].as_object().unwrap().values().flat_map(|j| j["steps"].as_array().unwrap().clone()).collect()
}

/// Whether `step` uses the action `what` (`actions/checkout@`, `hone/hone@`).
pub fn uses(step: &Value, what: &str) -> bool {
    step["uses"].as_str().is_some_and(|u| u.starts_with(what))
}

/// One job's runner: its workspace (`github.workspace`), its temp dir (`runner.temp`) and the
/// values of the expressions the workflow uses.
pub struct Runner {
    pub workspace: tempfile::TempDir,
    temp: tempfile::TempDir,
    values: BTreeMap<String, String>,
}

impl Runner {
    /// A runner where each `(expression, value)` of `values` is known.
    pub fn new(values: &[(&str, &str)]) -> Runner {
        let (workspace, temp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut known: BTreeMap<String, String> = values.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        known.insert("github.workspace".into(), workspace.path().display().to_string());
        known.insert("runner.temp".into(), temp.path().display().to_string());
        Runner { workspace, temp, values: known }
    }

    /// `text` with each `${{ … }}` replaced by its value.
    pub fn expand(&self, text: &str) -> String {
        let (mut out, mut rest) = (String::new(), text);
        while let Some(at) = rest.find("${{") {
            out.push_str(&rest[..at]);
            let end = at + rest[at..].find("}}").expect("a closed expression");
            let alternatives: Vec<&str> = rest[at + 3..end].split("||").map(str::trim).collect();
            assert!(
                alternatives.iter().any(|a| self.values.contains_key(*a)),
                "the test does not know `{}` of {text:?}",
                &rest[at..end + 2]
            );
            let value = alternatives.iter().find_map(|a| self.values.get(*a).filter(|v| !v.is_empty()));
            out.push_str(value.map_or("", String::as_str));
            rest = &rest[end + 2..];
        }
        out.push_str(rest);
        out
    }

    /// The runner's temp dir (`runner.temp`).
    pub fn temp(&self) -> &Path {
        self.temp.path()
    }

    /// Where checkout `step` puts the repository.
    pub fn checkout_dir(&self, step: &Value) -> PathBuf {
        self.workspace.path().join(self.expand(step["with"]["path"].as_str().unwrap_or("")))
    }

    /// Do checkout `step` from `origin` as actions/checkout does for a commit: `fetch-depth: 0`
    /// fetches every branch and tag, any other depth (1 by default) only the commit, that deep;
    /// `sparse-checkout` keeps its directories (cone mode); the commit is checked out detached.
    pub fn checkout(&self, step: &Value, origin: &Path) {
        let with = &step["with"];
        let dir = self.checkout_dir(step);
        let sha = self.expand(with["ref"].as_str().expect("the workflow checks out a named commit"));
        let depth = match &with["fetch-depth"] {
            Value::Null => 1,
            Value::Number(n) => n.as_u64().unwrap(),
            other => self.expand(other.as_str().unwrap()).parse().unwrap(),
        };
        std::fs::create_dir_all(&dir).unwrap();
        git(&dir, &["init", "-q"]);
        git(&dir, &["remote", "add", "origin", origin.to_str().unwrap()]);
        if let Some(dirs) = with["sparse-checkout"].as_str() {
            let mut args = vec!["sparse-checkout", "set"];
            args.extend(dirs.lines().map(str::trim).filter(|l| !l.is_empty()));
            git(&dir, &args);
        }
        if depth == 0 {
            let (heads, tags) = ("+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*");
            git(&dir, &["fetch", "-q", "--prune", "--no-recurse-submodules", "origin", heads, tags]);
        } else {
            git(&dir, &["fetch", "-q", "--no-tags", &format!("--depth={depth}"), "origin", &sha]);
        }
        git(&dir, &["checkout", "-q", "--force", "--detach", &sha]);
    }

    /// Run the `hone/hone` step `step` as the Action does: its `with:` over `action.yml`'s
    /// defaults, then the Action's `Run hone` script with bash (`-eo pipefail`), the real hone as
    /// `hone-path`, the runner's variables and `env`.
    pub fn run_hone(&mut self, step: &Value, env: &[(&str, &str)]) -> std::process::Output {
        let action = yaml_file("action.yml");
        for (name, spec) in action["inputs"].as_object().unwrap() {
            let given = step["with"][name].as_str().or(spec["default"].as_str()).unwrap_or("");
            let value = self.expand(given);
            self.values.insert(format!("inputs.{name}"), value);
        }
        self.values.insert("inputs.hone-path".into(), env!("CARGO_BIN_EXE_hone").into());
        for unset in ["steps.download.outputs.bin", "steps.build.outputs.bin"] {
            self.values.insert(unset.into(), String::new());
        }
        let steps = action["runs"]["steps"].as_array().unwrap();
        let run = steps.iter().find(|s| s["id"] == "run").expect("the Action's `Run hone` step");
        let step_env: Vec<(String, String)> = run["env"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), self.expand(v.as_str().unwrap())))
            .collect();
        let temp = self.temp.path();
        std::fs::create_dir_all(temp.join("home")).unwrap();
        std::process::Command::new("bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", run["run"].as_str().unwrap()])
            .current_dir(self.workspace.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", temp.join("home"))
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_WORKSPACE", self.workspace.path())
            .env("RUNNER_TEMP", temp)
            .env("GITHUB_OUTPUT", temp.join("output"))
            .env("GITHUB_STEP_SUMMARY", temp.join("summary.md"))
            .envs(step_env)
            .envs(env.iter().copied())
            .output()
            .unwrap()
    }
}

/// A step output's value in a `GITHUB_OUTPUT` file (`name<<DELIMITER` … `DELIMITER`).
pub fn output_value(file: &str, name: &str) -> String {
    let mut lines = file.lines();
    while let Some(l) = lines.next() {
        if let Some(delim) = l.strip_prefix(&format!("{name}<<")) {
            return lines.take_while(|x| *x != delim).collect::<Vec<_>>().join("\n");
        }
    }
    panic!("no output `{name}` in {file}")
}
