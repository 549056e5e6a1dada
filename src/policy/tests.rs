//! The policy decision table, path rules, examples-at-load, and a property test: wrapping a
//! denied command in any supported form never turns it into an allow.

use super::*;

fn policy() -> Policy {
    let mut p = Policy::base();
    for (i, a) in [
        "python -m pytest *",
        "ruff *",
        "git diff *",
        "git status",
        "git log *",
        "ls *",
        "cat *",
        "sed -n *",
        "echo *",
        "grep *",
        "bash -c *",
        "sh -c *",
        "env *",
        "timeout *",
        "nice *",
        "xargs *",
        "find *",
        "exec *",
        "command *",
        "watch *",
    ]
    .iter()
    .enumerate()
    {
        p.allow.push(compile_pattern(&format!("commands.allow[{i}]"), a).unwrap());
    }
    for (i, d) in ["git push *", "curl *", "wget *", "sudo *"].iter().enumerate() {
        p.deny.push(compile_pattern(&format!("commands.deny[{i}]"), d).unwrap());
    }
    p.write_deny = rules("paths.write_deny", &strs(&[".github/**", ".git/**", "hone-policy.yaml"])).unwrap();
    p
}

#[test]
fn command_decision_table() {
    let chain_ok = vec!["ls"; 60].join(" && ");
    let chain_bad = format!("{chain_ok} && curl x");
    let cases: Vec<(&str, bool)> = vec![
        ("python -m pytest -q tests/test_a.py", true),
        ("python -m pytest", true),
        ("git status", true),
        ("git status --short", false),
        ("ls", true),
        ("ls -la src", true),
        ("git diff HEAD~1 -- src", true),
        ("curl https://example.com", false),
        ("/usr/bin/curl x", false),
        ("(((curl x)))", false),
        ("((curl x) && (wget y))", false),
        ("((i + 1))", true),
        ("python -m pytest; curl x", false),
        ("python -m pytest && curl x", false),
        ("python -m pytest || curl x", false),
        ("ls | curl -d @- x", false),
        ("bash -c 'curl x'", false),
        ("sh -c \"ls && wget x\"", false),
        ("bash -c 'bash -c \"curl x\"'", false),
        ("bash -lc 'curl x'", false),
        ("bash -c 'ls -la'", true),
        ("echo $(curl x)", false),
        ("echo `curl x`", false),
        ("echo \"$(curl x)\"", false),
        ("cat <(curl x)", false),
        ("X=$(curl x) ls", false),
        ("env X=1 curl x", false),
        ("env -i curl x", false),
        ("env X=1 ls", true),
        ("timeout 5 curl x", false),
        ("timeout -s KILL 5 python -m pytest", true),
        ("nice -n 5 curl x", false),
        ("exec curl x", false),
        ("command curl x", false),
        ("watch -n 1 curl x", false),
        ("git -c core.sshCommand='curl x' fetch", false),
        ("git -c alias.st='!curl x' st", false),
        ("git --config-env=core.pager=P log", false),
        ("find . -name '*.py' -exec curl x {} \\;", false),
        ("find . -name '*.py' -exec grep -l TODO {} +", true),
        ("find . -name '*.py'", true),
        (chain_ok.as_str(), true),
        (chain_bad.as_str(), false),
        ("ls\r; curl x", false),
        ("ls\r", false),
        ("ls \u{200B}src", false),
        ("ls \u{202E}crs", false),
        ("\u{0441}url x", false),
        ("eval 'ls'", false),
        ("$CMD args", false),
        ("${X:-curl} x", false),
        ("c?rl x", false),
        ("cat .env", false),
        ("cat src/config/.env", false),
        ("cat deploy/key.pem", false),
        ("cat README.md", true),
        ("grep -r TODO < .env", false),
        ("echo x > .github/workflows/evil.yml", false),
        ("echo x > .git/hooks/pre-commit", false),
        ("echo x >> ./src/../.git/config", false),
        ("echo x > hone-policy.yaml", false),
        ("echo x > out.txt", true),
        ("echo hi >&2", true),
        ("ls 2>/dev/null", true),
        ("cat <<EOF\n$(curl x)\nEOF\n", false),
        ("cat <<'EOF'\n$(curl x)\nEOF\n", true),
        ("xargs curl < urls.txt", false),
        ("echo src | xargs ls", true),
        ("xargs -I{} {} < cmds.txt", false),
        ("sudo ls", false),
        ("(curl x)", false),
        ("{ ls; curl x; }", false),
        ("if ls; then curl x; fi", false),
        ("for f in $(curl x); do echo $f; done", false),
        ("while ls; do curl x; done", false),
        ("case $(curl x) in *) ls;; esac", false),
        ("f() { curl x; }; f", false),
        ("sed -n '1e curl x' file.txt", false),
        ("sed -n 's/a/b/e' file.txt", false),
        ("sed -n '1,5p' file.txt", true),
        ("PATH=/tmp/evil:$PATH python -m pytest", false),
        ("LD_PRELOAD=./x.so ls", false),
        ("env PATH=/tmp ls", false),
        ("BASH_ENV=./x bash -c ls", false),
        ("python -m pytest 'unterminated", false),
        ("wget x", false),
        ("python -c 'import os'", false),
        ("git push origin main", false),
        ("git status; git push", false),
        ("echo curl x | bash", false),
        ("bash", false),
        ("time ls", true),
        ("! ls", true),
        ("git rebase -x 'curl x' HEAD~1", false),
        ("echo $((1 + $(curl x)))", false),
        ("[[ $(curl x) == y ]] && ls", false),
        ("rm -rf /", false),
        ("((curl x))", false),
        ("(( i + 1 ))", true),
        ("", true),
    ];
    assert!(cases.len() >= 40);
    let p = policy();
    let mut wrong = Vec::new();
    for (cmd, want) in &cases {
        let d = decide_command(&p, cmd);
        if d.allowed != *want {
            wrong.push(format!("{cmd:?}: expected {}, got {:?}", if *want { "allow" } else { "deny" }, d));
        }
    }
    assert!(wrong.is_empty(), "{} of {} cases wrong:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
}

#[test]
fn denials_name_the_rule_and_the_subject() {
    let p = policy();
    let d = decide_command(&p, "ls && timeout 3 curl -s x");
    assert_eq!(d.rule, "commands.deny[1] `curl *`");
    assert_eq!(d.subject, "curl -s x");
    assert!(!d.hint.is_empty());
    let d = decide_command(&p, "make build");
    assert!(d.rule.starts_with("commands.default: deny"), "{d:?}");
    let d = decide_command(&p, "eval x");
    assert!(d.rule.starts_with("unanalysable: uses `eval`"), "{d:?}");
}

#[test]
fn path_rules() {
    let mut p = policy();
    p.write_allow = rules("paths.write_allow", &strs(&["src/**", "tests/**"])).unwrap();
    let cases = [
        ("src/a.py", Access::Write, true),
        ("tests/x/y.py", Access::Write, true),
        ("README.md", Access::Write, false),
        (".git/config", Access::Write, false),
        ("src/../.github/workflows/x.yml", Access::Write, false),
        (".env", Access::Read, false),
        ("a/b/.env", Access::Read, false),
        ("a/b/.env.local", Access::Read, false),
        ("src/a.py", Access::Read, true),
        ("certs/server.pem", Access::Read, false),
    ];
    for (path, access, want) in cases {
        assert_eq!(decide_path(&p, path, access).allowed, want, "{path} {access:?}");
    }
}

#[test]
fn builtin_policy_allows_the_verify_commands_and_read_only_inspection() {
    // The built-in policy is a policy file: it loads with no error and its examples hold.
    let loaded = parse("builtin.yaml", BUILTIN_YAML);
    assert!(loaded.is_ok(), "{:?}", loaded.err());
    let mut p = Policy::builtin();
    assert!(p.source.is_none());
    p.allow_verify(&[
        ("test".into(), "python3 -m unittest -q".into()),
        ("lint".into(), "ruff check . && mypy src".into()),
    ]);
    assert!(decide_command(&p, "python3 -m unittest -q").allowed);
    assert!(decide_command(&p, "python3 -m unittest -q test_calc").allowed);
    assert!(decide_command(&p, "mypy src").allowed);
    assert!(!decide_command(&p, "python3 -c 'print(1)'").allowed);
    // The ordinary inspection commands a model reaches for first.
    for ok in ["ls", "cat app.py | tail -5", "grep -n main app.py", "git diff", "git log -3 --stat", "wc -l a b"] {
        assert!(decide_command(&p, ok).allowed, "{ok}: {:?}", decide_command(&p, ok));
    }
    for bad in ["sed -i s/a/b/ app.py", "git diff --output=x", "git show --ext-diff", "cat .env", "git push"] {
        assert!(!decide_command(&p, bad).allowed, "{bad}");
    }
    let d = decide_command(&p, "git push origin main");
    assert!(d.hint.contains("`git status *`") && d.hint.contains("`git diff *`"), "{}", d.hint);
    assert!(p.network == network::Egress::Off && p.sandbox);
}

fn load_str(text: &str) -> Result<Policy, Vec<Diagnostic>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hone-policy.yaml");
    std::fs::write(&path, text).unwrap();
    load(&path)
}

