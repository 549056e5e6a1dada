//! The project `hone init` writes for: the repository's ecosystem (Python, Node, Rust, Go), the
//! setup and verify commands it uses, the policy for them, and writing the files without ever
//! overwriting one. Each forge's `init.rs` (`forge/<forge>/init.rs`) writes its own job specs and
//! workflows from it, which pass `hone validate` and actionlint.

use std::path::{Path, PathBuf};

/// What `hone init` writes for one forge (each forge's `init.rs` makes it), and what the user does next.
pub struct Scaffold {
    pub files: Vec<(PathBuf, String)>,
    pub next: String,
}

/// A project kind hone knows the commands of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecosystem {
    Python,
    Node,
    Rust,
    Go,
}

impl Ecosystem {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Ecosystem::Python => "Python",
            Ecosystem::Node => "Node",
            Ecosystem::Rust => "Rust",
            Ecosystem::Go => "Go",
        }
    }

    /// The hosts its package manager installs from: setup's allow-list in the starter policy.
    fn registries(self) -> &'static [&'static str] {
        match self {
            Ecosystem::Python => &["pypi.org", "files.pythonhosted.org"],
            Ecosystem::Node => &["registry.npmjs.org", "registry.yarnpkg.com"],
            Ecosystem::Rust => &["index.crates.io", "static.crates.io", "crates.io"],
            Ecosystem::Go => &["proxy.golang.org", "sum.golang.org"],
        }
    }

    /// The starter policy (`examples/policies/`).
    fn policy(self) -> &'static str {
        match self {
            Ecosystem::Python => include_str!("../../examples/policies/python.yaml"),
            Ecosystem::Node => include_str!("../../examples/policies/node.yaml"),
            Ecosystem::Rust => include_str!("../../examples/policies/rust.yaml"),
            Ecosystem::Go => include_str!("../../examples/policies/go.yaml"),
        }
    }
}

/// What `init` found: the ecosystems in order of preference, and the project's commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    pub found: Vec<Ecosystem>,
    /// `(name, command)` pairs.
    pub setup: Vec<(String, String)>,
    pub verify: Vec<(String, String)>,
}

/// A project file at the root: a regular file only (a symlink is not followed, a FIFO or device
/// never waited on), at most 1 MiB.
fn read(root: &Path, f: &str) -> Option<String> {
    let dir = std::fs::File::open(root).ok()?;
    String::from_utf8(crate::safe_fs::read_regular_at(&dir, f, 1 << 20).ok()?).ok()
}

fn pair(name: &str, run: &str) -> (String, String) {
    (name.to_string(), run.to_string())
}

/// Detect the ecosystems at `root` and the commands of the first. Pure but for reading files.
pub fn detect(root: &Path) -> Option<Project> {
    let has = |f: &str| root.join(f).is_file();
    let mut found = Vec::new();
    if has("Cargo.toml") {
        found.push(Ecosystem::Rust);
    }
    if has("go.mod") {
        found.push(Ecosystem::Go);
    }
    if has("package.json") {
        found.push(Ecosystem::Node);
    }
    if ["pyproject.toml", "setup.py", "setup.cfg", "requirements.txt"].iter().any(|f| has(f)) {
        found.push(Ecosystem::Python);
    }
    // The first ecosystem whose commands can be told (a `package.json` that is not JSON cannot).
    let (i, (setup, verify)) = found.iter().enumerate().find_map(|(i, e)| {
        let commands = match e {
            Ecosystem::Rust => Some(rust(has("Cargo.lock"))),
            Ecosystem::Go => Some(go()),
            Ecosystem::Node => node(root),
            Ecosystem::Python => Some(python(root)),
        };
        commands.map(|c| (i, c))
    })?;
    found.swap(0, i);
    Some(Project { found, setup, verify })
}

type Commands = (Vec<(String, String)>, Vec<(String, String)>);

fn rust(locked: bool) -> Commands {
    // Crates go into the work tree: setup's home does not carry over to the run's jail.
    let lock = if locked { " --locked" } else { "" };
    (
        vec![pair("crates", &format!("CARGO_HOME=.cargo-home cargo fetch{lock}"))],
        vec![pair("test", "CARGO_HOME=.cargo-home cargo test --offline -q")],
    )
}

