//! Driving one `hone fleet prs` command over its PRs: each repository's forge place and client,
//! at most `concurrency` PRs at once, each result journaled as it comes, a signal stopping the
//! rest, and the reports written at the end whatever happened.

use super::forge::Api;
use super::report::{self, PrResult, Totals};
use super::state::{Journal, Ledger, previous};
use super::{Command, Item, PrsOptions};
use crate::error::{Code, HoneError};
use crate::forge::github::GitHub;
use crate::forge::gitlab::GitLab;
use crate::forge::place::{Input, Place};
use crate::output::dir::ReportDir;
use crate::spec::forge::ForgeKind;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

pub struct Plan {
    pub opts: PrsOptions,
    pub job: crate::spec::Job,
    pub out: PathBuf,
    /// Each PR with its target's URL (credentials and all: the place decides from it).
    pub items: Vec<(Item, String)>,
    /// PRs of targets the fleet file does not name as URLs: errors, as they are.
    pub lost: Vec<PrResult>,
    pub concurrency: usize,
}

/// An empty result for `item` on `forge`.
pub fn result_for(item: &Item, forge: &str) -> PrResult {
    PrResult {
        id: item.id.clone(),
        source: item.source.clone(),
        forge: forge.into(),
        number: item.number,
        dry_run: false,
        ..Default::default()
    }
}

pub(super) struct Ctx {
    plan_opts: PrsOptions,
    job: crate::spec::Job,
    shared: crate::env::Shared,
    /// One GitHub client per API and token: connections reused across repositories.
    clients: Mutex<HashMap<(String, String), GitHub>>,
    sent: AtomicU64,
    retries: AtomicU64,
    ledger: Ledger,
    /// Each token's identity on its forge, asked once.
    ids: super::own::Identities,
    comment: String,
    done: AtomicUsize,
    total: usize,
}

impl Ctx {
    /// The place of a target, decided as `hone fleet` decides it (`fleet::target_place`): the
    /// forge by the URL's host, the repository from the URL, never the environment's.
    async fn place(&self, url: &str) -> Result<Place, HoneError> {
        let (env, spec, token_env) = (&self.plan_opts.env, &self.job.forge, self.job.git.token_env.as_deref());
        let input = Input { env, spec, token_env, remote_url: Some(url), env_repo: false, remote_trusted: true };
        let mut place = Place::decide(&input);
        if let Some(e) = &place.elsewhere {
            return Err(e.error());
        }
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(600);
        let (redactor, cancel) = (&self.plan_opts.redactor, &self.plan_opts.cancel);
        let cx = crate::forge::app::Context { env, shared: &self.shared, redactor, deadline, cancel };
        crate::forge::app::into_place(&cx, &self.job, &mut place).await?;
        // With hone's App, the campaign's identity is its bot (`slug[bot]`), known once per run:
        // its installation tokens may not read `GET /user`.
        let app = place.kind == ForgeKind::Github && crate::forge::app::configured(env);
        if let (Some(t), None, true) = (&place.token, &place.login, app) {
            place.login = self.shared.github_app.identity(&cx, t.secret()).await?.map(|who| who.name);
        }
        Ok(place)
    }

    /// The GitHub client for `owner/repo` at the place's API with its token.
    fn client(&self, place: &Place) -> Result<GitHub, HoneError> {
        let Some((owner, repo)) = place.repo.as_deref().and_then(|r| r.split_once('/')) else {
            return Err(HoneError::new(Code::Forge, "cannot tell the GitHub repository from the target's URL"));
        };
        let Some(token) = place.token.as_ref() else {
            let var = place.token_source(self.job.git.token_env.as_deref());
            return Err(HoneError::new(Code::Forge, format!("{var} is not set: no token for the GitHub API"))
                .hint(format!("set {var} to a token that may read (and for close/merge, write) pull requests")));
        };
        self.plan_opts.redactor.add(token.secret());
        let key = (place.api()?.to_string(), token.secret().to_string());
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = clients.get(&key) {
            return c.with_repo(owner, repo);
        }
        let c = GitHub::new(place.api()?, token.secret(), owner, repo, self.shared.forge_queue.clone())?;
        let mine = c.with_repo(owner, repo)?;
        clients.insert(key, c);
        Ok(mine)
    }

    /// A context that only reads (the fleet's pace), sharing the fleet's App tokens.
    pub(super) fn reading(opts: PrsOptions, job: crate::spec::Job, shared: crate::env::Shared, out: &ReportDir) -> Ctx {
        let (sent, retries, done) = (AtomicU64::new(0), AtomicU64::new(0), AtomicUsize::new(0));
        let (clients, ids, ledger) = (Mutex::new(HashMap::new()), Default::default(), Ledger::read(out));
        Ctx {
            plan_opts: opts,
            job,
            shared,
            clients,
            sent,
            retries,
            ledger,
            ids,
            comment: String::new(),
            done,
            total: 0,
        }
    }