const ISSUE_EXAMPLE: &str = r#"version: 1
commands:
  default: deny
  allow: ["python -m pytest *", "ruff *", "git diff *", "git status", "ls *", "cat *", "sed -n *"]
  deny:  ["git push *", "curl *", "wget *", "sudo *"]
  examples:
    allow: ["python -m pytest -q tests/test_a.py"]
    deny:  ["bash -c 'curl x'", "python -m pytest; curl x"]
paths:
  read_deny:  ["**/.env", "**/*.pem", "**/id_*"]
  write_allow: ["src/**", "tests/**"]
  write_deny: [".github/**", ".git/**", "hone-policy.yaml"]
network: false
env:
  pass: ["PATH", "HOME", "LANG"]
limits: { max_files_changed: 50, max_lines_changed: 2000 }
"#;

#[test]
fn the_documented_example_loads() {
    let p = load_str(ISSUE_EXAMPLE).unwrap();
    assert_eq!((p.max_files_changed, p.max_lines_changed), (50, 2000));
    assert_eq!(p.env_pass, ["PATH", "HOME", "LANG"]);
    assert!(!p.default_allow && p.network == network::Egress::Off);
}

#[test]
fn sandbox_off_is_read_as_a_word_not_a_boolean() {
    let p = load_str("version: 1\nsandbox: off\nnetwork: true\n").unwrap();
    assert!(!p.sandbox && p.network.is_open());
}

