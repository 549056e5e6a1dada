//! Forgejo's listing of an organisation's repositories (`GET /orgs/{org}/repos`), page by page:
//! the pages counted by hone (no link from an answer followed), at most `MAX_PAGES`, and only
//! names under the organisation asked for kept.

use super::{Forgejo, encode, is_name, is_repo_path};
use crate::error::{Code, HoneError, Result};
use crate::forge::listing::{Listed, Listing, MAX_PAGES, topics};
use serde_json::Value;

/// A page of at most this many repositories (Forgejo's default most, `MAX_RESPONSE_ITEMS`).
pub const PER_PAGE: usize = 50;

/// The repositories of organisation `org`, as Forgejo lists them.
pub async fn list(fj: &Forgejo, org: &str) -> Result<Listing> {
    if !is_name(org) {
        return Err(HoneError::new(Code::Forge, format!("`{org}` is not a Forgejo organisation name")));
    }
    let what = format!("repositories of the Forgejo organisation `{org}`");
    let mut out = Listing::default();
    let mut seen = std::collections::HashSet::new();
    for page in 1..=MAX_PAGES {
        let a = fj.get(&format!("/orgs/{}/repos?limit={PER_PAGE}&page={page}", encode(org))).await?;
        out.requests += 1;
        if !a.ok() {
            let hint = if a.status == 404 {
                "check the organisation's name, and that the token's user can see it"
            } else {
                "check the token (`read:organization` and `read:repository` are enough to list) and the Forgejo server's address"
            };
            return Err(HoneError::new(Code::Forge, format!("cannot list the {what}: {}", a.message())).hint(hint));
        }
        let items = a.body.as_array().ok_or_else(|| {
            HoneError::new(Code::Forge, format!("Forgejo's answer listing the {what} is not a list of repositories"))
        })?;
        for item in items {
            if let Some(l) = listed(item, org).filter(|l| seen.insert(l.path.to_ascii_lowercase())) {
                out.repos.push(l);
            }
        }
        if items.len() < PER_PAGE {
            return Ok(out);
        }
    }
    out.warnings
        .push(format!("The {what} had more than {MAX_PAGES} pages of {PER_PAGE}: hone read the first {MAX_PAGES}"));
    Ok(out)
}

/// One repository from Forgejo's description of it, when its name is `org/name` (any other
/// name in the answer costs no memory and becomes no target).
pub fn listed(v: &Value, org: &str) -> Option<Listed> {
    let path = v.get("full_name")?.as_str().filter(|p| is_repo_path(p))?;
    let (owner, _) = path.split_once('/')?;
    if !owner.eq_ignore_ascii_case(org) {
        return None;
    }
    let visibility = match (v["private"].as_bool(), v["internal"].as_bool()) {
        (Some(true), _) => Some("private"),
        (_, Some(true)) => Some("internal"),
        (Some(false), _) => Some("public"),
        _ => None,
    };
    Some(Listed {
        path: path.to_string(),
        archived: v["archived"].as_bool(),
        fork: v["fork"].as_bool(),
        visibility: visibility.map(str::to_string),
        topics: topics(v.get("topics")),
        language: v["language"].as_str().filter(|l| !l.is_empty() && l.len() <= 100).map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_names_under_the_organisation_are_listed() {
        let r = json!({"full_name": "acme/app", "archived": false, "fork": true, "private": false, "topics": ["a"], "language": "Rust"});
        let l = listed(&r, "Acme").unwrap();
        assert_eq!((l.path.as_str(), l.fork, l.visibility.as_deref()), ("acme/app", Some(true), Some("public")));
        assert_eq!((l.topics, l.language.as_deref()), (vec!["a".to_string()], Some("Rust")));
        for bad in ["other/app", "acme/../x", "acme/a/b", "acme", "acme/.."] {
            assert!(listed(&json!({"full_name": bad}), "acme").is_none(), "{bad}");
        }
    }
}