    /// The PRs on the job's branch in the target at `url` that the forge shows are the
    /// campaign's (`own::pr_check`: its identity, its branch, this repository), open or not.
    pub(super) async fn campaign_prs(&self, url: &str) -> Result<Vec<super::github::Pr>, HoneError> {
        let source = crate::forge::credential::without_userinfo(url);
        let (branch, record) = (self.job.git.branch.clone(), String::new());
        let item =
            Item { id: String::new(), source, number: 0, branch, pushed: None, base: None, record, repo: "".into() };
        let (api, item) = self.api(self.place(url).await?, &item)?;
        let me = api.me().await?;
        let prs = api.campaign_prs(&item.branch).await?;
        Ok(prs.into_iter().filter(|p| super::own::pr_check(p, &item, &me).is_none()).collect())
    }

    /// One PR, start to end; an error is the result's, never the run's.
    async fn one(&self, item: Item, url: String) -> PrResult {
        let place = self.place(&url).await;
        let forge = place.as_ref().map_or("github", |p| if p.kind == ForgeKind::Gitlab { "gitlab" } else { "github" });
        let mut r = result_for(&item, forge);
        if let Err(e) = self.act(place, &item, &mut r).await {
            let why = e.hint.as_ref().map_or_else(|| e.message.clone(), |h| format!("{}; {h}", e.message));
            (r.code, r.error) = (Some(e.code), Some(self.plan_opts.redactor.apply(&why)));
        }
        r.dry_run = self.plan_opts.command.dry_run();
        r
    }

    /// The GitLab client for the place's project with its token, bounded like the place.
    fn lab_client(&self, place: &Place) -> Result<GitLab, HoneError> {
        let Some(token) = place.token.as_ref() else {
            let var = place.token_source(self.job.git.token_env.as_deref());
            return Err(HoneError::new(Code::Forge, format!("{var} is not set: no token for the GitLab API"))
                .hint(format!("set {var} to a token with the `api` scope (role Developer or above)")));
        };
        self.plan_opts.redactor.add(token.secret());
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(600);
        GitLab::new(place, self.shared.forge_queue.clone(), (deadline, &self.plan_opts.cancel))
    }

    /// The forge's client for the place, and the item with its repository as the forge names it.
    fn api(&self, mut place: Place, item: &Item) -> Result<(Api<'_>, Item), HoneError> {
        // Whose token: the API and the token itself (a key in memory only).
        let key = format!("{}\n{}", place.api()?, place.token.as_ref().map(|t| t.secret()).unwrap_or_default());
        let (sent, ids) = (&self.sent, &self.ids);
        let api = if place.kind == ForgeKind::Gitlab {
            let gl = self.lab_client(&place)?;
            let item = Item { repo: gl.project.clone(), ..item.clone() };
            (Api::Lab(super::gitlab::Api { gl, sent, ids, key }), item)
        } else {
            let gh = self.client(&place)?;
            let item = Item { repo: format!("{}/{}", gh.owner, gh.repo), ..item.clone() };
            let login = place.login.clone();
            (Api::Hub(super::github::Api { gh, sent, login, ids, key }), item)
        };
        place.token = None;
        Ok(api)
    }

    async fn act(&self, place: Result<Place, HoneError>, item: &Item, r: &mut PrResult) -> Result<(), HoneError> {
        let (api, item) = self.api(place?, item)?;
        let res = match &self.plan_opts.command {
            Command::Status => {
                r.closed_by_hone = self.ledger.has(&item.id, item.number);
                super::status::one(&api, &item, r).await
            }
            Command::Close { dry_run, .. } => {
                let c = super::close::Close { comment: &self.comment, dry_run: *dry_run, ledger: &self.ledger };
                super::close::one(&api, &item, &c, r).await
            }
            Command::Merge { method, dry_run } => super::merge::one(&api, &item, *method, *dry_run, r).await,
        };
        let retried = api.retries();
        self.sent.fetch_add(retried, Ordering::Relaxed);
        self.retries.fetch_add(retried, Ordering::Relaxed);
        res
    }

    /// One PR, or `cancelled` when a signal comes first (a request under way is dropped).
    async fn guarded(&self, item: Item, url: String) -> PrResult {
        let cancel = &self.plan_opts.cancel;
        let stopped = |item: &Item| PrResult {
            code: Some(Code::Cancelled),
            error: Some("stopped by a signal".into()),
            ..result_for(item, "")
        };
        if cancel.is_cancelled() {
            return stopped(&item);
        }
        let it = item.clone();
        let r = tokio::select! {
            r = self.one(item, url) => r,
            () = cancel.cancelled() => stopped(&it),
        };
        let n = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        if !self.plan_opts.quiet {
            let why = r.error.as_deref().or(r.reason.as_deref()).map(|e| format!(": {e}")).unwrap_or_default();
            eprintln!("hone fleet prs: {} #{}: {}{why} ({n}/{})", r.id, r.number, r.label(), self.total);
        }
        r
    }
}

