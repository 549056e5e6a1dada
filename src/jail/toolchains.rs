//! Where toolchains and their caches live, by ecosystem: the places of the home (or those the
//! environment moves elsewhere) that a command may need to build and test a project. The jail's
//! home is empty but for these (`plan`), so a credential in any other place of the home is not
//! in the view at all. Pure: the environment comes in as a lookup, the result is candidates
//! (the caller keeps those that exist).

use std::path::{Path, PathBuf};

/// One ecosystem's places: a variable that moves its root (when set), the root's default place
/// in the home, and which parts of the root a command needs (empty: the whole root).
struct Place {
    var: Option<&'static str>,
    default: &'static str,
    parts: &'static [&'static str],
}

const fn whole(var: Option<&'static str>, default: &'static str) -> Place {
    Place { var, default, parts: &[] }
}

/// The table. A root that also holds credentials or configuration with tokens (`~/.cargo`,
/// `~/.gradle`, `~/.m2`) is shown only by the parts that hold no such thing.
const PLACES: &[Place] = &[
    // Rust: toolchains, and cargo's binaries and downloaded sources (never `credentials.toml` or
    // `config.toml`, which may name a registry's token).
    whole(Some("RUSTUP_HOME"), ".rustup"),
    Place { var: Some("CARGO_HOME"), default: ".cargo", parts: &["bin", "registry", "git"] },
    // Python: pyenv, user installs, the package managers' caches and their environments.
    whole(Some("PYENV_ROOT"), ".pyenv"),
    whole(None, ".local/bin"),
    whole(None, ".local/lib"),
    whole(Some("PIP_CACHE_DIR"), ".cache/pip"),
    whole(Some("UV_CACHE_DIR"), ".cache/uv"),
    // uv's data dir also holds its credentials store (`credentials/`): only its Pythons and tools.
    whole(Some("UV_PYTHON_INSTALL_DIR"), ".local/share/uv/python"),
    whole(Some("UV_TOOL_DIR"), ".local/share/uv/tools"),
    whole(Some("POETRY_CACHE_DIR"), ".cache/pypoetry"),
    whole(Some("WORKON_HOME"), ".local/share/virtualenvs"),
    whole(Some("PIPX_HOME"), ".local/share/pipx"),
    whole(None, ".local/pipx"),
    whole(None, ".pyenv-win"),
    whole(None, "miniconda3"),
    whole(None, "miniforge3"),
    whole(None, "anaconda3"),
    whole(None, ".conda"),
    // Node: version managers, npm's cache (never `.npmrc`), yarn, pnpm, corepack, bun, deno.
    whole(Some("NVM_DIR"), ".nvm"),
    whole(Some("npm_config_cache"), ".npm"),
    whole(Some("VOLTA_HOME"), ".volta"),
    whole(Some("FNM_DIR"), ".local/share/fnm"),
    whole(Some("BUN_INSTALL"), ".bun"),
    whole(Some("DENO_DIR"), ".cache/deno"),
    whole(None, ".deno"),
    whole(Some("YARN_CACHE_FOLDER"), ".cache/yarn"),
    whole(None, ".yarn/berry/cache"),
    whole(Some("PNPM_HOME"), ".local/share/pnpm"),
    whole(None, ".cache/pnpm"),
    whole(Some("COREPACK_HOME"), ".cache/node/corepack"),
    // Go: the module cache and installed tools (GOPATH), the build cache, downloaded toolchains.
    whole(Some("GOPATH"), "go"),
    whole(Some("GOMODCACHE"), "go/pkg/mod"),
    whole(Some("GOCACHE"), ".cache/go-build"),
    whole(None, "sdk"),
    // The JVM: downloaded artifacts and wrappers (never `settings.xml` or `gradle.properties`).
    Place { var: None, default: ".m2", parts: &["repository", "wrapper"] },
    Place { var: Some("GRADLE_USER_HOME"), default: ".gradle", parts: &["caches", "wrapper", "jdks"] },
    Place { var: Some("SDKMAN_DIR"), default: ".sdkman", parts: &["candidates", "bin", "libexec", "src"] },
    whole(None, ".jdks"),
    // Ruby, version managers for everything, .NET, Lean, Haskell, OCaml.
    whole(Some("RBENV_ROOT"), ".rbenv"),
    whole(None, ".rvm"),
    // Never `~/.gem/credentials` (rubygems.org's API key).
    Place { var: Some("GEM_HOME"), default: ".gem", parts: &["ruby", "gems", "bin", "specifications", "extensions"] },
    whole(None, ".local/share/gem"),
    whole(Some("ASDF_DATA_DIR"), ".asdf"),
    whole(Some("MISE_DATA_DIR"), ".local/share/mise"),
    whole(Some("DOTNET_ROOT"), ".dotnet"),
    whole(Some("NUGET_PACKAGES"), ".nuget/packages"),
    whole(Some("ELAN_HOME"), ".elan"),
    whole(None, ".ghcup"),
    Place { var: Some("CABAL_DIR"), default: ".cabal", parts: &["bin", "packages", "store"] },
    whole(None, ".stack/programs"),
    whole(Some("OPAMROOT"), ".opam"),
    // Tools that cache what hooks and linters install.
    whole(Some("PRE_COMMIT_HOME"), ".cache/pre-commit"),
];