#[test]
fn examples_that_disagree_with_the_rules_make_the_policy_invalid() {
    let text = ISSUE_EXAMPLE
        .replace(r#"allow: ["python -m pytest -q tests/test_a.py"]"#, r#"allow: ["python -m pytest -q", "make test"]"#);
    let e = load_str(&text).unwrap_err();
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].path, "commands.examples.allow[1]");
    assert!(
        e[0].message.starts_with("the rules deny `make test`, but the example expects the opposite"),
        "{}",
        e[0].message
    );
}

#[test]
fn invalid_policies_report_positions() {
    let e =
        load_str("version: 1\ncommands: { default: maybe, alow: [] }\npaths: { read_deny: ['a[b'] }\n").unwrap_err();
    let paths: Vec<_> = e.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, ["commands.default", "commands.alow", "paths.read_deny[0]"], "{e:#?}");
    assert!(e[1].help.as_deref().unwrap().contains("did you mean `allow`"));
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn single_quote(s: &str) -> String {
        format!("'{}'", s.replace('\'', "'\\''"))
    }

    /// Wrap `inner` in form `k`.
    fn wrap(k: usize, inner: &str) -> String {
        match k {
            0 => format!("bash -c {}", single_quote(inner)),
            1 => format!("sh -c {}", single_quote(inner)),
            2 => format!("echo $({inner})"),
            3 => format!("echo \"$({inner})\""),
            4 => format!("cat <({inner})"),
            5 => format!("env X=1 {inner}"),
            6 => format!("timeout 5 {inner}"),
            7 => format!("nice {inner}"),
            8 => format!("ls && {inner}"),
            9 => format!("ls; {inner}"),
            10 => format!("ls || {inner}"),
            11 => format!("ls | {inner}"),
            12 => format!("({inner})"),
            13 => format!("{{ {inner}; }}"),
            14 => format!("X=$({inner}) ls"),
            15 => format!("if ls; then {inner}; fi"),
            16 => format!("for f in a; do {inner}; done"),
            17 => format!("cat <<EOF\n$({inner})\nEOF\n"),
            18 => format!("exec {inner}"),
            _ => format!("command {inner}"),
        }
    }

    proptest! {
        #![proptest_config(crate::testutil::proptest_config(700))]
        #[test]
        fn wrapping_a_denied_command_never_allows_it(
            base in prop::sample::select(vec!["curl x", "wget -q y", "git push origin main", "sudo ls", "rm -rf /", "/usr/bin/curl z", "python -c 'import os'"]),
            forms in prop::collection::vec(0usize..20, 1..4),
        ) {
            let p = policy();
            prop_assert!(!decide_command(&p, base).allowed);
            let mut cmd = base.to_string();
            for k in forms {
                cmd = wrap(k, &cmd);
            }
            let d = decide_command(&p, &cmd);
            prop_assert!(!d.allowed, "{cmd:?} was allowed by {}", d.rule);
        }

        #[test]
        fn analysis_never_panics(s in "\\PC{0,120}") {
            let _ = decide_command(&policy(), &s);
        }
    }
}

