//! A fleet's queries made into targets: each query listed once on its forge (or, on `--resume`,
//! taken from the list an earlier run wrote), and the whole list written to `targets.json` in the
//! fleet's output, so that a run can be repeated and resumed over the same repositories.

use super::spec::{Fleet, QueryEntry, Source, Target};
use crate::bound::Bound;
use crate::error::{Code, HoneError};
use crate::forge::listing;
use crate::forge::place::{forge_wide, server_url};
use crate::forge::query::{Query, clone_url};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The file in the fleet's output with what the queries resolved to.
pub const FILE: &str = "targets.json";
/// The longest resolving every query may take.
const LIMIT: Duration = Duration::from_secs(15 * 60);

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Resolved {
    pub schema_version: u32,
    pub resolved_at: String,
    pub queries: Vec<ResolvedQuery>,
}

/// One query and the repositories it gave.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResolvedQuery {
    pub query: Query,
    pub base: Option<String>,
    /// The forge's web address the repositories are on (their clone URLs are `{server}/{path}.git`).
    pub server: String,
    /// Requests made to list it (0: carried over from an earlier run).
    pub requests: u32,
    pub warnings: Vec<String>,
    /// The repositories' paths on `server` (`owner/name`, `group/sub/project`), in order.
    pub repos: Vec<String>,
}

/// An earlier resolution of query `q` that may stand for it: the same query and base, on the
/// same server as the job's forge is now.
fn earlier<'a>(previous: Option<&'a Resolved>, q: &QueryEntry, server: Option<&str>) -> Option<&'a ResolvedQuery> {
    let same = |p: &&ResolvedQuery| p.query == q.query && p.base == q.base && Some(p.server.as_str()) == server;
    previous?.queries.iter().find(same)
}

/// What resolving reads.
pub struct Context<'a> {
    pub env: &'a crate::env::RunEnv,
    pub job: &'a crate::spec::Job,
    pub shared: &'a crate::shared::Shared,
    pub cancel: &'a CancellationToken,
    /// The last run's resolution (`--resume`, `--only failed`): its queries are not asked again.
    pub previous: Option<Resolved>,
}

/// Replace `fleet`'s queries by the repositories they give, in the file's order; returns what
/// they resolved to (None when the fleet has no query). A repository the file also lists with
/// the same base is kept once.
pub async fn resolve(fleet: &mut Fleet, cx: &Context<'_>) -> Result<Option<Resolved>, HoneError> {
    if fleet.queries.is_empty() {
        return Ok(None);
    }
    let mut done = Vec::new();
    let bound = Bound::new(tokio::time::Instant::now() + LIMIT, cx.cancel);
    for q in &fleet.queries {
        let server = server_url(cx.env, &cx.job.forge, q.query.kind());
        let r = match earlier(cx.previous.as_ref(), q, server.as_deref()) {
            Some(p) => ResolvedQuery { requests: 0, ..p.clone() },
            None => list_within_limit(&q.query, q.base.clone(), cx, &bound).await?,
        };
        done.push(r);
    }
    expand(fleet, &done);
    Ok(Some(Resolved { schema_version: 1, resolved_at: crate::events::now_rfc3339(), queries: done }))
}

/// Put each query's repositories (`done`, in the queries' order) in its place in the list.
fn expand(fleet: &mut Fleet, done: &[ResolvedQuery]) {
    let mut targets = Vec::new();
    let mut seen: std::collections::HashSet<(String, Option<String>)> =
        fleet.targets.iter().map(|t| (same(&t.source), t.base.clone())).collect();
    let mut listed = fleet.targets.drain(..).enumerate().peekable();
    for (q, r) in fleet.queries.iter().zip(done) {
        while let Some((_, t)) = listed.next_if(|(i, _)| *i < q.at) {
            targets.push(t);
        }
        // A path from `targets.json` is checked again as the forge's answer was: the file is
        // the output directory's, not the fleet file's.
        for path in r.repos.iter().filter(|p| q.query.placed(p)) {
            let source = Source::Url(clone_url(&r.server, path));
            if seen.insert((same(&source), q.base.clone())) {
                targets.push(Target::new(source, q.base.clone()));
            }
        }
    }
    targets.extend(listed.map(|(_, t)| t));
    super::layout::make_unique(targets.iter_mut().map(|t| &mut t.id));
    fleet.targets = targets;
    fleet.queries.clear();
}

