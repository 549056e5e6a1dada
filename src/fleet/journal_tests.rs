use super::*;
use crate::fleet::aggregate::tests::repo;

fn header(ids: &[&str]) -> Header {
    Header {
        version: 1,
        job: "j".into(),
        job_hash: "h".into(),
        started_at: "t".into(),
        repos: ids.iter().map(|i| Planned { id: i.to_string(), source: i.to_string() }).collect(),
    }
}

fn ids(r: &Recorded) -> Vec<(&str, RepoStatus)> {
    r.results.iter().map(|r| (r.id.as_str(), r.status)).collect()
}

#[test]
fn a_torn_last_line_is_ignored_and_the_whole_ones_kept() {
    let d = tempfile::tempdir().unwrap();
    let j = Journal::start(d.path(), header(&["a", "b", "c"]), &[repo("a", RepoStatus::PrCreated)]).unwrap();
    j.add(&repo("b", RepoStatus::Failed)).unwrap();
    drop(j);
    let path = d.path().join(FILE);
    let whole = std::fs::read(&path).unwrap();
    // A kill in the middle of the write of c's line: part of it, no newline.
    let c = line(&Line::Repo { result: Box::new(repo("c", RepoStatus::PrCreated)), at_ms: 9 }).unwrap();
    for cut in [1, c.len() / 2, c.len() - 1] {
        std::fs::write(&path, [&whole[..], &c[..cut]].concat()).unwrap();
        let r = read(d.path()).unwrap().unwrap();
        assert_eq!(ids(&r), [("a", RepoStatus::PrCreated), ("b", RepoStatus::Failed)], "cut at {cut}");
    }
    // Whole, it counts.
    std::fs::write(&path, [&whole[..], &c[..]].concat()).unwrap();
    let r = read(d.path()).unwrap().unwrap();
    assert_eq!(ids(&r).len(), 3);
    assert_eq!(r.last_ms, 9);
}

#[test]
fn a_later_line_wins_and_lines_not_hones_are_ignored() {
    let mut bytes = line(&Line::Fleet(header(&["a"]))).unwrap();
    bytes.extend(b"not json\n{\"repo\": 3}\n");
    bytes.extend(line(&Line::Repo { result: Box::new(repo("a", RepoStatus::Failed)), at_ms: 1 }).unwrap());
    bytes.extend(line(&Line::Repo { result: Box::new(repo("a", RepoStatus::PrUpdated)), at_ms: 2 }).unwrap());
    let r = parse(&bytes).unwrap();
    assert_eq!(ids(&r), [("a", RepoStatus::PrUpdated)]);
}

#[test]
fn a_file_without_hones_header_is_an_error_and_no_file_is_none() {
    let d = tempfile::tempdir().unwrap();
    assert!(read(&d.path().join("never-ran")).unwrap().is_none());
    assert!(read(d.path()).unwrap().is_none());
    std::fs::write(d.path().join(FILE), "{\"fleet\": 1}\n").unwrap();
    assert!(read(d.path()).is_err());
    // A torn header (a kill before the first rename cannot leave one, but a copy could).
    let h = line(&Line::Fleet(header(&["a"]))).unwrap();
    std::fs::write(d.path().join(FILE), &h[..h.len() - 1]).unwrap();
    assert!(read(d.path()).is_err());
    // A symlink in its place is not followed.
    std::fs::remove_file(d.path().join(FILE)).unwrap();
    let elsewhere = d.path().join("elsewhere");
    std::fs::write(&elsewhere, &h).unwrap();
    std::os::unix::fs::symlink(&elsewhere, d.path().join(FILE)).unwrap();
    assert!(read(d.path()).is_err());
}

#[test]
fn the_report_of_a_killed_run_names_every_repository_and_what_it_never_finished() {
    let mut bytes = line(&Line::Fleet(header(&["a", "b"]))).unwrap();
    bytes.extend(line(&Line::Repo { result: Box::new(repo("a", RepoStatus::PrCreated)), at_ms: 40 }).unwrap());
    let report = parse(&bytes).unwrap().report();
    let st: Vec<_> = report.repos.iter().map(|r| (r.id.as_str(), r.status)).collect();
    assert_eq!(st, [("a", RepoStatus::PrCreated), ("b", RepoStatus::Cancelled)]);
    assert_eq!((report.exit_code, report.duration_ms, report.started_at.as_str()), (130, 40, "t"));
}

#[test]
fn a_new_journal_replaces_the_last_whole_and_a_symlink_is_not_written_through() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("target");
    std::fs::write(&target, "theirs").unwrap();
    std::os::unix::fs::symlink(&target, d.path().join(FILE)).unwrap();
    let j = Journal::start(d.path(), header(&["a"]), &[]).unwrap();
    j.add(&repo("a", RepoStatus::NoChange)).unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs");
    assert_eq!(ids(&read(d.path()).unwrap().unwrap()), [("a", RepoStatus::NoChange)]);
    let j = Journal::start(d.path(), header(&["a"]), &[]).unwrap();
    drop(j);
    assert!(read(d.path()).unwrap().unwrap().results.is_empty(), "a fresh run starts a fresh journal");
}
