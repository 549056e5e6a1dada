//! Which MCP tools the model is offered (`mcp:` in the policy): globs over `SERVER/TOOL`, a deny
//! winning over an allow, and nothing offered that no allow names. A pattern that does not
//! compile is a `RuleError`: the message of the policy's diagnostic at its position.

use super::rule_error::RuleError;
use super::{Decision, Policy};
use crate::spec::{Diagnostic, yaml};
use globset::{GlobBuilder, GlobMatcher};

/// One `mcp.allow` or `mcp.deny` pattern: a glob for the server's name and one for the tool's.
#[derive(Debug, Clone)]
pub struct McpRule {
    /// Where it came from, e.g. `mcp.allow[0]`.
    pub key: String,
    pub pattern: String,
    server: GlobMatcher,
    tool: GlobMatcher,
}

impl McpRule {
    /// `SERVER/TOOL`, split at the first `/`: `*` in the tool's part matches any characters,
    /// `/` included (tool names may hold one), and never reaches into the server's name.
    fn new(key: String, pattern: &str) -> Result<McpRule, RuleError> {
        let (server, tool) = pattern
            .split_once('/')
            .filter(|(s, t)| !s.is_empty() && !t.is_empty() && !s.contains('/'))
            .ok_or_else(|| RuleError::NotServerTool(pattern.into()))?;
        let glob = |g: &str| GlobBuilder::new(g).build().map(|g| g.compile_matcher()).map_err(RuleError::McpGlob);
        Ok(McpRule { key, pattern: pattern.to_string(), server: glob(server)?, tool: glob(tool)? })
    }

    fn matches(&self, server: &str, tool: &str) -> bool {
        self.server.is_match(server) && self.tool.is_match(tool)
    }
}

/// Decide whether the model may see and call `tool` of MCP server `server`. Pure.
pub fn decide_mcp(p: &Policy, server: &str, tool: &str) -> Decision {
    let subject = format!("{server}/{tool}");
    let hit =
        |list: &[McpRule]| list.iter().find(|r| r.matches(server, tool)).map(|r| format!("{} `{}`", r.key, r.pattern));
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

/// Load `mcp.allow` and `mcp.deny`, reporting a bad pattern at its position.
pub(super) fn rules_from(p: &mut Policy, raw: super::raw::RawMcp, map: &yaml::SourceMap, errors: &mut Vec<Diagnostic>) {
    for (list, key, target) in [(raw.allow, "mcp.allow", &mut p.mcp_allow), (raw.deny, "mcp.deny", &mut p.mcp_deny)] {
        for (i, g) in list.unwrap_or_default().iter().enumerate() {
            let k = format!("{key}[{i}]");
            match McpRule::new(k.clone(), g) {
                Ok(r) => target.push(r),
                Err(e) => errors.push(map.at_value(
                    &k,
                    e.to_string(),
                    Some("name a server and a tool, with globs: `issues/lookup_*`, `docs/*`".into()),
                )),
            }
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
        let p = policy("mcp:\n  allow: ['*/*']\n");
        assert!(decide_mcp(&p, "a", "b").allowed);
        // A tool's name may hold a `/`: a deny of `delete*` covers `delete/all` too.
        let p = policy("mcp:\n  allow: ['srv/*']\n  deny: ['srv/delete*']\n");
        assert!(decide_mcp(&p, "srv", "list/all").allowed);
        assert!(!decide_mcp(&p, "srv", "delete/all").allowed);
        // The server's part never spans into the tool's.
        let p = policy("mcp:\n  allow: ['a*/x']\n");
        assert!(!decide_mcp(&p, "ab", "c/x").allowed);
    }

    #[test]
    fn bad_patterns_are_reported_where_they_are() {
        let errs = super::super::parse("p.yaml", "version: 1\nmcp:\n  allow: ['lookup_*', 'a/[']\n").unwrap_err();
        let text: Vec<String> = errs.iter().map(|d| d.render("E_POLICY")).collect();
        assert!(text.iter().any(|t| t.contains("p.yaml:3:") && t.contains("not a `SERVER/TOOL` pattern")), "{text:?}");
        assert!(text.iter().any(|t| t.contains("bad glob")), "{text:?}");
    }
}
