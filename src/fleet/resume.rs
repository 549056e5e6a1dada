//! `--resume` and `--only failed`: which repositories run again, and the digest a run is
//! compared by.

use super::FleetOptions;
use super::aggregate::RepoResult;
use super::spec::{Source, Target};
use std::path::Path;

/// What a fleet's runs are compared by on `--resume`: SHA-256 over the job file's bytes, its
/// policy file's bytes, and the repository (its URL without credentials, or its path) with its
/// base branch. Any change there re-runs it.
pub(super) fn digest(job_bytes: &[u8], policy_bytes: Option<&[u8]>, target: Option<&Target>) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut part = |b: &[u8]| {
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    };
    part(b"hone-fleet-v1");
    part(job_bytes);
    part(policy_bytes.unwrap_or(b"\0builtin"));
    if let Some(t) = target {
        // A URL without its credentials: a password must not be guessable from the digest.
        let shown;
        part(match &t.source {
            Source::Url(u) => {
                shown = crate::forge::credential::without_userinfo(u);
                shown.as_bytes()
            }
            Source::Path(p) => p.as_os_str().as_encoded_bytes(),
        });
        part(t.base.as_deref().unwrap_or("\0default").as_bytes());
    }
    format!("{:x}", h.finalize())
}

/// Under `--resume` or `--only failed`, split the targets into those to run and the earlier
/// results that stand (marked `resumed`). The earlier results are a record others may have
/// edited (the out dir can be a shared artifact): one only decides whether a target of the fleet
/// file runs again, and the target's id, source and report dir (`report_dir_for`) are the fleet
/// file's, never the record's.
pub(super) fn select(
    targets: Vec<Target>,
    previous: &[RepoResult],
    opts: &FleetOptions,
    digest_for: impl Fn(&Target) -> String,
    report_dir_for: impl Fn(&Target) -> std::path::PathBuf,
) -> (Vec<Target>, Vec<RepoResult>) {
    if !(opts.resume || opts.only_failed) {
        return (targets, vec![]);
    }
    let mut carried = Vec::new();
    let mut run = Vec::new();
    for t in targets {
        // The same id and the same repository: ids of a query's repositories depend on the list.
        let shown = super::shown(&t);
        let keep = previous.iter().find(|r| r.id == t.id && r.source == shown).filter(|r| match () {
            // A dry run's result stands only for another dry run: it pushed nothing.
            _ if r.dry_run && !opts.dry_run => false,
            // Waiting for the campaign's pace: it never ran, so it runs whenever the fleet does.
            _ if r.status == super::aggregate::RepoStatus::Waiting => false,
            _ if opts.only_failed => r.status.ok(),
            _ => r.status.ok() && r.job_hash == digest_for(&t),
        });
        match keep {
            Some(r) => carried.push(RepoResult {
                resumed: true,
                id: t.id.clone(),
                source: shown,
                report_dir: report_dir_for(&t).display().to_string(),
                ..r.clone()
            }),
            None => run.push(t),
        }
    }
    (run, carried)
}

