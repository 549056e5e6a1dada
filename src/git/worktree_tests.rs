use crate::git::tests::fixture;

#[test]
fn a_tree_holds_the_base_and_its_snapshot_is_seen_from_the_main_checkout() {
    let (dir, ws, base) = fixture(|d| std::fs::write(d.join("a.txt"), "a\n").unwrap());
    // The main checkout moves on after the base: the tree is still at the base.
    std::fs::write(dir.path().join("a.txt"), "main's edit\n").unwrap();
    let place = tempfile::tempdir().unwrap();
    let path = place.path().join("t1");
    let tree = ws.add_tree("hone-try-test-1", &path, base).unwrap();
    assert_eq!(std::fs::read_to_string(path.join("a.txt")).unwrap(), "a\n");
    assert_eq!(tree.root(), path.canonicalize().unwrap());
    assert!(tree.repo.head_detached().unwrap(), "detached at the base");
    assert!(ws.repo.find_branch("hone-try-test-1", git2::BranchType::Local).is_err(), "no branch left");
    // A change in the tree, saved on a ref there, is an object and a ref of the one store.
    std::fs::write(path.join("b.txt"), "the try's file\n").unwrap();
    let saved = tree.snapshot(base, "refs/hone/test/attempts/1", "try 1", "t", "t@example.com").unwrap();
    assert_eq!(ws.repo.refname_to_id("refs/hone/test/attempts/1").unwrap(), saved);
    assert!(!dir.path().join("b.txt").exists(), "the main checkout does not see the try's file");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "main's edit\n");
    assert_eq!(ws.trees_named("hone-try-test-"), ["hone-try-test-1"]);
}

#[test]
fn two_trees_do_not_see_each_others_files() {
    let (_dir, ws, base) = fixture(|d| std::fs::write(d.join("a.txt"), "a\n").unwrap());
    let place = tempfile::tempdir().unwrap();
    let (p1, p2) = (place.path().join("t1"), place.path().join("t2"));
    ws.add_tree("hone-try-x-1", &p1, base).unwrap();
    ws.add_tree("hone-try-x-2", &p2, base).unwrap();
    std::fs::write(p1.join("same.txt"), "one\n").unwrap();
    std::fs::write(p2.join("same.txt"), "two\n").unwrap();
    assert_eq!(std::fs::read_to_string(p1.join("same.txt")).unwrap(), "one\n");
    assert_eq!(std::fs::read_to_string(p2.join("same.txt")).unwrap(), "two\n");
}

#[test]
fn removing_a_tree_follows_no_link_left_in_it_and_leaves_no_record() {
    let (dir, ws, base) = fixture(|d| std::fs::write(d.join("a.txt"), "a\n").unwrap());
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep.txt"), "keep\n").unwrap();
    let place = tempfile::tempdir().unwrap();
    let path = place.path().join("t1");
    ws.add_tree("hone-try-y-1", &path, base).unwrap();
    std::os::unix::fs::symlink(outside.path(), path.join("out")).unwrap();
    ws.remove_tree("hone-try-y-1").unwrap();
    assert!(!path.exists(), "the tree is gone");
    assert!(outside.path().join("keep.txt").exists(), "what the link pointed at is not");
    assert!(!dir.path().join(".git/worktrees/hone-try-y-1").exists(), "git's record of it is gone");
    assert!(ws.trees_named("hone-try-y-").is_empty());
    ws.remove_tree("hone-try-y-1").unwrap();
}

#[test]
fn a_taken_place_or_an_existing_branch_is_refused() {
    let (_dir, ws, base) = fixture(|d| std::fs::write(d.join("a.txt"), "a\n").unwrap());
    let place = tempfile::tempdir().unwrap();
    assert!(ws.add_tree("hone-try-z-1", place.path(), base).is_err(), "the place exists");
    let commit = ws.repo.find_commit(base).unwrap();
    ws.repo.branch("users-branch", &commit, false).unwrap();
    assert!(ws.add_tree("users-branch", &place.path().join("t"), base).is_err(), "a user's branch is never taken over");
    assert!(ws.repo.find_branch("users-branch", git2::BranchType::Local).is_ok());
}
