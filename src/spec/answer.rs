//! `change:` and `output:` in the job spec: whether the job may change the repository (a commit,
//! a review of suggestions, or nothing at all), and the JSON Schema its answer must satisfy.

use super::Checker;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// What the job does with a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, schemars::JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Commit the verified change and push it (a PR, or autofix's push to the PR's branch).
    #[default]
    Commit,
    /// Offer the verified change on the PR as one review of suggested changes; never push.
    Review,
    /// Change nothing: the repository is read-only and the job's result is its answer.
    None,
}

impl Change {
    pub const fn as_str(self) -> &'static str {
        match self {
            Change::Commit => "commit",
            Change::Review => "review",
            Change::None => "none",
        }
    }
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawOutput {
    /// The JSON Schema the model's `result` must satisfy, inline.
    pub schema: Option<Value>,
    /// A file (JSON, or YAML by its `.yaml`/`.yml` name) holding the schema, relative to the spec.
    pub schema_file: Option<String>,
    /// Invalid results sent back to the model with the validation errors before the run fails (default 3).
    #[schemars(range(min = 1, max = 10))]
    pub max_attempts: Option<u32>,
}

/// The checked `output:` block.
#[derive(Debug, Clone, Serialize)]
pub struct OutputSpec {
    pub schema: Value,
    /// `inline`, or the schema file's path.
    pub source: String,
    pub max_attempts: u32,
}

/// The largest schema file hone reads.
const MAX_SCHEMA_BYTES: u64 = 1 << 20;
/// The most validation errors told (to the model and in the report).
pub const MAX_ERRORS: usize = 20;

impl OutputSpec {
    /// Check `result` against the schema: `Err` with each problem as `at /path: what`.
    pub fn check(&self, result: &Value) -> Result<(), Vec<String>> {
        let v = compile(&self.schema).map_err(|e| vec![e.to_string()])?;
        let errors: Vec<String> = v
            .iter_errors(result)
            .take(MAX_ERRORS)
            .map(|e| {
                let at = e.instance_path().to_string();
                format!("at {}: {e}", if at.is_empty() { "/" } else { &at })
            })
            .collect();
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }
}

/// The schema compiled. No resolver is built in: a `$ref` to anything outside the schema fails
/// here, and hone never fetches one.
fn compile(schema: &Value) -> Result<jsonschema::Validator, Box<jsonschema::ValidationError<'static>>> {
    jsonschema::options().should_validate_formats(true).build(schema).map_err(Box::new)
}

