//! Loads a YAML file into strict serde types, reporting every error with its position and key path.
//!
//! The document is parsed once into a tree that remembers where each key and value sits, then
//! deserialized. Each serde error is recorded, the offending node removed, and deserialization
//! retried, so one call reports all problems, not only the first. Raw types keep every field
//! optional (required fields are checked afterwards), so removing a node always makes progress.

use super::diag::{Diagnostic, did_you_mean, line_of, token_width};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use serde_saphyr::Spanned;
use std::collections::{HashMap, HashSet};

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: u64,
    pub col: u64,
}

/// Where each key path sits in the source: its key (for map entries) and its value.
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    file: String,
    text: String,
    keys: HashMap<String, Pos>,
    values: HashMap<String, Pos>,
}

impl SourceMap {
    /// A diagnostic at the value of `path` (or its key, or the nearest parent that exists).
    pub fn at_value(&self, path: &str, message: impl Into<String>, help: Option<String>) -> Diagnostic {
        let pos = lookup(&self.values, path).or_else(|| lookup(&self.keys, path));
        self.make(path, pos, false, message.into(), help)
    }

    /// A diagnostic at the key of `path` (or its value, or the nearest parent that exists).
    pub fn at_key(&self, path: &str, message: impl Into<String>, help: Option<String>) -> Diagnostic {
        let pos =
            lookup(&self.keys, path).map(|p| (p, true)).or_else(|| lookup(&self.values, path).map(|p| (p, false)));
        match pos {
            Some((p, is_key)) => self.make(path, Some(p), is_key, message.into(), help),
            None => self.make(path, None, false, message.into(), help),
        }
    }

    fn make(&self, path: &str, pos: Option<Pos>, is_key: bool, message: String, help: Option<String>) -> Diagnostic {
        let pos = pos.unwrap_or(Pos { line: 1, col: 1 });
        let source_line = line_of(&self.text, pos.line);
        // The document root has no token of its own: point at its first character.
        let width =
            if path.is_empty() { 1 } else { source_line.as_deref().map_or(1, |l| token_width(l, pos.col, is_key)) };
        Diagnostic {
            file: self.file.clone(),
            line: pos.line,
            col: pos.col,
            path: path.to_string(),
            message,
            help,
            source_line,
            width,
        }
    }

    pub fn has(&self, path: &str) -> bool {
        self.values.contains_key(path)
    }
}

/// The position of `path`, or of its nearest ancestor that was recorded.
fn lookup(map: &HashMap<String, Pos>, path: &str) -> Option<Pos> {
    let mut p = path.to_string();
    loop {
        if let Some(pos) = map.get(&p) {
            return Some(*pos);
        }
        let cut = p.rfind(['.', '['])?;
        p.truncate(cut);
    }
}

/// The result of loading: the typed value plus everything needed for later semantic checks.
pub struct Loaded<T> {
    pub value: T,
    pub map: SourceMap,
    /// Paths removed because they were invalid; later "missing field" checks skip them.
    pub removed: HashSet<String>,
    pub errors: Vec<Diagnostic>,
}

