//! The run's pull request on Forgejo: found among the open PRs by its head branch in this very
//! repository (never a fork's branch of the same name), created or updated (title, body, labels by
//! their ids, assignees, reviewers, draft as Forgejo writes it: a `WIP: ` title), or closed when
//! the run changed nothing. Never duplicated: a second run updates the PR the first opened.

use super::{Answer, Forgejo};
use crate::error::{Code, HoneError, Result};
use crate::forge::{PrOperation, PrReport, PrRequest};
use crate::spec::Job;
use serde_json::{Value, json};

/// An open pull request of the repository's own branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pull {
    pub number: u64,
    pub url: String,
}

/// PRs listed per page (Forgejo's default most), and the most pages read looking for hone's.
const PER_PAGE: usize = 50;
const PAGES: u32 = 20;

/// The open PR from `branch` of this repository itself, if there is one.
pub async fn find_open(fj: &Forgejo, branch: &str) -> Result<Option<Pull>> {
    for page in 1..=PAGES {
        let a = fj.get(&fj.repo_path(&format!("/pulls?state=open&limit={PER_PAGE}&page={page}"))).await?;
        check(&a, || format!("listing the pull requests of `{}`", fj.repo))?;
        if let Some(p) = own_open(&a.body, &fj.repo, branch) {
            return Ok(Some(p));
        }
        if a.body.as_array().is_none_or(|l| l.len() < PER_PAGE) {
            return Ok(None);
        }
    }
    Ok(None)
}

/// The first open PR in `list` whose head is `branch` in `repo` itself (not a fork's branch of
/// the same name) and whose base is `repo` too.
pub fn own_open(list: &Value, repo: &str, branch: &str) -> Option<Pull> {
    list.as_array()?.iter().find_map(|p| {
        let same = |k: &str| p[k]["repo"]["full_name"].as_str().is_some_and(|r| r.eq_ignore_ascii_case(repo));
        let own = p["state"] == "open" && p["head"]["ref"] == branch && same("head") && same("base");
        let number = p["number"].as_u64().filter(|_| own)?;
        Some(Pull { number, url: p["html_url"].as_str().unwrap_or_default().to_string() })
    })
}

/// The title Forgejo shows as a draft (work in progress): `WIP: ` before it.
pub fn draft_title(title: &str, draft: bool) -> String {
    if draft { format!("WIP: {title}") } else { title.to_string() }
}

/// The ids of the repository's labels named `names` (labels are ids on Forgejo); unknown names
/// are warned about and left out.
async fn label_ids(fj: &Forgejo, names: &[String], out: &mut PrReport) -> Result<Vec<u64>> {
    let a = fj.get(&fj.repo_path("/labels?limit=50&page=1")).await?;
    check(&a, || format!("reading the labels of `{}`", fj.repo))?;
    let ids = ids_of(&a.body, names);
    for (name, id) in names.iter().zip(&ids) {
        if id.is_none() {
            out.warnings.push(format!("`{}` has no label `{name}`: not added", fj.repo));
        }
    }
    Ok(ids.into_iter().flatten().collect())
}

/// Each name's label id in Forgejo's list of labels.
pub fn ids_of(labels: &Value, names: &[String]) -> Vec<Option<u64>> {
    let all = labels.as_array().map(Vec::as_slice).unwrap_or_default();
    names.iter().map(|n| all.iter().find(|l| l["name"] == n.as_str()).and_then(|l| l["id"].as_u64())).collect()
}

/// Ship on Forgejo: the PR opened or updated, or in autofix hone's one comment on the PR.
pub async fn ship(s: &crate::forge::Ship<'_>, req: &PrRequest, out: &mut PrReport) -> Result<()> {
    let fj = Forgejo::new(s.place, s.shared.queue.clone(), s.bound)?;
    let result = match s.autofix {
        Some(t) => {
            let text = crate::forge::fixed_in_place(t, req, out);
            super::autofix::upsert_comment(&fj, t.number, &s.job.name, &text).await.map(|u| out.url = u)
        }
        None => publish(&fj, s.job, &s.base_branch, req, s.partial_ref.is_some(), out).await,
    };
    out.retries = fj.retries.load(std::sync::atomic::Ordering::Relaxed);
    result
}

