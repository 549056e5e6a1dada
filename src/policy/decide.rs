//! Policy decisions as pure functions: a command line or a path in, an allow or a deny out, with
//! the rule that decided and a hint. The strictest matching rule wins.

use super::shell::{self, SimpleCmd};
use super::{PWord, Pattern, Policy};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub allowed: bool,
    /// The rule that decided, e.g. ``commands.deny[0] `curl *` ``.
    pub rule: String,
    /// The simple command or path the rule applied to.
    pub subject: String,
    /// What the model can do instead.
    pub hint: String,
}

impl Decision {
    fn allow(rule: String, subject: String) -> Self {
        Decision { allowed: true, rule, subject, hint: String::new() }
    }
    fn deny(rule: String, subject: String, hint: &str) -> Self {
        Decision { allowed: false, rule, subject, hint: hint.into() }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// Match pattern words against a command's words; `Any` matches any number of words.
fn words_match(p: &[PWord], argv: &[String]) -> bool {
    match p.split_first() {
        None => argv.is_empty(),
        Some((PWord::Any, rest)) => (0..=argv.len()).any(|k| words_match(rest, &argv[k..])),
        Some((w, rest)) => argv.split_first().is_some_and(|(a, tail)| {
            let ok = match w {
                PWord::Literal(l) => l == a,
                PWord::Glob(g) => g.is_match(a),
                PWord::Any => true,
            };
            ok && words_match(rest, tail)
        }),
    }
}

/// Deny patterns match the words from any position on, each with the program's base name
/// (`/usr/bin/curl` is `curl`): a runner the analysis does not know (`taskset 1 curl x`) still
/// runs `curl x`. Allow patterns match only the words as written, from the start.
fn deny_match<'a>(deny: &'a [Pattern], cmd: &SimpleCmd) -> Option<&'a Pattern> {
    (0..cmd.argv.len()).find_map(|k| {
        let tail = &cmd.argv[k..];
        let mut base = tail.to_vec();
        base[0] = basename(&tail[0]).to_string();
        deny.iter().find(|p| words_match(&p.words, tail) || words_match(&p.words, &base))
    })
}

/// Whether a glob argument (`.en?`, `*.pem`) could name a read-denied file: it is matched, the
/// way bash matches it (a leading dot is literal), against a sample name for each rule. A bare
/// `*` is not: it would refuse `grep x *` everywhere.
fn glob_reads_denied(policy: &Policy, arg: &str) -> Option<String> {
    let last = arg.rsplit('/').next().unwrap_or(arg);
    if !last.contains(['*', '?', '[']) || last.chars().filter(|c| !"*?[]".contains(*c)).count() < 2 {
        return None;
    }
    let g = globset::GlobBuilder::new(last).literal_separator(true).build().ok()?.compile_matcher();
    policy.read_deny.iter().find_map(|r| {
        let sample_last = r.glob.rsplit('/').next().unwrap_or(&r.glob).replace(['*', '?'], "x");
        let hidden_ok = last.starts_with('.') || !sample_last.starts_with('.');
        (hidden_ok && g.is_match(&sample_last)).then(|| format!("{} `{}`", r.key, r.glob))
    })
}

/// May the model run `cmdline`? Every simple command inside it must be allowed.
pub fn decide_command(policy: &Policy, cmdline: &str) -> Decision {
    let cmds = match shell::analyse(cmdline) {
        Ok(c) => c,
        Err(reason) => {
            return Decision::deny(
                format!("unanalysable: {reason}"),
                cmdline.into(),
                "write the command plainly (no eval, no computed command names, no hidden characters) so it can be checked",
            );
        }
    };
    if cmds.is_empty() {
        return Decision::allow("nothing to run".into(), cmdline.into());
    }
    let mut rules = Vec::new();
    for c in &cmds {
        let d = decide_simple(policy, c);
        if !d.allowed {
            return d;
        }
        if !rules.contains(&d.rule) {
            rules.push(d.rule);
        }
    }
    Decision::allow(rules.join("; "), cmdline.into())
}

fn decide_simple(policy: &Policy, c: &SimpleCmd) -> Decision {
    let text = c.text();
    if let Some(p) = deny_match(&policy.deny, c) {
        return Decision::deny(
            format!("{} `{}`", p.key, p.text),
            text,
            "this command is denied by the policy; find another way or stop and explain",
        );
    }
    for w in &c.writes {
        let d = decide_path(policy, w, Access::Write);
        if !d.allowed {
            return Decision { subject: format!("{text} (writes {w})"), ..d };
        }
    }
    // Files the command reads: redirect sources and static arguments that name read-denied paths.
    let args = c.argv.iter().zip(&c.dynamic).skip(1).filter(|(a, d)| !**d && !a.starts_with('-')).map(|(a, _)| a);
    for r in c.reads.iter().chain(args) {
        let d = decide_path(policy, r, Access::Read);
        if !d.allowed {
            return Decision { subject: format!("{text} (reads {r})"), ..d };
        }
        if let Some(rule) = glob_reads_denied(policy, r) {
            return Decision::deny(
                rule,
                format!("{text} (reads {r})"),
                "this glob can match a file that may hold secrets",
            );
        }
    }
    if let Some(p) = policy.allow.iter().find(|p| words_match(&p.words, &c.argv)) {
        return Decision::allow(format!("{} `{}`", p.key, p.text), text);
    }
    if policy.default_allow {
        Decision::allow("commands.default: allow".into(), text)
    } else {
        let hint = super::describe::not_allowed_hint(policy, &c.argv);
        Decision { allowed: false, rule: "commands.default: deny (no allow rule matches)".into(), subject: text, hint }
    }
}

