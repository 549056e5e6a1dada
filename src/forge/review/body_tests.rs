//! The review body and comments: marker and digest first, fences nothing inside can close,
//! the forge's length limit kept with a pointer to the whole patch.

use super::*;
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

fn input<'a>(body: &'a str) -> Input<'a> {
    Input { number: 3, head_sha: "abc", commit_sha: Some("def"), job: "lint", body, login: None }
}

fn suggestion(lines: &[&str]) -> Suggestion {
    Suggestion { path: "a.rs".into(), start: 2, end: 3, lines: lines.iter().map(|l| l.to_string()).collect() }
}

/// The code blocks of a markdown text: (info, content).
fn code_blocks(md: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current: Option<(String, String)> = None;
    for ev in Parser::new(md) {
        match ev {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                current = Some((info.to_string(), String::new()))
            }
            Event::Text(t) => {
                if let Some((_, c)) = current.as_mut() {
                    c.push_str(&t)
                }
            }
            Event::End(TagEnd::CodeBlock) => out.extend(current.take()),
            _ => {}
        }
    }
    out
}

fn plan_with_patch(patch: &str) -> ReviewPlan {
    ReviewPlan {
        suggestions: vec![suggestion(&["x"])],
        patch: patch.into(),
        in_patch: vec![("new`file\n.rs".into(), "new file".into())],
    }
}

#[test]
fn the_body_starts_with_the_marker_and_digest_and_holds_the_patch_whole() {
    let patch = "diff --git a/n.md b/n.md\nnew file mode 100644\n--- /dev/null\n+++ b/n.md\n@@ -0,0 +1,3 @@\n+```\n+````rust\n+x\n";
    let plan = plan_with_patch(patch);
    let body = render(&plan, &input("Fixed the lint: `x` ``y``."), GITHUB_MAX_BODY);
    let mut lines = body.lines();
    assert_eq!(lines.next(), Some(marker("lint").as_str()));
    assert_eq!(digest_of(&body), Some(digest(&plan, "abc").as_str()));
    assert!(body.contains("1 suggested change below."), "{body}");
    let blocks = code_blocks(&body);
    assert!(blocks.iter().any(|(info, text)| info == "diff" && text == patch), "{blocks:#?}\n{body}");
    // The hostile file name stays one inert line of inline code.
    assert!(body.contains("- ``new`file\u{fffd}.rs``: new file\n"), "{body}");
}

#[test]
fn the_digest_changes_with_the_suggestions_the_patch_and_the_head() {
    let a = plan_with_patch("p\n");
    let mut b = a.clone();
    b.suggestions[0].lines = vec!["y".into()];
    let mut c = a.clone();
    c.patch = "q\n".into();
    let d = digest(&a, "abc");
    assert_ne!(d, digest(&b, "abc"));
    assert_ne!(d, digest(&c, "abc"));
    assert_ne!(d, digest(&a, "abd"));
    assert_eq!(d, digest(&a.clone(), "abc"));
    assert_eq!(digest_of("<!-- x -->\nsomething"), None);
}

#[test]
fn a_long_patch_is_cut_to_the_limit_with_a_pointer_to_the_artifact() {
    let patch: String = (0..5000).map(|i| format!("+line {i} with some text `` here\n")).collect();
    let plan = plan_with_patch(&patch);
    for summary in ["short summary", &"é".repeat(100_000)] {
        let body = render(&plan, &input(summary), GITHUB_MAX_BODY);
        assert!(body.chars().count() <= GITHUB_MAX_BODY, "{}", body.chars().count());
        assert!(body.contains("the whole change is the run's `change.patch` artifact"));
        let blocks = code_blocks(&body);
        let (_, shown) = blocks.iter().find(|(info, _)| info == "diff").expect("the patch block is closed");
        assert!(patch.starts_with(shown.as_str()) && shown.lines().count() > 100, "{}", shown.len());
    }
    let tiny = render(&plan, &input("s"), 100);
    assert!(tiny.chars().count() <= 100);
}

#[test]
fn a_suggestion_block_carries_the_lines_exactly() {
    let s = suggestion(&["let x = \"```\";", "", "  ````"]);
    let c = comment("<!-- m -->", &s);
    assert!(c.starts_with("<!-- m -->\n`````suggestion\n") && c.ends_with("\n`````"), "{c}");
    let blocks = code_blocks(&c);
    assert_eq!(blocks, vec![("suggestion".to_string(), "let x = \"```\";\n\n  ````\n".to_string())]);
    assert_eq!(comment("m", &suggestion(&[])), "m\n```suggestion\n```", "an empty block deletes the lines");
}

#[test]
fn without_a_patch_the_body_is_the_summary() {
    let plan = ReviewPlan { suggestions: vec![suggestion(&["x"]), suggestion(&["y"])], ..Default::default() };
    let body = render(&plan, &input("All good."), GITHUB_MAX_BODY);
    assert!(body.ends_with("All good.\n\n2 suggested changes below.\n"), "{body}");
    assert!(!body.contains("cannot carry"));
}
