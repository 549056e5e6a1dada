//! The policy file: what the model may run, read, write and reach. It replaces every interactive
//! confirmation: what it does not allow is denied with a reason, and the run goes on.

pub mod braces;
pub mod decide;
pub mod describe;
pub mod interpreters;
pub mod mcp;
pub mod network;
mod parser_guard;
mod protect;
pub mod raw;
pub mod rule_error;
pub mod shell;
pub mod shell_error;
pub mod wrappers;

pub use decide::{Access, Decision, decide_command, decide_path, decide_tool_write, read_denied_by};
pub use mcp::decide_mcp;
pub use parser_guard::parsing as parsing_contained;

use crate::spec::{Diagnostic, yaml};
use globset::GlobMatcher;
use raw::{RawPolicy, SandboxMode};
use rule_error::RuleError;
use std::path::{Path, PathBuf};

/// One word of a command pattern.
#[derive(Debug, Clone)]
pub enum PWord {
    /// `*` alone: any number of words (including none).
    Any,
    Literal(String),
    Glob(GlobMatcher),
}

#[derive(Debug, Clone)]
pub struct Pattern {
    /// Where it came from, e.g. `commands.deny[2]`.
    pub key: String,
    pub text: String,
    pub words: Vec<PWord>,
}

#[derive(Debug, Clone)]
pub struct PathRule {
    pub key: String,
    pub glob: String,
    pub matcher: GlobMatcher,
}

#[derive(Debug, Clone)]
pub struct Policy {
    /// The file it was loaded from; `None` for the built-in default.
    pub source: Option<PathBuf>,
    /// SHA-256 (hex) of that file's text as read; `None` for the built-in default.
    pub sha256: Option<String>,
    pub default_allow: bool,
    pub allow: Vec<Pattern>,
    pub deny: Vec<Pattern>,
    pub read_deny: Vec<PathRule>,
    /// Empty means every path (not otherwise denied) is writable.
    pub write_allow: Vec<PathRule>,
    pub write_deny: Vec<PathRule>,
    /// Files (absolute) no command may see wherever they lie: the credentials of hone's model
    /// clients (`hide_file`); every jail masks them.
    pub hidden_files: Vec<PathBuf>,
    /// Extra absolute paths commands may write to under Landlock.
    pub sandbox_writable: Vec<PathBuf>,
    /// Extra absolute host paths the jail shows read-only (a toolchain the view does not hold).
    pub sandbox_readable: Vec<PathBuf>,
    /// Where commands may connect (`network`).
    pub network: network::Egress,
    /// Where setup may connect beyond that (`setup.network`); see `setup_egress`.
    pub setup_network: network::Egress,
    /// Where stdio MCP servers may connect beyond that (`mcp.network`); see `mcp_egress`.
    pub mcp_network: network::Egress,
    /// `mcp.allow` and `mcp.deny`: globs over `SERVER/TOOL` (see `decide_mcp`).
    pub mcp_allow: Vec<mcp::McpRule>,
    pub mcp_deny: Vec<mcp::McpRule>,
    pub sandbox: bool,
    pub env_pass: Vec<String>,
    pub pass_secrets: Vec<String>,
    pub secrets: Vec<String>,
    pub max_files_changed: usize,
    pub max_lines_changed: usize,
    /// Bytes added and removed: the changed lines of text files, the whole of binary ones.
    pub max_bytes_changed: u64,
    /// Set by a read-only job (`change: none`), never by a policy file: every jail but setup's
    /// mounts the repository read-only, and no tool writes to it.
    pub read_only_repo: bool,
}

