//! The campaign's PRs in each of a fleet's target repositories, read from the forge for the
//! fleet's pace (`forge::pace_campaign`): the same places, clients and proof of "this PR is the
//! campaign's" (`own::pr_check`) as `hone fleet prs` uses, and only reads.

use super::Item;
use crate::error::HoneError;
use crate::forge::campaign::Clients;
use crate::forge::pace_campaign::{Seen, unix_seconds};

/// The campaign's PRs in the repository at `url` (the fleet file's URL), as the pace counts
/// them: when each was opened, and whether it is open. Only PRs the forge shows were opened by
/// the campaign's identity, from the job's branch, in this very repository count.
pub async fn seen(clients: &Clients<'_>, url: &str) -> Result<Vec<Seen>, HoneError> {
    let opened = clients.open(clients.place(url).await?)?;
    let branch = clients.job.git.branch.clone();
    let source = crate::forge::credential::without_userinfo(url);
    let (record, repo) = (String::new(), opened.repo.clone());
    let item = Item { id: String::new(), source, number: 0, branch, pushed: None, base: None, record, repo };
    let me = opened.api.me().await?;
    let prs = opened.api.campaign_prs(&item.branch).await?;
    Ok(prs
        .iter()
        .filter(|p| super::own::pr_check(p, &item, &me).is_none())
        .map(|p| Seen { created_at: unix_seconds(&p.created_at), open: p.state == "open" && !p.merged })
        .collect())
}