/// Parse `text` (from `file`) into `T`, collecting every structural error.
///
/// Returns `Err` only when the YAML itself does not parse; type and key errors are in
/// `Loaded::errors`, with `Loaded::value` built from what remained valid.
#[allow(clippy::result_large_err)] // one diagnostic, built once per file: size does not matter here
pub fn load<T: DeserializeOwned + Default>(file: &str, text: &str) -> Result<Loaded<T>, Diagnostic> {
    let mut map = SourceMap { file: file.to_string(), text: text.to_string(), ..Default::default() };
    // YAML 1.2 Core booleans only: `no`, `off` and `y` stay strings (no "Norway problem").
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    let root: Option<Spanned<Node>> =
        serde_saphyr::from_str_with_options(text, options).map_err(|e| syntax_error(file, text, &e))?;
    let mut value = match root {
        Some(node) => to_value(node, String::new(), &mut map),
        None => Value::Null,
    };
    if value.is_null() {
        // An empty document: treat as an empty mapping so required-field checks report it.
        value = Value::Object(Map::new());
    }
    if !value.is_object() {
        let d = map.at_value(
            "",
            "the file must be a mapping of `key: value` pairs",
            Some("start with `version: 1`".into()),
        );
        return Ok(Loaded { value: T::default(), map, removed: HashSet::new(), errors: vec![d] });
    }
    let mut errors: Vec<Diagnostic> = Vec::new();
    let mut removed = HashSet::new();
    for _ in 0..256 {
        match serde_path_to_error::deserialize::<_, T>(&value) {
            Ok(v) => {
                errors.sort_by_key(|d| (d.line, d.col));
                return Ok(Loaded { value: v, map, removed, errors });
            }
            Err(err) => {
                let path = path_string(err.path());
                let inner = err.inner().to_string();
                let (diag, mut remove_path) = classify(&map, &path, &inner);
                if removed.contains(&remove_path) {
                    // A list item already nulled out is still wrong (items may not be null):
                    // drop the list, without saying the same thing again.
                    remove_path = split_last(&remove_path).0;
                } else {
                    errors.push(diag);
                }
                if !remove(&mut value, &remove_path) {
                    break;
                }
                removed.insert(remove_path);
            }
        }
    }
    // Could not make progress: return what we have with a default value.
    Ok(Loaded { value: T::default(), map, removed, errors })
}

/// Turn one serde error into a diagnostic and the path to remove before retrying.
fn classify(map: &SourceMap, path: &str, inner: &str) -> (Diagnostic, String) {
    if let Some((name, expected)) = parse_unknown(inner, "unknown field `") {
        // serde_path_to_error includes the unknown key in the path; older versions stop at the parent.
        let key_path =
            if path == name || path.ends_with(&format!(".{name}")) { path.to_string() } else { join(path, &name) };
        let parent_path = key_path.strip_suffix(name.as_str()).unwrap_or("").trim_end_matches('.');
        let parent = if parent_path.is_empty() { "the top level".to_string() } else { format!("`{parent_path}`") };
        let cands: Vec<&str> = expected.iter().map(String::as_str).collect();
        let help = allowed_help(&name, &cands, "keys");
        let d = map.at_key(&key_path, format!("unknown key `{name}` in {parent}"), Some(help));
        return (d, key_path);
    }
    if let Some((name, expected)) = parse_unknown(inner, "unknown variant `") {
        let cands: Vec<&str> = expected.iter().map(String::as_str).collect();
        let help = allowed_help(&name, &cands, "values");
        let d = map.at_value(path, format!("`{name}` is not an allowed value"), Some(help));
        return (d, path.to_string());
    }
    let message = friendly_types(&inner.replace("invalid type: ", "wrong type: found "));
    (map.at_value(path, message, None), path.to_string())
}

/// Serde's Rust type names, in words a spec author knows.
fn friendly_types(msg: &str) -> String {
    let mut out = msg.to_string();
    for (from, to) in [
        ("expected u32", "expected a whole number (0 to 4294967295)"),
        ("expected u64", "expected a whole number"),
        ("expected usize", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected a list"),
        ("expected a map", "expected a mapping of keys"),
        ("integer `", "number `"),
    ] {
        out = out.replace(from, to);
    }
    if let Some(i) = out.find("expected struct ") {
        out.truncate(i);
        out.push_str("expected a mapping of keys");
    }
    if let Some(i) = out.find("expected option") {
        out.truncate(i);
        out.push_str("expected a value of another type");
    }
    out
}

fn allowed_help(word: &str, cands: &[&str], what: &str) -> String {
    let list = cands.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ");
    match did_you_mean(word, cands) {
        Some(s) => format!("did you mean `{s}`? allowed {what}: {list}"),
        None if cands.is_empty() => format!("no {what} are allowed here"),
        None => format!("allowed {what}: {list}"),
    }
}

/// Parse serde's "unknown field `x`, expected one of `a`, `b`" (or "expected `a`", "there are no fields").
fn parse_unknown(msg: &str, prefix: &str) -> Option<(String, Vec<String>)> {
    let rest = msg.strip_prefix(prefix)?;
    let end = rest.find('`')?;
    let name = rest[..end].to_string();
    let tail = &rest[end + 1..];
    let expected = tail.split('`').skip(1).step_by(2).map(str::to_string).collect();
    Some((name, expected))
}

pub(crate) fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() { key.to_string() } else { format!("{parent}.{key}") }
}

