//! The policy told to the model: which commands it may run, which paths it may not read or
//! write, whether it has network; and, with a denial, the allowed patterns nearest to what it
//! tried. A model that knows the rules wastes no turns on denials.

use super::network::Egress;
use super::{PWord, Pattern, Policy};

fn list(items: &[String]) -> String {
    items.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>().join(", ")
}

/// The rules as a section of the system prompt.
pub fn for_model(p: &Policy) -> String {
    let allow: Vec<String> = p.allow.iter().map(|a| a.text.clone()).collect();
    let deny: Vec<String> = p.deny.iter().map(|d| d.text.clone()).collect();
    let mut s = String::new();
    if p.default_allow {
        s.push_str("- run_cmd: any command is allowed except those matching a denied pattern.\n");
    } else if allow.is_empty() {
        s.push_str("- run_cmd: no command is allowed; use the file and search tools.\n");
    } else {
        s.push_str(&format!(
            "- run_cmd: only commands matching these patterns are allowed (`*` alone matches any words, and every command in a pipeline or list must match): {}.\n",
            list(&allow)
        ));
    }
    if !deny.is_empty() {
        s.push_str(&format!("- Denied whatever else matches: {}.\n", list(&deny)));
    }
    let globs = |rules: &[super::PathRule]| rules.iter().map(|r| r.glob.clone()).collect::<Vec<_>>();
    let read_deny = globs(&p.read_deny);
    if !read_deny.is_empty() {
        s.push_str(&format!("- Paths you may not read: {}.\n", list(&read_deny)));
    }
    let mut write_deny = vec![".git/**".to_string()];
    write_deny.extend(globs(&p.write_deny));
    s.push_str(&format!("- Paths you may not write: {}.\n", list(&write_deny)));
    if !p.write_allow.is_empty() {
        s.push_str(&format!("- Only these paths may change: {}.\n", list(&globs(&p.write_allow))));
    }
    s.push_str(&match &p.network {
        Egress::Open => "- Commands have network access.\n".to_string(),
        Egress::Off => "- Commands have no network access (no downloads, no package installs).\n".to_string(),
        Egress::Allow(rules) => format!(
            "- Commands reach only these hosts, through a proxy set in HTTPS_PROXY and HTTP_PROXY: {}.\n",
            list(&rules.iter().map(|r| format!("`{}`", r.text)).collect::<Vec<_>>())
        ),
    });
    s.push_str(&format!(
        "- The change may touch at most {} files, {} lines and {} bytes.\n",
        p.max_files_changed, p.max_lines_changed, p.max_bytes_changed
    ));
    s
}

/// Allowed patterns nearest to a denied command: those for the same program, else every one.
pub fn similar_allows(p: &Policy, argv: &[String]) -> Vec<String> {
    let program = argv.first().map(|a| a.rsplit('/').next().unwrap_or(a)).unwrap_or("");
    let same: Vec<&Pattern> = p
        .allow
        .iter()
        .filter(|a| match a.words.first() {
            Some(PWord::Literal(w)) => w == program,
            Some(PWord::Glob(g)) => g.is_match(program),
            _ => false,
        })
        .collect();
    let pick = if same.is_empty() { p.allow.iter().collect() } else { same };
    pick.iter().take(30).map(|a| a.text.clone()).collect()
}

/// The hint for a command no allow rule matches.
pub fn not_allowed_hint(p: &Policy, argv: &[String]) -> String {
    let near = similar_allows(p, argv);
    if near.is_empty() {
        return "no command is allowed by this policy; use the file and search tools instead".into();
    }
    format!(
        "the policy allows only commands matching: {}; use one of those forms, or the file and search tools",
        list(&near)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::compile_pattern;

    fn policy(allow: &[&str]) -> Policy {
        let mut p = Policy::base();
        p.allow = allow.iter().enumerate().map(|(i, a)| compile_pattern(&format!("a[{i}]"), a).unwrap()).collect();
        p
    }

    #[test]
    fn a_denial_names_the_patterns_for_the_same_program_first() {
        let p = policy(&["git diff *", "git log *", "ls *", "python -m pytest *"]);
        let argv = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(similar_allows(&p, &argv("git push origin")), ["git diff *", "git log *"]);
        assert_eq!(similar_allows(&p, &argv("/usr/bin/git commit")), ["git diff *", "git log *"]);
        assert_eq!(similar_allows(&p, &argv("sed -i x")).len(), 4, "no pattern for sed: all of them");
        assert!(not_allowed_hint(&p, &argv("git push")).contains("`git diff *`, `git log *`"));
        assert!(not_allowed_hint(&policy(&[]), &argv("ls")).contains("no command is allowed"));
    }

    #[test]
    fn the_model_is_told_what_it_may_run_read_and_write() {
        let p = policy(&["ls *"]);
        let text = for_model(&p);
        assert!(
            text.contains("only commands matching these patterns are allowed") && text.contains("`ls *`"),
            "{text}"
        );
        assert!(text.contains("Paths you may not write: `.git/**`"), "{text}");
        assert!(text.contains("no network access"), "{text}");
        let mut listed = policy(&["ls *"]);
        listed.network =
            Egress::Allow(vec![super::super::network::Rule::parse("network.allow[0]", "pypi.org").unwrap()]);
        let text = for_model(&listed);
        assert!(text.contains("Commands reach only these hosts") && text.contains("`pypi.org`"), "{text}");
    }
}
