//! The fleet file (version 1): one job across many repositories.

use crate::spec::{Diagnostic, yaml};
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawFleet {
    version: Option<u32>,
    job: Option<String>,
    repos: Option<Vec<RawTarget>>,
    concurrency: Option<usize>,
    model_concurrency: Option<usize>,
    workspace: Option<String>,
    fail_fast: Option<bool>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    url: Option<String>,
    path: Option<String>,
    from_file: Option<String>,
    base: Option<String>,
}

/// The fleet file's JSON Schema, from the type that reads it.
pub fn schema(generator: schemars::SchemaGenerator) -> schemars::Schema {
    generator.into_root_schema_for::<RawFleet>()
}

/// Where a repository comes from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum Source {
    /// Cloned (or reused) in the workspace.
    Url(String),
    /// An existing local checkout, used in place.
    Path(PathBuf),
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Target {
    /// A stable, file-name-safe id: the work tree and report dir are named after it.
    pub id: String,
    pub source: Source,
    pub base: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Fleet {
    pub job: PathBuf,
    pub targets: Vec<Target>,
    pub concurrency: usize,
    pub model_concurrency: usize,
    pub workspace: PathBuf,
    pub fail_fast: bool,
}

/// A file-name-safe id from a URL or path: `github.com/acme/app.git` -> `acme__app`.
pub fn slug(s: &str) -> String {
    let t = s.trim_end_matches('/').trim_end_matches(".git");
    let parts: Vec<&str> = t.rsplit(['/', ':']).filter(|p| !p.is_empty()).take(2).collect();
    let raw = parts.into_iter().rev().collect::<Vec<_>>().join("__");
    raw.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect()
}

pub fn load(path: &Path) -> Result<Fleet, Vec<Diagnostic>> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![Diagnostic::unreadable(&file, "fleet file", &e, "the path is relative to the current directory")]
    })?;
    let loaded = yaml::load::<RawFleet>(&file, &text).map_err(|d| vec![d])?;
    let (map, mut errors, raw) = (loaded.map, loaded.errors, loaded.value);
    let dir = path.parent().unwrap_or(Path::new("."));
    let resolve = |p: &str| if Path::new(p).is_absolute() { PathBuf::from(p) } else { dir.join(p) };
    if raw.version != Some(1) && !loaded.removed.contains("version") {
        errors.push(map.at_key("", "`version: 1` is required at the top level", Some("add `version: 1`".into())));
    }
    let job = raw.job.as_deref().map(resolve).unwrap_or_default();
    if raw.job.is_none() && !loaded.removed.contains("job") {
        errors.push(map.at_key(
            "",
            "missing required key `job`",
            Some("name the job spec each repository runs: `job: job.yaml`".into()),
        ));
    }
    let mut targets: Vec<Target> = Vec::new();
    for (i, t) in raw.repos.unwrap_or_default().into_iter().enumerate() {
        let at = format!("repos[{i}]");
        let n = [t.url.is_some(), t.path.is_some(), t.from_file.is_some()].iter().filter(|b| **b).count();
        if n != 1 {
            errors.push(map.at_value(&at, "each entry needs exactly one of `url`, `path` or `from_file`", None));
            continue;
        }
        if let Some(u) = t.url {
            targets.push(Target { id: slug(&u), source: Source::Url(u), base: t.base });
        } else if let Some(p) = t.path {
            let abs = resolve(&p);
            targets.push(Target { id: slug(&abs.display().to_string()), source: Source::Path(abs), base: t.base });
        } else if let Some(f) = t.from_file {
            match std::fs::read_to_string(resolve(&f)) {
                Ok(list) => {
                    for line in list.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
                        targets.push(Target {
                            id: slug(line),
                            source: Source::Url(line.to_string()),
                            base: t.base.clone(),
                        });
                    }
                }
                Err(e) => {
                    errors.push(map.at_value(&format!("{at}.from_file"), format!("cannot read `{f}`: {e}"), None))
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    for t in &targets {
        if !seen.insert(t.id.clone()) {
            errors.push(map.at_key(
                "repos",
                format!("two repositories map to the same id `{}`", t.id),
                Some("list each repository once".into()),
            ));
        }
    }
    if targets.is_empty() && errors.is_empty() {
        errors.push(map.at_key("", "no repositories: add `repos:` with `url`, `path` or `from_file` entries", None));
    }
    let concurrency = raw.concurrency.unwrap_or(4);
    if concurrency == 0 {
        errors.push(map.at_value("concurrency", "must be at least 1", None));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Fleet {
        job,
        targets,
        concurrency,
        model_concurrency: raw.model_concurrency.unwrap_or(concurrency),
        workspace: resolve(raw.workspace.as_deref().unwrap_or(".hone/fleet")),
        fail_fast: raw.fail_fast.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_stable_and_safe() {
        assert_eq!(slug("https://github.com/acme/service-a"), "acme__service-a");
        assert_eq!(slug("git@github.com:acme/app.git"), "acme__app");
        assert_eq!(slug("/tmp/x/local checkout"), "x__local_checkout");
    }

    #[test]
    fn loads_and_validates() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("repos.txt"),
            "# list\nhttps://github.com/acme/c\n\nhttps://github.com/acme/d\n",
        )
        .unwrap();
        let p = dir.path().join("fleet.yaml");
        std::fs::write(&p, "version: 1\njob: job.yaml\nrepos:\n  - url: https://github.com/acme/a\n  - url: https://github.com/acme/b\n    base: develop\n  - path: ../local\n  - from_file: repos.txt\nconcurrency: 8\n").unwrap();
        let f = load(&p).unwrap();
        let ids: Vec<_> = f.targets.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids.len(), 5);
        assert_eq!(&ids[..2], ["acme__a", "acme__b"]);
        assert_eq!(f.targets[1].base.as_deref(), Some("develop"));
        assert_eq!(f.concurrency, 8);
        std::fs::write(&p, "version: 1\nrepos:\n  - url: x\n    path: y\nconcurency: 2\n").unwrap();
        let e = load(&p).unwrap_err();
        let paths: Vec<_> = e.iter().map(|d| d.path.as_str()).collect();
        assert!(paths.contains(&"concurency") && paths.contains(&"repos[0]"), "{paths:?} {e:#?}");
    }
}
