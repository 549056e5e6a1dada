//! The job spec (version 1): loading, validation with positioned errors, and defaults.

pub mod adhoc;
pub mod answer;
pub mod attempts;
pub mod cloud;
mod context;
pub mod diag;
pub mod duration;
pub mod forge;
pub mod job;
pub mod mcp;
pub mod memory;
mod model;
pub mod pricing;
pub mod raw;
pub mod telemetry;
pub mod yaml;

use crate::error::{Code, HoneError};
pub use diag::Diagnostic;
use job::dur_ser;
pub use job::*;
pub use mcp::{McpServerSpec, McpTransport};
pub use raw::{Expect, PrEnabled, Provider, ToolMode};

use raw::RawJob;
use std::path::{Path, PathBuf};
use std::time::Duration;
use yaml::{SourceMap, join};

/// Why a spec could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{} error(s) in job spec", .0.len())]
    Invalid(Vec<Diagnostic>),
}

impl SpecError {
    /// Every problem, rendered for stderr.
    pub fn render(&self) -> String {
        HoneError::from(self).render()
    }
}

impl From<&SpecError> for HoneError {
    fn from(e: &SpecError) -> HoneError {
        match e {
            SpecError::Read { path, source } => HoneError::located(
                Code::Io,
                vec![Diagnostic::file(
                    path,
                    format!("cannot read the job spec: {source}"),
                    "check the path; it is relative to the current directory",
                )],
            ),
            SpecError::Invalid(diags) => HoneError::located(Code::Spec, diags.clone()),
        }
    }
}

impl From<SpecError> for HoneError {
    fn from(e: SpecError) -> HoneError {
        HoneError::from(&e)
    }
}

pub const DEFAULT_BRANCH: &str = "hone/{name}";
/// hone's own directory at the repository root: reports, scratch copies, caches.
pub const HONE_DIR: &str = ".hone";
pub const DEFAULT_REPORT_DIR: &str = ".hone/reports";

/// What the command line supplies in place of the spec's own values.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--task`: replaces `task:`, and satisfies a spec that has none.
    pub task: Option<String>,
    /// `--name`: replaces `name:` (and so the branch and refs).
    pub name: Option<String>,
    /// `--model`: replaces `model.name`, and satisfies a spec that has none.
    pub model: Option<String>,
}

/// Load and validate the job spec at `path`.
pub fn load(path: &Path) -> Result<Job, SpecError> {
    load_with(path, &Overrides::default())
}

/// Load and validate the job spec at `path`, with command-line overrides.
pub fn load_with(path: &Path, o: &Overrides) -> Result<Job, SpecError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| SpecError::Read { path: path.display().to_string(), source })?;
    parse_with(path, &text, o)
}

/// Validate spec `text` as if read from `path`.
pub fn parse(path: &Path, text: &str) -> Result<Job, SpecError> {
    parse_with(path, text, &Overrides::default())
}

/// Validate spec `text` as if read from `path`, with command-line overrides.
pub fn parse_with(path: &Path, text: &str, o: &Overrides) -> Result<Job, SpecError> {
    let file = path.display().to_string();
    let loaded = yaml::load::<RawJob>(&file, text).map_err(|d| SpecError::Invalid(vec![d]))?;
    let mut c = Checker { map: &loaded.map, removed: &loaded.removed, errors: loaded.errors };
    // Paths in the spec (policy, repo, reports, script) are relative to its directory, and are
    // kept absolute, so the report names them the same from wherever it is read.
    let dir = std::path::absolute(path).ok().and_then(|p| p.parent().map(Path::to_path_buf)).unwrap_or_default();
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("job").to_string();
    let mut raw = loaded.value;
    if let Some(t) = o.task.as_ref().filter(|t| !t.trim().is_empty()) {
        raw.task = Some(t.clone());
    }
    if let Some(n) = o.name.as_ref().filter(|n| !n.trim().is_empty()) {
        raw.name = Some(n.clone());
    }
    if let Some(m) = o.model.as_ref().filter(|m| !m.trim().is_empty()) {
        raw.model.get_or_insert_with(Default::default).name = Some(m.clone());
    }
    let mut job = c.job(raw, path, &dir, stem);
    job.spec_sha256 = sha256_hex(text.as_bytes());
    if c.errors.is_empty() {
        Ok(job)
    } else {
        c.errors.sort_by_key(|d| (d.line, d.col));
        Err(SpecError::Invalid(c.errors))
    }
}

struct Checker<'a> {
    map: &'a SourceMap,
    removed: &'a std::collections::HashSet<String>,
    errors: Vec<Diagnostic>,
}

