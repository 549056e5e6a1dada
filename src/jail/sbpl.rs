//! The Seatbelt profile (SBPL) a run's commands get on macOS, written from the jail's plan: what
//! they may read (the system, the home, the repository, less every mask), where they may write
//! (the repository less its git dirs and protected entries, a private temp dir, the policy's
//! writable trees) and whether they reach the network. Pure text and parameters, so it is tested
//! on every platform; `seatbelt` runs it with `sandbox-exec`.

use super::plan::{HOME_MASKS, Plan};
use std::path::{Path, PathBuf};

/// System trees a command may read on macOS (the toolchains live under /Library/Developer and
/// /Applications/Xcode.app; /etc is /private/etc).
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
    "/etc",
    "/private/etc",
    "/var/select",
    "/private/var/select",
    "/var/db/timezone",
    "/private/var/db/timezone",
];

/// Places outside the home that hold the host's secrets: never readable.
pub const SYSTEM_MASKS: &[&str] =
    &["/Library/Keychains", "/private/etc/master.passwd", "/etc/master.passwd", "/etc/sudoers"];

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
    fn param(&mut self, prefix: &str, path: &Path) -> String {
        let name = format!("{prefix}_{}", self.params.iter().filter(|(k, _)| k.starts_with(prefix)).count());
        self.params.push((name.clone(), path.to_string_lossy().into_owned()));
        format!("(param \"{name}\")")
    }

    /// `(subpath (param …))` for each of `paths`, as new parameters.
    fn subpaths(&mut self, prefix: &str, paths: &[PathBuf]) -> Vec<String> {
        paths.iter().map(|p| format!("(subpath {})", self.param(prefix, p))).collect()
    }
}

