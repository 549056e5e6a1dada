//! GitLab's published API description (trimmed, `tests/data/gitlab/openapi.yaml`): which
//! operation a request is, whether its parameters are ones the description names with the types
//! it gives, and whether an answer has only the fields it documents.

use super::params::{AUTH_PARAMS, Params, truth};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::OnceLock;

pub struct Op {
    pub method: String,
    /// The path template, as in the description (`/api/v4/projects/{id}`).
    pub template: String,
    doc: Value,
}

/// What checking a request's parameters found: the violations to record, and the 400 message
/// GitLab itself would answer (`title is missing`, `squash is invalid`), if any.
#[derive(Default)]
pub struct Verdict {
    pub violations: Vec<String>,
    pub error: Option<String>,
}

pub struct Spec {
    root: Value,
    ops: Vec<Op>,
}

const METHODS: [&str; 4] = ["get", "post", "put", "delete"];

/// The description, read once.
pub fn spec() -> &'static Spec {
    static SPEC: OnceLock<Spec> = OnceLock::new();
    SPEC.get_or_init(|| {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gitlab/openapi.yaml");
        let text = std::fs::read_to_string(&file).expect("tests/data/gitlab/openapi.yaml is readable");
        let root: Value = serde_saphyr::from_str(&text).expect("tests/data/gitlab/openapi.yaml is valid YAML");
        let mut ops = Vec::new();
        for (template, item) in root["paths"].as_object().expect("the description has paths") {
            for method in METHODS {
                if let Some(doc) = item.get(method) {
                    ops.push(Op { method: method.to_uppercase(), template: template.clone(), doc: doc.clone() });
                }
            }
        }
        Spec { root, ops }
    })
}