/// Files inside a toolchain place that hold credentials: a Node install's global `npmrc`
/// (`npm config set --global`, under nvm's and volta's versions too) and a tool's credentials
/// file. Masked as a second line where a shown place holds one (`credential_files`).
const SECRET_FILES: &[&str] = &[
    "etc/npmrc",
    "versions/node/*/etc/npmrc",
    "tools/image/node/*/etc/npmrc",
    "credentials",
    "credentials.toml",
    "credentials.json",
];

/// The credential files (`SECRET_FILES`) that exist inside the toolchain place `place`.
pub fn credential_files(place: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for pattern in SECRET_FILES {
        let mut at = vec![place.to_path_buf()];
        for part in pattern.split('/') {
            at = match part {
                "*" => at.iter().flat_map(|d| super::gitconfig::subdirs_of(d)).collect(),
                name => at.iter().map(|d| d.join(name)).collect(),
            };
        }
        out.extend(at.into_iter().filter(|f| std::fs::symlink_metadata(f).is_ok()));
    }
    out
}

/// The toolchain places for a home `home` and the environment `var`: each ecosystem's root where
/// its variable puts it (several for a `GOPATH` list), else at its default place in the home;
/// narrowed to the parts the table names. Places that are the home or hold it, `/`, or lie in a
/// temp or runtime tree are never candidates: they would show far more than a toolchain.
pub fn candidates(home: Option<&Path>, var: &dyn Fn(&str) -> Option<String>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for place in PLACES {
        let roots: Vec<PathBuf> = match place.var.and_then(var).filter(|v| !v.trim().is_empty()) {
            Some(v) => std::env::split_paths(&v).filter(|p| p.is_absolute()).collect(),
            None => home.map(|h| vec![h.join(place.default)]).unwrap_or_default(),
        };
        for root in roots {
            if place.parts.is_empty() {
                out.push(root);
            } else {
                out.extend(place.parts.iter().map(|p| root.join(p)));
            }
        }
    }
    outermost(out, home)
}

/// `places` that fit, once each, less those inside another (shown by it).
pub fn outermost(mut places: Vec<PathBuf>, home: Option<&Path>) -> Vec<PathBuf> {
    places.retain(|p| fits(p, home));
    places.sort();
    places.dedup();
    let copy = places.clone();
    places.retain(|p| !copy.iter().any(|o| o != p && p.starts_with(o)));
    places
}

/// The toolchain places the directories on `PATH` (`path_var`) lie in, wherever their home: a
/// directory inside a root the table knows by its default name (`…/.pyenv/shims`,
/// `…/.nvm/versions/node/v20/bin`, `…/.cargo/bin`) brings that root's parts, since a shim or a
/// version manager's binary needs the rest of its root to run.
pub fn on_path(path_var: &str, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for dir in std::env::split_paths(path_var).filter(|d| fits(d, None)) {
        for place in PLACES {
            let name: Vec<_> = Path::new(place.default).components().collect();
            let parts: Vec<_> = dir.components().collect();
            let Some(at) = (0..parts.len()).find(|&i| parts[i..].starts_with(&name)) else { continue };
            let root: PathBuf = parts[..at + name.len()].iter().collect();
            match place.parts {
                [] => out.push(root),
                some => out.extend(some.iter().map(|p| root.join(p))),
            }
        }
    }
    outermost(out, home)
}

