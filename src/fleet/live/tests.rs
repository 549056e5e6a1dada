//! Tests of the live progress: what a log and a terminal get as repositories start and finish.
use super::*;
use crate::error::Code;
use crate::testutil::Mem;

fn result(id: &str, status: RepoStatus, secs: u64) -> RepoResult {
    RepoResult {
        id: id.into(),
        source: String::new(),
        status,
        code: (status == RepoStatus::Failed).then_some(Code::Git),
        error: (status == RepoStatus::Failed).then(|| "clone failed".to_string()),
        pr_url: None,
        pr_number: None,
        pr_forge: None,
        output: None,
        branch: None,
        duration_ms: secs * 1000,
        tokens: 0,
        cost_usd: None,
        report_dir: String::new(),
        job_hash: String::new(),
        resumed: false,
        dry_run: false,
        rescued_by: None,
        spend: Default::default(),
    }
}

fn live(tty: bool, total: usize, workers: usize, redactor: Redactor) -> (Live, Mem) {
    let mem = Mem::default();
    let l = Live::new(Box::new(mem.clone()), tty, total, workers, redactor);
    l.begin();
    (l, mem)
}

fn text(m: &Mem) -> String {
    String::from_utf8(m.0.lock().unwrap().clone()).unwrap()
}

#[test]
fn a_log_gets_a_line_per_cadence_and_the_last_counts_at_the_end() {
    // 3 repositories: a line for each one finished (the cadence of a small fleet).
    let (l, mem) = live(false, 3, 2, Redactor::new());
    let t0 = Instant::now();
    let s = Duration::from_secs;
    l.started("a", t0);
    l.started("b", t0);
    l.finished(&result("a", RepoStatus::PrCreated, 4), t0 + s(4));
    l.started("c", t0 + s(4));
    l.finished(&result("b", RepoStatus::Failed, 5), t0 + s(5));
    l.tick(t0 + s(6));
    l.finished(&result("c", RepoStatus::PrUpdated, 4), t0 + s(8));
    l.finish();
    assert_eq!(
        text(&mem),
        "hone fleet: 3 repositories, 2 at a time\n\
         hone fleet: 1/3 done, 1 running, PRs 1 created 0 updated, about 4s left\n\
         hone fleet: b failed E_GIT: clone failed (5s)\n\
         hone fleet: 2/3 done, 1 running, 1 failed, PRs 1 created 0 updated, about 3s left\n\
         hone fleet: 3/3 done, 0 running, 1 failed, PRs 1 created 1 updated\n"
    );
}

#[test]
fn a_log_is_quiet_between_lines_unless_the_period_passes() {
    let (l, mem) = live(false, 100, 8, Redactor::new());
    let t0 = Instant::now();
    for i in 0..4 {
        l.finished(&result(&format!("r{i}"), RepoStatus::NoChange, 1), t0);
    }
    assert_eq!(text(&mem).lines().count(), 1, "every 5 finished: not yet");
    l.finished(&result("r4", RepoStatus::NoChange, 1), t0);
    assert_eq!(text(&mem).lines().count(), 2, "the fifth");
    l.tick(t0 + Duration::from_secs(29));
    assert_eq!(text(&mem).lines().count(), 2);
    l.tick(t0 + Duration::from_secs(31));
    assert_eq!(
        text(&mem).lines().last().unwrap(),
        "hone fleet: 5/100 done, 0 running, PRs 0 created 0 updated, about 11s left"
    );
    // Nothing new since: the end does not say it again.
    l.finish();
    assert_eq!(text(&mem).lines().count(), 3);
}

#[test]
fn a_failure_line_is_redacted_and_neutral() {
    let r = Redactor::new();
    r.add("s3cr3t-token-value");
    let (l, mem) = live(false, 1, 1, r);
    let mut bad = result("::error::owned", RepoStatus::Failed, 1);
    bad.error = Some("fatal: s3cr3t-token-value\r::add-mask::x".into());
    l.finished(&bad, Instant::now());
    drop(l);
    let out = text(&mem);
    assert!(!out.contains("s3cr3t-token-value"), "{out}");
    assert!(out.contains("[REDACTED]"), "{out}");
    for line in out.lines() {
        assert!(!line.trim_start().starts_with("::"), "{line:?}");
        assert!(!line.contains('\r'), "{line:?}");
    }
}

#[test]
fn a_terminal_redraws_and_is_left_clean_at_the_end() {
    let (l, mem) = live(true, 2, 2, Redactor::new());
    let t0 = Instant::now();
    l.started("a", t0);
    l.finished(&result("a", RepoStatus::Failed, 2), t0 + Duration::from_secs(2));
    drop(l); // a fleet stopped early: Drop finishes the line
    let out = text(&mem);
    assert!(out.starts_with("\r\x1b[2K\x1b[?7lhone fleet: 0/2 done, 0 running"), "{out:?}");
    assert!(out.contains("\r\x1b[2Khone fleet: a failed E_GIT: clone failed (2s)\n"), "{out:?}");
    assert!(
        out.ends_with("\r\x1b[2Khone fleet: 1/2 done, 0 running, 1 failed, PRs 0 created 0 updated, about 2s left\n"),
        "{out:?}"
    );
}
