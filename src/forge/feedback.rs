//! Review feedback on a pull (merge) request hone made, from reviewers the repository trusts, as
//! typed and bounded data for hone's memory: the shared shape and bounds; each forge's folder
//! reads its own (`github/feedback.rs`, `gitlab/feedback.rs`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The most feedback items kept from one pull or merge request.
pub const MAX_ITEMS: usize = 20;
/// The most characters of a body, of a reviewer's login and of a path.
pub const MAX_BODY: usize = 500;
pub const MAX_LOGIN: usize = 100;
pub const MAX_PATH: usize = 200;

/// One piece of review feedback on a pull (merge) request hone made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feedback {
    /// The pull request's number (a merge request's iid).
    pub pr: u64,
    /// The reviewer's login (GitLab: username).
    pub reviewer: String,
    /// `CHANGES_REQUESTED`, `COMMENTED` or `APPROVED` (a review comment or a note: `COMMENTED`).
    pub state: String,
    /// The text, whitespace collapsed to one paragraph, at most `MAX_BODY` characters.
    pub body: String,
    /// The file a line comment (a diff note) is on.
    pub path: Option<String>,
    /// When it was written: RFC 3339, UTC, whole seconds.
    pub at: String,
}

/// The prefix of every marker hone writes first in what it posts (`<!-- hone:review job=… -->`,
/// `<!-- hone:autofix job=… -->`, `<!-- hone:job=… -->`).
pub const HONE_MARKER: &str = "<!-- hone:";

/// The text of `body` as feedback: `None` when it is hone's own (it starts with a marker hone
/// writes), whoever's login it came under (a person who ran hone with their own token, another
/// job's token): its words are a model's, not a reviewer's.
pub(crate) fn text_of(body: Option<&str>) -> Option<String> {
    let body = body.unwrap_or("");
    (!body.trim_start().starts_with(HONE_MARKER)).then(|| bounded(body, MAX_BODY))
}

/// The newest `MAX_ITEMS` of `all`, newest first (ties in the order given).
pub(crate) fn newest(mut all: Vec<(OffsetDateTime, Feedback)>) -> Vec<Feedback> {
    all.sort_by_key(|a| std::cmp::Reverse(a.0));
    all.into_iter().take(MAX_ITEMS).map(|(_, f)| f).collect()
}

/// A server's RFC 3339 time, to whole seconds in UTC.
pub(crate) fn time_of(v: &Value) -> Option<OffsetDateTime> {
    let t = OffsetDateTime::parse(v.as_str()?, &Rfc3339).ok()?;
    t.to_offset(time::UtcOffset::UTC).replace_nanosecond(0).ok()
}

pub(crate) fn stamp(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}

/// `text` as one paragraph (whitespace runs made one space, control characters dropped), cut
/// at a character boundary to at most `max` characters, the cut marked with `…`.
pub(crate) fn bounded(text: &str, max: usize) -> String {
    let clean: String =
        text.chars().map(|c| if c.is_whitespace() { ' ' } else { c }).filter(|c| !c.is_control()).collect();
    let one = clean.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= max {
        return one;
    }
    let mut cut: String = one.chars().take(max.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}
