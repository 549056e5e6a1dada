//! `hone validate FILE`: tell a job spec, a fleet file and a policy file apart by their keys, and
//! check each as what it is, listing every error with its position.

use crate::error::Code;
use crate::policy::Policy;
use crate::spec::{Diagnostic, SpecError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a YAML file is, judged by its top-level keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Job,
    Fleet,
    Policy,
}

const JOB_KEYS: &[&str] = &["task", "model", "verify", "repo", "git", "pr", "plan", "report", "tools", "context"];
const POLICY_KEYS: &[&str] = &["commands", "paths", "network", "sandbox", "env", "secrets", "mcp"];

/// The kind of file `text` is; a job spec when nothing says otherwise (its errors will explain).
pub fn kind(text: &str) -> Kind {
    let keys: Vec<String> = serde_saphyr::from_str::<BTreeMap<String, serde::de::IgnoredAny>>(text)
        .map(|m| m.into_keys().collect())
        .unwrap_or_default();
    let has = |set: &[&str]| keys.iter().any(|k| set.contains(&k.as_str()));
    if keys.iter().any(|k| k == "repos") || (keys.iter().any(|k| k == "job") && !has(JOB_KEYS)) {
        Kind::Fleet
    } else if !has(JOB_KEYS) && has(POLICY_KEYS) {
        Kind::Policy
    } else {
        Kind::Job
    }
}

/// Why a file is not valid. `render` writes every problem for stderr, as `hone run` would.
#[derive(Debug, thiserror::Error)]
pub enum Invalid {
    #[error("cannot read the file: {source}")]
    Unreadable { file: PathBuf, source: std::io::Error },
    /// The job spec, as a run reports it.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The problems in the file given, then how many.
    #[error("{} error(s) found", diags.len())]
    Found { code: Code, diags: Vec<Diagnostic> },
    /// The problems in the policy file a job spec names, as a run reports them (not counted).
    #[error("{} error(s) in the job's policy file", .0.len())]
    JobPolicy(Vec<Diagnostic>),
    /// The job spec a fleet file names is not valid.
    #[error("{inner} (in the job spec named by {})", fleet.display())]
    InFleet { fleet: PathBuf, inner: Box<Invalid> },
}

impl Invalid {
    pub fn code(&self) -> Code {
        match self {
            Invalid::Unreadable { .. } | Invalid::Spec(SpecError::Read { .. }) => Code::Io,
            Invalid::Spec(SpecError::Invalid(_)) => Code::Spec,
            Invalid::Found { code, .. } => *code,
            Invalid::JobPolicy(_) => Code::Policy,
            Invalid::InFleet { inner, .. } => inner.code(),
        }
    }

    /// Every problem, for stderr: each at its position, with its code.
    pub fn render(&self) -> String {
        let listed =
            |diags: &[Diagnostic]| diags.iter().map(|d| d.render(self.code().as_str())).collect::<Vec<_>>().join("\n");
        match self {
            Invalid::Unreadable { file, .. } => format!("{}: error[{}]: {self}\n", file.display(), self.code()),
            Invalid::Spec(e) => e.render(),
            Invalid::Found { diags, .. } => {
                let mut s = listed(diags);
                if !s.ends_with('\n') {
                    s.push('\n');
                }
                s + &format!("{} error(s) found", diags.len())
            }
            Invalid::JobPolicy(diags) => listed(diags),
            Invalid::InFleet { fleet, inner } => {
                format!("{}\n(in the job spec named by {})", inner.render(), fleet.display())
            }
        }
    }
}

/// Check `file`: `Ok(line for stdout)` when valid, else why not (`Invalid::render` for stderr).
pub fn validate(file: &Path) -> Result<String, Invalid> {
    let text =
        std::fs::read_to_string(file).map_err(|source| Invalid::Unreadable { file: file.to_path_buf(), source })?;
    match kind(&text) {
        Kind::Job => job(file),
        Kind::Fleet => fleet(file),
        Kind::Policy => policy(file),
    }
}

fn describe(p: &Policy) -> String {
    let source =
        p.source.as_ref().map_or("the built-in default policy".to_string(), |s| format!("policy {}", s.display()));
    let mcp = if p.mcp_allow.is_empty() {
        "no MCP tool".to_string()
    } else {
        format!("MCP tools: {} allowed and {} denied pattern(s)", p.mcp_allow.len(), p.mcp_deny.len())
    };
    format!("{source}: network {}, sandbox {}, {mcp}", p.network.mode(), if p.sandbox { "on" } else { "off" })
}

