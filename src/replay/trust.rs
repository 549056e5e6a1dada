//! What a replay runs, and under which rules: the job the user names (`--job`, trusted like
//! `hone run` trusts it), or the recorded one read from the clone at the base and matched against
//! the transcript's digests (as untrusted as the repository); its policy from the same place, never
//! from the transcript; and the rules that keep every replay offline and jailed.

use super::{plain, source};
use crate::error::{Code, HoneError};
use crate::policy::{DEFAULT_ENV_PASS, Policy};
use crate::spec::{Job, McpTransport, Overrides};
use std::path::{Component, Path, PathBuf};

/// Where the job comes from.
pub enum JobFrom<'a> {
    /// `--job`: the user's own file.
    User(&'a Path),
    /// The transcript's: its `spec` under its `repo`, with the digests the run recorded.
    Recorded { spec: &'a str, repo: &'a str, spec_sha256: Option<&'a str>, policy_sha256: Option<&'a str> },
}

/// The job and policy a replay runs, and what replay changed in them (said on stderr).
pub struct Settled {
    pub job: Job,
    pub policy: Policy,
    pub notes: Vec<String>,
}

/// Load the job and its policy, then make both offline. `root` is the clone, `base` its commit.
pub fn settle(
    from: &JobFrom,
    overrides: &Overrides,
    at: &source::Copied,
    allow_sandbox_off: bool,
) -> Result<Settled, HoneError> {
    let (job, policy) = match from {
        JobFrom::User(path) => {
            let job = crate::spec::load_with(path, overrides).map_err(|e| HoneError::new(Code::Spec, e.render()))?;
            let policy = crate::run::intake::load_policy(&job)?;
            (job, policy)
        }
        JobFrom::Recorded { spec, repo, spec_sha256, policy_sha256 } => {
            let job = recorded_job(spec, repo, *spec_sha256, overrides, at)?;
            let policy = recorded_policy(&job, *policy_sha256, at)?;
            (job, policy)
        }
    };
    let mut s = Settled { job, policy, notes: vec![] };
    offline(&mut s, allow_sandbox_off)?;
    if matches!(from, JobFrom::Recorded { .. }) {
        narrow(&mut s);
    }
    Ok(s)
}

fn refuse(code: Code, message: String) -> HoneError {
    HoneError::new(code, message)
        .hint("review the job and name it with --job JOB.yaml (and the repository with --repo DIR)")
}

/// `p` without `.` and `..` (lexically: the path is looked up in a git tree, where no symlink is
/// followed), relative to `root` when it is beneath it.
fn beneath(root: &Path, p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    let rel = out.strip_prefix(root).ok()?.to_path_buf();
    (!rel.as_os_str().is_empty()).then_some(rel)
}

/// Whether `text` is what `recorded` (a transcript's hex digest) says.
fn matches_digest(text: &str, recorded: &str) -> bool {
    crate::spec::sha256_hex(text.as_bytes()).eq_ignore_ascii_case(recorded)
}

fn recorded_job(
    spec: &str,
    repo: &str,
    sha256: Option<&str>,
    overrides: &Overrides,
    at: &source::Copied,
) -> Result<Job, HoneError> {
    let (root, base) = (at.root.as_path(), at.base);
    let spec_path = source::recorded_path("spec", spec)?;
    let rel = spec_path.strip_prefix(source::recorded_path("repo", repo)?).ok().filter(|r| !r.as_os_str().is_empty());
    let Some(rel) = rel else {
        let msg = format!(
            "the recorded job spec {spec:?} is outside the recorded repository {repo:?}: replay reads a recorded spec only from the repository, at the commit the run started from"
        );
        return Err(refuse(Code::Spec, msg));
    };
    let Some(sha256) = sha256 else {
        let msg = format!(
            "the transcript records no digest of its job spec {spec:?} (an older hone wrote it): replay cannot tell that the spec is the one the run ran"
        );
        return Err(refuse(Code::Spec, msg));
    };
    let text = source::read_at_base(root, base, rel)?;
    if !matches_digest(&text, sha256) {
        let msg = format!(
            "`{}` at the base commit is not the spec the recorded run ran (its SHA-256 differs from the transcript's `spec_sha256`)",
            plain(rel.display())
        );
        return Err(refuse(Code::Spec, msg));
    }
    crate::spec::parse_with(&root.join(rel), &text, overrides).map_err(|e| HoneError::new(Code::Spec, e.render()))
}

