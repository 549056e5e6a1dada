//! Review mode on GitHub: one review (`event: COMMENT`) on the PR's head with a `suggestion`
//! comment per planned suggestion, kept unique across runs: hone's own earlier review (written by
//! hone's login and starting with the job's marker, never another user's that carries it) is
//! edited when it already says the same, else superseded (its comments deleted, its body pointing
//! to the new one). Pages of lists are counted by hone; a `Link` header is never followed.

use crate::error::{Code, HoneError, Result};
use crate::forge::github::{GitHub, Resp};
use crate::forge::review::{Input, ReviewOperation, ReviewPlan, ReviewReport, body, marker};
use serde_json::{Value, json};

/// The most pages of a PR's files hone reads (GitHub lists at most 3,000 files, 100 a page).
pub const MAX_FILE_PAGES: u32 = 30;
/// The most pages of reviews, or of one review's comments, hone reads.
const MAX_PAGES: u32 = 10;
const PER_PAGE: usize = 100;

/// One of hone's own earlier reviews on the PR.
#[derive(Debug, Clone)]
struct Own {
    id: u64,
    commit_id: String,
    body: String,
    url: Option<String>,
}

impl Own {
    fn superseded(&self, marker: &str) -> bool {
        self.body.strip_prefix(marker).is_some_and(|rest| rest.starts_with("\nSuperseded by "))
    }
}

/// Post (or update) hone's review of `input.commit_sha` on PR `input.number`.
pub async fn publish(gh: &GitHub, ws: &crate::git::Workspace, input: &Input<'_>) -> Result<ReviewReport> {
    still_at_head(gh, input).await?;
    let login = match input.login {
        Some(l) => l.to_string(),
        None => super::autofix::own_login(gh).await?,
    };
    let marker = marker(input.job);
    let own = own_reviews(gh, input.number, &login, &marker).await?;
    let live = own.iter().rev().find(|r| !r.superseded(&marker)).cloned();
    let mut report = ReviewReport {
        forge: "github".into(),
        number: input.number,
        commit: input.head_sha.to_string(),
        ..ReviewReport::default()
    };
    let Some(commit_sha) = input.commit_sha else {
        if let Some(live) = live {
            delete_comments(gh, input.number, live.id, &login).await?;
            let text = body::render(&ReviewPlan::default(), input, body::GITHUB_MAX_BODY);
            edit_body(gh, input.number, live.id, &text).await?;
            (report.operation, report.url) = (ReviewOperation::Updated, live.url);
        }
        return Ok(report);
    };
    let (commentable, warning) = commentable(gh, input.number).await?;
    report.warnings.extend(warning);
    let plan = crate::forge::review::plan_on(ws, input.head_sha, commit_sha, commentable).await?;
    let text = body::render(&plan, input, body::GITHUB_MAX_BODY);
    report.suggestions = plan.suggestions.len();
    report.in_patch = plan.in_patch_lines();
    let same = live.as_ref().filter(|l| {
        l.commit_id == input.head_sha
            && body::digest_of(&l.body).is_some()
            && body::digest_of(&l.body) == body::digest_of(&text)
    });
    let (id, url) = if let Some(l) = same {
        edit_body(gh, input.number, l.id, &text).await?;
        report.operation = ReviewOperation::Updated;
        (l.id, l.url.clone())
    } else {
        let (id, url) = post_review(gh, input, &plan, &text).await?;
        report.operation = ReviewOperation::Created;
        (id, url)
    };
    let link = url.clone().unwrap_or_else(|| format!("review {id}"));
    for old in own.iter().filter(|r| r.id != id && !r.superseded(&marker)) {
        delete_comments(gh, input.number, old.id, &login).await?;
        edit_body(gh, input.number, old.id, &format!("{marker}\nSuperseded by {link}.\n")).await?;
        report.superseded.push(old.id);
    }
    report.url = url;
    Ok(report)
}

/// The error for a refused request: GitHub's own message, and what to do.
fn refused(what: &str, number: u64, resp: &Resp) -> HoneError {
    let hint = match resp.status {
        422 => "GitHub refused the review as it was sent; the whole change is the run's `change.patch` artifact",
        401 | 403 | 404 => {
            "the token needs `pull-requests: write` on the repository (a fork PR's review is posted on the base repository)"
        }
        _ => "check the GitHub API's status and try again",
    };
    HoneError::new(Code::Forge, format!("{what} on PR #{number} failed: {}", resp.message())).hint(hint)
}

/// Up to `max` pages of the list at `path` (which has no query yet), 100 a page: hone counts the
/// pages itself and never follows a `Link` header.
async fn pages(gh: &GitHub, path: &str, what: &str, number: u64, max: u32) -> Result<(Vec<Value>, bool)> {
    let mut all = Vec::new();
    for page in 1..=max {
        let resp = gh.get(&gh.repo_path(&format!("{path}?per_page={PER_PAGE}&page={page}"))).await?;
        if !resp.ok() {
            return Err(refused(what, number, &resp));
        }
        let items = resp.body.as_array().cloned().ok_or_else(|| {
            HoneError::new(Code::Forge, format!("{what} on PR #{number}: GitHub's answer is not a list"))
        })?;
        let full = items.len() >= PER_PAGE;
        all.extend(items);
        if !full {
            return Ok((all, false));
        }
    }
    Ok((all, true))
}