fn job(file: &Path) -> Result<String, Invalid> {
    let (spec, note) = match crate::spec::load(file) {
        Ok(s) => (s, ""),
        // A spec whose only problem is a missing task is valid for runs that give `--task`
        // (the issue-to-PR workflow does).
        Err(crate::spec::SpecError::Invalid(d)) if d.iter().all(|d| d.path == "task") && !d.is_empty() => {
            let o = crate::spec::Overrides { task: Some("(from --task)".into()), ..Default::default() };
            let s = crate::spec::load_with(file, &o)?;
            (s, "; it has no `task:`, so every run must give one with --task")
        }
        Err(crate::spec::SpecError::Invalid(diags)) => return Err(Invalid::Found { code: Code::Spec, diags }),
        Err(e) => return Err(e.into()),
    };
    // The policy a run loads, as the run loads it.
    let p = crate::run::intake::load_policy(&spec).map_err(|e| Invalid::JobPolicy(e.located))?;
    Ok(format!(
        "{}: valid job spec (job `{}`, {} check(s), {} MCP server(s), branch `{}`; {}){note}",
        file.display(),
        spec.name,
        spec.verify.len(),
        spec.mcp.len(),
        spec.git.branch,
        describe(&p)
    ))
}

fn fleet(file: &Path) -> Result<String, Invalid> {
    let f = crate::fleet::spec::load(file).map_err(|diags| Invalid::Found { code: Code::Spec, diags })?;
    let inner = job(&f.job).map_err(|e| Invalid::InFleet { fleet: file.to_path_buf(), inner: Box::new(e) })?;
    let queries = match f.queries.len() {
        0 => String::new(),
        1 => " and a query".into(),
        n => format!(" and {n} queries"),
    };
    Ok(format!(
        "{}: valid fleet file ({} repositories{queries}, concurrency {})\n{inner}",
        file.display(),
        f.targets.len(),
        f.concurrency
    ))
}

fn policy(file: &Path) -> Result<String, Invalid> {
    let p = crate::policy::load(file).map_err(|diags| Invalid::Found { code: Code::Policy, diags })?;
    Ok(format!(
        "{}: valid policy (commands: default {}, {} allowed and {} denied pattern(s); examples hold; {})",
        file.display(),
        if p.default_allow { "allow" } else { "deny" },
        p.allow.len(),
        p.deny.len(),
        describe(&p)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_told_apart_by_their_keys() {
        assert_eq!(kind("version: 1\ntask: t\nmodel: {provider: script}\n"), Kind::Job);
        assert_eq!(kind("version: 1\njob: job.yaml\nrepos:\n  - url: x\n"), Kind::Fleet);
        assert_eq!(kind("version: 1\njob: job.yaml\n"), Kind::Fleet);
        assert_eq!(kind("version: 1\ncommands: {default: deny}\n"), Kind::Policy);
        assert_eq!(kind("version: 1\nnetwork: false\nlimits: {max_files_changed: 3}\n"), Kind::Policy);
        assert_eq!(kind("version: 1\nlimits: {max_turns: 3}\n"), Kind::Job, "ambiguous: a job spec explains itself");
        assert_eq!(kind("not: [valid"), Kind::Job);
    }

    fn diag(file: &str) -> Diagnostic {
        Diagnostic {
            file: file.into(),
            line: 2,
            col: 3,
            path: "a".into(),
            message: "bad".into(),
            help: None,
            source_line: None,
            width: 1,
        }
    }

    #[test]
    fn each_problem_has_its_code_and_renders_with_it() {
        let unreadable = validate(Path::new("/nonexistent/hone.yaml")).unwrap_err();
        assert_eq!(unreadable.code(), Code::Io);
        let r = unreadable.render();
        assert!(
            r.starts_with("/nonexistent/hone.yaml: error[E_IO]: cannot read the file: ") && r.ends_with('\n'),
            "{r}"
        );
        let found = Invalid::Found { code: Code::Policy, diags: vec![diag("p.yaml"), diag("p.yaml")] };
        assert_eq!(found.code(), Code::Policy);
        let line = "p.yaml:2:3: error[E_POLICY] at `a`: bad\n";
        assert_eq!(found.render(), format!("{line}\n{line}2 error(s) found"));
        let policy = Invalid::JobPolicy(vec![diag("p.yaml")]);
        assert_eq!((policy.code(), policy.render()), (Code::Policy, line.to_string()));
        let job = Invalid::Spec(SpecError::Invalid(vec![diag("job.yaml")]));
        let in_fleet = Invalid::InFleet { fleet: "fleet.yaml".into(), inner: Box::new(job) };
        assert_eq!(in_fleet.code(), Code::Spec);
        let want = "job.yaml:2:3: error[E_SPEC] at `a`: bad\n\n(in the job spec named by fleet.yaml)";
        assert_eq!(in_fleet.render(), want);
        let read = SpecError::Read { path: "job.yaml".into(), source: std::io::Error::other("gone") };
        let in_fleet = Invalid::InFleet { fleet: "fleet.yaml".into(), inner: Box::new(Invalid::Spec(read)) };
        assert_eq!(in_fleet.code(), Code::Io);
        for e in [unreadable, found, policy, in_fleet] {
            assert!(!e.to_string().contains("error["), "rendered in the message: {e}");
        }
    }
}