pub const DEFAULT_READ_DENY: &[&str] = &[
    "**/.env",
    "**/.env.*",
    "**/*.pem",
    "**/*.key",
    "**/id_rsa*",
    "**/id_ecdsa*",
    "**/id_ed25519*",
    "**/.netrc",
    "**/.npmrc",
    "**/.pypirc",
    "**/.git-credentials",
];
pub const DEFAULT_WRITE_DENY: &[&str] = &[".github/workflows/**"];
pub const DEFAULT_ENV_PASS: &[&str] =
    &["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "TZ", "USER", "LOGNAME", "SHELL"];

/// A path glob.
fn compile_glob(g: &str) -> Result<GlobMatcher, RuleError> {
    Ok(globset::GlobBuilder::new(g).literal_separator(true).build()?.compile_matcher())
}

/// Compile a command pattern: words separated by spaces; `*` alone matches any number of words;
/// `*`, `?` and `[..]` inside a word are globs over that word.
pub fn compile_pattern(key: &str, text: &str) -> Result<Pattern, RuleError> {
    let mut words = Vec::new();
    for w in text.split_whitespace() {
        words.push(if w == "*" {
            PWord::Any
        } else if w.contains(['*', '?', '[']) {
            PWord::Glob(globset::GlobBuilder::new(w).literal_separator(false).build()?.compile_matcher())
        } else {
            PWord::Literal(w.to_string())
        });
    }
    if words.is_empty() {
        return Err(RuleError::EmptyPattern);
    }
    Ok(Pattern { key: key.into(), text: text.into(), words })
}

fn rules(key: &str, globs: &[String]) -> Result<Vec<PathRule>, (String, RuleError)> {
    globs
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let k = format!("{key}[{i}]");
            compile_glob(g).map(|matcher| PathRule { key: k.clone(), glob: g.clone(), matcher }).map_err(|e| (k, e))
        })
        .collect()
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The built-in policy's text (`src/policy/builtin.yaml`), shown by `docs/policy.md`.
pub const BUILTIN_YAML: &str = include_str!("builtin.yaml");

impl Policy {
    /// The policy used when the job names none (`builtin.yaml`): read and edit files in the repo,
    /// run the verify commands (added with `allow_verify`) and read-only inspection commands,
    /// nothing else; no network.
    pub fn builtin() -> Policy {
        static BUILTIN: std::sync::OnceLock<Policy> = std::sync::OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                let mut p = parse("(built-in policy)", BUILTIN_YAML).unwrap_or_else(|errors| {
                    // A unit test keeps this from happening; if it did, deny every command.
                    tracing::error!("the built-in policy is invalid: {errors:?}; commands are denied");
                    Policy::base()
                });
                p.source = None;
                p.sha256 = None;
                p
            })
            .clone()
    }

    /// What every policy starts from: the default path rules and limits, no command allowed.
    pub fn base() -> Policy {
        let read_deny = rules("default.read_deny", &strs(DEFAULT_READ_DENY)).unwrap_or_default();
        let write_deny = rules("default.write_deny", &strs(DEFAULT_WRITE_DENY)).unwrap_or_default();
        Policy {
            source: None,
            sha256: None,
            default_allow: false,
            allow: vec![],
            deny: vec![],
            read_deny,
            write_allow: vec![],
            write_deny,
            hidden_files: vec![],
            sandbox_writable: vec![],
            sandbox_readable: vec![],
            network: network::Egress::Off,
            setup_network: network::Egress::Off,
            mcp_network: network::Egress::Off,
            mcp_allow: vec![],
            mcp_deny: vec![],
            sandbox: true,
            env_pass: strs(DEFAULT_ENV_PASS),
            pass_secrets: vec![],
            secrets: vec![],
            max_files_changed: 100,
            max_lines_changed: 5000,
            max_bytes_changed: 10 << 20,
            read_only_repo: false,
        }
    }

    /// Let the model run each verify command, with extra arguments (`CMD *`).
    pub fn allow_verify(&mut self, commands: &[(String, String)]) {
        for (name, cmd) in commands {
            if let Ok(cmds) = shell::analyse(cmd) {
                for c in cmds {
                    let text = format!("{} *", c.argv.iter().map(|a| wrappers::quote(a)).collect::<Vec<_>>().join(" "));
                    let words: Vec<PWord> =
                        c.argv.iter().map(|a| PWord::Literal(a.clone())).chain([PWord::Any]).collect();
                    self.allow.push(Pattern { key: format!("verify `{name}`"), text, words });
                }
            }
        }
    }
}

