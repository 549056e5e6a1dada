//! The Seatbelt profile (SBPL) a run's commands get on macOS, written from the jail's plan: what
//! they may read (the system, the home's toolchain places, the repository, less every mask), where they may write
//! (the repository less its git dirs and protected entries, a private temp dir, the policy's
//! writable trees) and whether they reach the network. Pure text and parameters, so it is tested
//! on every platform; `seatbelt` runs it with `sandbox-exec`.

use super::StartError;
use super::plan::{HOME_MASKS, Plan};
use std::path::{Path, PathBuf};

/// A path Seatbelt cannot name: the profile cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} is not UTF-8, which Seatbelt cannot name", .0.display())]
pub struct NotUtf8(pub PathBuf);

/// A plan the profile cannot express is one this machine cannot jail.
impl From<NotUtf8> for StartError {
    fn from(e: NotUtf8) -> Self {
        StartError::Refused(e.to_string())
    }
}

/// System trees a command may read on macOS (the toolchains live under /Library/Developer and
/// /Applications/Xcode.app; `xcode-select`'s link tells the /usr/bin shims where).
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/System",
    "/Library",
    "/Applications",
    "/opt",
    "/nix",
    "/dev",
    "/private/etc",
    "/private/var/select",
    "/private/var/db/timezone",
    "/private/var/db/xcode_select_link",
];

/// Places outside the home that hold the host's secrets: never readable (resolved paths).
pub const SYSTEM_MASKS: &[&str] =
    &["/Library/Keychains", "/private/etc/master.passwd", "/private/etc/sudoers", "/private/etc/sudoers.d"];

/// Home-relative places macOS keeps credentials in, on top of the ones every platform masks.
pub const MAC_HOME_MASKS: &[&str] =
    &["Library/Keychains", "Library/Cookies", "Library/Application Support/com.apple.TCC"];

/// A profile and the values of its parameters (`-D NAME=VALUE`): paths never enter the text, so
/// no path can change the profile's meaning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub text: String,
    pub params: Vec<(String, String)>,
}

impl Profile {
    /// A new parameter `PREFIX_N` holding `path`; its SBPL reference.
    fn param(&mut self, prefix: &str, path: &Path) -> Result<String, NotUtf8> {
        let value = path.to_str().ok_or_else(|| NotUtf8(path.to_path_buf()))?;
        let name = format!("{prefix}_{}", self.params.iter().filter(|(k, _)| k.starts_with(prefix)).count());
        self.params.push((name.clone(), value.to_string()));
        Ok(format!("(param \"{name}\")"))
    }

    /// `(FILTER (param …))` for each of `paths`, as new parameters.
    fn filters(&mut self, filter: &str, prefix: &str, paths: &[PathBuf]) -> Result<Vec<String>, NotUtf8> {
        paths.iter().map(|p| Ok(format!("({filter} {})", self.param(prefix, p)?))).collect()
    }
}

/// What every command may do whatever the plan: start processes (which inherit the profile),
/// signal and inspect its own, read the machine's description (not other processes' arguments or
/// environments: no `kern.proc*`), look up users, use semaphores, and write the null devices and
/// its own descriptors. No terminal: a command cannot reach the one hone runs in.
const BASE: &str = r#"(version 1)
(deny default)
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read
  (sysctl-name-prefix "hw.")
  (sysctl-name "kern.argmax")
  (sysctl-name "kern.hostname")
  (sysctl-name "kern.maxfilesperproc")
  (sysctl-name "kern.maxproc")
  (sysctl-name "kern.osproductversion")
  (sysctl-name "kern.osrelease")
  (sysctl-name "kern.ostype")
  (sysctl-name "kern.osvariant_status")
  (sysctl-name "kern.osversion")
  (sysctl-name "kern.secure_kernel")
  (sysctl-name "kern.usrstack64")
  (sysctl-name "kern.version")
  (sysctl-name "machdep.cpu.brand_string")
  (sysctl-name "sysctl.proc_cputype")
  (sysctl-name "vm.loadavg"))
