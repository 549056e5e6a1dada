//! GitHub's listings: `/orgs/{org}/repos`, `/users/{user}/repos`, `/search/repositories` and
//! `/search/code`, page by page.

use crate::error::{Code, HoneError, Result};
use crate::forge::github::{GitHub, Resp, encode};
use crate::forge::listing::{Listed, Listing, MAX_PAGES, PER_PAGE, cut_short};
use serde_json::Value;

/// What to list on GitHub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Org(String),
    User(String),
    Search(String),
    Code(String),
}

/// GitHub's search answers at most this many results, whatever the query matched.
const SEARCH_LIMIT: usize = 1000;

pub async fn list(gh: &GitHub, source: &Source) -> Result<Listing> {
    let (path, search, what) = match source {
        Source::Org(o) => {
            (format!("/orgs/{}/repos?type=all&sort=full_name", encode(o)), false, format!("organisation `{o}`"))
        }
        Source::User(u) => {
            (format!("/users/{}/repos?type=owner&sort=full_name", encode(u)), false, format!("user `{u}`"))
        }
        Source::Search(q) => (format!("/search/repositories?q={}", encode(q)), true, format!("search `{q}`")),
        Source::Code(q) => (format!("/search/code?q={}", encode(q)), true, format!("code search `{q}`")),
    };
    let code = matches!(source, Source::Code(_));
    let mut out = Listing::default();
    let mut seen = std::collections::HashSet::new();
    let mut page = 1;
    loop {
        let r = gh.get(&format!("{path}&per_page={PER_PAGE}&page={page}")).await?;
        out.requests += 1;
        if !r.ok() {
            return Err(refused(&what, &r));
        }
        let items = if search { r.body.get("items") } else { Some(&r.body) };
        let items = items.and_then(Value::as_array).ok_or_else(|| {
            HoneError::new(Code::Forge, format!("GitHub's answer listing the {what} is not a list of repositories"))
        })?;
        for item in items {
            let repo = if code { item.get("repository") } else { Some(item) };
            if let Some(l) = repo.and_then(listed).filter(|l| seen.insert(l.path.to_ascii_lowercase())) {
                out.repos.push(l);
            }
        }
        if search {
            out.warnings.extend(search_warnings(&what, &r.body, page));
        }
        let last = items.len() < PER_PAGE || (search && page * PER_PAGE as u32 >= SEARCH_LIMIT as u32);
        if last {
            break;
        }
        if page == MAX_PAGES {
            out.warnings.push(cut_short(&format!("The {what}")));
            break;
        }
        page += 1;
    }
    Ok(out)
}

/// One repository from GitHub's description of it (a full one, or a code search's short one).
fn listed(v: &Value) -> Option<Listed> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let b = |k: &str| v.get(k).and_then(Value::as_bool);
    let visibility = s("visibility").or_else(|| b("private").map(|p| if p { "private" } else { "public" }.into()));
    // Only a name GitHub gives is kept: a hostile answer's other names cost no memory.
    let path =
        s("full_name").filter(|p| p.split('/').count() == 2 && p.split('/').all(super::super::github::is_name))?;
    Some(Listed {
        path,
        archived: b("archived"),
        fork: b("fork"),
        visibility,
        topics: crate::forge::listing::topics(v.get("topics")),
        language: s("language"),
    })
}

/// What a search's first page says the listing will miss.
fn search_warnings(what: &str, body: &Value, page: u32) -> Vec<String> {
    let mut w = Vec::new();
    if body.get("incomplete_results").and_then(Value::as_bool) == Some(true) {
        w.push(format!("GitHub says the {what} timed out on its side: its results are incomplete (page {page})"));
    }
    let total = body.get("total_count").and_then(Value::as_u64).unwrap_or(0) as usize;
    if page == 1 && total > SEARCH_LIMIT {
        w.push(format!(
            "the {what} matched {total} results, and GitHub's search gives at most {SEARCH_LIMIT}: narrow the query (or list an organisation)"
        ));
    }
    w
}

/// The error for a listing GitHub refused.
fn refused(what: &str, r: &Resp) -> HoneError {
    let hint = match r.status {
        401 => "the token was refused: check GITHUB_TOKEN (or the job's `git.token_env`)",
        403 => {
            "the token may not read this: a fine-grained token needs `Metadata: read` on the repositories, a classic one `repo` for private ones"
        }
        404 => "check the name, and that the token can see it (GitHub answers 404 for what a token may not see)",
        422 => "GitHub could not run the query: check its syntax (https://docs.github.com/search-github)",
        _ => "check GITHUB_API_URL and the token",
    };
    HoneError::new(Code::Forge, format!("cannot list the {what} on GitHub: {}", r.message())).hint(hint)
}