/// Load and validate a policy file; every problem is reported with its position.
pub fn load(path: &Path) -> Result<Policy, Vec<Diagnostic>> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| vec![Diagnostic::unreadable(&file, "policy file", &e, "`policy:` is relative to the job spec")])?;
    let mut p = parse(&file, &text)?;
    p.source = Some(path.to_path_buf());
    Ok(p)
}

/// Validate policy `text` (named `file` in messages); every problem is reported with its position.
pub fn parse(file: &str, text: &str) -> Result<Policy, Vec<Diagnostic>> {
    let loaded = yaml::load::<RawPolicy>(file, text).map_err(|d| vec![d])?;
    let map = loaded.map;
    let mut errors = loaded.errors;
    let raw = loaded.value;
    let mut p = Policy::base();
    p.source = Some(PathBuf::from(file));
    p.sha256 = Some(crate::spec::sha256_hex(text.as_bytes()));
    match raw.version {
        Some(1) => {}
        Some(v) => errors.push(map.at_value(
            "version",
            format!("unsupported policy version {v}"),
            Some("this hone reads `version: 1`".into()),
        )),
        None if !loaded.removed.contains("version") => errors.push(map.at_key(
            "",
            "missing required key `version` at the top level",
            Some("add `version: 1`".into()),
        )),
        None => {}
    }
    let mut cmds = raw.commands.unwrap_or_default();
    command_rules(&mut p, &mut cmds, &map, &mut errors);
    path_rules(&mut p, raw.paths.unwrap_or_default(), &map, &mut errors);
    let mut raw_mcp = raw.mcp.unwrap_or_default();
    p.network = network::load(raw.network, "network", &map, &mut errors).unwrap_or_default();
    p.setup_network =
        network::load(raw.setup.and_then(|s| s.network), "setup.network", &map, &mut errors).unwrap_or_default();
    p.mcp_network = network::load(raw_mcp.network.take(), "mcp.network", &map, &mut errors).unwrap_or_default();
    mcp::rules_from(&mut p, raw_mcp, &map, &mut errors);
    p.sandbox = raw.sandbox != Some(SandboxMode::Off);
    lists_need_the_sandbox(&p, &map, &mut errors);
    let env = raw.env.unwrap_or_default();
    if let Some(pass) = env.pass {
        p.env_pass = pass;
    }
    p.pass_secrets = env.pass_secrets.unwrap_or_default();
    p.secrets = raw.secrets.unwrap_or_default();
    let limits = raw.limits.unwrap_or_default();
    p.max_files_changed = limits.max_files_changed.unwrap_or(p.max_files_changed);
    p.max_lines_changed = limits.max_lines_changed.unwrap_or(p.max_lines_changed);
    p.max_bytes_changed = limits.max_bytes_changed.unwrap_or(p.max_bytes_changed);
    for (k, v) in [
        ("limits.max_files_changed", p.max_files_changed as u64),
        ("limits.max_lines_changed", p.max_lines_changed as u64),
        ("limits.max_bytes_changed", p.max_bytes_changed),
    ] {
        if v == 0 {
            errors.push(map.at_value(k, "must be at least 1", None));
        }
    }
    if errors.is_empty() {
        check_examples(&p, cmds.examples.take().unwrap_or_default(), &map, &mut errors);
    }
    errors.sort_by_key(|d| (d.line, d.col));
    if errors.is_empty() { Ok(p) } else { Err(errors) }
}

/// An allow-list is kept by hone's proxy, which only the jail can make the one way out.
/// (On macOS, Seatbelt has no network namespace to put the proxy's socket in.)
fn lists_need_the_sandbox(p: &Policy, map: &yaml::SourceMap, errors: &mut Vec<Diagnostic>) {
    for (e, key) in [(&p.network, "network"), (&p.setup_network, "setup.network"), (&p.mcp_network, "mcp.network")] {
        if e.rules().is_none() {
            continue;
        }
        if !p.sandbox {
            errors.push(map.at_value(
                key,
                "a network allow-list needs the sandbox, and the policy sets `sandbox: off`",
                Some("remove `sandbox: off` (commands then reach only the listed hosts), or use `true`".into()),
            ));
        } else if !cfg!(target_os = "linux") {
            errors.push(map.at_value(
                key,
                "a network allow-list needs Linux (its network namespaces): this machine's jail cannot keep one",
                Some("run this job on Linux, or use `true` or `false` here".into()),
            ));
        }
    }
}