/// The results of the last run in `out`, for `--resume` and `--only failed`: its journal (which
/// a killed run leaves too), else the `fleet.json` of a hone that kept none; none before the
/// first run; an error with a code when either cannot be read or parsed (never silently "run
/// everything again").
pub(super) fn previous_results(workspace: &Path) -> Result<Vec<RepoResult>, crate::error::HoneError> {
    match super::journal::read(workspace) {
        Ok(Some(j)) => return Ok(j.results),
        Ok(None) => {}
        Err(e) => {
            let at = workspace.join(super::journal::FILE);
            return Err(crate::error::HoneError::new(
                crate::error::Code::Io,
                format!("cannot read the last run's {}: {e}", at.display()),
            )
            .hint("`--resume` and `--only failed` need it; remove it to run every repository again"));
        }
    }
    match super::aggregate::read(workspace) {
        Ok(r) => Ok(r.repos),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(vec![]),
        Err(e) => Err(crate::error::HoneError::new(
            crate::error::Code::Io,
            format!("cannot read the last run's {}: {e}", workspace.join("fleet.json").display()),
        )
        .hint("`--resume` and `--only failed` need it; remove it to run every repository again")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::aggregate::RepoStatus;

    fn target(url: &str, base: Option<&str>) -> Target {
        Target { id: "acme__app".into(), source: Source::Url(url.into()), base: base.map(str::to_string) }
    }

    #[test]
    fn the_digest_is_sha256_and_stable_across_releases() {
        // A known answer: a change here would make every `--resume` re-run everything.
        assert_eq!(digest(b"task: x", None, None), digest(b"task: x", None, None));
        assert_eq!(digest(b"task: x", None, None).len(), 64);
        assert_eq!(digest(b"name: a", Some(b"version: 1"), Some(&target("https://h/acme/app", Some("main")))), KNOWN);
    }

    const KNOWN: &str = "81fe6d878965cf8c6526cb0c3854b9fc40da35a2d189c2705eca7316368670eb";

    #[test]
    fn every_input_changes_the_digest() {
        let t = target("https://h/acme/app", None);
        let base = digest(b"job", Some(b"policy"), Some(&t));
        assert_ne!(base, digest(b"job ", Some(b"policy"), Some(&t)), "job bytes");
        assert_ne!(base, digest(b"job", Some(b"policy2"), Some(&t)), "policy bytes");
        assert_ne!(base, digest(b"job", None, Some(&t)), "no policy");
        assert_ne!(base, digest(b"job", Some(b"policy"), Some(&target("https://h/acme/app", Some("dev")))), "base");
        assert_ne!(base, digest(b"job", Some(b"policy"), Some(&target("https://h/acme/other", None))), "url");
        // Parts are length-prefixed: moving bytes from one part to the next is a change too.
        assert_ne!(digest(b"ab", Some(b"c"), None), digest(b"a", Some(b"bc"), None));
    }

    fn opts(resume: bool, only_failed: bool, dry_run: bool) -> FleetOptions {
        FleetOptions {
            file: "f.yaml".into(),
            resume,
            only_failed,
            dry_run,
            shard: None,
            cancel: Default::default(),
            redactor: crate::redact::Redactor::new(),
            json: false,
            quiet: true,
            env: std::sync::Arc::new(crate::env::RunEnv::default()),
            workspace: None,
            out: None,
        }
    }

    fn result(id: &str, status: RepoStatus, job_hash: &str, dry_run: bool) -> RepoResult {
        let source = format!("https://h/{id}");
        RepoResult { job_hash: job_hash.into(), dry_run, source, ..crate::fleet::aggregate::tests::repo(id, status) }
    }

    #[test]
    fn a_corrupt_last_run_is_an_error_not_a_fresh_start() {
        let dir = tempfile::tempdir().unwrap();
        assert!(previous_results(&dir.path().join("never-ran")).unwrap().is_empty());
        assert!(previous_results(dir.path()).unwrap().is_empty());
        std::fs::write(dir.path().join("fleet.json"), "{ not json").unwrap();
        let e = previous_results(dir.path()).unwrap_err();
        assert_eq!(e.code, crate::error::Code::Io);
        let shown = e.render();
        assert!(shown.contains("fleet.json") && shown.contains("remove it"), "{shown}");
    }

    fn t(id: &str) -> Target {
        Target { id: id.into(), source: Source::Url(format!("https://h/{id}")), base: None }
    }

    fn dir(t: &Target) -> std::path::PathBuf {
        std::path::Path::new("/ws/reports").join(&t.id)
    }

    #[test]
    fn resume_keeps_only_successes_of_the_same_digest_and_never_a_dry_run() {
        let prev = [
            RepoResult { report_dir: "/etc".into(), ..result("same", RepoStatus::PrCreated, "d", false) },
            result("changed", RepoStatus::PrCreated, "old", false),
            result("failed", RepoStatus::Failed, "d", false),
            result("preview", RepoStatus::Succeeded, "d", true),
        ];
        let all = ["same", "changed", "failed", "preview", "new"].map(t).to_vec();
        let (run, carried) = select(all.clone(), &prev, &opts(true, false, false), |_| "d".into(), dir);
        let ids: Vec<_> = run.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["changed", "failed", "preview", "new"]);
        assert_eq!(carried.len(), 1);
        assert!(carried[0].resumed && carried[0].id == "same");
        // The record's paths are not taken: the report dir is the fleet's own.
        assert_eq!(carried[0].report_dir, "/ws/reports/same");
        // The same id for another repository (ids of a query's repositories follow the list).
        let moved = [RepoResult { source: "https://other/same".into(), ..prev[0].clone() }];
        let (run, carried) = select(vec![t("same")], &moved, &opts(true, false, false), |_| "d".into(), dir);
        assert!(carried.is_empty() && run.len() == 1);
        // A dry run may stand for another dry run.
        let (run, _) = select(all.clone(), &prev, &opts(true, false, true), |_| "d".into(), dir);
        assert_eq!(run.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["changed", "failed", "new"]);
        // Without --resume or --only, everything runs.
        let (run, carried) = select(all.clone(), &prev, &opts(false, false, false), |_| "d".into(), dir);
        assert_eq!((run.len(), carried.len()), (5, 0));
        // --only failed: whatever did not fail stands, whatever the digest.
        let (run, _) = select(all, &prev, &opts(false, true, false), |_| "x".into(), dir);
        assert_eq!(run.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["failed", "preview", "new"]);
    }

    #[test]
    fn a_repository_waiting_for_the_pace_runs_again_under_resume_and_only_failed() {
        let prev =
            [result("waited", RepoStatus::Waiting, "d", false), result("done", RepoStatus::PrCreated, "d", false)];
        let all = ["waited", "done"].map(t).to_vec();
        for (resume, only_failed) in [(true, false), (false, true)] {
            let (run, carried) = select(all.clone(), &prev, &opts(resume, only_failed, false), |_| "d".into(), dir);
            assert_eq!(run.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["waited"]);
            assert_eq!(carried.len(), 1);
        }
    }
}