/// What every command may do whatever the plan: start processes (which inherit the profile),
/// signal and inspect its own, read system settings, look up users, use ptys and semaphores.
const BASE: &str = r#"(version 1)
(deny default)
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow user-preference-read)
(allow mach-host*)
(allow ipc-posix-sem)
(allow pseudo-tty)
(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo"))
(allow file-read-metadata)
(allow file-write-data file-ioctl
  (require-all (vnode-type CHARACTER-DEVICE)
    (require-any (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))))
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

/// The profile for `plan`, with `tmp` as the run's private temp dir. Every path is expected
/// canonical (`/private/var/…`, not `/var/…`): Seatbelt matches resolved paths.
pub fn profile(plan: &Plan, tmp: &Path) -> Profile {
    let mut p = Profile { text: BASE.to_string(), params: Vec::new() };
    let mut masks: Vec<PathBuf> = plan.masks.clone();
    masks.extend(SYSTEM_MASKS.iter().map(PathBuf::from));
    if let Some(home) = &plan.home {
        masks.extend(HOME_MASKS.iter().chain(MAC_HOME_MASKS).map(|m| home.join(m)));
    }
    let not_masked: Vec<String> =
        p.subpaths("MASK", &masks).into_iter().map(|s| format!("(require-not {s})")).collect();
    let mut readable: Vec<PathBuf> = SYSTEM_DIRS.iter().map(PathBuf::from).collect();
    readable.extend(plan.ro_dirs.iter().cloned());
    readable.extend(plan.home.iter().cloned());
    readable.push(plan.repo.clone());
    readable.push(tmp.to_path_buf());
    readable.extend(plan.writable.iter().cloned());
    let readable = p.subpaths("READ", &readable);
    p.text +=
        &format!("(allow file-read* (require-all (require-any {}) {}))\n", readable.join(" "), not_masked.join(" "));
    // The repository, less its git dirs and the ignored entries that existed before the run.
    let repo = format!("(subpath {})", p.param("REPO", &plan.repo));
    let mut keep: Vec<String> = p.subpaths("GIT", &plan.git_dirs);
    keep.extend(plan.ignored_files.iter().map(|f| format!("(literal {})", p.param("IGNORED_FILE", f))));
    keep.extend(p.subpaths("IGNORED_DIR", &plan.ignored_dirs));
    let keep: Vec<String> = keep.into_iter().map(|s| format!("(require-not {s})")).collect();
    p.text += &format!("(allow file-write* (require-all {repo} {} {}))\n", keep.join(" "), not_masked.join(" "));
    let mut writable = vec![tmp.to_path_buf()];
    writable.extend(plan.writable.iter().cloned());
    let writable = p.subpaths("WRITE", &writable);
    p.text +=
        &format!("(allow file-write* (require-all (require-any {}) {}))\n", writable.join(" "), not_masked.join(" "));
    if !plan.isolate_network {
        p.text += NETWORK;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            repo: "/Users/dev/repo".into(),
            git_dirs: vec!["/Users/dev/repo/.git".into()],
            home: Some("/Users/dev".into()),
            masks: vec!["/Users/dev/repo/.env".into()],
            ignored_files: vec!["/Users/dev/repo/local.cfg".into()],
            ignored_dirs: vec!["/Users/dev/repo/.venv".into()],
            writable: vec!["/Users/dev/.cache/pip".into()],
            isolate_network: true,
            ..Plan::default()
        }
    }

    fn value<'a>(p: &'a Profile, name: &str) -> &'a str {
        &p.params.iter().find(|(k, _)| k == name).unwrap_or_else(|| panic!("no {name} in {:?}", p.params)).1
    }

    #[test]
    fn paths_are_parameters_never_text() {
        let mut pl = plan();
        pl.repo = "/Users/dev/a\") (allow default) (\"".into();
        let p = profile(&pl, Path::new("/private/var/folders/x/hone-tmp"));
        assert!(!p.text.contains("allow default"), "{}", p.text);
        assert_eq!(value(&p, "REPO_0"), "/Users/dev/a\") (allow default) (\"");
        assert!(p.text.contains("(subpath (param \"REPO_0\"))"));
    }

    #[test]
    fn writes_reach_the_repo_and_tmp_but_not_git_or_protected_entries() {
        let p = profile(&plan(), Path::new("/private/tmp/hone-tmp"));
        let repo_rule = p.text.lines().find(|l| l.contains("REPO_0")).unwrap();
        assert!(repo_rule.starts_with("(allow file-write* (require-all (subpath (param \"REPO_0\"))"), "{repo_rule}");
        for k in ["GIT_0", "IGNORED_DIR_0", "MASK_0"] {
            assert!(repo_rule.contains(&format!("(require-not (subpath (param \"{k}\")))")), "{k}: {repo_rule}");
        }
        assert!(repo_rule.contains("(require-not (literal (param \"IGNORED_FILE_0\")))"));
        assert_eq!(value(&p, "GIT_0"), "/Users/dev/repo/.git");
        assert_eq!(value(&p, "WRITE_0"), "/private/tmp/hone-tmp");
        assert_eq!(value(&p, "WRITE_1"), "/Users/dev/.cache/pip");
        // Nothing else is writable: the home is readable only.
        let writes: Vec<&str> = p.text.lines().filter(|l| l.contains("file-write*")).collect();
        assert_eq!(writes.len(), 2, "{writes:?}");
        assert!(!p.params.iter().any(|(k, v)| k.starts_with("WRITE") && v == "/Users/dev"));
    }

    #[test]
    fn credentials_and_denied_files_are_masked_for_reads_and_writes() {
        let p = profile(&plan(), Path::new("/private/tmp/t"));
        let masks: Vec<&str> =
            p.params.iter().filter(|(k, _)| k.starts_with("MASK")).map(|(_, v)| v.as_str()).collect();
        for m in ["/Users/dev/repo/.env", "/Users/dev/.ssh", "/Users/dev/Library/Keychains", "/Library/Keychains"] {
            assert!(masks.contains(&m), "{m} not masked: {masks:?}");
        }
        let read_rule = p.text.lines().find(|l| l.starts_with("(allow file-read* ")).unwrap();
        for i in 0..masks.len() {
            assert!(read_rule.contains(&format!("(require-not (subpath (param \"MASK_{i}\")))")));
        }
        // Reads are an allow-list: the repo, the home, the system, nothing else (no `/Users`).
        let reads: Vec<&str> =
            p.params.iter().filter(|(k, _)| k.starts_with("READ")).map(|(_, v)| v.as_str()).collect();
        assert!(reads.contains(&"/Users/dev/repo") && reads.contains(&"/usr") && reads.contains(&"/Users/dev"));
        assert!(!reads.contains(&"/Users") && !reads.contains(&"/"));
    }

    #[test]
    fn the_network_is_closed_unless_the_policy_opens_it() {
        let closed = profile(&plan(), Path::new("/private/tmp/t"));
        assert!(!closed.text.contains("network"), "{}", closed.text);
        let mut pl = plan();
        pl.isolate_network = false;
        let open = profile(&pl, Path::new("/private/tmp/t"));
        assert!(open.text.contains("(allow network*)"));
        assert!(open.text.starts_with("(version 1)\n(deny default)\n"));
    }
}
