//! What a test needs from the machine, said in one place: `require!(Need::…)`.
//!
//! A test that needs root or a kernel feature starts with `require!(Need::X)`. When the machine
//! has it, the test goes on. When it does not, the test FAILS with what is missing, unless the
//! capability is waived on purpose with `HONE_TEST_WAIVE` (a comma-separated list of names, e.g.
//! `HONE_TEST_WAIVE=root,landlock`): then it prints `WAIVED: <test> needs <capability>` on the
//! real stderr (not swallowed by the test harness) and the test returns. Nothing skips silently.

use std::io::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Running as root (uid 0), e.g. to show what the jail takes away from root.
    Root,
    /// Unprivileged user namespaces (with mount, PID and network namespaces inside): hone's jail.
    UserNamespaces,
    /// Landlock ABI 6 or later: the scoping of abstract unix sockets and signals.
    Landlock,
    /// `xmllint` (libxml2-utils), to validate JUnit files against the XSD.
    Xmllint,
    /// Mermaid's parser in Node (`HONE_TEST_MERMAID`: a directory whose node_modules has
    /// mermaid, jsdom and marked), to read the charts in the Markdown reports.
    Mermaid,
    /// `python3` with `venv` and `ensurepip` (Debian: python3-venv), to make a checkout's `.venv`.
    Python,
    /// `node` and `npm` where hone's jail shows them (a system directory or a version manager's
    /// place: not the test tools' own Node in `target/test-tools`, which no jail shows).
    Node,
    /// `jq`, which the shipped workflows' scripts run (every GitHub runner has it).
    Jq,
    /// pip for the system's Python (`/usr/bin/python3 -m pip`; Debian: python3-pip), which a
    /// job's setup runs in the jail to install a package through the proxy.
    Pip,
    /// `go` (Debian: golang-go; `.ci/test` installs it as root).
    Go,
    /// A Rust toolchain installed by rustup in the home: `~/.cargo/bin/cargo` (rustup's proxy)
    /// and a toolchain in `~/.rustup/toolchains` (`.ci/run` makes one for the unprivileged pass).
    Rustup,
}

impl Need {
    /// The name used in `HONE_TEST_WAIVE`.
    pub fn name(self) -> &'static str {
        match self {
            Need::Root => "root",
            Need::UserNamespaces => "userns",
            Need::Landlock => "landlock",
            Need::Xmllint => "xmllint",
            Need::Mermaid => "mermaid",
            Need::Python => "python",
            Need::Node => "node",
            Need::Jq => "jq",
            Need::Pip => "pip",
            Need::Go => "go",
            Need::Rustup => "rustup",
        }
    }

    /// Ok when the machine has it; otherwise what is missing and how to get it.
    pub fn check(self) -> Result<(), String> {
        match self {
            Need::Root => {
                let uid = nix::unistd::geteuid();
                if uid.is_root() { Ok(()) } else { Err(format!("the test runs as uid {uid}, not root")) }
            }
            // On macOS the jail is Seatbelt, which needs no setting: only sandbox-exec.
            Need::UserNamespaces if cfg!(target_os = "macos") => {
                if std::path::Path::new("/usr/bin/sandbox-exec").exists() {
                    Ok(())
                } else {
                    Err("/usr/bin/sandbox-exec is missing".into())
                }
            }
            Need::UserNamespaces => {
                let out = std::process::Command::new("unshare")
                    .args(["--user", "--map-root-user", "--mount", "--pid", "--fork", "--net", "true"])
                    .output();
                match out {
                    Ok(o) if o.status.success() => Ok(()),
                    Ok(o) => Err(format!(
                        "unprivileged user namespaces are not available ({}); try `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` and check user.max_user_namespaces",
                        String::from_utf8_lossy(&o.stderr).trim()
                    )),
                    Err(e) => Err(format!("cannot run unshare(1) to probe user namespaces: {e}")),
                }
            }
            Need::Landlock => {
                let abi = landlock_abi();
                if abi >= 6 {
                    Ok(())
                } else {
                    Err(format!("the kernel offers Landlock ABI {abi}; 6 or later is needed"))
                }
            }
            Need::Xmllint => match std::process::Command::new("xmllint").arg("--version").output() {
                Ok(o) if o.status.success() => Ok(()),
                _ => Err("xmllint is not installed (apt-get install libxml2-utils, or `bash .ci/test`)".into()),
            },
            Need::Mermaid => super::mermaid::available(),
            Need::Python => {
                runs("python3", &["-c", "import ensurepip, venv"], "python3 with venv (apt-get install python3-venv)")
            }
            Need::Node => runs("node", &["--version"], "node")
                .and_then(|()| runs("npm", &["--version"], "npm"))
                .and_then(|()| node_shown()),
            Need::Jq => runs("jq", &["--version"], "jq (apt-get install jq; `bash .ci/test` installs it as root)"),
            Need::Pip => runs(
                "/usr/bin/python3",
                &["-m", "pip", "--version"],
                "pip for /usr/bin/python3 (apt-get install python3-pip; `bash .ci/test` installs it as root)",
            ),
            Need::Go => runs("go", &["version"], "go (apt-get install golang-go; `bash .ci/test` installs it as root)"),
            Need::Rustup => rustup_in_home(),
        }
    }
}