fn go() -> Commands {
    let env = "GOFLAGS=-modcacherw GOMODCACHE=\"$PWD/.gomodcache\"";
    (
        vec![pair("modules", &format!("{env} go mod download"))],
        vec![pair("vet", &format!("{env} go vet ./...")), pair("test", &format!("{env} go test ./..."))],
    )
}

fn node(root: &Path) -> Option<Commands> {
    let pkg: serde_json::Value = serde_json::from_str(&read(root, "package.json")?).ok()?;
    let has = |f: &str| root.join(f).is_file();
    let (install, run) = if has("pnpm-lock.yaml") {
        ("pnpm install --frozen-lockfile", "pnpm")
    } else if has("yarn.lock") {
        ("yarn install --frozen-lockfile", "yarn")
    } else if has("package-lock.json") {
        ("npm ci --no-audit --no-fund", "npm run")
    } else {
        ("npm install --no-audit --no-fund", "npm run")
    };
    let scripts = pkg.get("scripts").and_then(|s| s.as_object());
    let verify: Vec<(String, String)> = ["lint", "build", "test"]
        .iter()
        .filter(|s| scripts.is_some_and(|m| m.contains_key(**s)))
        .map(|s| pair(s, &format!("{run} {s}")))
        .collect();
    Some((vec![pair("deps", install)], verify))
}

fn python(root: &Path) -> Commands {
    let pyproject = read(root, "pyproject.toml").unwrap_or_default();
    let extra = ["test", "tests", "dev"].into_iter().find(|e| {
        pyproject.contains("[project.optional-dependencies]")
            && pyproject.lines().any(|l| l.trim_start().starts_with(&format!("{e} =")))
    });
    // A package to install (a pyproject with only tool settings is not one), and requirements.
    let packaged = pyproject.contains("[project]")
        || pyproject.contains("[build-system]")
        || root.join("setup.py").is_file()
        || root.join("setup.cfg").is_file();
    let mut install = match (packaged, extra) {
        (true, Some(e)) => format!("-e '.[{e}]' pytest"),
        (true, None) => "-e . pytest".to_string(),
        (false, _) => "pytest".to_string(),
    };
    if root.join("requirements.txt").is_file() {
        install.push_str(" -r requirements.txt");
    }
    if root.join("requirements-dev.txt").is_file() {
        install.push_str(" -r requirements-dev.txt");
    }
    let ruff = pyproject.contains("[tool.ruff");
    if ruff {
        install.push_str(" ruff");
    }
    let setup = vec![pair("venv", &format!("python3 -m venv .venv && .venv/bin/pip install -q {install}"))];
    let mut verify = Vec::new();
    if ruff {
        verify.push(pair("lint", ".venv/bin/ruff check ."));
    }
    verify.push(pair("test", ".venv/bin/python -m pytest -q"));
    (setup, verify)
}

/// A YAML double-quoted string.
pub(crate) fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The first ecosystem's starter policy, whose setup may reach its registries, and those of the
/// other ecosystems found (through hone's proxy).
pub fn policy_yaml(p: &Project) -> String {
    let first = p.found[0];
    let hosts: Vec<String> = p.found.iter().flat_map(|e| e.registries().iter().map(|h| quote(h))).collect();
    first.policy().replacen(&allow_line(first.registries()), &format!("    allow: [{}]\n", hosts.join(", ")), 1)
}

/// The line of a starter policy that lists setup's hosts.
fn allow_line(hosts: &[&str]) -> String {
    let list: Vec<String> = hosts.iter().map(|h| quote(h)).collect();
    format!("    allow: [{}]\n", list.join(", "))
}

