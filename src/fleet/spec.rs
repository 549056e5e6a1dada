//! The fleet file (version 1): one job across many repositories.

use crate::error::{Code, HoneError};
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
    /// Where the aggregate reports go (`fleet.json`, `fleet-junit.xml`, `fleet-summary.md`);
    /// default: the workspace.
    out: Option<String>,
    fail_fast: Option<bool>,
}

use crate::forge::query::RawEntry as RawTarget;

/// The fleet file's JSON Schema, from the type that reads it.
pub fn schema(generator: schemars::SchemaGenerator) -> schemars::Schema {
    generator.into_root_schema_for::<RawFleet>()
}

/// Where a repository comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
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

/// A query in `repos`, resolved when the fleet runs (`super::resolve`).
#[derive(Debug, Clone)]
pub struct QueryEntry {
    pub query: crate::forge::query::Query,
    pub base: Option<String>,
    /// Where its repositories go: before `targets[at]` (the entries listed after it).
    pub at: usize,
}

#[derive(Debug, Clone)]
pub struct Fleet {
    pub job: PathBuf,
    /// The repositories the file lists itself.
    pub targets: Vec<Target>,
    pub queries: Vec<QueryEntry>,
    pub concurrency: usize,
    pub model_concurrency: usize,
    pub workspace: PathBuf,
    /// Where the aggregate reports go, and where `--resume` reads the last ones.
    pub out: PathBuf,
    pub fail_fast: bool,
}

impl Target {
    /// A target with its id made from `source` (unique ids are made by `load`).
    pub(super) fn new(source: Source, base: Option<String>) -> Target {
        let id = match &source {
            Source::Url(u) => super::layout::id_from(u),
            Source::Path(p) => super::layout::id_from(&p.display().to_string()),
        };
        Target { id, source, base }
    }
}

/// Whether git would read `url` as a path relative to where it runs (no scheme, not absolute,
/// not `host:path`): `load` resolves it against the fleet file's directory instead.
fn is_relative_path(url: &str) -> bool {
    if url.contains("://") || url.starts_with('/') {
        return false;
    }
    match (url.find(':'), url.find('/')) {
        (Some(colon), Some(slash)) => slash < colon,
        (Some(_), None) => false,
        _ => true,
    }
}

/// The sources listed more than once with the same base, as shown (no credentials).
fn listed_twice(targets: &[Target]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    targets
        .iter()
        .filter(|t| !seen.insert((&t.source, &t.base)))
        .map(|t| match &t.source {
            Source::Url(u) => crate::forge::credential::without_userinfo(u),
            Source::Path(p) => p.display().to_string(),
        })
        .collect()
}

/// What `repos` lists: the repositories themselves, and the queries to resolve when the fleet runs.
struct Entries {
    targets: Vec<Target>,
    queries: Vec<QueryEntry>,
}

/// Read `repos`' entries (paths relative to `dir`), each error at its place.
fn entries(repos: Vec<RawTarget>, dir: &Path, map: &yaml::SourceMap, errors: &mut Vec<Diagnostic>) -> Entries {
    let resolve = |p: &str| if Path::new(p).is_absolute() { PathBuf::from(p) } else { dir.join(p) };
    let url = |u: &str| if is_relative_path(u) { dir.join(u).display().to_string() } else { u.to_string() };
    let (mut targets, mut queries): (Vec<Target>, Vec<QueryEntry>) = (Vec::new(), Vec::new());
    for (i, mut t) in repos.into_iter().enumerate() {
        let at = format!("repos[{i}]");
        let given = [t.url.is_some(), t.path.is_some(), t.from_file.is_some()];
        if given.iter().filter(|b| **b).count() + t.queries() != 1 {
            let one = format!(
                "each entry needs exactly one of `url`, `path`, `from_file`, {}",
                crate::forge::query::RawEntry::QUERY_KEYS
            );
            errors.push(map.at_value(&at, one, None));
            continue;
        }
        if let Some(query) = t.query() {
            let key = format!("{at}.{}", query.key());
            match query.check() {
                Some(why) => errors.push(map.at_value(&key, why, None)),
                None => queries.push(QueryEntry { query, base: t.base, at: targets.len() }),
            }
        } else if let Some(u) = t.url {
            if u.trim().is_empty() {
                errors.push(map.at_value(&format!("{at}.url"), "`url` is empty", None));
                continue;
            }
            targets.push(Target::new(Source::Url(url(&u)), t.base));
        } else if let Some(p) = t.path {
            targets.push(Target::new(Source::Path(resolve(&p)), t.base));
        } else if let Some(f) = t.from_file {
            match std::fs::read_to_string(resolve(&f)) {
                Ok(list) => {
                    for line in list.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
                        targets.push(Target::new(Source::Url(url(line)), t.base.clone()));
                    }
                }
                Err(e) => {
                    errors.push(map.at_value(&format!("{at}.from_file"), format!("cannot read `{f}`: {e}"), None))
                }
            }
        }
    }
    Entries { targets, queries }
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
    let Entries { mut targets, queries } = entries(raw.repos.unwrap_or_default(), dir, &map, &mut errors);
    errors.extend(listed_twice(&targets).into_iter().map(|shown| {
        map.at_key("repos", format!("`{shown}` is listed twice"), Some("list each repository (and base) once".into()))
    }));
    super::layout::make_unique(targets.iter_mut().map(|t| &mut t.id));
    if targets.is_empty() && queries.is_empty() && errors.is_empty() {
        let none = "no repositories: add `repos:` with `url`, `path`, `from_file`, `github` or `gitlab` entries";
        errors.push(map.at_key("", none, None));
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
        queries,
        concurrency,
        model_concurrency: raw.model_concurrency.unwrap_or(concurrency),
        workspace: resolve(raw.workspace.as_deref().unwrap_or(".hone/fleet")),
        out: resolve(raw.out.as_deref().or(raw.workspace.as_deref()).unwrap_or(".hone/fleet")),
        fail_fast: raw.fail_fast.unwrap_or(false),
    })
}

