//! `hone eval mine --issues`: a task's text from the issue its fix closes, as SWE-bench's tasks
//! are issues. The forge and the repository on it are decided as a run's are (`forge::place`,
//! from the environment, the job's `forge:` and the `origin` remote); an issue that cannot be
//! read leaves the commit's message as the text, with a warning.

use super::linked::closed_by;
use crate::forge::place::{Input, Place};

/// Where the repository's issues are.
pub fn place(repo: &git2::Repository, job: &crate::spec::Job, env: &crate::env::RunEnv) -> Place {
    let url = repo.find_remote("origin").ok().and_then(|r| r.url().ok().map(str::to_string));
    let input = Input {
        env,
        spec: &job.forge,
        token_env: job.git.token_env.as_deref(),
        remote_url: url.as_deref(),
        env_repo: true,
        remote_trusted: false,
    };
    Place::decide(&input)
}

/// The text of the first issue of this repository `message` says it closes: its title, a blank
/// line, its body. `None` when it names none, or it cannot be read (then a warning says why).
pub async fn text(place: &Place, message: &str, cancel: &tokio_util::sync::CancellationToken) -> Option<String> {
    let own = closed_by(message).into_iter().find(|l| l.repo.is_none() || l.repo == place.repo)?;
    let bound = crate::bound::Bound::new(tokio::time::Instant::now() + std::time::Duration::from_secs(60), cancel);
    let queue = std::sync::Arc::new(tokio::sync::Mutex::new(None));
    match crate::forge::read_issue(place, own.number, queue, &bound).await {
        Ok(Some(i)) => Some(format!("{}\n\n{}", i.title.trim(), i.body.trim()).trim().to_string()),
        Ok(None) => {
            tracing::warn!("issue #{} is not on the forge: the commit's message is the task's text", own.number);
            None
        }
        Err(e) => {
            tracing::warn!("cannot read issue #{}: {}; the commit's message is the task's text", own.number, e.message);
            None
        }
    }
}