/// What makes two sources the same repository: a URL without credentials, a trailing `/` or
/// `.git`, in any case (forges' paths are case-insensitive); a path as it is.
fn same(s: &Source) -> String {
    match s {
        Source::Url(u) => {
            let u = crate::forge::credential::without_userinfo(u).to_ascii_lowercase();
            let u = u.trim_end_matches('/');
            u.strip_suffix(".git").unwrap_or(u).to_string()
        }
        Source::Path(p) => p.display().to_string(),
    }
}

/// Make `fleet`'s queries into the repositories the last run in `out` resolved them to, without
/// asking any forge (for `hone fleet prs`, which follows what that run opened).
pub fn from_previous(
    fleet: &mut Fleet,
    out: &Path,
    env: &crate::env::RunEnv,
    spec: &crate::spec::forge::ForgeSpec,
) -> Result<(), HoneError> {
    if fleet.queries.is_empty() {
        return Ok(());
    }
    let missing = || {
        HoneError::new(Code::Spec, format!("the fleet file's queries are not resolved in {}", out.join(FILE).display()))
            .hint("run `hone fleet FILE` first (it writes the list), or point --out at its output")
    };
    let previous = previous(out)?.ok_or_else(missing)?;
    let mut done = Vec::new();
    for q in &fleet.queries {
        let server = server_url(env, spec, q.query.kind());
        done.push(earlier(Some(&previous), q, server.as_deref()).cloned().ok_or_else(missing)?);
    }
    expand(fleet, &done);
    Ok(())
}

/// Make the fleet's queries into targets (on `--resume` and `--only failed`, from the list the
/// last run wrote), and write the list to `targets.json` in the fleet's output.
pub(super) async fn run(
    fleet: &mut Fleet,
    opts: &super::FleetOptions,
    job: &crate::spec::Job,
    shared: &crate::shared::Shared,
) -> Result<(), HoneError> {
    if fleet.queries.is_empty() {
        return Ok(());
    }
    let previous = if opts.resume || opts.only_failed { previous(&fleet.out)? } else { None };
    let cx = Context { env: &opts.env, job, shared, cancel: &opts.cancel, previous };
    let Some(resolved) = resolve(fleet, &cx).await? else { return Ok(()) };
    if !opts.quiet {
        for q in &resolved.queries {
            let how = if q.requests == 0 {
                "from the last run's targets.json".to_string()
            } else {
                format!("{} requests", q.requests)
            };
            let forge = q.query.kind().name();
            eprintln!("hone fleet: a {forge} query gave {} repositories ({how})", q.repos.len());
            for w in &q.warnings {
                eprintln!("hone fleet: warning: {}", crate::ci_text::line(&opts.redactor.apply(w)));
            }
        }
    }
    write(&fleet.out, &resolved)
}

/// `list`, given up at `bound` (`LIMIT` for all the fleet's queries, and the fleet's cancellation).
async fn list_within_limit(
    q: &Query,
    base: Option<String>,
    cx: &Context<'_>,
    bound: &Bound,
) -> Result<ResolvedQuery, HoneError> {
    tokio::select! {
        r = tokio::time::timeout_at(bound.deadline, list(q, base, cx, bound)) => r.unwrap_or_else(|_| Err(HoneError::new(
            Code::Forge,
            format!("listing the fleet's repositories took over {} minutes", LIMIT.as_secs() / 60),
        ).hint("narrow the query, or list the repositories in the fleet file"))),
        () = bound.cancel.cancelled() => Err(HoneError::new(Code::Cancelled, "cancelled while listing the fleet's repositories")),
    }
}

/// Ask the forge for `q`'s repositories and keep those it may give: their clone URLs, sorted.
async fn list(q: &Query, base: Option<String>, cx: &Context<'_>, bound: &Bound) -> Result<ResolvedQuery, HoneError> {
    let (kind, token_env) = (q.kind(), cx.job.git.token_env.as_deref());
    let place = forge_wide(cx.env, &cx.job.forge, token_env, kind).ok_or_else(|| no_place(cx, kind))?;
    let server = server_url(cx.env, &cx.job.forge, kind).ok_or_else(|| no_place(cx, kind))?;
    let token = place.token.as_ref().ok_or_else(|| {
        let app = crate::forge::tokens::app_configured(kind, cx.env);
        let why =
            if app { format!(" (a {} App's installation token cannot list yet)", kind.name()) } else { String::new() };
        HoneError::new(Code::Forge, format!("no {} token to list the fleet's repositories{why}", place.forge_name()))
            .hint(format!("set {} to a token that can read them", place.token_source(token_env)))
    })?;
    let listing = q.list(&place, token, &cx.shared.forge, bound).await?;
    let mut paths: Vec<String> = listing.repos.iter().filter(|l| q.accept(l)).map(|l| l.path.clone()).collect();
    paths.sort_by_key(|p| p.to_ascii_lowercase());
    paths.dedup_by_key(|p| p.to_ascii_lowercase());
    let mut warnings = listing.warnings;
    if paths.is_empty() {
        warnings.push(format!("the query matched no repository ({} listed before the filters)", listing.repos.len()));
    }
    Ok(ResolvedQuery { query: q.clone(), base, server, requests: listing.requests, warnings, repos: paths })
}

