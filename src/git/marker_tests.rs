use super::*;
use crate::git::tests::fixture;
use crate::git::{Claimant, Workspace};

fn marker() -> Marker {
    let id = uuid::Uuid::new_v4().to_string();
    Marker::new(&id, "job", "hone/job", OriginalHead::Branch("main".into()))
}

/// The pid of a process that has exited (and been reaped).
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn a_process_is_alive_only_with_its_own_start() {
    let me = marker();
    assert!(me.alive(), "this process wrote it and runs");
    let reused = Marker { started: "0/1".into(), ..me.clone() };
    assert!(!reused.alive(), "a live pid with another start is another process (pid reuse)");
    let gone = Marker { pid: dead_pid(), ..me };
    assert!(!gone.alive());
}

#[test]
fn every_field_is_checked_and_refs_are_hones() {
    let good = marker();
    assert_eq!(good.check(), Ok(()));
    assert_eq!(good.saved_ref(), format!("refs/hone/job/killed-{}", good.run_id));
    let bad = [
        Marker { job: "../../heads/main".into(), ..good.clone() },
        Marker { job: "a b".into(), ..good.clone() },
        Marker { run_id: "x/../../y".into(), ..good.clone() },
        Marker { branch: "-f".into(), ..good.clone() },
        Marker { branch: "a..b".into(), ..good.clone() },
        Marker { original: OriginalHead::Branch("refs/heads/x y".into()), ..good.clone() },
        Marker { original: OriginalHead::Detached("HEAD~1".into()), ..good.clone() },
        Marker { base: Some("main".into()), ..good.clone() },
        Marker { pid: 1, ..good.clone() },
        Marker { version: 2, ..good.clone() },
    ];
    for m in bad {
        assert!(m.check().is_err(), "{m:?}");
    }
}

#[test]
fn a_marker_is_read_only_as_a_regular_file_hone_could_have_written() {
    let git = tempfile::tempdir().unwrap();
    let place = Place::new(git.path());
    assert!(matches!(place.read(), Found::None));
    std::fs::create_dir(git.path().join(DIR)).unwrap();
    let elsewhere = git.path().join("elsewhere.json");
    std::fs::write(&elsewhere, serde_json::to_vec(&marker()).unwrap()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, place.path()).unwrap();
    assert!(matches!(place.read(), Found::Unreadable(_)), "a symlink is not followed");
    std::fs::remove_file(place.path()).unwrap();
    let mut extra = serde_json::to_value(marker()).unwrap();
    extra["hook"] = "sh -c evil".into();
    std::fs::write(place.path(), extra.to_string()).unwrap();
    assert!(matches!(place.read(), Found::Unreadable(_)), "an unknown field is refused");
    place.write(&marker()).unwrap();
    assert!(matches!(place.read(), Found::Marker(_)));
}

/// A durable write stopped between its steps (as a kill would stop it) leaves the old marker,
/// whole; the next write leaves the new one.
#[test]
fn a_marker_write_stopped_half_way_leaves_the_old_one_whole() {
    let git = tempfile::tempdir().unwrap();
    let place = Place::new(git.path());
    let (old, new) = (marker(), marker());
    place.write(&old).unwrap();
    for step in [crate::safe_fs::Step::Created, crate::safe_fs::Step::Written, crate::safe_fs::Step::Synced] {
        crate::safe_fs::stop_at(Some(step));
        assert!(place.write(&new).is_err());
        crate::safe_fs::stop_at(None);
        assert!(matches!(place.read(), Found::Marker(m) if *m == old), "after {step:?}");
    }
    place.write(&new).unwrap();
    assert!(matches!(place.read(), Found::Marker(m) if *m == new));
}

/// A checkout as a killed run leaves it: on its branch, with a commit, a change and a new file.
fn killed_checkout() -> (tempfile::TempDir, Workspace, Marker) {
    let (dir, ws, base) = fixture(|d| std::fs::write(d.join("a.txt"), "a\n").unwrap());
    let mut m = marker();
    m.pid = dead_pid();
    m.base = Some(base.to_string());
    m.original = ws.original_head().unwrap();
    ws.start_branch("hone/job", base, false, &|_| true).unwrap();
    std::fs::write(dir.path().join("a.txt"), "committed\n").unwrap();
    ws.commit(base, "hone: change", "t", "t@example.com").unwrap();
    std::fs::write(dir.path().join("a.txt"), "changed\n").unwrap();
    std::fs::write(dir.path().join("new.txt"), "new\n").unwrap();
    Place::new(&ws.git_dir()).write(&m).unwrap();
    (dir, ws, m)
}

#[test]
fn a_killed_runs_work_is_saved_and_the_checkout_put_back() {
    let (dir, ws, m) = killed_checkout();
    let claim = ws.claim_checkout(None).unwrap();
    let r = claim.recovered.expect("recovered");
    assert_eq!(r.saved_ref.as_deref(), Some(m.saved_ref().as_str()));
    let repo = ws.repository();
    let saved = repo.revparse_single(&m.saved_ref()).unwrap().peel_to_commit().unwrap();
    let blob = |c: &git2::Commit<'_>, p: &str| {
        let e = c.tree().unwrap().get_path(std::path::Path::new(p)).unwrap();
        String::from_utf8(repo.find_blob(e.id()).unwrap().content().to_vec()).unwrap()
    };
    assert_eq!(blob(&saved, "a.txt"), "changed\n");
    assert_eq!(blob(&saved, "new.txt"), "new\n");
    assert_eq!(blob(&saved.parent(0).unwrap(), "a.txt"), "committed\n", "the run's commit is kept under it");
    assert_eq!(ws.original_head().unwrap(), OriginalHead::Branch(r.restored_to.clone()));
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "a\n");
    assert!(!dir.path().join("new.txt").exists());
    assert!(ws.dirty_entries().unwrap().is_empty());
    assert!(matches!(Place::new(&ws.git_dir()).read(), Found::None), "the marker is gone");
}

#[test]
fn a_live_runs_checkout_is_refused_and_left_alone() {
    let (dir, ws, m) = killed_checkout();
    let live = Marker { pid: std::process::id(), started: process_start(std::process::id()).unwrap(), ..m };
    Place::new(&ws.git_dir()).write(&live).unwrap();
    let who = Claimant { run_id: "00000000-0000-4000-8000-000000000000", job: "other", branch: "hone/other" };
    let e = ws.claim_checkout(Some(who)).err().expect("refused");
    assert_eq!(e.code, crate::error::Code::Conflict);
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "changed\n");
    assert!(matches!(Place::new(&ws.git_dir()).read(), Found::Marker(k) if *k == live));
}

#[test]
fn a_held_marker_goes_when_released_and_stays_when_kept() {
    let (_dir, ws, _) = fixture(|d| std::fs::write(d.join("a.txt"), "a\n").unwrap());
    let id = uuid::Uuid::new_v4().to_string();
    let claim = || ws.claim_checkout(Some(Claimant { run_id: &id, job: "job", branch: "hone/job" })).unwrap();
    let held = claim().held.unwrap();
    assert!(matches!(Place::new(&ws.git_dir()).read(), Found::Marker(m) if m.run_id == id));
    held.release().unwrap();
    assert!(matches!(Place::new(&ws.git_dir()).read(), Found::None));
    let held = claim().held.unwrap();
    held.keep();
    drop(held);
    assert!(matches!(Place::new(&ws.git_dir()).read(), Found::Marker(_)), "kept for the next run");
}
