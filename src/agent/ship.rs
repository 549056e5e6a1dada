//! After the run: shipping a verified commit (push and PR, or autofix push and comment), and the
//! GitHub Actions integration (outputs, step summary, annotations).

use super::intake::Prepared;
use super::pr_text;
use super::run::Run;
use crate::forge;
use crate::report::{ErrorRecord, RunReport, Status};
use std::io::Write;

/// Push and open or update the PR; a failure here is an infrastructure failure (exit 3).
pub async fn ship(
    p: &Prepared,
    run: &mut Run,
    dry_run: bool,
    draft_failure: bool,
    cancel: &tokio_util::sync::CancellationToken,
) -> Status {
    let partial_ref = if draft_failure { run.saved_ref.clone() } else { None };
    let head = match (&run.commit, &partial_ref) {
        (Some(c), _) => Some(c.sha.clone()),
        (None, Some(r)) => p.ws.resolve_base(Some(r)).ok().map(|o| o.to_string()),
        _ => None,
    };
    let patch = match (head.as_deref().map(git2::Oid::from_str), git2::Oid::from_str(&run.base_sha)) {
        (Some(Ok(h)), Ok(base)) => p.ws.blocking(move |ws| ws.diff_commits(base, h)).await.ok(),
        _ => None,
    };
    let title = pr_text::title(&p.job.pr.title, run);
    let request = forge::PrRequest {
        title: if partial_ref.is_some() { format!("[checks failing] {title}") } else { title },
        body: p.redactor.apply(&pr_text::body(run)),
        changed: (run.status == Status::Success && run.commit.is_some()) || partial_ref.is_some(),
        head,
        patch: patch.map(|t| p.redactor.apply(&t)),
    };
    let s = forge::Ship {
        job: &p.job,
        env: &p.env,
        shared: &p.shared,
        ws: &p.ws,
        deadline: p.deadline,
        cancel,
        report_dir: &p.report_dir,
        dry_run,
        base_branch: run.base_branch.clone(),
        autofix: p.autofix.as_ref(),
        partial_ref,
        github_repo: p.github_repo.clone(),
    };
    match s.run(&request).await {
        Ok(pr) => {
            if let Some(n) = &pr.notice {
                tracing::info!("{n}");
            }
            run.warnings.extend(pr.warnings.iter().cloned());
            run.pr = Some(pr);
            run.status
        }
        Err(e) => {
            run.errors.push(ErrorRecord { code: e.code, message: p.redactor.apply(&e.message) });
            Status::Error
        }
    }
}

/// Under GitHub Actions: step outputs, the step summary, annotations. `repo_root` locates the
/// files annotations point at (none before the repository is known); `summary` is the
/// `summary.md` text, when it could be written.
pub fn actions_integration(
    report: &RunReport,
    (report_dir, repo_root): (Option<&std::path::Path>, Option<&std::path::Path>),
    env: &crate::env::RunEnv,
    redactor: &crate::redact::Redactor,
    commands: Option<&mut crate::ci_text::Out>,
) {
    if let Some(path) = &env.github_output {
        let dir = report_dir.unwrap_or(std::path::Path::new(""));
        let outputs = forge::actions::outputs(report, report.pr.as_ref(), dir);
        let outputs: Vec<(&str, String)> = outputs.into_iter().map(|(k, v)| (k, redactor.apply(&v))).collect();
        if let Err(e) = forge::actions::write_outputs(path, &outputs) {
            tracing::warn!("cannot write GITHUB_OUTPUT: {e}");
        }
    }
    if let Some(path) = &env.github_step_summary {
        let md = redactor.apply(&crate::report::summary::render(report));
        let res =
            std::fs::OpenOptions::new().create(true).append(true).open(path).and_then(|mut f| writeln!(f, "{md}"));
        if let Err(e) = res {
            tracing::warn!("cannot append to GITHUB_STEP_SUMMARY: {e}");
        }
    }
    if let Some(out) = commands {
        for a in forge::actions::annotations(report, repo_root, redactor) {
            let _ = out.command(&a);
        }
    }
}