/// Normalize a path as the model or a command wrote it to a repo-relative form for matching.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// May the model read or write `path` (repo-relative)?
/// The rule that denies reading `rel` (a normalized repo-relative path), if any: what
/// `decide_path` asks for a read, without building a decision (the search tools ask it for
/// every file they walk).
pub fn read_denied_by<'p>(policy: &'p Policy, rel: &str) -> Option<&'p super::PathRule> {
    policy.read_deny.iter().find(|r| r.matcher.is_match(rel))
}

pub fn decide_path(policy: &Policy, path: &str, access: Access) -> Decision {
    let rel = normalize(path);
    if access == Access::Read {
        if let Some(r) = read_denied_by(policy, &rel) {
            return Decision::deny(
                format!("{} `{}`", r.key, r.glob),
                rel,
                "this file may hold secrets and is not readable",
            );
        }
        return Decision::allow("read".into(), rel);
    }
    if rel == ".git" || rel.starts_with(".git/") {
        return Decision::deny(
            "built-in: .git is never writable".into(),
            rel,
            "hone manages git; edit files in the work tree",
        );
    }
    if let Some(r) = policy.write_deny.iter().find(|r| r.matcher.is_match(&rel)) {
        return Decision::deny(format!("{} `{}`", r.key, r.glob), rel, "this path is protected by the policy");
    }
    if !policy.write_allow.is_empty() {
        return match policy.write_allow.iter().find(|r| r.matcher.is_match(&rel)) {
            Some(r) => Decision::allow(format!("{} `{}`", r.key, r.glob), rel),
            None => Decision::deny(
                "paths.write_allow (no rule matches)".into(),
                rel,
                "only paths listed in paths.write_allow may change",
            ),
        };
    }
    Decision::allow("write".into(), rel)
}

/// A write by one of hone's own file tools, which run on the host, outside the jail: what the jail
/// keeps from commands it keeps from the tools. A read-denied path is refused (its content would
/// be read back, patched and undone), and so is anything at or beneath a `protected` entry
/// (hone's own directory, the report dir, ignored entries that were there before the run and
/// what setup made); then the write rules decide.
pub fn decide_tool_write(policy: &Policy, path: &str, protected: &[String]) -> Decision {
    let rel = normalize(path);
    if let Some(r) = read_denied_by(policy, &rel) {
        return Decision::deny(
            format!("{} `{}` (not readable, so not writable)", r.key, r.glob),
            rel,
            "this file may hold secrets: it can be neither read nor changed",
        );
    }
    if let Some(p) = protected.iter().find(|p| rel == **p || rel.starts_with(&format!("{p}/"))) {
        return Decision::deny(
            format!("built-in: `{p}` is protected (hone's own, or there before the run and ignored)"),
            rel,
            "it is read-only to the model's tools and commands; change tracked files instead",
        );
    }
    decide_path(policy, &rel, Access::Write)
}

#[cfg(test)]
mod tests {
    use super::super::{compile_pattern, rules, strs};
    use super::*;

    /// The base policy (default path rules) with these command rules.
    fn with_rules(default_allow: bool, allow: &[&str], deny: &[&str]) -> Policy {
        let mut p = Policy::base();
        p.default_allow = default_allow;
        for (i, a) in allow.iter().enumerate() {
            p.allow.push(compile_pattern(&format!("commands.allow[{i}]"), a).unwrap());
        }
        for (i, d) in deny.iter().enumerate() {
            p.deny.push(compile_pattern(&format!("commands.deny[{i}]"), d).unwrap());
        }
        p
    }