/// Open or update the run's PR (or close a stale one when nothing changed).
pub async fn publish(
    fj: &Forgejo,
    job: &Job,
    base: &str,
    req: &PrRequest,
    draft: bool,
    out: &mut PrReport,
) -> Result<()> {
    let pr = &job.pr;
    let branch = &job.git.branch;
    let existing = find_open(fj, branch).await?;
    if !req.changed {
        if let (Some(p), true) = (&existing, pr.close_if_empty) {
            let a = fj.patch(&fj.repo_path(&format!("/pulls/{}", p.number)), &json!({"state": "closed"})).await?;
            check(&a, || format!("closing PR #{}", p.number))?;
            (out.operation, out.number, out.url) = (PrOperation::Closed, Some(p.number), Some(p.url.clone()));
        }
        return Ok(());
    }
    let fields = json!({"title": draft_title(&req.title, pr.draft || draft), "body": req.body});
    let labels = if pr.labels.is_empty() { Vec::new() } else { label_ids(fj, &pr.labels, out).await? };
    let p = match existing {
        Some(p) => update(fj, job, p, &fields, &labels, out).await?,
        None => {
            let mut create = fields.clone();
            create["head"] = json!(branch);
            create["base"] = json!(base);
            if !labels.is_empty() {
                create["labels"] = json!(labels);
            }
            if !pr.assignees.is_empty() {
                create["assignees"] = json!(pr.assignees);
            }
            let a = fj.post(&fj.repo_path("/pulls"), &create).await?;
            if a.status == 409 {
                // Opened meanwhile (another run): update that one.
                let p = find_open(fj, branch).await?.ok_or_else(|| {
                    let m =
                        format!("Forgejo says a pull request exists, but none is open for the branch: {}", a.message());
                    HoneError::new(Code::Forge, m)
                })?;
                update(fj, job, p, &fields, &labels, out).await?
            } else {
                check(&a, || "creating the pull request".to_string())?;
                out.operation = PrOperation::Created;
                let number = a.body["number"]
                    .as_u64()
                    .ok_or_else(|| HoneError::new(Code::Forge, "Forgejo answered without a pull request number"))?;
                let p = Pull { number, url: a.body["html_url"].as_str().unwrap_or_default().to_string() };
                request_reviews(fj, job, p.number, out).await?;
                p
            }
        }
    };
    (out.number, out.url) = (Some(p.number), Some(p.url));
    Ok(())
}

/// Ask the job's reviewers (and teams) for a review of the PR hone just opened; later runs leave
/// whoever people chose since. A refusal (an unknown user) is a warning.
async fn request_reviews(fj: &Forgejo, job: &Job, number: u64, out: &mut PrReport) -> Result<()> {
    let pr = &job.pr;
    if pr.reviewers.is_empty() && pr.team_reviewers.is_empty() {
        return Ok(());
    }
    let body = json!({"reviewers": pr.reviewers, "team_reviewers": pr.team_reviewers});
    let a = fj.post(&fj.repo_path(&format!("/pulls/{number}/requested_reviewers")), &body).await?;
    if !a.ok() {
        out.warnings.push(format!("Forgejo did not ask the reviewers of PR #{number}: {}", a.message()));
    }
    Ok(())
}

/// Update `p` with `fields` (unless `pr.update_existing: false`); labels are added, never
/// replacing those people gave it.
async fn update(fj: &Forgejo, job: &Job, p: Pull, fields: &Value, labels: &[u64], out: &mut PrReport) -> Result<Pull> {
    out.operation = PrOperation::Updated;
    if job.pr.update_existing {
        let a = fj.patch(&fj.repo_path(&format!("/pulls/{}", p.number)), fields).await?;
        check(&a, || format!("updating PR #{}", p.number))?;
        if !labels.is_empty() {
            let a = fj.post(&fj.repo_path(&format!("/issues/{}/labels", p.number)), &json!({"labels": labels})).await?;
            check(&a, || format!("labelling PR #{}", p.number))?;
        }
    }
    Ok(p)
}

/// `e`, with what to check when Forgejo said 404 (no such repository, or not one the token's
/// user may see).
pub fn not_found_hint(e: HoneError, a: &Answer) -> HoneError {
    if a.status != 404 {
        return e;
    }
    e.hint("check the repository's `owner/name` (the remote's URL, or GITHUB_REPOSITORY under Forgejo Actions), the server (`forge.url`), and that the token's user may see the repository")
}

/// An error unless Forgejo answered with success.
pub fn check(a: &Answer, what: impl FnOnce() -> String) -> Result<()> {
    if a.ok() {
        return Ok(());
    }
    Err(not_found_hint(HoneError::new(Code::Forge, format!("{} failed: {}", what(), a.message())), a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pull(n: u64, head_repo: &str, branch: &str) -> Value {
        json!({"number": n, "state": "open", "html_url": format!("https://f/{n}"),
            "head": {"ref": branch, "repo": {"full_name": head_repo}}, "base": {"ref": "main", "repo": {"full_name": "acme/app"}}})
    }

    #[test]
    fn only_the_repositorys_own_branch_is_its_pull_request() {
        let list =
            json!([pull(3, "mallory/app", "hone/x"), pull(4, "acme/app", "hone/y"), pull(5, "Acme/App", "hone/x")]);
        assert_eq!(own_open(&list, "acme/app", "hone/x"), Some(Pull { number: 5, url: "https://f/5".into() }));
        assert_eq!(own_open(&json!([pull(3, "mallory/app", "hone/x")]), "acme/app", "hone/x"), None, "a fork's");
        let mut gone = pull(6, "acme/app", "hone/x");
        gone["head"]["repo"] = Value::Null;
        assert_eq!(own_open(&json!([gone]), "acme/app", "hone/x"), None, "a deleted fork's");
        let mut elsewhere = pull(7, "acme/app", "hone/x");
        elsewhere["base"]["repo"]["full_name"] = json!("other/app");
        assert_eq!(own_open(&json!([elsewhere]), "acme/app", "hone/x"), None);
        assert_eq!(own_open(&json!({"message": "x"}), "acme/app", "hone/x"), None);
    }

    #[test]
    fn drafts_are_titles_and_labels_are_ids() {
        assert_eq!(draft_title("hone: fix", true), "WIP: hone: fix");
        assert_eq!(draft_title("hone: fix", false), "hone: fix");
        let labels = json!([{"id": 1, "name": "bug"}, {"id": 2, "name": "hone"}]);
        assert_eq!(ids_of(&labels, &["hone".into(), "nope".into()]), vec![Some(2), None]);
    }
}
