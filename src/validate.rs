//! `hone validate FILE`: tell a job spec, a fleet file and a policy file apart by their keys, and
//! check each as what it is, listing every error with its position.

use crate::agent::intake::load_policy;
use crate::policy::Policy;
use std::collections::BTreeMap;
use std::path::Path;

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

/// Check `file`: `Ok(line for stdout)` when valid, else `Err(every problem, for stderr)`.
pub fn validate(file: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("{}: error[E_IO]: cannot read the file: {e}\n", file.display()))?;
    match kind(&text) {
        Kind::Job => job(file),
        Kind::Fleet => fleet(file),
        Kind::Policy => policy(file),
    }
}

fn render(diags: &[crate::spec::Diagnostic], code: &str) -> String {
    let mut s: String = diags.iter().map(|d| d.render(code)).collect::<Vec<_>>().join("\n");
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s.push_str(&format!("{} error(s) found", diags.len()));
    s
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

fn job(file: &Path) -> Result<String, String> {
    let (spec, note) = match crate::spec::load(file) {
        Ok(s) => (s, ""),
        // A spec whose only problem is a missing task is valid for runs that give `--task`
        // (the issue-to-PR workflow does).
        Err(crate::spec::SpecError::Invalid(d)) if d.iter().all(|d| d.path == "task") && !d.is_empty() => {
            let o = crate::spec::Overrides { task: Some("(from --task)".into()), ..Default::default() };
            let s = crate::spec::load_with(file, &o).map_err(|e| e.render())?;
            (s, "; it has no `task:`, so every run must give one with --task")
        }
        Err(crate::spec::SpecError::Invalid(d)) => return Err(render(&d, "E_SPEC")),
        Err(e) => return Err(e.render()),
    };
    let p = load_policy(&spec).map_err(|e| e.message)?;
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

fn fleet(file: &Path) -> Result<String, String> {
    let f = crate::fleet::spec::load(file).map_err(|d| render(&d, "E_SPEC"))?;
    let inner = job(&f.job).map_err(|e| format!("{e}\n(in the job spec named by {})", file.display()))?;
    Ok(format!(
        "{}: valid fleet file ({} repositories, concurrency {})\n{inner}",
        file.display(),
        f.targets.len(),
        f.concurrency
    ))
}

fn policy(file: &Path) -> Result<String, String> {
    let p = crate::policy::load(file).map_err(|d| render(&d, "E_POLICY"))?;
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
}