    #[test]
    fn deny_rules_match_the_base_name_from_any_word_on_under_either_default() {
        for default_allow in [true, false] {
            // Allowed as written, so only the deny rules can refuse these.
            let allow = ["curl *", "/usr/bin/curl *", "./curl *", "taskset *", "/opt/bin/tool *"];
            let p = with_rules(default_allow, &allow, &["curl *", "/opt/bin/tool *"]);
            for (cmd, rule) in [
                ("curl x", "commands.deny[0] `curl *`"),
                ("/usr/bin/curl x", "commands.deny[0] `curl *`"),
                ("./curl x", "commands.deny[0] `curl *`"),
                ("taskset 1 /usr/bin/curl x", "commands.deny[0] `curl *`"),
                // A deny rule written with a path matches the path as written.
                ("/opt/bin/tool x", "commands.deny[1] `/opt/bin/tool *`"),
            ] {
                let d = decide_command(&p, cmd);
                assert!(!d.allowed, "default_allow={default_allow} {cmd}: {d:?}");
                assert_eq!(d.rule, rule, "default_allow={default_allow} {cmd}");
            }
            assert_eq!(decide_command(&p, "taskset 1 /usr/bin/curl x").subject, "/usr/bin/curl x");
            assert!(decide_command(&p, "taskset 1 ls").allowed == default_allow);
            assert!(decide_command(&p, "/opt/bin/other x").allowed == default_allow);
        }
        // Allow rules match the words as written, from the first: no base name.
        let p = with_rules(false, &["ls *"], &[]);
        assert!(decide_command(&p, "ls -l").allowed);
        assert!(!decide_command(&p, "/bin/ls -l").allowed);
        assert!(!decide_command(&p, "nice ls -l").allowed);
    }

    #[test]
    fn an_allowed_line_names_each_rule_once() {
        let p = with_rules(false, &["ls *", "cat *"], &[]);
        let d = decide_command(&p, "ls && ls -la && cat a | cat");
        assert!(d.allowed);
        assert_eq!(d.rule, "commands.allow[0] `ls *`; commands.allow[1] `cat *`");
        assert_eq!(d.subject, "ls && ls -la && cat a | cat");
        assert_eq!(decide_command(&p, "").rule, "nothing to run");
        let d = decide_command(&with_rules(true, &[], &[]), "make");
        assert_eq!((d.allowed, d.rule.as_str()), (true, "commands.default: allow"));
    }

    #[test]
    fn path_denials_name_the_command_and_the_path() {
        let p = with_rules(true, &[], &[]);
        let d = decide_command(&p, "echo x > .git/hooks/pre-commit");
        assert_eq!(d.rule, "built-in: .git is never writable");
        assert_eq!(d.subject, "echo x (writes .git/hooks/pre-commit)");
        let d = decide_command(&p, "cat -n src/.env");
        assert_eq!(d.rule, "default.read_deny[0] `**/.env`");
        assert_eq!(d.subject, "cat -n src/.env (reads src/.env)");
        assert_eq!(d.hint, "this file may hold secrets and is not readable");
    }

    #[test]
    fn glob_arguments_that_could_name_a_read_denied_file_are_refused() {
        let p = with_rules(true, &[], &[]);
        for (cmd, rule) in [
            ("cat .en?", "default.read_deny[0] `**/.env`"),
            ("cat .e*", "default.read_deny[0] `**/.env`"),
            ("cat .en[v].*", "default.read_deny[1] `**/.env.*`"),
            ("head keys/id_*", "default.read_deny[4] `**/id_rsa*`"),
        ] {
            let d = decide_command(&p, cmd);
            assert!(!d.allowed, "{cmd}");
            assert_eq!(d.rule, rule, "{cmd}");
            let arg = cmd.split_once(' ').unwrap().1;
            assert_eq!(d.subject, format!("{cmd} (reads {arg})"));
            assert_eq!(d.hint, "this glob can match a file that may hold secrets");
        }
        // A bare `*` or a one-letter glob is not refused (it would refuse `grep x *` everywhere);
        // `*` does not match a leading dot in bash; options and dynamic words are not paths.
        for ok in ["grep x *", "cat ?", "cat *.py", "cat *env", "ls --ignore=*.pem", "grep -r --exclude=*.key x ."] {
            assert!(decide_command(&p, ok).allowed, "{ok}: {:?}", decide_command(&p, ok));
        }
    }

    #[test]
    fn a_plain_argument_is_a_path_not_a_glob() {
        let mut p = with_rules(true, &[], &[]);
        p.read_deny = rules("paths.read_deny", &strs(&["config/prod.yaml"])).unwrap();
        assert!(!decide_command(&p, "cat config/prod.yaml").allowed);
        assert!(decide_command(&p, "cat prod.yaml").allowed);
        assert!(!decide_command(&p, "cat config/prod.y?ml").allowed);
    }

    #[test]
    fn tool_writes_keep_out_of_denied_and_protected_paths() {
        let p = Policy::base();
        let protected = [".hone".to_string(), "node_modules".to_string(), ".venv/bin/activate".to_string()];
        for (path, allowed) in [
            ("src/a.py", true),
            (".env", false),
            ("config/.env", false),
            (".hone/reports/report.json", false),
            (".hone", false),
            ("node_modules/x/index.js", false),
            ("node_modules_not/x.js", true),
            (".venv/bin/activate", false),
            (".venv/bin/other", true),
            (".github/workflows/ci.yml", false),
        ] {
            assert_eq!(decide_tool_write(&p, path, &protected).allowed, allowed, "{path}");
        }
    }
}
