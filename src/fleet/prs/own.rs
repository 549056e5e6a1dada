//! Whether a PR is hone's to change, proved against the forge and never taken from a file: it
//! was opened by the campaign's identity (the token's user, or a GitHub App's `slug[bot]`), its
//! head is the job's branch as the job spec names it, head and base are the fleet file's target
//! repository, and its head is the commit hone's run pushed (recorded in the run's `report.json`,
//! and equal to the head the forge names); for a merge, its base is still the branch that run
//! opened it onto. fleet.json and targets.json only say where to look.

use super::Item;
use super::report::Owned;
use crate::forge::campaign::{Me, Pr};

/// The PR's head against the commit hone pushed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// The head is the commit hone pushed.
    Pushed,
    /// Someone pushed since: the head is `now`, hone pushed `pushed`.
    Moved { now: String, pushed: String },
    /// No run report says what hone pushed.
    Unrecorded,
}

/// The first 12 characters of a commit id (letters and digits only, whatever a forge said).
pub fn short(sha: &str) -> String {
    sha.chars().filter(char::is_ascii_alphanumeric).take(12).collect()
}

/// Why the PR is not hone's PR on the job's branch, or `None` when it is.
pub fn pr_check(pr: &Pr, item: &Item, me: &Me) -> Option<(Owned, String)> {
    let by_me = match (me.id, pr.author_id) {
        (Some(mine), Some(theirs)) => mine == theirs,
        (Some(_), None) => false,
        (None, _) => !pr.author.is_empty() && pr.author.eq_ignore_ascii_case(&me.login),
    };
    let not_pr = |why: String| Some((Owned::NotHonesPr, format!("not hone's PR: {why}")));
    if !by_me {
        let who = if pr.author.is_empty() {
            "someone the forge does not name".into()
        } else {
            format!("`{}`", quote(&pr.author))
        };
        return not_pr(format!("opened by {who}, not by `{}`, the campaign's identity", me.login));
    }
    let here = |r: &Option<String>| r.as_deref().is_some_and(|r| r.eq_ignore_ascii_case(&item.repo));
    if !here(&pr.head_repo) {
        return not_pr(match &pr.head_repo {
            Some(r) => format!("its head is in another repository (`{}`)", quote(r)),
            None => "its head repository is gone (a deleted fork)".into(),
        });
    }
    if !here(&pr.base_repo) {
        return not_pr("its base is in another repository".into());
    }
    if pr.head_ref != item.branch || pr.base_ref == pr.head_ref {
        let why = format!("its head is `{}`, the job's branch is `{}`", quote(&pr.head_ref), item.branch);
        return Some((Owned::NotTheJobsBranch, format!("not the job's branch: {why}")));
    }
    None
}

/// The PR's head against what hone's run recorded pushing.
pub fn head_check(pr: &Pr, item: &Item) -> Head {
    match item.pushed.as_deref() {
        None => Head::Unrecorded,
        Some(p) if p.eq_ignore_ascii_case(&pr.head_sha) => Head::Pushed,
        Some(p) => Head::Moved { now: pr.head_sha.clone(), pushed: p.to_string() },
    }
}

/// Why the head is not hone's (for a merge, or a report), `None` when it is.
pub fn head_problem(head: &Head, item: &Item) -> Option<String> {
    match head {
        Head::Pushed => None,
        Head::Moved { now, pushed } => Some(format!(
            "not hone's head: its head is {}, hone pushed {} (someone pushed to the branch since)",
            short(now),
            short(pushed)
        )),
        Head::Unrecorded => {
            Some(format!("not hone's head: no commit hone pushed is recorded for it ({})", item.record))
        }
    }
}

/// Why the PR's base is not the one hone's run opened it onto (someone retargeted it: merging it
/// there would bring along whatever the head has that the other base lacks), `None` when it is
/// or the run's report does not say.
pub fn base_check(pr: &Pr, item: &Item) -> Option<(Owned, String)> {
    let base = item.base.as_deref().filter(|b| *b != pr.base_ref)?;
    let why = format!("not hone's PR: its base is `{}`, hone's run opened it onto `{base}`", quote(&pr.base_ref));
    Some((Owned::NotHonesPr, why))
}