fn recorded_policy(job: &Job, sha256: Option<&str>, at: &source::Copied) -> Result<Policy, HoneError> {
    let (root, base) = (at.root.as_path(), at.base);
    let Some(path) = &job.policy else {
        if sha256.is_some() {
            let msg = "the recorded spec names no policy, but the transcript records one".to_string();
            return Err(refuse(Code::Policy, msg));
        }
        return Ok(crate::run::intake::with_verify(Policy::builtin(), job));
    };
    let Some(rel) = beneath(root, path) else {
        let msg = format!(
            "the recorded job's policy {} is outside the repository: replay reads a recorded job's policy only from the repository, at the commit the run started from",
            plain(path.display())
        );
        return Err(refuse(Code::Policy, msg));
    };
    let text = source::read_at_base(root, base, &rel)?;
    if !sha256.is_some_and(|d| matches_digest(&text, d)) {
        let msg = format!(
            "`{}` at the base commit is not the policy the recorded run ran (the transcript's `policy_sha256` differs)",
            plain(rel.display())
        );
        return Err(refuse(Code::Policy, msg));
    }
    let file = root.join(&rel).display().to_string();
    let p = crate::policy::parse(&file, &text).map_err(|d| {
        HoneError::new(Code::Policy, d.iter().map(|d| d.render("E_POLICY")).collect::<Vec<_>>().join("\n"))
    })?;
    Ok(crate::run::intake::with_verify(p, job))
}

/// Every replay: no network for commands or setup, no HTTP MCP server (hone would connect to it),
/// and the jail, unless the user's command line allows `sandbox: off`.
fn offline(s: &mut Settled, allow_sandbox_off: bool) -> Result<(), HoneError> {
    if let Some(m) = s.job.mcp.iter().find(|m| matches!(m.transport, McpTransport::Http { .. })) {
        return Err(refuse(
            Code::Spec,
            format!("replay is offline, and the job's MCP server `{}` is reached over HTTP", plain(&m.name)),
        ));
    }
    let source = s.policy.source.as_ref().map_or("the built-in policy".into(), |p| plain(p.display()));
    if !s.policy.sandbox {
        if !allow_sandbox_off {
            return Err(HoneError::new(
                Code::Policy,
                format!("the policy {source} turns the jail off (`sandbox: off`): replay runs commands only in the jail, offline"),
            )
            .hint("read the job and its policy first; then pass --allow-sandbox-off to run its commands unconfined on this machine, with its network"));
        }
        s.notes.push(format!("--allow-sandbox-off: the policy {source} turns the jail off; commands run unconfined"));
    }
    for (on, key) in [
        (&mut s.policy.network, "network"),
        (&mut s.policy.setup_network, "setup.network"),
        (&mut s.policy.mcp_network, "mcp.network"),
    ] {
        let was = std::mem::take(on);
        if was != crate::policy::network::Egress::Off {
            s.notes.push(format!("replay is offline: `{key}` ({}) in {source} is off for the replay", was.mode()));
        }
    }
    Ok(())
}

