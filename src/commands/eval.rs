//! `hone eval`: the command line's words made into what `eval` asks (dates, globs), and its
//! result line.

use crate::cli::EvalAction;
use crate::error::{Code, HoneError};

/// A day (`YYYY-MM-DD`, UTC) as seconds since the epoch.
fn day(s: &str) -> Result<i64, HoneError> {
    let f = time::macros::format_description!("[year]-[month]-[day]");
    time::Date::parse(s, &f).map(|d| d.midnight().assume_utc().unix_timestamp()).map_err(|e| {
        HoneError::new(Code::InvalidArgs, format!("`{s}` is not a day ({e})")).hint("write it as YYYY-MM-DD")
    })
}

/// `hone eval mine`: mine, and the line that says what was found.
pub async fn mine(
    action: EvalAction,
    env: std::sync::Arc<crate::env::RunEnv>,
    cancel: tokio_util::sync::CancellationToken,
) -> Result<String, HoneError> {
    let EvalAction::Mine { job, repo, since, until, paths, max_lines, count, out } = action;
    let paths = if paths.is_empty() {
        None
    } else {
        let mut b = globset::GlobSetBuilder::new();
        for p in &paths {
            b.add(globset::Glob::new(p).map_err(|e| HoneError::new(Code::InvalidArgs, format!("`--path {p}`: {e}")))?);
        }
        Some(b.build().map_err(|e| HoneError::new(Code::InvalidArgs, e.to_string()))?)
    };
    let filters = crate::eval::mine::Filters {
        paths,
        since: since.as_deref().map(day).transpose()?,
        until: until.as_deref().map(day).transpose()?,
        max_lines,
        count,
    };
    let asked = crate::eval::mining::Asked { job, repo, filters, out: out.clone(), env, cancel };
    let found = crate::eval::mining::mine(asked).await?;
    Ok(format!(
        "hone eval mine: {} task(s) in {}; {} commit(s) left out, with why, in {}",
        found.tasks,
        out.display(),
        found.dropped,
        out.with_extension("dropped.jsonl").display()
    ))
}
