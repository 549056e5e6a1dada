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
    let (job, repo, since, until, paths, max_lines, count, out, json, issues) = match action {
        EvalAction::Mine { job, repo, since, until, paths, max_lines, count, out, json, issues } => {
            (job, repo, since, until, paths, max_lines, count, out, json, issues)
        }
        EvalAction::Run { tasks, jobs, out, resume, concurrency, budget_usd, repos, json } => {
            let limits = crate::eval::schedule::Limits { concurrency, budget_usd };
            let repos = repos.as_deref().map(crate::eval::repos::load).transpose()?.unwrap_or_default();
            let asked = RunAsked { tasks, jobs, out, resume, limits, repos, json };
            return run(asked, env, cancel).await;
        }
    };
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
    let asked = crate::eval::mining::Asked { job, repo, filters, out: out.clone(), env, cancel, issues };
    let found = crate::eval::mining::mine(asked).await?;
    if found.cancelled {
        return Err(HoneError::new(
            Code::Cancelled,
            format!(
                "cancelled: the {} task(s) found before it are in {} (and why {} commit(s) were left out beside it); the commits not yet judged are in neither",
                found.tasks,
                out.display(),
                found.dropped
            ),
        ));
    }
    let share = if found.total_ms == 0 { 0.0 } else { 100.0 * found.commands_ms as f64 / found.total_ms as f64 };
    if json {
        return Ok(serde_json::json!({
            "event": "eval_mined",
            "tasks": found.tasks,
            "dropped": found.dropped,
            "tasks_file": out,
            "dropped_file": out.with_extension("dropped.jsonl"),
            "total_ms": found.total_ms,
            "commands_ms": found.commands_ms,
        })
        .to_string());
    }
    Ok(format!(
        "hone eval mine: {} task(s) in {}; {} commit(s) left out, with why, in {}; {:.1} s, {share:.0}% of it in the setup and test commands",
        found.tasks,
        out.display(),
        found.dropped,
        out.with_extension("dropped.jsonl").display(),
        found.total_ms as f64 / 1000.0
    ))
}

/// What `hone eval run` was asked.
struct RunAsked {
    tasks: std::path::PathBuf,
    jobs: Vec<std::path::PathBuf>,
    out: std::path::PathBuf,
    resume: bool,
    limits: crate::eval::schedule::Limits,
    repos: crate::eval::repos::Repos,
    json: bool,
}

/// `hone eval run`: every task with every job, a few at once; the line (or, with `--json`,
/// the JSON object) that says how many each job resolved.
async fn run(
    a: RunAsked,
    env: std::sync::Arc<crate::env::RunEnv>,
    cancel: tokio_util::sync::CancellationToken,
) -> Result<String, HoneError> {
    use crate::eval::running::{Ctx, Verdict};
    let (tasks, jobs, out) = (&a.tasks, &a.jobs, &a.out);
    let io = |e: std::io::Error| HoneError::new(Code::Io, format!("{}: {e}", tasks.display()));
    let text = crate::safe_fs::read_small(tasks, crate::eval::task::MAX_FILE as u64).map_err(io)?;
    let list = crate::eval::task::read(&tasks.display().to_string(), &String::from_utf8_lossy(&text))?;
    std::fs::create_dir_all(out).map_err(|e| HoneError::new(Code::Io, format!("{}: {e}", out.display())))?;
    let out_dir = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
    let sources = crate::eval::source::Sources::new(&out_dir, a.repos);
    let redactor = crate::redact::Redactor::default();
    let ctx = Ctx { env, cancel: cancel.clone(), redactor, out: out_dir.clone(), sources, json: a.json };
    let carried = if a.resume { crate::eval::journal::read(&out_dir) } else { Vec::new() };
    let journal = crate::eval::journal::open(&out_dir, a.resume)?;
    let (all, not_run) = crate::eval::schedule::all(&ctx, &list, jobs, &carried, &journal, &a.limits).await?;
    if cancel.is_cancelled() {
        crate::eval::report::write(&out_dir, &all).map_err(|e| HoneError::new(Code::Io, e.to_string()))?;
        return Err(HoneError::new(
            Code::Cancelled,
            "cancelled: what finished is reported and journaled (--resume goes on)",
        ));
    }
    crate::eval::report::write(&out_dir, &all)
        .map_err(|e| HoneError::new(Code::Io, format!("{}: {e}", out_dir.display())))?;
    let per: Vec<(String, usize, usize)> = jobs
        .iter()
        .map(|j| {
            let mine = all.iter().filter(|o| o.config == j.display().to_string());
            let (resolved, errors) = mine.fold((0, 0), |(r, e), o| match o.verdict {
                Verdict::Resolved => (r + 1, e),
                Verdict::Error => (r, e + 1),
                Verdict::Unresolved => (r, e),
            });
            (j.display().to_string(), resolved, errors)
        })
        .collect();
    let report = out_dir.join("eval.json");
    if a.json {
        let jobs: Vec<_> = per
            .iter()
            .map(|(j, r, e)| serde_json::json!({ "job": j, "tasks": list.len(), "resolved": r, "errors": e }))
            .collect();
        return Ok(
            serde_json::json!({ "event": "eval_done", "jobs": jobs, "not_run": not_run, "report": report }).to_string()
        );
    }
    let per: Vec<String> =
        per.iter().map(|(j, r, e)| format!("{j}: {r} of {} resolved ({e} error(s))", list.len())).collect();
    let stopped = if not_run > 0 { format!("; {not_run} not run: the budget was spent") } else { String::new() };
    Ok(format!("hone eval run: {}{stopped}; {}", per.join("; "), report.display()))
}
