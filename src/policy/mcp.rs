//! Which MCP tools the model is offered (`mcp:` in the policy): globs over `SERVER/TOOL`, a deny
//! winning over an allow, and nothing offered that no allow names.

use super::{Decision, PathRule, Policy, rules};
use crate::spec::{Diagnostic, yaml};

/// Decide whether the model may see and call `tool` of MCP server `server`. Pure.
pub fn decide_mcp(p: &Policy, server: &str, tool: &str) -> Decision {
    let subject = format!("{server}/{tool}");
    let hit = |list: &[PathRule]| {
        list.iter().find(|r| r.matcher.is_match(&subject)).map(|r| format!("{} `{}`", r.key, r.glob))
    };
    if let Some(rule) = hit(&p.mcp_deny) {
        let hint = "the policy keeps this tool from the model; do the work with the other tools";
        return Decision { allowed: false, rule, subject, hint: hint.into() };
    }
    if let Some(rule) = hit(&p.mcp_allow) {
        return Decision { allowed: true, rule, subject, hint: String::new() };
    }
    let hint = format!("MCP tools are offered only when the policy names them: add `{subject}` to `mcp.allow`");
    Decision { allowed: false, rule: "mcp (no allow matches)".into(), subject, hint }
}

/// Load `mcp.allow` and `mcp.deny`, reporting a bad glob at its position.
pub(super) fn rules_from(p: &mut Policy, raw: super::raw::RawMcp, map: &yaml::SourceMap, errors: &mut Vec<Diagnostic>) {
    for (list, key, target) in [(raw.allow, "mcp.allow", &mut p.mcp_allow), (raw.deny, "mcp.deny", &mut p.mcp_deny)] {
        let Some(globs) = list else { continue };
        for (i, g) in globs.iter().enumerate() {
            if g.split('/').count() != 2 || g.starts_with('/') || g.ends_with('/') {
                errors.push(map.at_value(
                    &format!("{key}[{i}]"),
                    format!("`{g}` is not a `SERVER/TOOL` pattern"),
                    Some("name a server and a tool, with globs: `issues/lookup_*`, `docs/*`".into()),
                ));
            }
        }
        match rules(key, &globs) {
            Ok(r) => *target = r,
            Err((k, e)) => errors.push(map.at_value(
                &k,
                format!("bad glob: {e}"),
                Some("use globs over `SERVER/TOOL`, like `issues/lookup_*`".into()),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(text: &str) -> Policy {
        super::super::parse("p.yaml", &format!("version: 1\n{text}")).unwrap()
    }

    #[test]
    fn nothing_is_offered_unless_an_allow_names_it() {
        let p = policy("");
        let d = decide_mcp(&p, "issues", "lookup");
        assert!(!d.allowed);
        assert!(d.hint.contains("add `issues/lookup` to `mcp.allow`"), "{}", d.hint);
        assert!(!decide_mcp(&Policy::builtin(), "issues", "lookup").allowed, "the built-in policy offers none");
    }

    #[test]
    fn globs_match_server_and_tool_and_a_deny_wins() {
        let p = policy("mcp:\n  allow: ['issues/lookup_*', 'docs/*']\n  deny: ['docs/delete*']\n");
        let cases = [
            ("issues", "lookup_issue", true, "mcp.allow[0] `issues/lookup_*`"),
            ("issues", "close_issue", false, "mcp (no allow matches)"),
            ("docs", "search", true, "mcp.allow[1] `docs/*`"),
            ("docs", "delete_page", false, "mcp.deny[0] `docs/delete*`"),
            ("other", "lookup_x", false, "mcp (no allow matches)"),
        ];
        for (server, tool, allowed, rule) in cases {
            let d = decide_mcp(&p, server, tool);
            assert_eq!((d.allowed, d.rule.as_str()), (allowed, rule), "{server}/{tool}");
            assert_eq!(d.subject, format!("{server}/{tool}"));
        }
        // `*` never reaches across the slash: `*` alone names no tool of any server.
        let p = policy("mcp:\n  allow: ['*/*']\n");
        assert!(decide_mcp(&p, "a", "b").allowed);
    }

    #[test]
    fn bad_patterns_are_reported_where_they_are() {
        let errs = super::super::parse("p.yaml", "version: 1\nmcp:\n  allow: ['lookup_*', 'a/[']\n").unwrap_err();
        let text: Vec<String> = errs.iter().map(|d| d.render("E_POLICY")).collect();
        assert!(text.iter().any(|t| t.contains("p.yaml:3:") && t.contains("not a `SERVER/TOOL` pattern")), "{text:?}");
        assert!(text.iter().any(|t| t.contains("bad glob")), "{text:?}");
    }
}
