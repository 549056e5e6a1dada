//! One version story: every place that names hone's moving major tag (the Action's `uses:`, the
//! installer's, the schema URLs editors fetch, the release steps that move the tag) names the
//! same one, the major version of `Cargo.toml` (`v0` for 0.x).

use std::path::{Path, PathBuf};

/// The files users copy or read: the README, the docs, the workflows, the examples, the Actions,
/// the scripts, and the code that writes files (`hone init`).
fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("README.md"), root.join("action.yml"), root.join("install/action.yml")];
    let mut dirs: Vec<PathBuf> =
        ["docs", "workflows", "examples", "scripts", "src", ".github"].iter().map(|d| root.join(d)).collect();
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p
                .extension()
                .is_some_and(|x| ["md", "yml", "yaml", "rs", "sh", "json"].contains(&x.to_str().unwrap()))
            {
                out.push(p);
            }
        }
    }
    out
}

/// Each `v<digits>` that follows one of `prefixes` in `text` and ends there (`v0`, not `v0.1.0`).
fn majors<'t>(text: &'t str, prefixes: &[&str]) -> Vec<&'t str> {
    let mut found = Vec::new();
    for prefix in prefixes {
        for (at, _) in text.match_indices(prefix) {
            let rest = &text[at + prefix.len()..];
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            if digits > 0 && !rest[digits..].starts_with('.') {
                found.push(&rest[..digits]);
            }
        }
    }
    found
}

#[test]
fn every_moving_tag_is_the_crates_major_version() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let major = env!("CARGO_PKG_VERSION").split('.').next().unwrap();
    let prefixes = ["hone/hone@v", "hone/hone/install@v", "hone/hone/v", "tag -f v", "origin v"];
    let mut seen = 0;
    let mut wrong = Vec::new();
    for file in files(root) {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        if file.ends_with("tests/suite/versions.rs") {
            continue;
        }
        for m in majors(&text, &prefixes) {
            seen += 1;
            if m != major {
                wrong.push(format!("{}: v{m}", file.strip_prefix(root).unwrap().display()));
            }
        }
    }
    assert!(wrong.is_empty(), "these name another major tag than v{major} (Cargo.toml): {wrong:#?}");
    assert!(seen >= 10, "the tags were found ({seen}): the scan itself works");
}

#[test]
fn the_scan_finds_tags_and_leaves_versions() {
    let text = "uses: hone/hone@v1\nuses: hone/hone/install@v0\nhone/hone/v0.1.0/scripts\nhone/hone/v2/docs\n";
    assert_eq!(majors(text, &["hone/hone@v", "hone/hone/install@v", "hone/hone/v"]), ["1", "0", "2"]);
}

/// The GitLab template installs the release of its `version` input: by default the same moving
/// major tag as the Action (`v0`), which the include URLs in the docs and the template name too
/// (`hone/hone/v0/…`, checked above).
#[test]
fn the_gitlab_templates_default_version_is_the_crates_major_version() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let major = env!("CARGO_PKG_VERSION").split('.').next().unwrap();
    let text = std::fs::read_to_string(root.join("workflows/gitlab/hone.gitlab-ci.yml")).unwrap();
    let head: serde_json::Value = serde_saphyr::from_str(text.split_once("\n---\n").unwrap().0).unwrap();
    let version = &head["spec"]["inputs"]["version"];
    assert_eq!(version["default"], format!("v{major}"), "the template's version input");
    let readme = std::fs::read_to_string(root.join("docs/gitlab.md")).unwrap();
    assert!(
        readme.contains(&format!("hone/hone/v{major}/workflows/gitlab/hone.gitlab-ci.yml")),
        "docs/gitlab.md includes it"
    );
}
