//! A request's parameters as GitLab's API (Grape) reads them: query string, JSON or form body,
//! merged into one map, with Grape's coercions for booleans, integers and comma-separated lists.

use serde_json::{Map, Value};

/// Query parameters that carry credentials, not arguments (GitLab's `private_token`, OAuth's
/// `access_token`, `job_token`): never checked against the description.
pub const AUTH_PARAMS: [&str; 3] = ["private_token", "access_token", "job_token"];

pub struct Params {
    pub values: Map<String, Value>,
}

/// Split `a=1&b[]=2&b[]=3` into pairs, decoded (`+` is a space, as in forms).
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

/// Form-style pairs as a JSON object of strings; `key[]` repeated makes an array under `key`.
fn form_object(pairs: Vec<(String, String)>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in pairs {
        match k.strip_suffix("[]") {
            Some(base) => {
                let entry = out.entry(base.to_string()).or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(items) = entry {
                    items.push(Value::String(v));
                }
            }
            None => {
                out.insert(k, Value::String(v));
            }
        }
    }
    out
}

impl Params {
    /// The parameters of a request, and its body as recorded (`Null` when empty). A body that is
    /// not valid JSON (or form) is an error, as GitLab answers 400 to it.
    pub fn read(query: &str, content_type: &str, body: &[u8]) -> Result<(Params, Value), String> {
        let mut values = form_object(pairs(query));
        let mut recorded = Value::Null;
        if !body.is_empty() {
            if content_type.starts_with("application/x-www-form-urlencoded") {
                let form = form_object(pairs(&String::from_utf8_lossy(body)));
                recorded = Value::Object(form.clone());
                values.extend(form);
            } else {
                let parsed: Value = serde_json::from_slice(body).map_err(|e| format!("invalid JSON: {e}"))?;
                match &parsed {
                    Value::Object(map) => values.extend(map.clone()),
                    _ => return Err("the body is not a JSON object".to_string()),
                }
                recorded = parsed;
            }
        }
        Ok((Params { values }, recorded))
    }

    pub fn has(&self, key: &str) -> bool {
        self.values.get(key).is_some_and(|v| !v.is_null())
    }

    pub fn str(&self, key: &str) -> Option<String> {
        match self.values.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    pub fn bool(&self, key: &str) -> Option<bool> {
        match self.values.get(key)? {
            Value::Bool(b) => Some(*b),
            Value::String(s) => truth(s),
            _ => None,
        }
    }

    pub fn u64(&self, key: &str) -> Option<u64> {
        match self.values.get(key)? {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// A list given as an array or as a comma-separated string (both are what GitLab takes).
    pub fn strs(&self, key: &str) -> Option<Vec<String>> {
        let items: Vec<String> = match self.values.get(key)? {
            Value::Array(items) => items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
            Value::String(s) => s.split(',').map(str::to_string).collect(),
            _ => return None,
        };
        Some(items.into_iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
    }

    pub fn u64s(&self, key: &str) -> Option<Vec<u64>> {
        let items: Vec<u64> = match self.values.get(key)? {
            Value::Array(items) => items
                .iter()
                .filter_map(|v| v.as_u64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok())))
                .collect(),
            Value::String(s) => s.split(',').filter_map(|p| p.trim().parse().ok()).collect(),
            Value::Number(n) => n.as_u64().into_iter().collect(),
            _ => return None,
        };
        Some(items)
    }
}

/// Grape's reading of a boolean given as text (dry-types' `Params::Bool`).
pub fn truth(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "on" | "t" | "true" | "y" | "yes" => Some(true),
        "0" | "off" | "f" | "false" | "n" | "no" => Some(false),
        _ => None,
    }
}
