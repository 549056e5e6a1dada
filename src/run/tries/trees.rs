//! The tries' work trees: one linked worktree per try, detached at the base commit in a private
//! temporary place (never under `.git` or the checkout); each with the policy rebased onto it,
//! its events stamped with its number and its own bound; removed, by descriptor, however the run
//! ends. And the refs an earlier run's tries left, which this run's replace.

use super::super::handoff::{Scope, Tree};
use crate::error::{Code, HoneError};

/// The trees, and the private place that holds them (removed when dropped, after the trees).
pub struct Trees {
    pub trees: Vec<Tree>,
    place: tempfile::TempDir,
}

/// A tree for each of `n` tries, at `base`. On an error the trees made so far are removed.
pub async fn open(s: &Scope, base: git2::Oid, n: usize) -> Result<Trees, HoneError> {
    let prefix = crate::git::try_prefix(s.events.run_id());
    let place = tempfile::Builder::new()
        .prefix(&format!("{prefix}trees-"))
        .tempdir()
        .map_err(|e| HoneError::new(Code::Io, format!("cannot make a place for the tries' worktrees: {e}")))?;
    let mut trees = Trees { trees: Vec::new(), place };
    for k in 1..=n as u32 {
        let name = format!("{prefix}{k}");
        let path = trees.place.path().join(k.to_string());
        let named = name.clone();
        let ws = match s.ws.blocking(move |ws| ws.add_tree(&named, &path, base)).await {
            Ok(ws) => ws,
            Err(e) => {
                remove(s, trees).await;
                return Err(e);
            }
        };
        if let Err(e) = super::super::intake::locate::hide_hone_dir(ws.root()) {
            tracing::warn!("cannot write {}/.hone/.gitignore: {e}", ws.root().display());
        }
        let policy = s.policy.rebased(s.ws.root(), ws.root());
        let bound = crate::bound::Bound::new(s.bound.deadline, &s.bound.cancel.child_token());
        trees.trees.push(Tree { number: k, name, ws, policy, events: s.events.for_try(k), bound });
    }
    Ok(trees)
}

/// Every tree removed (files by descriptor, then git's record), then the place. Never cut short
/// by a cancel: what is left is the checkout as it was. What cannot be removed is logged.
pub async fn remove(s: &Scope, trees: Trees) {
    let Trees { trees, place } = trees;
    let names: Vec<String> = trees.iter().map(|t| t.name.clone()).collect();
    drop(trees);
    let removed = s.ws.blocking(move |ws| Ok(names.iter().map(|n| ws.remove_tree(n)).collect::<Vec<_>>())).await;
    for r in removed.unwrap_or_else(|e| vec![Err(e)]) {
        if let Err(e) = r {
            tracing::warn!("{}", e.message);
        }
    }
    drop(place);
}

/// Where try `k`'s change is kept: `refs/hone/<job>/attempts/<k>`.
pub fn attempt_ref(job: &str, k: u32) -> String {
    format!("refs/hone/{job}/attempts/{k}")
}

/// The refs an earlier run of the job left for its tries (`attempts/*`, `tries/*`): this run's
/// tries are told by them alone.
pub async fn clear_refs(s: &Scope) -> Result<(), HoneError> {
    let job = s.job.name.clone();
    s.ws.blocking(move |ws| {
        ws.delete_refs_under(&format!("refs/hone/{job}/attempts/"))?;
        ws.delete_refs_under(&format!("refs/hone/{job}/tries/"))
    })
    .await
}
