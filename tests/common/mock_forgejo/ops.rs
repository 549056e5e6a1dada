//! Forgejo's published API description, the part hone uses (`tests/fixtures/forgejo-api/
//! operations.json`, extracted from Forgejo 11.0.3's swagger): which operation a request is, and
//! whether its query and JSON body use only what the operation declares, with the types it gives
//! and every required property.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

pub struct Op {
    pub method: String,
    pub template: String,
    pub id: String,
    doc: Value,
}

/// The operations, read once.
pub fn ops() -> &'static [Op] {
    static OPS: OnceLock<Vec<Op>> = OnceLock::new();
    OPS.get_or_init(|| {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/forgejo-api/operations.json");
        let root: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let list = root["operations"].as_array().expect("operations.json lists operations");
        list.iter()
            .map(|o| Op {
                method: o["method"].as_str().unwrap().to_string(),
                template: o["path"].as_str().unwrap().to_string(),
                id: o["operation_id"].as_str().unwrap().to_string(),
                doc: o.clone(),
            })
            .collect()
    })
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// The operation `method path` (under `/api/v1`, still encoded) is, with its decoded path
/// parameters: among the templates that fit, the one with the most literal segments.
pub fn find(method: &str, path: &str) -> Option<(&'static Op, HashMap<String, String>)> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let mut best: Option<(usize, &Op, HashMap<String, String>)> = None;
    for op in ops().iter().filter(|o| o.method == method) {
        let parts: Vec<&str> = op.template.trim_start_matches('/').split('/').collect();
        if parts.len() != segments.len() {
            continue;
        }
        let (mut literal, mut found, mut fits) = (0, HashMap::new(), true);
        for (part, seg) in parts.iter().zip(&segments) {
            match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                Some(name) => {
                    let value = decode(seg);
                    let integer = op.doc["path_params"][name] == "integer";
                    if value.is_empty() || (integer && value.parse::<u64>().is_err()) {
                        fits = false;
                    }
                    found.insert(name.to_string(), value);
                }
                None if part == seg => literal += 1,
                None => fits = false,
            }
        }
        if fits && best.as_ref().is_none_or(|(l, _, _)| literal > *l) {
            best = Some((literal, op, found));
        }
    }
    best.map(|(_, op, found)| (op, found))
}

fn type_fits(ty: &Value, v: &Value) -> bool {
    match ty["type"].as_str().unwrap_or("any") {
        "string" => v.is_string() && ty["enum"].as_array().is_none_or(|e| e.contains(v)),
        "integer" => v.is_u64() || v.is_i64(),
        "boolean" => v.is_boolean(),
        "array" => v.as_array().is_some_and(|items| {
            items.iter().all(|i| type_fits(&serde_json::json!({"type": ty["items"].as_str().unwrap_or("any")}), i))
        }),
        "object" => v.is_object(),
        _ => true,
    }
}

/// What does not fit the operation in the query (`pairs`) and the body (`None`: no body sent).
pub fn check(op: &Op, pairs: &[(String, String)], body: Option<&Value>) -> Vec<String> {
    let mut bad = Vec::new();
    let what = format!("{} {}", op.method, op.template);
    for (k, v) in pairs {
        match op.doc["query"].get(k) {
            None => bad.push(format!("{what}: query parameter `{k}` is not declared")),
            Some(ty) if ty["type"] == "integer" && v.parse::<i64>().is_err() => {
                bad.push(format!("{what}: query parameter `{k}={v}` is not an integer"))
            }
            Some(_) => {}
        }
    }
    let schema = &op.doc["body"];
    match (body, schema.is_null()) {
        (Some(b), true) => bad.push(format!("{what}: takes no body, got {b}")),
        (None, false) if schema["body_required"] == true => bad.push(format!("{what}: the body is required")),
        (Some(b), false) => {
            let Some(fields) = b.as_object() else {
                bad.push(format!("{what}: the body is not a JSON object"));
                return bad;
            };
            for (k, v) in fields {
                match schema["properties"].get(k) {
                    None => bad.push(format!("{what}: body property `{k}` is not declared")),
                    Some(ty) if !type_fits(ty, v) => {
                        bad.push(format!("{what}: body property `{k}` is not a {}: {v}", ty["type"]))
                    }
                    Some(_) => {}
                }
            }
            for r in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                if !fields.contains_key(r) {
                    bad.push(format!("{what}: required body property `{r}` is missing"));
                }
            }
        }
        (None, _) => {}
    }
    bad
}

/// A query string's decoded pairs.
pub fn pairs(encoded: &str) -> Vec<(String, String)> {
    let decode = |s: &str| percent_encoding::percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned();
    encoded
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}
