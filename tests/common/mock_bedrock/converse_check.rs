//! What Bedrock's Converse API refuses with a `ValidationException`, checked independently of
//! hone's code: unknown top-level keys, roles that do not alternate or do not start with the
//! user, blank text, content blocks of no known kind or of two, `toolUse` and `toolResult`
//! that do not pair up turn by turn, tool blocks without a `toolConfig`, more than 4 cache
//! points, and an `inferenceConfig` out of range.

use serde_json::Value;

const TOP: &[&str] = &[
    "messages",
    "system",
    "toolConfig",
    "inferenceConfig",
    "guardrailConfig",
    "additionalModelRequestFields",
    "additionalModelResponseFieldPaths",
    "promptVariables",
    "requestMetadata",
    "performanceConfig",
];
const BLOCKS: &[&str] = &["text", "toolUse", "toolResult", "cachePoint", "image", "document", "reasoningContent"];

/// `Ok`, or the message Bedrock's `ValidationException` gives.
pub fn check(body: &Value) -> Result<(), String> {
    let obj = body.as_object().ok_or("Malformed input request: the body is not an object")?;
    if let Some(k) = obj.keys().find(|k| !TOP.contains(&k.as_str())) {
        return Err(format!(
            "Malformed input request: extraneous key [{k}] is not permitted, please reformat your input and try again."
        ));
    }
    let msgs = body["messages"].as_array().ok_or("Malformed input request: required key [messages] not found")?;
    if msgs.is_empty() || msgs[0]["role"] != "user" {
        return Err("A conversation must start with a user message. Try again with a conversation that starts with a user message.".into());
    }
    let mut cache_points = count_cache_points(&body["system"]) + count_cache_points(&body["toolConfig"]["tools"]);
    let mut uses_tools = false;
    let mut open: Vec<String> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        if !["user", "assistant"].contains(&role) || (i > 0 && msgs[i - 1]["role"] == m["role"]) {
            return Err("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.".into());
        }
        let content =
            m["content"].as_array().filter(|c| !c.is_empty()).ok_or(format!("messages.{i}.content is empty"))?;
        cache_points += count_cache_points(&m["content"]);
        let (uses, results) = blocks(i, role, content)?;
        uses_tools |= !uses.is_empty() || !results.is_empty();
        if role == "user" {
            let mut want = std::mem::take(&mut open);
            for r in &results {
                let at = want
                    .iter()
                    .position(|w| w == r)
                    .ok_or(format!("messages.{i}: toolResult {r} answers no toolUse of the previous turn"))?;
                want.remove(at);
            }
            if !want.is_empty() {
                return Err(format!(
                    "Expected toolResult blocks at messages.{i}.content for the following Ids: {}",
                    want.join(", ")
                ));
            }
        } else {
            open = uses;
        }
    }
    if uses_tools && body.get("toolConfig").is_none() {
        return Err("The toolConfig field must be defined when using toolUse and toolResult content blocks.".into());
    }
    if cache_points > 4 {
        return Err(format!("A maximum of 4 cache points is allowed; the request has {cache_points}"));
    }
    check_config(body)
}

fn count_cache_points(v: &Value) -> usize {
    v.as_array().map_or(0, |a| a.iter().filter(|b| b.get("cachePoint").is_some()).count())
}

/// One message's blocks: the toolUse ids it makes and the toolResult ids it gives.
fn blocks(i: usize, role: &str, content: &[Value]) -> Result<(Vec<String>, Vec<String>), String> {
    let (mut uses, mut results) = (Vec::new(), Vec::new());
    for (k, b) in content.iter().enumerate() {
        let at = format!("messages.{i}.content.{k}");
        let keys: Vec<&String> = b.as_object().map(|o| o.keys().collect()).unwrap_or_default();
        if keys.len() != 1 || !BLOCKS.contains(&keys[0].as_str()) {
            return Err(format!("The content block at {at} must have exactly one of {BLOCKS:?}: {b}"));
        }
        if let Some(t) = b.get("text") {
            if t.as_str().is_none_or(|t| t.trim().is_empty()) {
                return Err(format!(
                    "The text field in the ContentBlock object at {at} is blank. Add text to the text field, and try again."
                ));
            }
        } else if let Some(u) = b.get("toolUse") {
            if role != "assistant" || !u["input"].is_object() || !u["name"].is_string() {
                return Err(format!("{at}: a toolUse is the assistant's, with a name and an object input: {u}"));
            }
            uses.push(u["toolUseId"].as_str().ok_or(format!("{at}.toolUse.toolUseId is missing"))?.to_string());
        } else if let Some(r) = b.get("toolResult") {
            let texts_ok = r["content"].as_array().is_some_and(|c| {
                !c.is_empty() && c.iter().all(|x| x["text"].as_str().is_some_and(|t| !t.trim().is_empty()))
            });
            let status_ok = r.get("status").is_none_or(|s| s == "success" || s == "error");
            if role != "user" || !texts_ok || !status_ok {
                return Err(format!(
                    "{at}: a toolResult is the user's, with text content and a status of success or error: {r}"
                ));
            }
            results.push(r["toolUseId"].as_str().ok_or(format!("{at}.toolResult.toolUseId is missing"))?.to_string());
        }
    }
    Ok((uses, results))
}

fn check_config(body: &Value) -> Result<(), String> {
    for (k, s) in body["system"].as_array().into_iter().flatten().enumerate() {
        let ok = s.get("cachePoint").is_some() || s["text"].as_str().is_some_and(|t| !t.trim().is_empty());
        if !ok {
            return Err(format!("system.{k} must be a non-blank text or a cachePoint: {s}"));
        }
    }
    if let Some(tools) = body.get("toolConfig") {
        let list =
            tools["tools"].as_array().filter(|t| !t.is_empty()).ok_or("toolConfig.tools must be a non-empty list")?;
        for (k, t) in list.iter().enumerate() {
            if t.get("cachePoint").is_some() {
                continue;
            }
            let spec = &t["toolSpec"];
            let name = spec["name"].as_str().unwrap_or_default();
            let name_ok = (1..=64).contains(&name.len())
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            let desc_ok = spec.get("description").is_none_or(|d| d.as_str().is_some_and(|d| !d.is_empty()));
            if !name_ok || !desc_ok || !spec["inputSchema"]["json"].is_object() {
                return Err(format!("toolConfig.tools.{k}.toolSpec is not a valid tool: {spec}"));
            }
        }
    }
    let inf = &body["inferenceConfig"];
    if let Some(m) = inf.get("maxTokens")
        && m.as_u64().is_none_or(|m| m == 0)
    {
        return Err(format!("inferenceConfig.maxTokens must be a positive integer: {m}"));
    }
    if let Some(t) = inf.get("temperature")
        && t.as_f64().is_none_or(|t| !(0.0..=1.0).contains(&t))
    {
        return Err(format!("inferenceConfig.temperature must be between 0 and 1: {t}"));
    }
    Ok(())
}