#[test]
fn deny_rules_match_a_program_by_its_path_too_under_default_allow() {
    // Under default-deny an unlisted `/usr/bin/curl` is refused anyway; here only the deny rule
    // can refuse it, so this exercises the basename match itself.
    let mut p = policy();
    p.default_allow = true;
    for (cmd, allowed) in [
        ("/usr/bin/curl x", false),
        ("./curl x", false),
        ("/opt/tools/wget -q y", false),
        ("/usr/bin/sudo ls", false),
        ("/usr/local/bin/make test", true),
        ("curly x", true),
        ("/usr/bin/curl-config --version", true),
    ] {
        let d = decide_command(&p, cmd);
        assert_eq!(d.allowed, allowed, "{cmd}: {}", d.rule);
    }
}

#[test]
fn network_allow_lists_load_for_each_kind_of_jail_and_combine() {
    let p = load_str(
        "version: 1\nnetwork: { allow: [\"pypi.org\"] }\nsetup:\n  network: { allow: [\"*.npmjs.org:443\"] }\nmcp:\n  network: true\n",
    )
    .unwrap();
    assert_eq!(p.network.rules().unwrap()[0].cite(), "network.allow[0] `pypi.org`");
    let setup = p.setup_egress();
    let keys: Vec<String> = setup.rules().unwrap().iter().map(|r| r.cite()).collect();
    assert_eq!(keys, ["network.allow[0] `pypi.org`", "setup.network.allow[0] `*.npmjs.org:443`"]);
    assert!(p.mcp_egress().is_open());
    let p = load_str("version: 1\nnetwork: true\nsetup: { network: false }\n").unwrap();
    assert!(p.setup_egress().is_open(), "setup gets at least what commands get");
}

#[test]
fn bad_network_rules_and_lists_without_the_sandbox_are_errors_at_their_positions() {
    let e = load_str("version: 1\nnetwork:\n  allow: [\"ok.org\", \"*\"]\n").unwrap_err();
    assert_eq!((e.len(), e[0].path.as_str(), e[0].line, e[0].col), (1, "network.allow[1]", 3, 21), "{e:?}");
    let e = load_str("version: 1\nsandbox: off\nsetup:\n  network: { allow: [\"pypi.org\"] }\n").unwrap_err();
    assert_eq!((e[0].path.as_str(), e[0].line), ("setup.network", 4), "{e:?}");
    assert!(e[0].message.contains("needs the sandbox"), "{e:?}");
    let e = load_str("version: 1\nnetwork: maybe\n").unwrap_err();
    assert!(e[0].message.contains("expected `true`, `false` or `{ allow: [HOST, ...] }`"), "{e:?}");
}