/// The verdict on an open PR, for a merge: `Hones`, or what it is not, with the reason.
pub fn judge(pr: &Pr, item: &Item, me: &Me) -> (Owned, Option<String>) {
    if let Some((owned, why)) = pr_check(pr, item, me).or_else(|| base_check(pr, item)) {
        return (owned, Some(why));
    }
    match head_problem(&head_check(pr, item), item) {
        None => (Owned::Hones, None),
        Some(why) => (Owned::NotHonesHead, Some(why)),
    }
}

/// A forge's text in a reason: at most 100 characters, no control characters.
fn quote(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(100).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(pushed: Option<&str>) -> Item {
        Item {
            id: "acme__app".into(),
            source: String::new(),
            number: 1,
            branch: "hone/job".into(),
            pushed: pushed.map(str::to_string),
            base: None,
            record: "ws/reports/acme__app/report.json".into(),
            repo: "acme/app".into(),
        }
    }

    fn pr(author: &str, head_ref: &str, head_repo: Option<&str>) -> Pr {
        Pr {
            author: author.into(),
            head_ref: head_ref.into(),
            head_sha: "a".repeat(40),
            head_repo: head_repo.map(str::to_string),
            base_ref: "main".into(),
            base_repo: Some("acme/app".into()),
            ..Default::default()
        }
    }

    #[test]
    fn only_the_campaigns_pr_on_the_jobs_branch_at_the_pushed_head_is_hones() {
        let me = Me { login: "hone-bot".into(), id: None };
        let a = "a".repeat(40);
        let ok = pr("Hone-Bot", "hone/job", Some("Acme/App"));
        assert_eq!(judge(&ok, &item(Some(&a)), &me), (Owned::Hones, None));
        let (o, why) = judge(&ok, &item(Some(&"b".repeat(40))), &me);
        assert_eq!(o, Owned::NotHonesHead);
        assert!(why.unwrap().starts_with("not hone's head: its head is aaaaaaaaaaaa, hone pushed bbbbbbbbbbbb"));
        assert_eq!(judge(&ok, &item(None), &me).0, Owned::NotHonesHead);
        let (o, why) = judge(&pr("alice", "hone/job", Some("acme/app")), &item(Some(&a)), &me);
        assert_eq!(o, Owned::NotHonesPr);
        assert_eq!(why.unwrap(), "not hone's PR: opened by `alice`, not by `hone-bot`, the campaign's identity");
        assert_eq!(judge(&pr("", "hone/job", Some("acme/app")), &item(Some(&a)), &me).0, Owned::NotHonesPr);
        for fork in [Some("mallory/app"), None] {
            assert_eq!(judge(&pr("hone-bot", "hone/job", fork), &item(Some(&a)), &me).0, Owned::NotHonesPr);
        }
        let (o, why) = judge(&pr("hone-bot", "main", Some("acme/app")), &item(Some(&a)), &me);
        assert_eq!(o, Owned::NotTheJobsBranch);
        assert_eq!(why.unwrap(), "not the job's branch: its head is `main`, the job's branch is `hone/job`");
        // GitLab: the user id decides, not a name.
        let lab = Me { login: "hone-bot".into(), id: Some(7) };
        let mut by_id = pr("renamed", "hone/job", Some("acme/app"));
        by_id.author_id = Some(7);
        assert_eq!(judge(&by_id, &item(Some(&a)), &lab).0, Owned::Hones);
        by_id.author_id = Some(8);
        by_id.author = "hone-bot".into();
        assert_eq!(judge(&by_id, &item(Some(&a)), &lab).0, Owned::NotHonesPr);
        // Retargeted onto another base than the run opened it onto: not merged there.
        let onto = |base: &str| Item { base: Some(base.into()), ..item(Some(&a)) };
        assert_eq!(judge(&ok, &onto("main"), &me), (Owned::Hones, None));
        let (o, why) = judge(&ok, &onto("develop"), &me);
        assert_eq!(o, Owned::NotHonesPr);
        assert_eq!(why.unwrap(), "not hone's PR: its base is `main`, hone's run opened it onto `develop`");
    }
}
