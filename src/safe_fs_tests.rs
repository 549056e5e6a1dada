//! Tests of `safe_fs`: nothing followed, nothing opened that could block, any depth.

use super::*;

#[test]
fn a_symlinked_directory_is_replaced_and_its_target_untouched() {
    let base = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep"), "x").unwrap();
    std::fs::create_dir(base.path().join("a")).unwrap();
    std::os::unix::fs::symlink(outside.path(), base.path().join("a/b")).unwrap();
    let dir = open_dir_below(base.path(), Path::new("a/b/c")).unwrap();
    write_at(&dir, "r.json", b"{}", 0o644).unwrap();
    assert!(base.path().join("a/b/c/r.json").is_file());
    assert!(std::fs::symlink_metadata(base.path().join("a/b")).unwrap().is_dir());
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1, "the target was not touched");
}

#[test]
fn writes_replace_symlinks_and_fifos_and_reads_refuse_them() {
    let d = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let dir: OwnedFd = File::open(d.path()).unwrap().into();
    std::os::unix::fs::symlink(outside.path().join("x"), d.path().join("link")).unwrap();
    let fifo = std::ffi::CString::new(d.path().join("fifo").to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    assert!(read_regular_at(&dir, "link", 100).is_err());
    assert!(read_regular_at(&dir, "fifo", 100).is_err(), "a FIFO is never read (nor waited on)");
    write_at(&dir, "link", b"a", 0o644).unwrap();
    write_at(&dir, "fifo", b"b", 0o644).unwrap();
    assert!(!outside.path().join("x").exists());
    assert_eq!(read_regular_at(&dir, "fifo", 100).unwrap(), b"b");
    std::os::unix::fs::symlink(outside.path().join("y"), d.path().join("stream")).unwrap();
    let mut f = create_fresh_at(&dir, "stream").unwrap();
    f.write_all(b"line\n").unwrap();
    assert!(!outside.path().join("y").exists());
    assert_eq!(read_regular_at(&dir, "stream", 3).unwrap(), b"lin");
}

#[test]
fn removal_never_follows_a_symlink() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep"), "x").unwrap();
    std::fs::create_dir_all(root.path().join("a/b/c")).unwrap();
    std::fs::write(root.path().join("a/b/c/f"), "x").unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("a/b/out")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
    assert_eq!(remove_beneath(root.path(), "link/keep").unwrap(), 0, "a path under a link is left alone");
    assert_eq!(remove_beneath(root.path(), "a").unwrap(), 5, "a, b, c, f and the link out");
    assert_eq!(remove_beneath(root.path(), "link").unwrap(), 1);
    assert_eq!(remove_beneath(root.path(), "missing").unwrap(), 0);
    assert!(remove_beneath(root.path(), "..").is_err());
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    assert_eq!(std::fs::read_to_string(outside.path().join("keep")).unwrap(), "x", "the target is untouched");
}

#[test]
fn a_tree_is_removed_without_following_its_links() {
    let base = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep"), "x").unwrap();
    let tree = base.path().join("t");
    std::fs::create_dir_all(tree.join("a/b")).unwrap();
    std::fs::write(tree.join("a/b/f"), "1").unwrap();
    std::fs::write(tree.join("g"), "2").unwrap();
    std::os::unix::fs::symlink(outside.path(), tree.join("a/dirlink")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("keep"), tree.join("filelink")).unwrap();
    std::fs::write(tree.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"\xff")), "3").unwrap();
    std::os::unix::fs::symlink(outside.path(), base.path().join("top")).unwrap();
    let dir: OwnedFd = File::open(base.path()).unwrap().into();
    remove_tree_at(&dir, "t").unwrap();
    remove_tree_at(&dir, "top").unwrap();
    remove_tree_at(&dir, "missing").unwrap();
    assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
    assert_eq!(std::fs::read_to_string(outside.path().join("keep")).unwrap(), "x", "no link was followed");
    for bad in ["", ".", "..", "a/b"] {
        assert!(remove_tree_at(&dir, bad).is_err(), "{bad:?}");
    }
}

#[test]
fn absolute_paths_compare_equal_however_spelled() {
    let d = tempfile::tempdir().unwrap();
    let real = d.path().canonicalize().unwrap();
    std::fs::create_dir(real.join("sub")).unwrap();
    assert_eq!(absolute(&real.join("sub/../sub/./new/x")), real.join("sub/new/x"));
}

#[test]
fn a_tree_of_any_depth_is_removed_with_few_descriptors() {
    let base = tempfile::tempdir().unwrap();
    let dir: OwnedFd = File::open(base.path()).unwrap().into();
    // Made by descriptor: the path would be longer than the kernel takes.
    let mut cur = subdir(&dir, "t").unwrap();
    for _ in 0..3000 {
        write_at(&cur, "f", b"x", 0o644).unwrap();
        cur = subdir(&cur, "d").unwrap();
    }
    drop(cur);
    assert_eq!(remove_tree_at(&dir, "t").unwrap(), 6001);
    assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
}

#[test]
fn a_small_read_takes_only_a_small_regular_file_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "eyJ.token.sig\n").unwrap();
    assert_eq!(read_small(&token, 64).unwrap(), b"eyJ.token.sig\n");
    assert!(read_small(&token, 4).is_err(), "larger than the limit");
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    assert!(read_small(&fifo, 64).is_err(), "a FIFO is refused, never waited on");
    assert!(read_small(Path::new("/proc/self/environ"), 1 << 20).is_err(), "hone's environment is no token");
}
