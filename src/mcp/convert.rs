//! MCP to hone's tool protocol and back, with no I/O: the names the model sees, the tool specs
//! it is offered, and what a tool's result reads like.

use crate::protocol::ToolSpec;
use serde_json::{Map, Value};
use sha2::Digest;

/// Tool names the providers accept: `^[a-zA-Z0-9_-]{1,64}$`.
const MAX_NAME: usize = 64;
/// A tool's description is cut here: it is in every request.
const MAX_DESCRIPTION: usize = 1024;

/// The names the model sees for `tools` of `server`: `SERVER__TOOL`, with characters providers
/// refuse replaced by `_`, too-long names cut and given a hash, and clashes numbered. Pure and
/// stable: the same list always gives the same names.
pub fn exposed_names(server: &str, tools: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(tools.len());
    for tool in tools {
        let clean: String =
            tool.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
        let mut name = format!("{server}__{clean}");
        if name.len() > MAX_NAME {
            let hash = sha2::Sha256::digest(tool.as_bytes());
            let tag: String = hash.iter().take(3).map(|b| format!("{b:02x}")).collect();
            name.truncate(MAX_NAME - 7);
            name = format!("{name}_{tag}");
        }
        let mut unique = name.clone();
        let mut n = 2;
        while out.contains(&unique) {
            let suffix = format!("_{n}");
            unique = format!("{}{suffix}", &name[..name.len().min(MAX_NAME - suffix.len())]);
            n += 1;
        }
        out.push(unique);
    }
    out
}

/// The spec the model is offered for `tool` of `server`, from the tool's description and input
/// schema (made an object schema when the server's is not).
pub fn tool_spec(
    exposed: &str,
    server: &str,
    tool: &str,
    description: Option<&str>,
    schema: &Map<String, Value>,
) -> ToolSpec {
    let mut desc: String = description.unwrap_or("").trim().chars().take(MAX_DESCRIPTION).collect();
    if !desc.is_empty() {
        desc.push_str("\n\n");
    }
    desc.push_str(&format!("(Tool `{tool}` of the MCP server `{server}`.)"));
    let mut parameters = schema.clone();
    parameters.insert("type".into(), Value::String("object".into()));
    if !parameters.get("properties").is_some_and(Value::is_object) {
        parameters.insert("properties".into(), Value::Object(Map::new()));
    }
    ToolSpec { name: exposed.into(), description: desc, parameters: Value::Object(parameters) }
}

/// What the model reads for a tool result (the `CallToolResult` as JSON): its text parts in
/// order, other parts named but not shown, the structured result when there is no text; and
/// whether the tool said it failed.
pub fn render_result(result: &Value) -> (bool, String) {
    let failed = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
    let mut parts: Vec<String> = Vec::new();
    for block in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        parts.push(render_block(block));
    }
    if parts.iter().all(|p| p.trim().is_empty())
        && let Some(s) = result.get("structuredContent")
    {
        parts = vec![serde_json::to_string_pretty(s).unwrap_or_default()];
    }
    let text = parts.join("\n");
    let text = if text.trim().is_empty() { "(the tool returned nothing)".to_string() } else { text };
    (!failed, text)
}

fn render_block(block: &Value) -> String {
    let s = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("");
    match s("type") {
        "text" => s("text").to_string(),
        kind @ ("image" | "audio") => {
            format!("[{kind} ({}), {} bytes of base64, not shown]", s("mimeType"), s("data").len())
        }
        "resource" => {
            let r = block.get("resource").cloned().unwrap_or_default();
            let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
            match r.get("text").and_then(Value::as_str) {
                Some(t) => format!("[resource {uri}]\n{t}"),
                None => format!("[resource {uri}: binary, not shown]"),
            }
        }
        "resource_link" => format!("[link: {} {}]", s("name"), s("uri")),
        other => format!("[{other} content, not shown]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(server: &str, tools: &[&str]) -> Vec<String> {
        exposed_names(server, &tools.iter().map(|t| t.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn names_are_prefixed_valid_unique_and_stable() {
        assert_eq!(names("issues", &["lookup", "get-x"]), ["issues__lookup", "issues__get-x"]);
        let odd = names("docs", &["a.b", "a/b", "a b"]);
        assert_eq!(odd[0], "docs__a_b");
        assert_eq!(odd[1], "docs__a_b_2");
        assert_eq!(odd[2], "docs__a_b_3");
        let long = "x".repeat(100);
        let got = names("srv", &[long.as_str(), long.as_str()]);
        for n in &got {
            assert!(n.len() <= 64 && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'), "{n}");
        }
        assert_ne!(got[0], got[1]);
        assert_eq!(got, names("srv", &[long.as_str(), long.as_str()]), "the same list, the same names");
    }

    #[test]
    fn specs_are_object_schemas_that_say_where_they_come_from() {
        let schema = json!({"properties": {"id": {"type": "integer"}}, "required": ["id"]});
        let s = tool_spec("issues__lookup", "issues", "lookup", Some("Find an issue."), schema.as_object().unwrap());
        assert_eq!(s.parameters["type"], "object");
        assert_eq!(s.parameters["required"], json!(["id"]));
        assert!(s.description.starts_with("Find an issue.") && s.description.contains("MCP server `issues`"));
        let bare = tool_spec("a__b", "a", "b", None, &Map::new());
        assert_eq!(bare.parameters, json!({"type": "object", "properties": {}}));
        let long = "d".repeat(5000);
        assert!(tool_spec("a__b", "a", "b", Some(&long), &Map::new()).description.len() < 1100);
    }

    #[test]
    fn results_read_as_text_with_other_parts_named() {
        let r = json!({"content": [
            {"type": "text", "text": "issue 7: crash"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
            {"type": "resource_link", "uri": "https://x/1", "name": "one"},
        ]});
        let (ok, text) = render_result(&r);
        assert!(ok);
        assert_eq!(
            text,
            "issue 7: crash\n[image (image/png), 4 bytes of base64, not shown]\n[resource file:///a]\nbody\n[link: one https://x/1]"
        );
        let (ok, text) =
            render_result(&json!({"content": [{"type": "text", "text": "no such issue"}], "isError": true}));
        assert_eq!((ok, text.as_str()), (false, "no such issue"));
        let (_, text) = render_result(&json!({"content": [], "structuredContent": {"n": 1}}));
        assert_eq!(text, "{\n  \"n\": 1\n}");
        assert_eq!(render_result(&json!({})).1, "(the tool returned nothing)");
    }
}