/// The lines of the PR's diff a comment may sit on, from its files' patches (a file GitHub gives
/// no patch for, binary or too large, has none), and a warning when the list was too long.
async fn commentable(gh: &GitHub, number: u64) -> Result<(crate::forge::review::anchors::Commentable, Option<String>)> {
    let path = format!("/pulls/{number}/files");
    let (files, more) = pages(gh, &path, "reading the files", number, MAX_FILE_PAGES).await?;
    let mut c = crate::forge::review::anchors::Commentable::default();
    for f in &files {
        if let (Some(name), Some(patch)) = (f["filename"].as_str(), f["patch"].as_str()) {
            c.add(name, patch);
        }
    }
    let warning = more.then(|| {
        format!(
            "PR #{number} lists more than {} files: suggestions go only on the first ones, the rest of the change is in the review's patch",
            MAX_FILE_PAGES as usize * PER_PAGE
        )
    });
    Ok((c, warning))
}

/// hone's own reviews on the PR, oldest first: by `login`, starting with `marker`.
async fn own_reviews(gh: &GitHub, number: u64, login: &str, marker: &str) -> Result<Vec<Own>> {
    let path = format!("/pulls/{number}/reviews");
    let (reviews, _) = pages(gh, &path, "listing the reviews", number, MAX_PAGES).await?;
    let mut own: Vec<Own> = reviews.iter().filter_map(|r| own_review(r, login, marker)).collect();
    own.sort_by_key(|r| r.id);
    Ok(own)
}

fn own_review(r: &Value, login: &str, marker: &str) -> Option<Own> {
    let body = r["body"].as_str()?;
    if r["user"]["login"].as_str() != Some(login) || !body.starts_with(marker) {
        return None;
    }
    Some(Own {
        id: r["id"].as_u64()?,
        commit_id: r["commit_id"].as_str().unwrap_or_default().to_string(),
        body: body.to_string(),
        url: review_url(r),
    })
}

/// A review's `html_url`, when it is a plain https URL (it goes into a body hone writes).
fn review_url(r: &Value) -> Option<String> {
    let url = r["html_url"].as_str()?;
    let plain = url.bytes().all(|b| b.is_ascii_alphanumeric() || b"/.:_#-".contains(&b));
    (url.starts_with("https://") && plain && url.len() <= 500).then(|| url.to_string())
}

/// Post the review: one `COMMENT` review on the head with a comment per suggestion.
async fn post_review(gh: &GitHub, input: &Input<'_>, plan: &ReviewPlan, text: &str) -> Result<(u64, Option<String>)> {
    let mark = marker(input.job);
    let comments: Vec<Value> = plan
        .suggestions
        .iter()
        .map(|s| {
            let mut c = json!({"path": s.path, "body": body::comment(&mark, s), "line": s.end, "side": "RIGHT"});
            if s.start < s.end {
                c["start_line"] = json!(s.start);
                c["start_side"] = json!("RIGHT");
            }
            c
        })
        .collect();
    let review = json!({"commit_id": input.head_sha, "event": "COMMENT", "body": text, "comments": comments});
    let resp = gh.post(&gh.repo_path(&format!("/pulls/{}/reviews", input.number)), &review).await?;
    if !resp.ok() {
        return Err(refused("posting the review", input.number, &resp));
    }
    let id = resp.body["id"].as_u64().ok_or_else(|| {
        HoneError::new(Code::Forge, format!("posting the review on PR #{}: GitHub's answer has no id", input.number))
    })?;
    Ok((id, review_url(&resp.body)))
}

/// Replace the body of review `id`.
async fn edit_body(gh: &GitHub, number: u64, id: u64, text: &str) -> Result<()> {
    let resp = gh.put(&gh.repo_path(&format!("/pulls/{number}/reviews/{id}")), &json!({"body": text})).await?;
    if !resp.ok() {
        return Err(refused("editing hone's review", number, &resp));
    }
    Ok(())
}

/// Delete the comments of review `id` that `login` wrote.
async fn delete_comments(gh: &GitHub, number: u64, id: u64, login: &str) -> Result<()> {
    let path = format!("/pulls/{number}/reviews/{id}/comments");
    let (comments, _) = pages(gh, &path, "listing a review's comments", number, MAX_PAGES).await?;
    for c in comments.iter().filter(|c| c["user"]["login"].as_str() == Some(login)) {
        let Some(cid) = c["id"].as_u64() else { continue };
        let resp = gh.delete(&gh.repo_path(&format!("/pulls/comments/{cid}"))).await?;
        if !resp.ok() && resp.status != 404 {
            return Err(refused("deleting a comment of hone's earlier review", number, &resp));
        }
    }
    Ok(())
}

/// The PR's head must still be the commit the change was made on: GitHub would place the
/// suggestions by another commit's diff, or refuse them, once someone pushed.
async fn still_at_head(gh: &GitHub, input: &Input<'_>) -> Result<()> {
    let n = input.number;
    let pr = gh.get(&gh.repo_path(&format!("/pulls/{n}"))).await?;
    if !pr.ok() {
        return Err(HoneError::new(Code::Forge, format!("cannot read PR #{n}: {}", pr.message())));
    }
    let head = pr.body["head"]["sha"].as_str().filter(|h| h.len() == 40 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    let head = head.unwrap_or("(not a commit id)");
    if !head.eq_ignore_ascii_case(input.head_sha) {
        return Err(HoneError::new(
            Code::Forge,
            format!("PR #{n} moved on while hone worked (its head is now `{}`, the change was made on `{}`): no review was posted", head, input.head_sha),
        )
        .hint("run hone again on the new head"));
    }
    Ok(())
}

#[cfg(test)]
#[path = "review_tests.rs"]
mod tests;
