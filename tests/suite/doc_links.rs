//! Every relative link in README.md and docs/*.md leads somewhere: to a file or directory that
//! exists, and, for `file.md#anchor` (or `#anchor` in the same file), to a heading of that file,
//! named as GitHub names headings.

use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// README.md and every docs/*.md.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// Every link and image destination of a Markdown text (reference links resolved; code is not
/// a link).
fn destinations(text: &str) -> Vec<String> {
    Parser::new(text)
        .filter_map(|e| match e {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => Some(dest_url.to_string()),
            _ => None,
        })
        .collect()
}

/// GitHub's anchor for a heading: lowercased, what is not a letter, a digit, a space, `-` or
/// `_` dropped, spaces made `-`; a repeated one gets `-1`, `-2`, ….
fn anchors(text: &str) -> HashSet<String> {
    let mut found = HashSet::new();
    let mut heading: Option<String> = None;
    for e in Parser::new(text) {
        match e {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let Some(h) = heading.take() else { continue };
                let slug: String = h
                    .trim()
                    .to_lowercase()
                    .chars()
                    .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
                    .map(|c| if c == ' ' { '-' } else { c })
                    .collect();
                let mut name = slug.clone();
                let mut n = 0;
                while !found.insert(name.clone()) {
                    n += 1;
                    name = format!("{slug}-{n}");
                }
            }
            _ => {}
        }
    }
    found
}

/// The relative links of `file` (inside `root`) that lead nowhere, each with the reason.
fn broken(root: &Path, file: &Path) -> (usize, Vec<String>) {
    let text = std::fs::read_to_string(file).unwrap();
    let name = file.strip_prefix(root).unwrap_or(file).display().to_string();
    let mut checked = 0;
    let mut bad = Vec::new();
    for dest in destinations(&text) {
        let is_absolute = dest.split_once(':').is_some_and(|(scheme, _)| {
            !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        });
        if is_absolute || dest.starts_with("//") {
            continue;
        }
        checked += 1;
        let (path, anchor) = match dest.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (dest.as_str(), None),
        };
        let path = percent_encoding::percent_decode_str(path).decode_utf8_lossy().into_owned();
        let target = if path.is_empty() { file.to_path_buf() } else { file.parent().unwrap().join(&path) };
        if !target.exists() {
            bad.push(format!("{name}: `{dest}`: {} does not exist", target.display()));
            continue;
        }
        let Some(anchor) = anchor.filter(|a| !a.is_empty()) else { continue };
        if target.extension().is_some_and(|x| x == "md") {
            let headings = anchors(&std::fs::read_to_string(&target).unwrap());
            let anchor = percent_encoding::percent_decode_str(anchor).decode_utf8_lossy().to_lowercase();
            if !headings.contains(&anchor) {
                bad.push(format!("{name}: `{dest}`: no heading makes #{anchor} there"));
            }
        }
    }
    (checked, bad)
}

#[test]
fn every_relative_link_in_the_readme_and_docs_leads_to_a_file_and_heading_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    let mut bad = Vec::new();
    for file in documents(root) {
        let (n, b) = broken(root, &file);
        checked += n;
        bad.extend(b);
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
    assert!(checked >= 100, "the links were found ({checked}): the scan itself works");
}

#[test]
fn a_missing_file_and_a_missing_heading_are_found_and_good_links_pass() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("b.md"), "# B\n\n## What a run does — in `short`\n\n## Again\n\n## Again\n").unwrap();
    std::fs::write(
        root.join("a.md"),
        "# A title\n\n[ok](b.md) [ok](b.md#what-a-run-does--in-short) [ok](b.md#again-1) [ok](./sub/) \
         [ok](#a-title) [web](https://example.com/x.md) `[code](nowhere.md)`\n\n\
         [gone](missing.md) [no heading](b.md#nope) ![img](pics/x.png) [here](#nowhere) [ref][r]\n\n\
         [r]: sub/gone.md\n",
    )
    .unwrap();
    let (checked, bad) = broken(root, &root.join("a.md"));
    assert_eq!(checked, 10, "{bad:#?}");
    let bad = bad.join("\n");
    for expected in ["`missing.md`", "`b.md#nope`", "`pics/x.png`", "`#nowhere`", "`sub/gone.md`"] {
        assert!(bad.contains(expected), "{expected} is not reported: {bad}");
    }
    assert_eq!(bad.lines().count(), 5, "{bad}");
}

/// The README's index names every document in docs/ (a new doc nobody can find from the README
/// is a doc nobody reads).
#[test]
fn the_readme_index_links_every_document_in_docs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let linked: HashSet<String> = destinations(&std::fs::read_to_string(root.join("README.md")).unwrap())
        .into_iter()
        .map(|d| d.split('#').next().unwrap_or("").trim_start_matches("./").to_string())
        .collect();
    let missing: Vec<String> = documents(root)
        .into_iter()
        .skip(1)
        .map(|p| p.strip_prefix(root).unwrap().display().to_string())
        .filter(|p| !linked.contains(p))
        .collect();
    assert!(missing.is_empty(), "docs the README's Documentation index does not link: {missing:?}");
}