/// Ok when `program args` runs and succeeds; otherwise that `what` is missing.
fn runs(program: &str, args: &[&str], what: &str) -> Result<(), String> {
    match std::process::Command::new(program).args(args).output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!("{what} does not work here: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Err(format!("{what} is not on PATH: {e}")),
    }
}

/// Ok unless the `node` on PATH is the test tools' own (`target/test-tools`), which the jail
/// does not show: a command in the jail would not find it.
fn node_shown() -> Result<(), String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let node = std::env::split_paths(&path).map(|d| d.join("node")).find(|p| p.is_file());
    let real = node.and_then(|p| p.canonicalize().ok()).unwrap_or_default();
    if real.components().any(|c| c.as_os_str() == "test-tools") {
        return Err(format!(
            "a Node.js the jail shows (system-wide or a version manager's); the one on PATH is the test tools' own ({})",
            real.display()
        ));
    }
    Ok(())
}

/// Ok when the home holds what rustup installs: its proxy `~/.cargo/bin/cargo` and a toolchain.
fn rustup_in_home() -> Result<(), String> {
    let home = std::path::PathBuf::from(std::env::var_os("HOME").ok_or("HOME is not set")?);
    let proxy = home.join(".cargo/bin/cargo");
    let toolchains = std::fs::read_dir(home.join(".rustup/toolchains")).map(|d| d.count()).unwrap_or(0);
    if proxy.exists() && toolchains > 0 {
        Ok(())
    } else {
        Err(format!(
            "no Rust toolchain installed by rustup in {} (~/.cargo/bin/cargo and ~/.rustup/toolchains/*); .ci/run copies one for the unprivileged pass",
            home.display()
        ))
    }
}

/// The Landlock ABI version the kernel offers (0 when none).
#[cfg(target_os = "linux")]
pub fn landlock_abi() -> i64 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only returns a number.
    let v = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    v.max(0)
}

/// No Landlock off Linux.
#[cfg(not(target_os = "linux"))]
pub fn landlock_abi() -> i64 {
    0
}

/// Whether `need` is in the comma-separated waiver list `waived`.
pub fn is_waived(need: Need, waived: Option<&str>) -> bool {
    waived.unwrap_or("").split(',').map(str::trim).any(|w| w.eq_ignore_ascii_case(need.name()))
}

/// What to do, without the environment: go on (the machine has it), return (it is missing and
/// waived), or fail with the returned message (it is missing and not waived).
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    GoOn,
    Waived,
    Fail(String),
}

pub fn decide(test: &str, need: Need, present: Result<(), String>, waived: Option<&str>) -> Decision {
    match present {
        Ok(()) => Decision::GoOn,
        Err(_) if is_waived(need, waived) => Decision::Waived,
        Err(why) => Decision::Fail(format!(
            "{test} needs {} and this machine does not have it: {why}\n(set HONE_TEST_WAIVE={} to waive it on purpose)",
            need.name(),
            need.name()
        )),
    }
}

/// True when the test may go on; false when `need` is missing and waived (the test returns,
/// after `WAIVED: <test> needs <capability>` on stderr). Panics when it is missing and not
/// waived. Use through `require!`.
#[must_use]
#[allow(clippy::disallowed_methods)] // the test harness's own stderr, not hone's
pub fn require(need: Need) -> bool {
    let test = std::thread::current().name().unwrap_or("<unnamed test>").to_string();
    match decide(&test, need, need.check(), std::env::var("HONE_TEST_WAIVE").ok().as_deref()) {
        Decision::GoOn => true,
        Decision::Waived => {
            // Straight to the process's stderr: the harness's capture would hide a passing test's.
            let _ = writeln!(std::io::stderr(), "WAIVED: {test} needs {}", need.name());
            false
        }
        Decision::Fail(why) => panic!("{why}"),
    }
}