/// Whether `p` may be shown as a toolchain place: absolute, lexically plain, not `/`, not the home
/// or above it, and, outside the home, not in a temp, device or runtime tree (a home may lie in
/// one: a CI job's scratch home under `/tmp`).
pub fn fits(p: &Path, home: Option<&Path>) -> bool {
    use std::path::Component;
    let plain = p.is_absolute() && p.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    let above_home = home.is_some_and(|h| h.starts_with(p));
    let in_home = home.is_some_and(|h| p.starts_with(h));
    let volatile = ["/tmp", "/var/tmp", "/run", "/var/run", "/dev", "/proc"].iter().any(|b| p.starts_with(b));
    plain && p != Path::new("/") && !above_home && (in_home || !volatile)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn with(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: BTreeMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn the_default_places_of_a_home_and_only_their_safe_parts() {
        let got = candidates(Some(Path::new("/home/u")), &with(&[]));
        let has = |p: &str| got.contains(&PathBuf::from(p));
        for p in ["/home/u/.rustup", "/home/u/.cargo/bin", "/home/u/.cargo/registry", "/home/u/.pyenv", "/home/u/go"] {
            assert!(has(p), "{p} in {got:?}");
        }
        for p in ["/home/u/.npm", "/home/u/.nvm", "/home/u/.m2/repository", "/home/u/.gradle/caches"] {
            assert!(has(p), "{p} in {got:?}");
        }
        // Never the roots that also hold credentials, nor anything credential-like.
        for p in ["/home/u/.cargo", "/home/u/.m2", "/home/u/.gradle", "/home/u", "/home/u/.config"] {
            assert!(!has(p), "{p} in {got:?}");
        }
        assert!(!got.iter().any(|p| p.to_string_lossy().contains("credentials")));
        // GOMODCACHE's default is inside GOPATH's: shown once, by GOPATH.
        assert!(!has("/home/u/go/pkg/mod"));
    }

    #[test]
    fn the_environment_moves_a_root_and_a_list_gives_several() {
        let env = with(&[("CARGO_HOME", "/opt/cargo"), ("GOPATH", "/srv/go1:/srv/go2"), ("RUSTUP_HOME", "")]);
        let got = candidates(Some(Path::new("/home/u")), &env);
        let has = |p: &str| got.contains(&PathBuf::from(p));
        assert!(has("/opt/cargo/bin") && has("/opt/cargo/git") && !has("/opt/cargo"));
        assert!(!has("/home/u/.cargo/bin"), "a moved root is not also looked for at its default");
        assert!(has("/srv/go1") && has("/srv/go2") && !has("/home/u/go"));
        assert!(has("/home/u/.rustup"), "a blank variable is unset");
    }

    #[test]
    fn a_variable_that_names_the_home_root_or_a_temp_dir_shows_nothing() {
        let env = with(&[
            ("PYENV_ROOT", "/home/u"),
            ("NVM_DIR", "/"),
            ("GOPATH", "/tmp/go:relative"),
            ("BUN_INSTALL", "/home"),
        ]);
        let got = candidates(Some(Path::new("/home/u")), &env);
        for p in ["/home/u", "/", "/tmp/go", "relative", "/home"] {
            assert!(!got.contains(&PathBuf::from(p)), "{p} in {got:?}");
        }
        assert!(!fits(Path::new("/home/u/../x"), Some(Path::new("/home/u"))));
        assert!(fits(Path::new("/opt/x"), None));
        // A home under a temp dir (CI's scratch home) has its toolchain places; the temp dir not.
        let home = Some(Path::new("/tmp/ci/home"));
        assert!(fits(Path::new("/tmp/ci/home/go"), home) && !fits(Path::new("/tmp/ci/go"), home));
    }

    #[test]
    fn a_path_entry_inside_a_known_root_brings_the_root() {
        let path = "/root/.pyenv/shims:/usr/bin:/root/.cargo/bin:/h/.nvm/versions/node/v20/bin:/srv/tools/bin:/root";
        let got = on_path(path, Some(Path::new("/home/u")));
        let want = ["/h/.nvm", "/root/.cargo/bin", "/root/.cargo/git", "/root/.cargo/registry", "/root/.pyenv"];
        assert_eq!(got, want.map(PathBuf::from));
        assert!(on_path("/home/u/.pyenv/../x/bin", Some(Path::new("/home/u"))).is_empty());
    }

    #[test]
    fn credential_files_inside_a_place_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let nvm = dir.path().join(".nvm");
        for d in ["versions/node/v20/etc", "versions/node/v22/bin"] {
            std::fs::create_dir_all(nvm.join(d)).unwrap();
        }
        std::fs::write(nvm.join("versions/node/v20/etc/npmrc"), "//r/:_authToken=x\n").unwrap();
        std::fs::write(nvm.join("credentials"), "k\n").unwrap();
        let mut got = credential_files(&nvm);
        got.sort();
        assert_eq!(got, [nvm.join("credentials"), nvm.join("versions/node/v20/etc/npmrc")]);
        let home = candidates(Some(Path::new("/home/u")), &with(&[]));
        assert!(!home.iter().any(|p| p.ends_with(".gem") || p.ends_with(".local/share/uv")), "{home:?}");
    }

    #[test]
    fn without_a_home_only_what_the_environment_names() {
        let got = candidates(None, &with(&[("GOPATH", "/go")]));
        assert_eq!(got, [PathBuf::from("/go")]);
    }
}
