//! `hone fleet prs status`: one PR's state, checks, reviews, mergeability and age, as its forge
//! shows them (each forge's `campaign.rs` reads them, in as few requests as it allows), and
//! whether it is hone's.

use super::Item;
use super::report::{PrResult, State};
use crate::error::Result;
use crate::forge::campaign::{Api, Seen, blocker, quote, state_of};

/// Whole days from `created_at` (RFC 3339) to now.
fn age_days(created_at: &str) -> Option<u64> {
    let t = time::OffsetDateTime::parse(created_at, &time::format_description::well_known::Rfc3339).ok()?;
    let secs = (time::OffsetDateTime::now_utc() - t).whole_seconds();
    u64::try_from(secs / 86_400).ok()
}

/// `status` for one PR: what was seen and, for an open one, whether it is hone's (`owned`) and
/// what keeps it from merging (`reason`: the first of the two).
pub async fn one(api: &Api<'_>, item: &Item, r: &mut PrResult) -> Result<()> {
    let seen = api.observe(item.number).await?;
    fill(r, &seen, item);
    if matches!(state_of(&seen.pr), State::Open | State::Draft) {
        let (owned, why) = super::own::judge(&seen.pr, item, &api.me().await?);
        r.owned = Some(owned);
        r.reason = why.or_else(|| blocker(&seen));
    }
    Ok(())
}

/// Fill `r` with what was seen.
pub fn fill(r: &mut PrResult, seen: &Seen, item: &Item) {
    let pr = &seen.pr;
    r.url = Some(pr.url.clone()).filter(|u| !u.is_empty());
    r.author = Some(quote(&pr.author)).filter(|a| !a.is_empty());
    let state = state_of(pr);
    r.state = Some(state);
    r.age_days = age_days(&pr.created_at);
    if matches!(state, State::Open | State::Draft) {
        r.head_sha = Some(pr.head_sha.clone());
        r.pushed_sha = item.pushed.clone();
        r.checks = seen.checks;
        r.review = seen.review;
        r.merge_queue = seen.rules.as_ref().map(|x| x.merge_queue);
        r.mergeable = Some(
            match pr.mergeable {
                Some(true) => "mergeable",
                Some(false) => "conflicting",
                None => "unknown",
            }
            .into(),
        );
        r.mergeable_state = Some(quote(&pr.mergeable_state)).filter(|s| !s.is_empty());
    }
}
