//! report.json matches the published schema in docs/report.schema.json: every property the
//! schema requires is present with the right JSON type, and nothing undocumented appears.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::*;
use serde_json::{Value, json};

fn schema() -> Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.schema.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn type_ok(v: &Value, ty: &Value) -> bool {
    let one = |t: &str| match t {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => false,
    };
    match ty {
        Value::String(t) => one(t),
        Value::Array(ts) => ts.iter().any(|t| t.as_str().is_some_and(one)),
        _ => true,
    }
}

/// A small structural check of `v` against `s` (enough for this schema's keywords).
fn check(v: &Value, s: &Value, root: &Value, at: &str) -> Result<(), String> {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        return check(v, &root["$defs"][name], root, at);
    }
    if let Some(options) = s.get("oneOf").or_else(|| s.get("anyOf")).and_then(Value::as_array) {
        return if options.iter().any(|o| check(v, o, root, at).is_ok()) {
            Ok(())
        } else {
            Err(format!("{at}: {v} matches no option"))
        };
    }
    if let Some(t) = s.get("type")
        && !type_ok(v, t)
    {
        return Err(format!("{at}: {v} is not of type {t}"));
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array)
        && !e.contains(v)
    {
        return Err(format!("{at}: {v} is not one of {e:?}"));
    }
    if let Some(c) = s.get("const")
        && v != c
    {
        return Err(format!("{at}: {v} != {c}"));
    }
    if let (Some(obj), Some(props)) = (v.as_object(), s.get("properties").and_then(Value::as_object)) {
        for req in s["required"].as_array().into_iter().flatten() {
            if !obj.contains_key(req.as_str().unwrap_or_default()) {
                return Err(format!("{at}: missing {req}"));
            }
        }
        for (k, val) in obj {
            let sub = props.get(k).ok_or_else(|| format!("{at}.{k} is not in the schema"))?;
            check(val, sub, root, &format!("{at}.{k}"))?;
        }
    }
    // A map: every value matches `additionalProperties`.
    if let (Some(obj), None, Some(values)) =
        (v.as_object(), s.get("properties"), s.get("additionalProperties").filter(|a| a.is_object()))
    {
        for (k, val) in obj {
            check(val, values, root, &format!("{at}.{k}"))?;
        }
    }
    if let (Some(arr), Some(items)) = (v.as_array(), s.get("items")) {
        for (i, item) in arr.iter().enumerate() {
            check(item, items, root, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_match_the_published_schema() {
    let schema = schema();
    // A run with a fix attempt, a failed tool call, a commit: most fields are populated.
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("read_file", json!({"path": "missing.txt"})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "nearly\n"})), false)
        .turn(text("done"), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("done"), false);
    let run = run_job(&repo, &job_yaml("schema", &mock.base_url, false), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["tool_calls"][0]["code"], "E_NOT_FOUND");
    check(&report, &schema, &schema, "report").unwrap();
    // And a failed run: errors, saved_ref, null commit.
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("write_file", json!({"path": "status.txt", "content": "x\n"})), false).turn(text("done"), false);
    let yaml = job_yaml("schema2", &mock.base_url, false).replace("max_fix_attempts: 2", "max_fix_attempts: 0");
    let run = run_job(&repo, &yaml, &[]).await;
    assert_eq!(run.code, 1);
    check(&run.report(), &schema, &schema, "report").unwrap();
}