impl Spec {
    /// The operation `method` on the decoded path `segments` is, with its path parameters. An
    /// integer path parameter that is not a number matches nothing, as GitLab's routes.
    pub fn find(&self, method: &str, segments: &[String]) -> Option<(&Op, HashMap<String, String>)> {
        self.ops.iter().filter(|op| op.method == method).find_map(|op| {
            let parts: Vec<&str> = op.template.trim_start_matches('/').split('/').collect();
            if parts.len() != segments.len() {
                return None;
            }
            let mut found = HashMap::new();
            for (part, seg) in parts.iter().zip(segments) {
                match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                    Some(name) => {
                        if self.param(op, name).is_some_and(|p| p["type"] == "integer") && seg.parse::<u64>().is_err() {
                            return None;
                        }
                        found.insert(name.to_string(), seg.clone());
                    }
                    None if part == seg => {}
                    None => return None,
                }
            }
            Some((op, found))
        })
    }

    /// Whether some operation (any method) has this path: a wrong method gets 405 from GitLab.
    pub fn knows_path(&self, segments: &[String]) -> bool {
        METHODS.iter().any(|m| self.find(&m.to_uppercase(), segments).is_some())
    }

    fn param<'a>(&self, op: &'a Op, name: &str) -> Option<&'a Value> {
        op.doc["parameters"].as_array()?.iter().find(|p| p["name"] == name && p["in"] != "body")
    }

    /// `#/definitions/X` resolved, with `allOf` parts merged into one `properties` map.
    fn resolve(&self, schema: &Value) -> Value {
        if let Some(name) = schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/definitions/")) {
            return self.resolve(&self.root["definitions"][name]);
        }
        let Some(parts) = schema["allOf"].as_array() else { return schema.clone() };
        let mut properties = Map::new();
        let mut required = Vec::new();
        for part in parts.iter().map(|p| self.resolve(p)) {
            properties.extend(part["properties"].as_object().cloned().unwrap_or_default());
            required.extend(part["required"].as_array().cloned().unwrap_or_default());
        }
        serde_json::json!({"type": "object", "properties": properties, "required": required})
    }

    /// Every parameter the operation takes (query and body), with its schema and required-ness.
    fn accepted(&self, op: &Op) -> Vec<(String, Value, bool)> {
        let mut out = Vec::new();
        for p in op.doc["parameters"].as_array().into_iter().flatten() {
            match p["in"].as_str() {
                Some("query") | Some("formData") => {
                    out.push((p["name"].as_str().unwrap_or_default().to_string(), p.clone(), p["required"] == true))
                }
                Some("body") => {
                    let body = self.resolve(&p["schema"]);
                    let required: Vec<&str> =
                        body["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                    for (name, schema) in body["properties"].as_object().into_iter().flatten() {
                        out.push((name.clone(), schema.clone(), required.contains(&name.as_str())));
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Check a request's parameters against what the operation documents.
    pub fn check(&self, op: &Op, params: &Params) -> Verdict {
        let accepted = self.accepted(op);
        let at = format!("{} {}", op.method, op.template);
        let mut verdict = Verdict::default();
        let mut errors = Vec::new();
        for (name, value) in &params.values {
            if AUTH_PARAMS.contains(&name.as_str()) {
                continue;
            }
            let Some((_, schema, _)) = accepted.iter().find(|(n, _, _)| n == name) else {
                verdict.violations.push(format!("{at}: unknown parameter `{name}` = {value}"));
                continue;
            };
            match type_problem(&self.resolve(schema), value) {
                Some(Problem::Soft(why)) => verdict.violations.push(format!("{at}: `{name}` {why}: {value}")),
                Some(Problem::Hard(why, message)) => {
                    verdict.violations.push(format!("{at}: `{name}` {why}: {value}"));
                    errors.push(format!("{name} {message}"));
                }
                None => {}
            }
        }
        for (name, _, required) in &accepted {
            if *required && !params.has(name) {
                verdict.violations.push(format!("{at}: required parameter `{name}` missing"));
                errors.push(format!("{name} is missing"));
            }
        }
        verdict.error = (!errors.is_empty()).then(|| errors.join(", "));
        verdict
    }

    /// Fields of an answer the operation's documented response (for `status`) does not have.
    pub fn undocumented(&self, op: &Op, status: u16, body: &Value) -> Vec<String> {
        let schema = &op.doc["responses"][status.to_string()]["schema"];
        if schema.is_null() {
            return Vec::new();
        }
        let (schema, items) = match schema["type"].as_str() {
            Some("array") => (self.resolve(&schema["items"]), body.as_array().cloned().unwrap_or_default()),
            _ => (self.resolve(schema), vec![body.clone()]),
        };
        let documented = schema["properties"].as_object().cloned().unwrap_or_default();
        let mut out = Vec::new();
        for item in items {
            for key in item.as_object().into_iter().flatten().map(|(k, _)| k) {
                if !documented.contains_key(key) && !out.contains(key) {
                    out.push(key.clone());
                }
            }
        }
        out
    }
}

enum Problem {
    /// GitLab takes it (coerces it), but hone should not send it so.
    Soft(String),
    /// GitLab answers 400 (`<name> is invalid`, `<name> does not have a valid value`).
    Hard(String, &'static str),
}

fn type_problem(schema: &Value, value: &Value) -> Option<Problem> {
    if value.is_null() {
        return None;
    }
    let hard = |why: &str| Some(Problem::Hard(why.to_string(), "is invalid"));
    match schema["type"].as_str().unwrap_or("string") {
        "integer" => match value {
            Value::Number(n) if n.is_i64() || n.is_u64() => None,
            Value::String(s) if s.trim().parse::<i64>().is_ok() => None,
            _ => hard("is not an integer"),
        },
        "boolean" => match value {
            Value::Bool(_) => None,
            Value::String(s) if truth(s).is_some() => None,
            _ => hard("is not a boolean"),
        },
        "array" => array_problem(&schema["items"], value),
        "object" => match value {
            Value::Object(fields) => object_problem(schema, fields),
            _ => hard("is not an object"),
        },
        _ => match value {
            Value::String(s) => enum_problem(schema, s),
            Value::Number(_) | Value::Bool(_) => Some(Problem::Soft("is not a string".to_string())),
            _ => hard("is not a string"),
        },
    }
}

/// An object parameter (a draft note's `position`): its required fields there, each field one
/// the description names, of its type.
fn object_problem(schema: &Value, fields: &Map<String, Value>) -> Option<Problem> {
    let documented = schema["properties"].as_object()?;
    for required in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        if fields.get(required).is_none_or(Value::is_null) {
            return Some(Problem::Hard(format!("has no `{required}`"), "is missing"));
        }
    }
    fields.iter().find_map(|(k, v)| match documented.get(k) {
        None => Some(Problem::Soft(format!("has the unknown field `{k}`"))),
        Some(s) => type_problem(s, v),
    })
}

fn enum_problem(schema: &Value, s: &str) -> Option<Problem> {
    let allowed = schema["enum"].as_array()?;
    if allowed.iter().any(|a| a.as_str() == Some(s)) {
        return None;
    }
    Some(Problem::Hard(format!("is not one of {allowed:?}"), "does not have a valid value"))
}

/// An array parameter: a JSON array of the item type, or a comma-separated string, which GitLab
/// documents for its lists (`labels`, `assignee_ids`).
fn array_problem(items: &Value, value: &Value) -> Option<Problem> {
    let each: Vec<Value> = match value {
        Value::Array(vs) => vs.clone(),
        Value::String(s) => {
            s.split(',').map(str::trim).filter(|p| !p.is_empty()).map(|p| Value::String(p.to_string())).collect()
        }
        Value::Number(_) if items["type"] == "integer" => vec![value.clone()],
        _ => return Some(Problem::Hard("is not a list".to_string(), "is invalid")),
    };
    let mut problems = each.iter().filter_map(|v| type_problem(items, v));
    problems.next()
}