/// Why a schema file cannot be used; the text follows "the schema file `…`: " in the spec's
/// diagnostic (`E_SPEC`).
#[derive(Debug, thiserror::Error)]
pub enum SchemaFileError {
    #[error("cannot read it: {0}")]
    Unreadable(#[from] std::io::Error),
    #[error("it is larger than {} KiB", MAX_SCHEMA_BYTES >> 10)]
    TooLarge,
    #[error("it is not valid YAML: {0}")]
    Yaml(serde_saphyr::Error),
    #[error("it is not valid JSON: {0}")]
    Json(serde_json::Error),
}

/// Read a schema file: a regular file only (a FIFO, a device or a link to one is never opened
/// to wait on or read without end: the spec comes from the repository), bounded, JSON or (by
/// name) YAML.
fn read_schema(path: &Path) -> Result<Value, SchemaFileError> {
    let bytes = crate::safe_fs::read_small(path, MAX_SCHEMA_BYTES).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData => SchemaFileError::TooLarge,
        _ => SchemaFileError::Unreadable(e),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| {
        SchemaFileError::Unreadable(std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8"))
    })?;
    let yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
    if yaml {
        serde_saphyr::from_str(&text).map_err(SchemaFileError::Yaml)
    } else {
        serde_json::from_str(&text).map_err(SchemaFileError::Json)
    }
}

impl Checker<'_> {
    pub(super) fn output(&mut self, raw: Option<RawOutput>, dir: &Path) -> Option<OutputSpec> {
        let raw = raw?;
        let max_attempts = raw.max_attempts.unwrap_or(3);
        if !(1..=10).contains(&max_attempts) {
            self.err(
                "output.max_attempts",
                "`max_attempts` must be 1 to 10",
                "how many invalid results go back to the model before the run fails",
            );
        }
        let (schema, source, at) = match (raw.schema, raw.schema_file) {
            (Some(_), Some(_)) => {
                self.err("output.schema_file", "give `schema` or `schema_file`, not both", "keep one of them");
                return None;
            }
            (None, None) => {
                self.missing(
                    "output.schema",
                    "give the JSON Schema the answer must satisfy, inline (`schema:`) or in a file (`schema_file:`)",
                );
                return None;
            }
            (Some(s), None) => (s, "inline".to_string(), "output.schema"),
            (None, Some(f)) => {
                let path = super::resolve(dir, &f);
                match read_schema(&path) {
                    Ok(s) => (s, path.display().to_string(), "output.schema_file"),
                    Err(why) => {
                        self.err(
                            "output.schema_file",
                            format!("the schema file `{f}`: {why}"),
                            "the path is relative to the spec's directory",
                        );
                        return None;
                    }
                }
            }
        };
        if let Err(e) = compile(&schema) {
            self.err(
                at,
                format!("not a usable JSON Schema: {e}"),
                "write a JSON Schema (draft 2020-12 unless `$schema` says otherwise); `$ref` may point only inside it",
            );
            return None;
        }
        Some(OutputSpec { schema, source, max_attempts })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    fn spec(output: &str) -> Result<crate::spec::Job, String> {
        let yaml = format!("version: 1\nname: t\ntask: t\nmodel: {{ provider: script, script: s.yaml }}\n{output}");
        crate::spec::parse(std::path::Path::new("job.yaml"), &yaml).map_err(|e| e.render())
    }

    #[test]
    fn an_inline_schema_checks_results_and_says_where_they_fail() {
        let job = spec("change: none\noutput:\n  schema: {type: object, required: [labels], properties: {labels: {type: array, items: {enum: [bug, docs]}}}}\n").unwrap();
        assert_eq!(job.change, super::Change::None);
        let out = job.output.unwrap();
        assert_eq!((out.source.as_str(), out.max_attempts), ("inline", 3));
        assert!(out.check(&json!({"labels": ["bug"]})).is_ok());
        let errs = out.check(&json!({"labels": ["urgent"]})).unwrap_err();
        assert!(errs[0].starts_with("at /labels/0:"), "{errs:?}");
        let errs = out.check(&json!({})).unwrap_err();
        assert!(errs[0].contains("labels"), "{errs:?}");
    }

    #[test]
    fn bad_output_blocks_are_refused_with_their_place() {
        let both = spec("output: {schema: {type: object}, schema_file: x.json}\n").unwrap_err();
        assert!(both.contains("not both") && both.contains("job.yaml:5"), "{both}");
        let none = spec("output: {max_attempts: 2}\n").unwrap_err();
        assert!(none.contains("schema"), "{none}");
        let bad = spec("output: {schema: {type: 12}}\n").unwrap_err();
        assert!(bad.contains("not a usable JSON Schema"), "{bad}");
        let many = spec("output: {schema: {type: object}, max_attempts: 0}\n").unwrap_err();
        assert!(many.contains("1 to 10"), "{many}");
        let change = spec("change: push\n").unwrap_err();
        assert!(change.contains("change"), "{change}");
    }

    /// A schema is never a way to make hone fetch something: a remote `$ref` is refused at load.
    #[test]
    fn a_ref_outside_the_schema_is_refused_not_fetched() {
        for r in ["https://127.0.0.1:9/evil.json", "file:///etc/passwd", "other.json"] {
            let e = spec(&format!("output: {{schema: {{$ref: \"{r}\"}}}}\n")).unwrap_err();
            assert!(e.contains("not a usable JSON Schema"), "{r}: {e}");
        }
        let inside = "output: {schema: {$defs: {l: {type: string}}, type: array, items: {$ref: \"#/$defs/l\"}}}\n";
        assert!(spec(inside).unwrap().output.unwrap().check(&json!(["a", 1])).is_err());
    }

    #[test]
    fn a_schema_file_is_read_relative_to_the_spec_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.json"), r#"{"type": "object", "required": ["ok"]}"#).unwrap();
        std::fs::write(dir.path().join("s.yaml"), "type: string\n").unwrap();
        std::fs::write(dir.path().join("big.json"), vec![b' '; (super::MAX_SCHEMA_BYTES + 2) as usize]).unwrap();
        let load = |f: &str| {
            let yaml = format!(
                "version: 1\nname: t\ntask: t\nmodel: {{ provider: script, script: s.yaml }}\noutput: {{schema_file: {f}}}\n"
            );
            crate::spec::parse(&dir.path().join("job.yaml"), &yaml).map_err(|e| e.render())
        };
        let j = load("s.json").unwrap().output.unwrap();
        assert!(j.source.ends_with("s.json") && j.check(&json!({"ok": 1})).is_ok());
        assert!(load("s.yaml").unwrap().output.unwrap().check(&json!("x")).is_ok());
        assert!(load("big.json").unwrap_err().contains("larger than"));
        assert!(load("missing.json").unwrap_err().contains("cannot read"));
    }

    /// A schema file the repository links to a device, or a FIFO in its place, is refused at
    /// once: never waited on, never read without end.
    #[test]
    fn a_schema_file_that_is_a_fifo_or_a_device_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_path_buf();
        std::os::unix::fs::symlink("/dev/zero", d.join("zero.json")).unwrap();
        let fifo = std::ffi::CString::new(d.join("fifo.json").into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let at = d.clone();
        std::thread::spawn(move || {
            for f in ["fifo.json", "zero.json"] {
                let yaml = format!(
                    "version: 1\nname: t\ntask: t\nmodel: {{ provider: script, script: s.yaml }}\noutput: {{schema_file: {f}}}\n"
                );
                let got = crate::spec::parse(&at.join("job.yaml"), &yaml).map_err(|e| e.render());
                tx.send(got.err().unwrap_or_default()).unwrap();
            }
        });
        for _ in 0..2 {
            let Ok(err) = rx.recv_timeout(std::time::Duration::from_secs(30)) else {
                // Let a blocked open go, so the test process can end.
                drop(std::fs::OpenOptions::new().write(true).open(d.join("fifo.json")));
                panic!("reading the schema file blocked");
            };
            assert!(err.contains("not a regular file"), "{err}");
        }
    }
}