/// Run the plan and write the reports.
pub async fn drive(plan: Plan) -> Result<super::PrsOutcome, HoneError> {
    let Plan { opts, job, out, items, lost, concurrency } = plan;
    let name = opts.command.name();
    let io =
        |what: &str, e: std::io::Error| HoneError::new(Code::Io, format!("cannot {what} in {}: {e}", out.display()));
    let dir = ReportDir::new(&out, None).map_err(|e| io("use the reports directory", e))?;
    let mut results = lost;
    // A result is carried over only for the very PR fleet.json names now (a fleet run since may
    // have opened another for the repository).
    let now = |k: &PrResult| items.iter().any(|(i, _)| i.id == k.id && i.number == k.number);
    let kept: Vec<PrResult> = if opts.resume {
        previous(&dir, name)
            .into_iter()
            .filter(|p| p.finished() && now(p))
            .map(|p| PrResult { resumed: true, ..p })
            .collect()
    } else {
        Vec::new()
    };
    let items: Vec<(Item, String)> = items.into_iter().filter(|(i, _)| !kept.iter().any(|k| k.id == i.id)).collect();
    let journal = Journal::start(&dir, name, &kept).map_err(|e| io("write the journal", e))?;
    results.extend(kept);
    let comment = match &opts.command {
        Command::Close { reason, .. } => super::close::comment_text(reason.as_deref(), &job.name),
        _ => String::new(),
    };
    let ctx = Ctx {
        ledger: Ledger::read(&dir),
        ids: Default::default(),
        total: items.len(),
        plan_opts: opts,
        job,
        shared: Default::default(),
        clients: Mutex::new(HashMap::new()),
        sent: AtomicU64::new(0),
        retries: AtomicU64::new(0),
        comment,
        done: AtomicUsize::new(0),
    };
    let (started, started_at) = (std::time::Instant::now(), crate::events::now_rfc3339());
    let mut stream = futures_util::stream::iter(items).map(|(i, u)| ctx.guarded(i, u)).buffer_unordered(concurrency);
    while let Some(r) = stream.next().await {
        if let Err(e) = journal.add(&r) {
            tracing::warn!("cannot journal a result: {e}");
        }
        results.push(r);
    }
    drop(stream);
    let totals = Totals {
        started_at,
        duration_ms: started.elapsed().as_millis() as u64,
        requests: ctx.sent.load(Ordering::Relaxed),
        retries: ctx.retries.load(Ordering::Relaxed),
        interrupted: ctx.plan_opts.cancel.is_cancelled(),
    };
    let dry_run = ctx.plan_opts.command.dry_run();
    let r = report::build(name, dry_run, results, totals);
    let json = serde_json::to_vec_pretty(&r).map_err(|e| io("write the report", std::io::Error::other(e)))?;
    dir.write(&format!("prs-{name}.json"), &json).map_err(|e| io("write the report", e))?;
    dir.write(&format!("prs-{name}.md"), report::markdown(&r).as_bytes()).map_err(|e| io("write the report", e))?;
    let counts: Vec<String> = r.counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let line = format!(
        "hone fleet prs {name}: {} PRs: {} (exit {}); {} requests; reports in {}",
        r.prs.len(),
        if counts.is_empty() { "none".to_string() } else { counts.join(", ") },
        r.exit_code,
        r.requests,
        out.display()
    );
    let json = String::from_utf8_lossy(&json).into_owned();
    Ok(super::PrsOutcome { exit_code: r.exit_code, line, json })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_github_target_elsewhere_than_the_environments_server_is_refused() {
        let at = |vars: &[(&str, &str)], url: &str| {
            let env = crate::env::RunEnv::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
            let spec = Default::default();
            let input = Input {
                env: &env,
                spec: &spec,
                token_env: None,
                remote_url: Some(url),
                env_repo: false,
                remote_trusted: true,
            };
            Place::decide(&input).elsewhere.map(|e| e.why)
        };
        let ghes = [("GITHUB_SERVER_URL", "https://GHE.corp.example:8443/")];
        for url in ["https://ghe.corp.example/a/b", "git@ghe.corp.example:a/b.git", "ssh://git@ghe.corp.example:22/a/b"]
        {
            assert_eq!(at(&ghes, url), None, "{url}");
        }
        for url in ["https://github.com/a/b", "git@ssh.github.com:a/b.git", "https://www.github.com/a/b"] {
            assert_eq!(at(&[], url), None, "{url}");
            assert!(at(&ghes, url).is_some_and(|m| m.contains("ghe.corp.example")), "{url}");
        }
        let e = at(&[], "https://ghe.corp.example/a/b").unwrap();
        assert!(e.contains("`ghe.corp.example`") && e.contains("`github.com`"), "{e}");
        // A GitLab target is GitLab's to decide; an http server (no token goes to it) is no server.
        let lab = [("GITLAB_TOKEN", "t"), ("CI_SERVER_URL", "https://gitlab.corp.example"), ("GITLAB_CI", "true")];
        assert_eq!(at(&lab, "https://gitlab.corp.example/g/p"), None);
        assert_eq!(at(&[("GITHUB_SERVER_URL", "http://ghe.corp.example")], "https://elsewhere.example/a/b"), None);
    }
}