/// A recorded job is the repository's, as hostile as its files: it gets nothing of the host
/// beyond what any run gets by default (no writable host directory, no variables past the
/// defaults, no secrets).
fn narrow(s: &mut Settled) {
    let p = &mut s.policy;
    for (key, list) in [("sandbox_writable", &mut p.sandbox_writable), ("sandbox_readable", &mut p.sandbox_readable)] {
        if !list.is_empty() {
            s.notes
                .push(format!("a recorded policy opens no host directory: `paths.{key}` ({}) is dropped", list.len()));
            list.clear();
        }
    }
    let extra: Vec<String> = p.env_pass.iter().filter(|v| !DEFAULT_ENV_PASS.contains(&v.as_str())).cloned().collect();
    if !extra.is_empty() || !p.pass_secrets.is_empty() {
        s.notes.push(format!(
            "a recorded policy passes only the default variables: {} dropped",
            extra.iter().chain(&p.pass_secrets).map(|v| format!("`{}`", plain(v))).collect::<Vec<_>>().join(", ")
        ));
        p.env_pass.retain(|v| DEFAULT_ENV_PASS.contains(&v.as_str()));
        p.pass_secrets.clear();
    }
    for m in &mut s.job.mcp {
        if let McpTransport::Stdio { env, .. } = &mut m.transport
            && !env.is_empty()
        {
            s.notes.push(format!(
                "a recorded job passes no variables to its MCP server `{}`: its `env` is dropped",
                plain(&m.name)
            ));
            env.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(extra: &str) -> Job {
        let yaml = format!(
            "version: 1\nname: j\ntask: t\nmodel: {{ provider: openai-compatible, name: m, base_url: 'http://127.0.0.1:1/v1' }}\nverify:\n  - {{ name: check, run: 'true' }}\n{extra}"
        );
        crate::spec::parse(Path::new("/r/ci/job.yaml"), &yaml).unwrap()
    }

    fn policy(yaml: &str) -> Policy {
        crate::policy::parse("/r/policy.yaml", &format!("version: 1\n{yaml}")).unwrap()
    }

    #[test]
    fn every_replay_is_offline_and_jailed_unless_the_command_line_says_otherwise() {
        let mut s =
            Settled { job: job(""), policy: policy("network: true\nsetup: { network: true }\n"), notes: vec![] };
        offline(&mut s, false).unwrap();
        assert!(!s.policy.network.is_open() && !s.policy.setup_network.is_open());
        assert_eq!(s.notes.len(), 2, "{:?}", s.notes);
        assert!(s.notes[0].starts_with("replay is offline: `network` (open) in /r/policy.yaml"), "{:?}", s.notes);

        let mut s = Settled { job: job(""), policy: policy("sandbox: off\n"), notes: vec![] };
        let e = offline(&mut s, false).unwrap_err();
        assert_eq!(e.code, Code::Policy);
        assert!(e.message.contains("`sandbox: off`") && e.hint.unwrap().contains("--allow-sandbox-off"));
        offline(&mut s, true).unwrap();
        assert!(s.notes[0].starts_with("--allow-sandbox-off"), "{:?}", s.notes);

        let http = "mcp:\n  servers:\n    - { name: docs, url: 'https://mcp.example.com/mcp' }\n";
        let mut s = Settled { job: job(http), policy: policy(""), notes: vec![] };
        let e = offline(&mut s, true).unwrap_err();
        assert!(e.message.contains("MCP server `docs` is reached over HTTP"), "{}", e.message);
    }

    #[test]
    fn a_recorded_job_gets_no_host_directory_no_extra_variable_and_no_secret() {
        let stdio = "mcp:\n  servers:\n    - { name: s, command: srv, env: [AWS_SECRET_ACCESS_KEY] }\n";
        let p = policy(
            "paths: { sandbox_writable: [/home/u], sandbox_readable: [/opt/x] }\nenv: { pass: [PATH, HOME, DATABASE_URL], pass_secrets: [GITHUB_TOKEN] }\n",
        );
        let mut s = Settled { job: job(stdio), policy: p, notes: vec![] };
        narrow(&mut s);
        assert!(
            s.policy.sandbox_writable.is_empty()
                && s.policy.sandbox_readable.is_empty()
                && s.policy.pass_secrets.is_empty()
        );
        assert_eq!(s.policy.env_pass, ["PATH", "HOME"]);
        let McpTransport::Stdio { env, .. } = &s.job.mcp[0].transport else { panic!() };
        assert!(env.is_empty());
        assert_eq!(s.notes.len(), 4, "{:?}", s.notes);
        assert!(s.notes[1].contains("`paths.sandbox_readable` (1) is dropped"), "{:?}", s.notes);
        assert!(s.notes[2].contains("`DATABASE_URL`, `GITHUB_TOKEN` dropped"), "{:?}", s.notes);
    }

    #[test]
    fn repository_text_in_a_message_cannot_start_a_line() {
        assert_eq!(plain("p\r::error::x\n##[command]y"), "p\\r::error::x\\n##[command]y");
        let p = policy("env: { pass: [\"X\\r::add-mask::y\"] }\n");
        let mut s = Settled { job: job(""), policy: p, notes: vec![] };
        narrow(&mut s);
        assert!(!s.notes[0].contains('\r') && s.notes[0].contains("`X\\r::add-mask::y`"), "{:?}", s.notes);
    }

    #[test]
    fn a_recorded_policy_is_read_only_from_the_repository() {
        let root = Path::new("/r");
        let at = source::Copied { root: root.to_path_buf(), base: git2::Oid::ZERO_SHA1 };
        assert_eq!(beneath(root, Path::new("/r/ci/../policy.yaml")), Some(PathBuf::from("policy.yaml")));
        assert_eq!(beneath(root, Path::new("/r/./ci/p.yaml")), Some(PathBuf::from("ci/p.yaml")));
        for outside in ["/r/../etc/p.yaml", "/etc/p.yaml", "/r", "/rr/p.yaml", "/r/ci/../../x"] {
            assert_eq!(beneath(root, Path::new(outside)), None, "{outside}");
        }
        let j = job("policy: ../../home/u/open.yaml\n");
        let e = recorded_policy(&j, Some("00"), &at).unwrap_err();
        assert!(e.message.contains("is outside the repository") && e.hint.unwrap().contains("--job"), "{}", e.message);
        let e = recorded_policy(&job(""), Some("00"), &at).unwrap_err();
        assert!(e.message.contains("names no policy, but the transcript records one"), "{}", e.message);
    }

    #[test]
    fn a_recorded_spec_must_be_under_the_recorded_repository_and_have_a_digest() {
        let o = Overrides::default();
        let at = &source::Copied { root: PathBuf::from("/tmp/clone"), base: git2::Oid::ZERO_SHA1 };
        let e = recorded_job("/elsewhere/job.yaml", "/r", Some("00"), &o, at).unwrap_err();
        assert!(e.message.contains("is outside the recorded repository"), "{}", e.message);
        let e = recorded_job("/r", "/r", Some("00"), &o, at).unwrap_err();
        assert!(e.message.contains("is outside the recorded repository"), "{}", e.message);
        let e = recorded_job("/r/job.yaml", "/r", None, &o, at).unwrap_err();
        assert!(e.message.contains("records no digest"), "{}", e.message);
        let e = recorded_job("/r/../job.yaml", "/r", Some("00"), &o, at).unwrap_err();
        assert!(e.message.contains("not an absolute local path"), "{}", e.message);
    }
}