impl Policy {
    /// What setup's jail may reach: what commands may, and `setup.network`.
    pub fn setup_egress(&self) -> network::Egress {
        self.network.with(&self.setup_network)
    }
    /// What each stdio MCP server's jail may reach: what commands may, and `mcp.network`.
    pub fn mcp_egress(&self) -> network::Egress {
        self.network.with(&self.mcp_network)
    }
}

/// `commands.default`, `commands.allow` and `commands.deny`.
fn command_rules(p: &mut Policy, cmds: &mut raw::RawCommands, map: &yaml::SourceMap, errors: &mut Vec<Diagnostic>) {
    p.default_allow = matches!(cmds.default, Some(raw::Default::Allow));
    for (list, key, target) in
        [(cmds.allow.take(), "commands.allow", &mut p.allow), (cmds.deny.take(), "commands.deny", &mut p.deny)]
    {
        for (i, text) in list.unwrap_or_default().iter().enumerate() {
            let k = format!("{key}[{i}]");
            match compile_pattern(&k, text) {
                Ok(pat) => target.push(pat),
                Err(e) => errors.push(map.at_value(
                    &k,
                    format!("bad command pattern: {e}"),
                    Some("words separated by spaces; `*` alone matches any words".into()),
                )),
            }
        }
    }
}

/// `paths`: the read and write globs, and the extra writable directories of the sandbox.
fn path_rules(p: &mut Policy, paths: raw::RawPaths, map: &yaml::SourceMap, errors: &mut Vec<Diagnostic>) {
    for (list, key, target) in [
        (paths.read_deny, "paths.read_deny", &mut p.read_deny),
        (paths.write_allow, "paths.write_allow", &mut p.write_allow),
        (paths.write_deny, "paths.write_deny", &mut p.write_deny),
    ] {
        if let Some(globs) = list {
            match rules(key, &globs) {
                Ok(r) => *target = r,
                Err((k, e)) => errors.push(map.at_value(
                    &k,
                    format!("bad glob: {e}"),
                    Some("use globs like `src/**` or `**/*.pem`".into()),
                )),
            }
        }
    }
    let host = [
        ("sandbox_writable", paths.sandbox_writable, &mut p.sandbox_writable),
        ("sandbox_readable", paths.sandbox_readable, &mut p.sandbox_readable),
    ];
    for (key, list, target) in host {
        for (i, w) in list.unwrap_or_default().iter().enumerate() {
            if !Path::new(w).is_absolute() {
                errors.push(map.at_value(&format!("paths.{key}[{i}]"), "must be an absolute path", None));
            }
            target.push(PathBuf::from(w));
        }
    }
}

/// `commands.examples`: checked like unit tests when the policy loads.
fn check_examples(p: &Policy, ex: raw::RawExamples, map: &yaml::SourceMap, errors: &mut Vec<Diagnostic>) {
    for (list, want_allow, key) in
        [(ex.allow, true, "commands.examples.allow"), (ex.deny, false, "commands.examples.deny")]
    {
        for (i, cmd) in list.unwrap_or_default().iter().enumerate() {
            let d = decide_command(p, cmd);
            if d.allowed != want_allow {
                let verdict = if d.allowed { "allow" } else { "deny" };
                let hint = "fix the rules or the example: examples are checked like unit tests when the policy loads";
                let msg = format!("the rules {verdict} `{cmd}`, but the example expects the opposite ({})", d.rule);
                errors.push(map.at_value(&format!("{key}[{i}]"), msg, Some(hint.into())));
            }
        }
    }
}

#[cfg(test)]
mod tests;