/// The fleet's job, parsed, with the bytes of its file and of its policy file.
pub(super) struct JobFile {
    pub job: crate::spec::Job,
    pub bytes: Vec<u8>,
    pub policy_bytes: Option<Vec<u8>>,
}

/// The job file and its policy file, each read once.
pub(super) fn read_job(fleet: &Fleet) -> Result<JobFile, HoneError> {
    let io = |what: &str, p: &Path, e: std::io::Error| {
        HoneError::new(Code::Io, format!("cannot read the {what} {}: {e}", p.display()))
    };
    let bytes = std::fs::read(&fleet.job).map_err(|e| io("job", &fleet.job, e))?;
    let text = String::from_utf8_lossy(&bytes);
    let job = crate::spec::parse(&fleet.job, &text)?;
    let policy = match &job.policy {
        Some(p) => Some(std::fs::read(p).map_err(|e| io("policy", p, e))?),
        None => None,
    };
    Ok(JobFile { job, bytes, policy_bytes: policy })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_urls_are_paths_from_the_fleet_file() {
        for rel in [".", "..", "../", "./x", "x", "a/b:c"] {
            assert!(is_relative_path(rel), "{rel}");
        }
        for not in ["https://h/x", "/srv/x", "git@h:a/b", "h:x", "file:///x"] {
            assert!(!is_relative_path(not), "{not}");
        }
    }

    #[test]
    fn ids_are_unique_and_a_repeat_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fleet.yaml");
        let write = |repos: &str| std::fs::write(&p, format!("version: 1\njob: j.yaml\nrepos:\n{repos}")).unwrap();
        write("  - url: https://a.example/x/app\n  - url: https://b.example/x/app\n  - url: ../\n  - path: .\n");
        let f = load(&p).unwrap();
        let ids: Vec<_> = f.targets.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids[..2], ["x__app", "x__app-2"]);
        assert!(ids.iter().all(|i| super::super::layout::is_safe_id(i)), "{ids:?}");
        assert_eq!(f.targets[2].source, Source::Url(dir.path().join("../").display().to_string()));
        write("  - url: https://a.example/x/app\n  - url: https://a.example/x/app\n  - url: \"\"\n");
        let e = load(&p).unwrap_err();
        let text: Vec<String> = e.iter().map(|d| d.message.clone()).collect();
        assert!(
            text.iter().any(|m| m.contains("listed twice")) && text.iter().any(|m| m.contains("empty")),
            "{text:?}"
        );
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

    #[test]
    fn queries_are_entries_of_their_own_checked_where_they_stand() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fleet.yaml");
        let write = |repos: &str| std::fs::write(&p, format!("version: 1\njob: j.yaml\nrepos:\n{repos}")).unwrap();
        write(
            "  - url: https://github.com/acme/a\n  - github: {org: acme, topics: [python], archived: include}\n    base: dev\n  - gitlab: {group: platform/be}\n",
        );
        let f = load(&p).unwrap();
        assert_eq!(f.targets.len(), 1);
        let at: Vec<usize> = f.queries.iter().map(|q| q.at).collect();
        assert_eq!(at, [1, 1]);
        assert_eq!(f.queries[0].base.as_deref(), Some("dev"));
        let crate::forge::query::Query::Github(q) = &f.queries[0].query else { panic!("github") };
        assert_eq!((q.org.as_deref(), q.filters.archived), (Some("acme"), crate::forge::listing::Keep::Include));
        let crate::forge::query::Query::Gitlab(q) = &f.queries[1].query else { panic!("gitlab") };
        assert!(q.subgroups, "subgroups by default");
        write(
            "  - github: {org: acme, user: me}\n  - github: {org: acme, topic: x}\n  - gitlab: {group: a}\n    url: https://x/y/z\n",
        );
        let e = load(&p).unwrap_err();
        let at: Vec<(&str, u64)> = e.iter().map(|d| (d.path.as_str(), d.line)).collect();
        assert!(at.contains(&("repos[0].github", 4)), "{e:#?}");
        assert!(e.iter().any(|d| d.message.contains("topic")), "an unknown filter is named: {e:#?}");
        assert!(at.contains(&("repos[2]", 6)), "{e:#?}");
    }
}