/// Why a query's forge cannot be asked: the job names the other forge, or its server is not a
/// plain HTTPS address.
fn no_place(cx: &Context<'_>, kind: crate::forge::Kind) -> HoneError {
    if let Some(k) = cx.job.forge.kind.filter(|k| *k != kind) {
        return HoneError::new(
            Code::Spec,
            format!("the job says `forge.kind: {}`, so a `{}:` query has no forge to ask", k.id(), kind.id()),
        )
        .hint(
            "remove `forge.kind` from the job (each repository's URL then picks its forge), or query the job's forge",
        );
    }
    listing::no_server(kind)
}

/// The resolution an earlier run wrote in `out`, if any.
pub fn previous(out: &Path) -> Result<Option<Resolved>, HoneError> {
    let d = crate::output::dir::ReportDir::new(out, None)
        .map_err(|e| HoneError::new(Code::Io, format!("cannot open {}: {e}", out.display())))?;
    match d.read(FILE) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            HoneError::new(Code::Io, format!("cannot read the last run's {}: {e}", out.join(FILE).display()))
                .hint("`--resume` reads it to run over the same repositories; remove it to list them again")
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(HoneError::new(Code::Io, format!("cannot read {}: {e}", out.join(FILE).display()))),
    }
}

/// Write the resolution to `out/targets.json`.
pub fn write(out: &Path, r: &Resolved) -> Result<(), HoneError> {
    let io = |e: std::io::Error| HoneError::new(Code::Io, format!("cannot write {}: {e}", out.join(FILE).display()));
    let d = crate::output::dir::ReportDir::new(out, None).map_err(io)?;
    let text = serde_json::to_string_pretty(r).map_err(|e| io(std::io::Error::other(e)))?;
    d.write(FILE, text.as_bytes()).map_err(|e| HoneError::new(Code::Io, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fleet file's queries, resolved from an earlier run's `targets.json` and only from it,
    /// on the server the job's forge is on now, each path checked again as an answer would be.
    #[test]
    fn prs_follow_the_repositories_the_last_run_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("fleet.yaml");
        let text = "version: 1\njob: j.yaml\nrepos:\n  - url: https://github.com/acme/first\n  - github: { org: acme }\n  - url: https://github.com/acme/last\n";
        std::fs::write(&file, text).unwrap();
        let load = || super::super::spec::load(&file).unwrap();
        let (out, spec) = (dir.path().join("out"), crate::spec::forge::ForgeSpec::default());
        let env = crate::env::RunEnv::from_vars(Default::default());
        let e = from_previous(&mut load(), &out, &env, &spec).unwrap_err();
        assert!(e.message.contains("not resolved"), "{}", e.message);
        let query = load().queries[0].query.clone();
        // A tampered file: a repository of another owner, a path out of the server, a local path.
        let paths = ["acme/a", "Acme/first", "evil/x", "acme/../../x", "/victim/secret"];
        let repos = paths.iter().map(|u| u.to_string()).collect();
        let server = "https://github.com".to_string();
        let q = ResolvedQuery { query, base: None, server, requests: 1, warnings: vec![], repos };
        write(&out, &Resolved { schema_version: 1, resolved_at: "t".into(), queries: vec![q.clone()] }).unwrap();
        let mut fleet = load();
        from_previous(&mut fleet, &out, &env, &spec).unwrap();
        let ids: Vec<&str> = fleet.targets.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            ["acme__first", "acme__a", "acme__last"],
            "in the file's order, a repository listed twice once"
        );
        assert_eq!(fleet.targets[1].source, Source::Url("https://github.com/acme/a.git".into()));
        for other in [
            ResolvedQuery { query: crate::forge::query::Query::Gitlab(Default::default()), ..q.clone() },
            ResolvedQuery { server: "https://evil.example".into(), ..q },
        ] {
            write(&out, &Resolved { schema_version: 1, resolved_at: "t".into(), queries: vec![other] }).unwrap();
            assert!(from_previous(&mut load(), &out, &env, &spec).is_err(), "another query's or server's list");
        }
    }
}