fn path_string(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } => out = join(&out, key),
            Segment::Enum { variant } => out = join(&out, variant),
            Segment::Unknown => {}
        }
    }
    out
}

/// Remove the node at `path` from `value`. Returns false if nothing was removed.
fn remove(value: &mut Value, path: &str) -> bool {
    if path.is_empty() {
        return false;
    }
    let (parent, last) = split_last(path);
    let Some(target) = get_mut(value, &parent) else {
        return false;
    };
    match (target, last) {
        (Value::Object(m), Last::Key(k)) => m.remove(&k).is_some(),
        (Value::Array(a), Last::Index(i)) if i < a.len() => {
            // Replace rather than shift, so sibling indices (and their positions) stay valid.
            a[i] = Value::Null;
            true
        }
        _ => false,
    }
}

enum Last {
    Key(String),
    Index(usize),
}

fn split_last(path: &str) -> (String, Last) {
    if path.ends_with(']')
        && let Some(open) = path.rfind('[')
        && let Ok(i) = path[open + 1..path.len() - 1].parse()
    {
        return (path[..open].to_string(), Last::Index(i));
    }
    match path.rfind('.') {
        Some(dot) => (path[..dot].to_string(), Last::Key(path[dot + 1..].to_string())),
        None => (String::new(), Last::Key(path.to_string())),
    }
}

fn get_mut<'a>(value: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    if path.is_empty() {
        return Some(value);
    }
    let (parent, last) = split_last(path);
    let p = get_mut(value, &parent)?;
    match last {
        Last::Key(k) => p.as_object_mut()?.get_mut(&k),
        Last::Index(i) => p.as_array_mut()?.get_mut(i),
    }
}

fn syntax_error(file: &str, text: &str, e: &serde_saphyr::Error) -> Diagnostic {
    let (line, col) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
    let full = e.to_string();
    let message = full.lines().next().unwrap_or("invalid YAML").to_string();
    let source_line = line_of(text, line);
    Diagnostic {
        file: file.to_string(),
        line,
        col,
        path: String::new(),
        message: format!("invalid YAML: {message}"),
        help: Some("check indentation, quoting and that every key is followed by `:`".into()),
        source_line,
        width: 1,
    }
}

fn pos_of<T>(s: &Spanned<T>) -> Pos {
    Pos { line: s.referenced.line(), col: s.referenced.column() }
}

fn to_value(node: Spanned<Node>, path: String, map: &mut SourceMap) -> Value {
    map.values.insert(path.clone(), pos_of(&node));
    match node.value {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(b),
        Node::I64(i) => Value::from(i),
        Node::U64(u) => Value::from(u),
        Node::F64(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        Node::Str(s) => Value::String(s),
        Node::Seq(items) => {
            Value::Array(items.into_iter().enumerate().map(|(i, n)| to_value(n, format!("{path}[{i}]"), map)).collect())
        }
        Node::Map(entries) => {
            let mut out = Map::new();
            for (k, v) in entries {
                let key = scalar_key(&k.value);
                let child = join(&path, &key);
                map.keys.insert(child.clone(), pos_of(&k));
                let val = to_value(v, child, map);
                out.insert(key, val);
            }
            Value::Object(out)
        }
    }
}

fn scalar_key(n: &Node) -> String {
    match n {
        Node::Null => "null".into(),
        Node::Bool(b) => b.to_string(),
        Node::I64(i) => i.to_string(),
        Node::U64(u) => u.to_string(),
        Node::F64(f) => f.to_string(),
        Node::Str(s) => s.clone(),
        Node::Seq(_) | Node::Map(_) => "<complex key>".into(),
    }
}

mod node;
use node::Node;

#[cfg(test)]
mod tests;