(allow user-preference-read)
(allow mach-host*)
(allow ipc-posix-sem)
(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo"))
(allow file-read-metadata file-test-existence)
(allow file-read-data (literal "/"))
(allow file-write-data file-ioctl
  (literal "/dev/null") (literal "/dev/zero") (literal "/dev/dtracehelper") (subpath "/dev/fd"))
"#;

/// With network: sockets, and the services name resolution and TLS trust need.
const NETWORK: &str = r#"(allow network*)
(allow system-socket)
(allow mach-lookup
  (global-name "com.apple.dnssd.service")
  (global-name "com.apple.SystemConfiguration.configd")
  (global-name "com.apple.SystemConfiguration.DNSConfiguration")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.networkd"))
"#;

/// `(require-not F)` for each filter.
fn nots(filters: &[String]) -> String {
    filters.iter().map(|f| format!("(require-not {f})")).collect::<Vec<_>>().join(" ")
}

/// The profile for `plan`, with `tmp` as the run's private temp dir. Every path is expected
/// canonical (`/private/var/…`, not `/var/…`): Seatbelt matches resolved paths. Fails only on a
/// path that is not UTF-8.
pub fn profile(plan: &Plan, tmp: &Path) -> Result<Profile, NotUtf8> {
    let mut p = Profile { text: BASE.to_string(), params: Vec::new() };
    let mut masks: Vec<PathBuf> = plan.masks.clone();
    masks.extend(SYSTEM_MASKS.iter().map(PathBuf::from));
    if let Some(home) = &plan.home {
        masks.extend(HOME_MASKS.iter().chain(MAC_HOME_MASKS).map(|m| home.join(m)));
    }
    let not_masked = nots(&p.filters("subpath", "MASK", &masks)?);
    let mut readable: Vec<PathBuf> = SYSTEM_DIRS.iter().map(PathBuf::from).collect();
    readable.extend(plan.ro_dirs.iter().cloned());
    // Of the home, only the toolchain places: Seatbelt cannot give a command a home of its own.
    readable.extend(plan.toolchains.iter().cloned());
    readable.push(plan.repo.clone());
    readable.push(tmp.to_path_buf());
    readable.extend(plan.writable.iter().cloned());
    let readable = p.filters("subpath", "READ", &readable)?.join(" ");
    p.text += &format!("(allow file-read* file-map-executable (require-all (require-any {readable}) {not_masked}))\n");
    // Writes: the repository, the run's temp dir and the policy's writable trees, less the git
    // dirs, the ignored entries that existed before the run (a directory past the overlay limit
    // is among the files: `subpath` covers both) and the masks.
    let mut kept: Vec<PathBuf> = plan.git_dirs.clone();
    kept.extend(plan.ignored_dirs.iter().chain(&plan.ignored_files).cloned());
    let not_kept = nots(&p.filters("subpath", "KEEP", &kept)?);
    let mut writable = vec![tmp.to_path_buf()];
    if !plan.read_only_repo {
        writable.insert(0, plan.repo.clone());
    }
    writable.extend(plan.writable.iter().cloned());
    let roots = p.filters("subpath", "WRITE", &writable)?.join(" ");
    p.text += &format!("(allow file-write* (require-all (require-any {roots}) {not_kept} {not_masked}))\n");
    // A rename moves a whole tree by its top: `mv cfg c2` would carry a masked `cfg/.env`, and
    // `mv repo $TMPDIR/r` the git dir, to a path no rule protects. So neither a protected path
    // nor any directory above one (up to the writable root) may be moved or removed.
    let pinned = p.filters("literal", "PIN", &pinned(&writable, &kept, &masks))?.join(" ");
    p.text += &format!("(deny file-write-unlink {pinned})\n");
    if !plan.isolate_network {
        p.text += NETWORK;
    }
    Ok(p)
}

/// Each writable root, and every protected path inside one with the directories between.
fn pinned(roots: &[PathBuf], kept: &[PathBuf], masks: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = roots.to_vec();
    for p in kept.iter().chain(masks) {
        let Some(root) = roots.iter().find(|r| p.starts_with(r)) else { continue };
        out.extend(p.ancestors().take_while(|a| a.starts_with(root) && *a != root.as_path()).map(Path::to_path_buf));
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            repo: "/Users/dev/repo".into(),
            git_dirs: vec!["/Users/dev/repo/.git".into()],
            home: Some("/Users/dev".into()),
            masks: vec!["/Users/dev/repo/cfg/.env".into()],
            ignored_files: vec!["/Users/dev/repo/local.cfg".into()],
            ignored_dirs: vec!["/Users/dev/repo/.venv".into()],
            writable: vec!["/Users/dev/.cache/pip".into()],
            isolate_network: true,
            ..Plan::default()
        }
    }

    fn values<'a>(p: &'a Profile, prefix: &str) -> Vec<&'a str> {
        p.params.iter().filter(|(k, _)| k.starts_with(prefix)).map(|(_, v)| v.as_str()).collect()
    }

    /// The one line that starts with `start`.
    fn rule<'a>(p: &'a Profile, start: &str) -> &'a str {
        let lines: Vec<&str> = p.text.lines().filter(|l| l.starts_with(start)).collect();
        assert_eq!(lines.len(), 1, "{start}: {lines:?}");
        lines[0]
    }

    #[test]
    fn paths_are_parameters_never_text() {
        let mut pl = plan();
        pl.repo = "/Users/dev/a\") (allow default) (\"".into();
        let p = profile(&pl, Path::new("/private/var/folders/x/hone-tmp")).unwrap();
        assert!(!p.text.contains("allow default"), "{}", p.text);
        assert_eq!(values(&p, "WRITE")[0], "/Users/dev/a\") (allow default) (\"");
        use std::os::unix::ffi::OsStrExt;
        pl.masks.push(PathBuf::from(std::ffi::OsStr::from_bytes(b"/Users/dev/repo/\xff")));
        let e = profile(&pl, Path::new("/private/tmp/t")).unwrap_err();
        assert_eq!(e.to_string(), "/Users/dev/repo/\u{fffd} is not UTF-8, which Seatbelt cannot name");
        let StartError::Refused(why) = StartError::from(e) else { panic!("not refused") };
        assert!(why.ends_with("is not UTF-8, which Seatbelt cannot name"), "{why}");
    }

    #[test]
    fn writes_reach_the_writable_roots_less_git_protected_entries_and_masks() {
        let p = profile(&plan(), Path::new("/private/tmp/hone-tmp")).unwrap();
        assert_eq!(values(&p, "WRITE"), ["/Users/dev/repo", "/private/tmp/hone-tmp", "/Users/dev/.cache/pip"]);
        assert_eq!(values(&p, "KEEP"), ["/Users/dev/repo/.git", "/Users/dev/repo/.venv", "/Users/dev/repo/local.cfg"]);
        // One rule for every writable root, so a policy's writable tree never lifts the rest.
        let w = rule(&p, "(allow file-write*");
        for k in ["KEEP_0", "KEEP_1", "KEEP_2", "MASK_0"] {
            assert!(w.contains(&format!("(require-not (subpath (param \"{k}\")))")), "{k}: {w}");
        }
        assert!(w.contains(
            "(require-any (subpath (param \"WRITE_0\")) (subpath (param \"WRITE_1\")) (subpath (param \"WRITE_2\")))"
        ));
        assert!(!values(&p, "WRITE").contains(&"/Users/dev"), "the home is read-only");
    }

    /// Of the home, only its toolchain places are readable: a credential elsewhere in it is not.
    #[test]
    fn the_home_is_read_only_by_its_toolchain_places() {
        let mut pl = plan();
        pl.toolchains = vec!["/Users/dev/.rustup".into(), "/Users/dev/.cargo/bin".into()];
        let p = profile(&pl, Path::new("/private/tmp/t")).unwrap();
        let read = values(&p, "READ");
        assert!(read.contains(&"/Users/dev/.rustup") && read.contains(&"/Users/dev/.cargo/bin"), "{read:?}");
        assert!(!read.contains(&"/Users/dev"), "the whole home is readable: {read:?}");
    }

    #[test]
    fn nothing_protected_and_no_directory_above_it_can_be_moved_or_removed() {
        let p = profile(&plan(), Path::new("/private/tmp/t")).unwrap();
        let pins = values(&p, "PIN");
        for want in [
            "/Users/dev/repo",
            "/Users/dev/repo/.git",
            "/Users/dev/repo/.venv",
            "/Users/dev/repo/cfg",
            "/Users/dev/repo/cfg/.env",
            "/private/tmp/t",
        ] {
            assert!(pins.contains(&want), "{want} is not pinned: {pins:?}");
        }
        assert!(!pins.contains(&"/Users/dev") && !pins.contains(&"/Users/dev/.ssh"), "{pins:?}");
        assert!(rule(&p, "(deny file-write-unlink").contains("(literal (param \"PIN_0\"))"));
        // The deny comes after the allows, which it overrides.
        let (allow, deny) =
            (p.text.find("(allow file-write*").unwrap(), p.text.find("(deny file-write-unlink").unwrap());
        assert!(deny > allow);
    }

    #[test]
    fn credentials_and_denied_files_are_masked_and_reads_are_an_allow_list() {
        let p = profile(&plan(), Path::new("/private/tmp/t")).unwrap();
        let masks = values(&p, "MASK");
        for m in ["/Users/dev/repo/cfg/.env", "/Users/dev/.ssh", "/Users/dev/Library/Keychains", "/Library/Keychains"] {
            assert!(masks.contains(&m), "{m} not masked: {masks:?}");
        }
        let r = rule(&p, "(allow file-read* file-map-executable");
        for i in 0..masks.len() {
            assert!(r.contains(&format!("(require-not (subpath (param \"MASK_{i}\")))")));
        }
        let reads = values(&p, "READ");
        assert!(reads.contains(&"/Users/dev/repo") && reads.contains(&"/usr"));
        assert!(!reads.contains(&"/Users") && !reads.contains(&"/") && !reads.contains(&"/private/var"));
        assert!(!reads.contains(&"/Users/dev"), "the home is not readable whole");
    }

    #[test]
    fn a_service_writes_only_its_own_temp_dir_and_reads_no_writable_tree() {
        let p = profile(&plan().for_service(None, PathBuf::new()), Path::new("/private/tmp/mcp")).unwrap();
        assert_eq!(values(&p, "WRITE"), ["/private/tmp/mcp"], "not the repository, not the commands' trees");
        assert!(values(&p, "MASK").contains(&"/Users/dev/.cache/pip"), "the commands' writable tree is unreadable");
        assert!(values(&p, "READ").contains(&"/Users/dev/repo"), "the repository is read");
    }

    #[test]
    fn no_terminal_no_other_processes_and_no_network_unless_the_policy_opens_it() {
        let closed = profile(&plan(), Path::new("/private/tmp/t")).unwrap();
        assert!(!closed.text.contains("network"), "{}", closed.text);
        assert!(!closed.text.contains("tty") && !closed.text.contains("pseudo-tty"), "{}", closed.text);
        assert!(!closed.text.contains("kern.proc"), "argv and environments of other processes stay unreadable");
        let mut pl = plan();
        pl.isolate_network = false;
        let open = profile(&pl, Path::new("/private/tmp/t")).unwrap();
        assert!(open.text.contains("(allow network*)"));
        assert!(open.text.starts_with("(version 1)\n(deny default)\n"));
    }
}