/// Write what is missing under `root`; never replace a file. Returns (written, kept).
pub fn write(root: &Path, files: &[(PathBuf, String)]) -> std::io::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let (mut written, mut kept) = (Vec::new(), Vec::new());
    for (rel, text) in files {
        let path = root.join(rel);
        // Into real directories only: a committed `.github` symlink is not followed.
        let mut dir = root.to_path_buf();
        for part in rel.parent().into_iter().flat_map(Path::components) {
            dir.push(part);
            match std::fs::symlink_metadata(&dir) {
                Ok(m) if m.file_type().is_symlink() => {
                    let msg = format!("{} is a symlink; hone init writes only into real directories", dir.display());
                    return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, msg));
                }
                Ok(_) => {}
                Err(_) => std::fs::create_dir(&dir)?,
            }
        }
        let mut open = std::fs::OpenOptions::new();
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut open, libc::O_NOFOLLOW);
        match open.write(true).create_new(true).open(&path) {
            Ok(mut f) => {
                use std::io::Write;
                f.write_all(text.as_bytes())?;
                written.push(rel.clone());
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => kept.push(rel.clone()),
            Err(e) => return Err(std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
    }
    Ok((written, kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(files: &[(&str, &str)]) -> Option<Project> {
        let dir = tempfile::tempdir().unwrap();
        for (f, text) in files {
            std::fs::write(dir.path().join(f), text).unwrap();
        }
        detect(dir.path())
    }

    #[test]
    fn each_ecosystem_gets_its_commands() {
        let p = project(&[(
            "pyproject.toml",
            "[project]\n[project.optional-dependencies]\ntest = [\"pytest\"]\n[tool.ruff]\n",
        )])
        .unwrap();
        assert_eq!(p.found, [Ecosystem::Python]);
        assert!(p.setup[0].1.contains("-e '.[test]' pytest ruff"), "{:?}", p.setup);
        assert_eq!(p.verify, [pair("lint", ".venv/bin/ruff check ."), pair("test", ".venv/bin/python -m pytest -q")]);
        let p = project(&[("requirements.txt", "requests\n")]).unwrap();
        assert!(p.setup[0].1.ends_with("pip install -q pytest -r requirements.txt"), "{:?}", p.setup);
        // Tool settings only: not a package; the requirements are what to install.
        let p = project(&[("pyproject.toml", "[tool.ruff]\n"), ("requirements.txt", "flask\n")]).unwrap();
        assert!(p.setup[0].1.ends_with("pip install -q pytest -r requirements.txt ruff"), "{:?}", p.setup);
        // A package.json that is not JSON does not hide the Python project beside it.
        let p = project(&[("package.json", "{,}"), ("requirements.txt", "flask\n")]).unwrap();
        assert_eq!(p.found[0], Ecosystem::Python);
        let p = project(&[("package.json", r#"{"scripts": {"test": "jest", "lint": "eslint ."}}"#), ("yarn.lock", "")])
            .unwrap();
        assert_eq!(p.setup, [pair("deps", "yarn install --frozen-lockfile")]);
        assert_eq!(p.verify, [pair("lint", "yarn lint"), pair("test", "yarn test")]);
        let p = project(&[("Cargo.toml", "[package]\n"), ("Cargo.lock", ""), ("package.json", "{}")]).unwrap();
        assert_eq!(p.found, [Ecosystem::Rust, Ecosystem::Node]);
        assert_eq!(p.setup[0].1, "CARGO_HOME=.cargo-home cargo fetch --locked");
        let p = project(&[("go.mod", "module x\n")]).unwrap();
        assert_eq!(p.verify.len(), 2);
        assert!(project(&[("README.md", "hi")]).is_none());
    }

    #[test]
    fn starter_policies_let_setup_reach_the_registries_of_every_ecosystem_found() {
        for e in [Ecosystem::Python, Ecosystem::Node, Ecosystem::Rust, Ecosystem::Go] {
            assert!(e.policy().contains(&allow_line(e.registries())), "{}'s starter policy", e.name());
        }
        let p = project(&[("Cargo.toml", "[package]\n"), ("Cargo.lock", ""), ("package.json", "{}")]).unwrap();
        let text = policy_yaml(&p);
        let policy = crate::policy::parse("policy.yaml", &text).unwrap();
        let hosts: Vec<String> = policy.setup_egress().rules().unwrap().iter().map(|r| r.text.clone()).collect();
        assert_eq!(
            hosts,
            ["index.crates.io", "static.crates.io", "crates.io", "registry.npmjs.org", "registry.yarnpkg.com"]
        );
        assert_eq!(policy.network, crate::policy::network::Egress::Off, "commands still have none");
    }

    #[test]
    fn commands_are_quoted_for_yaml() {
        use crate::forge::github::init::job_yaml;
        let p = project(&[("go.mod", "module x\n")]).unwrap();
        let yaml = job_yaml(&p, "gpt-4.1");
        assert!(
            yaml.contains(r#"run: "GOFLAGS=-modcacherw GOMODCACHE=\"$PWD/.gomodcache\" go mod download""#),
            "{yaml}"
        );
        assert!(job_yaml(&p, "claude-sonnet-4").contains("provider: anthropic"));
    }
}