impl Checker<'_> {
    fn err(&mut self, path: &str, msg: impl Into<String>, help: impl Into<String>) {
        let d = self.map.at_value(path, msg, Some(help.into()));
        self.errors.push(d);
    }

    /// Report a missing required field, unless it was removed for an earlier error.
    fn missing(&mut self, path: &str, help: &str) {
        if self.removed.contains(path) {
            return;
        }
        let parent = path.rfind(['.', '[']).map_or("", |i| &path[..i]);
        let key = path.rsplit('.').next().unwrap_or(path);
        let at = if parent.is_empty() { " at the top level".to_string() } else { format!(" in `{parent}`") };
        let d = self.map.at_key(parent, format!("missing required key `{key}`{at}"), Some(help.to_string()));
        self.errors.push(Diagnostic { path: path.to_string(), ..d });
    }

    fn job(&mut self, raw: RawJob, spec_path: &Path, dir: &Path, stem: String) -> Job {
        match raw.version {
            Some(1) => {}
            Some(v) => self.err("version", format!("unsupported spec version {v}"), "this hone reads `version: 1`"),
            None => self.missing("version", "add `version: 1` at the top of the file"),
        }
        let name = raw.name.unwrap_or(stem);
        if !valid_name(&name) {
            self.err("name", format!("`{name}` is not a valid job name"), "use letters, digits, `.`, `_` and `-` (at most 100), starting with a letter or digit; it is used in branch names");
        }
        let task = raw.task.unwrap_or_default();
        if task.trim().is_empty() && !self.removed.contains("task") {
            if self.map.has("task") {
                self.err("task", "the task is empty", "describe what to do, in plain language");
            } else {
                self.missing("task", "add `task: |` followed by what to do, in plain language, or pass `--task TEXT`");
            }
        }
        let r = raw.repo.unwrap_or_default();
        let repo = RepoSpec {
            path: r.path.as_deref().map(|p| resolve(dir, p)),
            base: r.base,
            allow_dirty: r.allow_dirty.unwrap_or(false),
            scratch: r.scratch.unwrap_or(false),
            guidance: None,
        };
        let model = self.model(raw.model, dir);
        let setup = self.commands("setup", raw.setup.unwrap_or_default(), Duration::from_secs(600));
        let h = raw.hooks.unwrap_or_default();
        let hooks = HooksSpec {
            after_edit: self.commands("hooks.after_edit", h.after_edit.unwrap_or_default(), Duration::from_secs(60)),
            before_verify: self.commands(
                "hooks.before_verify",
                h.before_verify.unwrap_or_default(),
                Duration::from_secs(300),
            ),
        };
        let mcp = self.mcp(raw.mcp);
        let verify = self.verify(raw.verify.unwrap_or_default());
        let limits = self.limits(raw.limits.unwrap_or_default(), model.unpriced().as_deref());
        let git = self.git(raw.git.unwrap_or_default(), &name);
        let pr = PrSpec::from(raw.pr.unwrap_or_default());
        self.pace(&pr);
        let forge = self.forge(raw.forge);
        let report_dir = raw.report.and_then(|r| r.dir).map(|d| resolve(dir, &d));
        let tools = self.tools(raw.tools.unwrap_or_default());
        let policy = raw.policy.map(|p| resolve(dir, &p));
        let (repo_map_tokens, instructions) = self.context(raw.context.unwrap_or_default());
        let output = self.output(raw.output, dir);
        let change = raw.change.unwrap_or_default();
        let attempts = self.attempts(raw.attempts, &attempts::JobParts::of(&model, &limits, &repo, change), dir);
        let telemetry = self.telemetry(raw.telemetry);
        Job {
            spec_path: spec_path.to_path_buf(),
            spec_sha256: String::new(),
            name,
            task,
            repo,
            model,
            setup,
            hooks,
            mcp,
            verify,
            limits,
            policy,
            git,
            report_dir,
            tools,
            plan: raw.plan.unwrap_or(true),
            repo_map_tokens,
            instructions,
            pr,
            forge,
            change,
            output,
            memory: raw.memory.map(memory::MemorySpec::from).unwrap_or_default(),
            attempts,
            telemetry,
        }
    }

    fn git(&mut self, g: raw::RawGit, name: &str) -> GitSpec {
        let branch = g.branch.unwrap_or_else(|| DEFAULT_BRANCH.into()).replace("{name}", name);
        if !git2::Branch::name_is_valid(&branch).unwrap_or(false) || branch.contains('{') {
            self.err(
                "git.branch",
                format!("`{branch}` is not a valid branch name"),
                "use a git branch name; `{name}` is replaced by the job name",
            );
        }
        let git = GitSpec {
            branch,
            commit: g.commit.unwrap_or(true),
            author_name: g.author_name.unwrap_or_else(|| "hone".into()),
            author_email: g.author_email.unwrap_or_else(|| "hone@users.noreply.github.com".into()),
            remote: g.remote.unwrap_or_else(|| "origin".into()),
            token_env: g.token_env,
            push: g.push.unwrap_or(true),
            protected: g
                .protected
                .unwrap_or_else(|| vec!["main".into(), "master".into(), "develop".into(), "release/*".into()]),
        };
        if git.protected.iter().any(|p| globset::Glob::new(p).is_ok_and(|g| g.compile_matcher().is_match(&git.branch)))
        {
            self.err(
                "git.branch",
                format!("`{}` is a protected branch", git.branch),
                "hone pushes only to its own branches, like `hone/{name}`",
            );
        }
        git
    }

    fn tools(&mut self, t: raw::RawTools) -> ToolLimits {
        let tools = ToolLimits {
            cmd_timeout: t.cmd_timeout.map_or(Duration::from_secs(300), |d| d.0),
            max_output_bytes: t.max_output_bytes.unwrap_or(30_000),
            max_read_bytes: t.max_read_bytes.unwrap_or(256 * 1024),
        };
        for (key, v) in
            [("tools.max_output_bytes", tools.max_output_bytes), ("tools.max_read_bytes", tools.max_read_bytes)]
        {
            if v < 1024 {
                self.err(key, format!("{v} is too small"), "use at least 1024 bytes");
            }
        }
        tools
    }

    /// The name, command and timeout of `setup[i]` or `verify[i]` (`c`, at `base`), each
    /// checked: names present and unique among `taken`, a command, a timeout above zero.
    fn command(
        &mut self,
        base: &str,
        c: raw::RawCommand,
        taken: &[&str],
        default_timeout: Duration,
    ) -> (String, String, Duration) {
        let raw::RawCommand { name, run, timeout } = c;
        let name = name.unwrap_or_default();
        if name.trim().is_empty() {
            self.missing(&join(base, "name"), "give each command a short `name`, like deps, lint or test");
        } else if taken.contains(&name.as_str()) {
            self.err(
                &join(base, "name"),
                format!("duplicate name `{name}`"),
                "names must be unique: they identify commands in reports",
            );
        }
        let run = run.unwrap_or_default();
        if run.trim().is_empty() {
            self.missing(&join(base, "run"), "set `run:` to the shell command, like `python -m pytest -q`");
        }
        let timeout = timeout.map_or(default_timeout, |d| d.0);
        if timeout.is_zero() {
            self.err(&join(base, "timeout"), "must be more than zero", "for example `10m`");
        }
        (name, run, timeout)
    }

    /// `setup` or a hook list (at `key`), each entry checked like a check.
    fn commands(&mut self, key: &str, raw: Vec<raw::RawCommand>, default_timeout: Duration) -> Vec<CommandSpec> {
        let mut out: Vec<CommandSpec> = Vec::new();
        for (i, s) in raw.into_iter().enumerate() {
            let base = format!("{key}[{i}]");
            if self.removed.contains(&base) {
                continue;
            }
            let taken: Vec<&str> = out.iter().map(|o| o.name.as_str()).collect();
            let (name, run, timeout) = self.command(&base, s, &taken, default_timeout);
            out.push(CommandSpec { name, run, timeout });
        }
        out
    }

    fn verify(&mut self, raw: Vec<raw::RawVerify>) -> Vec<VerifySpec> {
        let mut out: Vec<VerifySpec> = Vec::new();
        for (i, v) in raw.into_iter().enumerate() {
            let base = format!("verify[{i}]");
            if self.removed.contains(&base) {
                continue;
            }
            let taken: Vec<&str> = out.iter().map(|o| o.name.as_str()).collect();
            let c = raw::RawCommand { name: v.name, run: v.run, timeout: v.timeout };
            let (name, run, timeout) = self.command(&base, c, &taken, Duration::from_secs(600));
            if let Some(j) = &v.junit
                && (j.starts_with('/') || j.split('/').any(|c| c == ".."))
            {
                self.err(
                    &join(&base, "junit"),
                    format!("`{j}` is not a path inside the repo"),
                    "give the report path relative to the repo root, like `reports/junit.xml`",
                );
            }
            out.push(VerifySpec { name, run, expect: v.expect.unwrap_or_default(), junit: v.junit, timeout });
        }
        out
    }

    fn limits(&mut self, l: raw::RawLimits, unpriced: Option<&str>) -> Limits {
        let limits = Limits {
            max_cost_usd: self.max_cost(l.max_cost_usd, unpriced),
            max_turns: l.max_turns.unwrap_or(40),
            max_wall_time: l.max_wall_time.map_or(Duration::from_secs(20 * 60), |d| d.0),
            max_tokens: l.max_tokens.unwrap_or(2_000_000),
            max_fix_attempts: l.max_fix_attempts.unwrap_or(3),
        };
        if limits.max_turns == 0 {
            self.err("limits.max_turns", "must be at least 1", "the default is 40");
        }
        if limits.max_wall_time.is_zero() {
            self.err("limits.max_wall_time", "must be more than zero", "the default is 20m");
        }
        if limits.max_tokens == 0 {
            self.err("limits.max_tokens", "must be at least 1", "the default is 2000000");
        }
        limits
    }
}

/// SHA-256 of `bytes`, in lower-case hex: what a transcript records of the spec and the policy.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

pub(crate) fn resolve(dir: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() { p.to_path_buf() } else { dir.join(p) }
}

/// Whether `n` is a valid job name (it is used in branch and ref names).
pub(crate) fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 100
        && n.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && n.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !n.contains("..")
        && !n.ends_with(".lock")
}

#[cfg(test)]
mod tests;
