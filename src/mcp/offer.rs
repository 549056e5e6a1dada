//! Which of a server's tools the model is offered: those the policy allows, whose names carry
//! no secret, within a size per tool and a budget for the run, each described with what the
//! server says (redacted).

use super::convert;
use crate::policy::{Policy, decide_mcp};
use crate::protocol::ToolSpec;
use crate::redact::Redactor;
use rmcp::model::Tool;

/// The largest spec (name, description, schema) one MCP tool may add to every request.
pub const MAX_TOOL_BYTES: usize = 16 * 1024;

/// What all MCP tools of a run may add to every request: at most this many tools (providers
/// refuse more than 128 in all) and bytes.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub tools: usize,
    pub bytes: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget { tools: 100, bytes: 128 * 1024 }
    }
}

/// One server's tools, sorted out.
#[derive(Debug, Default)]
pub struct Offer {
    /// (the tool's name, the spec the model sees).
    pub offered: Vec<(String, ToolSpec)>,
    /// `SERVER/TOOL` the policy keeps back.
    pub denied: Vec<String>,
    /// `SERVER/TOOL: why` of allowed tools left out.
    pub skipped: Vec<String>,
}

/// Sort out `tools` of `server`, spending `budget`.
pub fn select(server: &str, tools: &[Tool], policy: &Policy, redactor: &Redactor, budget: &mut Budget) -> Offer {
    let mut out = Offer::default();
    let mut allowed: Vec<&Tool> = Vec::new();
    for t in tools {
        let shown = redactor.apply(&t.name);
        if shown != t.name {
            // Its name would carry a secret into every request: never offered.
            out.skipped.push(format!("{server}/{shown}: its name holds a secret"));
        } else if decide_mcp(policy, server, &t.name).allowed {
            allowed.push(t);
        } else {
            out.denied.push(format!("{server}/{}", t.name));
        }
    }
    let names: Vec<String> = allowed.iter().map(|t| t.name.to_string()).collect();
    // Unique across servers too: a server's name has no `__` and does not end in `_`, so the
    // first `__` of an exposed name ends the server's.
    let exposed = convert::exposed_names(server, &names);
    for (t, exposed) in allowed.into_iter().zip(exposed) {
        let description = t.description.as_deref().map(|d| redactor.apply(d));
        let schema = serde_json::to_string(t.input_schema.as_ref())
            .ok()
            .and_then(|j| serde_json::from_str(&redactor.apply(&j)).ok())
            .unwrap_or_default();
        let spec = convert::tool_spec(&exposed, server, &t.name, description.as_deref(), &schema);
        let size = serde_json::to_string(&spec).map_or(usize::MAX, |s| s.len());
        let why = if size > MAX_TOOL_BYTES {
            Some(format!("its description and schema take {size} bytes (at most {MAX_TOOL_BYTES})"))
        } else if budget.tools == 0 {
            Some("the run offers at most 100 MCP tools".to_string())
        } else if size > budget.bytes {
            Some("the run's MCP tools may add at most 128 KB to each request".to_string())
        } else {
            None
        };
        match why {
            Some(why) => out.skipped.push(format!("{server}/{}: {why}", t.name)),
            None => {
                budget.tools -= 1;
                budget.bytes -= size;
                out.offered.push((t.name.to_string(), spec));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, schema: serde_json::Value) -> Tool {
        serde_json::from_value(json!({"name": name, "description": "d", "inputSchema": schema})).unwrap()
    }

    fn policy(allow: &str) -> Policy {
        crate::policy::parse("p.yaml", &format!("version: 1\nmcp:\n  allow: [{allow}]\n")).unwrap()
    }

    #[test]
    fn secrets_size_and_budget_keep_tools_back_and_say_why() {
        let r = Redactor::new();
        r.add("s3cret-token-value");
        let big = json!({"type": "object", "description": "x".repeat(20_000)});
        let tools = [
            tool("ok", json!({"type": "object"})),
            tool("t_s3cret-token-value", json!({"type": "object"})),
            tool("huge", big),
            tool("other", json!({"type": "object"})),
            tool("ok2", json!({"type": "object", "title": "s3cret-token-value"})),
        ];
        let mut budget = Budget::default();
        let o = select("srv", &tools, &policy("'srv/ok*', 'srv/t_*', 'srv/huge'"), &r, &mut budget);
        let names: Vec<&str> = o.offered.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["ok", "ok2"]);
        assert!(!o.offered[1].1.parameters.to_string().contains("s3cret"), "schemas are redacted");
        assert_eq!(o.denied, ["srv/other"]);
        assert_eq!(o.skipped.len(), 2, "{:?}", o.skipped);
        assert!(o.skipped[0].starts_with("srv/t_[REDACTED]: its name holds a secret"), "{:?}", o.skipped);
        assert!(o.skipped[1].starts_with("srv/huge: its description and schema take"), "{:?}", o.skipped);
        assert_eq!(budget.tools, 98);
        let mut spent = Budget { tools: 1, bytes: 1 << 20 };
        let many: Vec<Tool> = (0..3).map(|i| tool(&format!("ok{i}"), json!({"type": "object"}))).collect();
        let o = select("srv", &many, &policy("'srv/*'"), &r, &mut spent);
        assert_eq!((o.offered.len(), o.skipped.len()), (1, 2));
        assert!(o.skipped[0].ends_with("the run offers at most 100 MCP tools"));
    }
}
