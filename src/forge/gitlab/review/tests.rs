use super::*;
use crate::forge::review::Suggestion;

fn refs() -> DiffRefs {
    let mut r = DiffRefs::new(&"b".repeat(40), &"s".repeat(40), &"h".repeat(40));
    r.add("src/a.rs", "src/a.rs", "@@ -1,4 +1,5 @@\n a\n-b\n+B\n+C\n c\n d\n");
    r
}

fn sug(start: u32, end: u32, lines: &[&str]) -> Suggestion {
    Suggestion { path: "src/a.rs".into(), start, end, lines: lines.iter().map(|l| l.to_string()).collect() }
}

#[test]
fn a_review_is_the_summary_then_a_note_per_suggestion_on_its_last_line() {
    let plan = ReviewPlan { suggestions: vec![sug(2, 4, &["x"]), sug(9, 9, &["y"])], ..ReviewPlan::default() };
    let mut out = ReviewReport::default();
    let notes = planned_notes("<!-- m -->", &plan, &refs(), "<!-- m -->\nsummary", &mut out);
    assert_eq!(notes.len(), 2, "the suggestion outside the diff is left out");
    assert_eq!((notes[0].body.as_str(), notes[0].position.is_none()), ("<!-- m -->\nsummary", true));
    assert_eq!(notes[1].body, "<!-- m -->\n```suggestion:-2+0\nx\n```\n");
    let p = notes[1].position.as_ref().unwrap();
    assert_eq!((p["new_line"].as_u64(), p["old_line"].as_u64()), (Some(4), Some(3)), "line 4 is unchanged: both lines");
    assert_eq!(out.suggestions, 1);
    assert!(out.warnings[0].contains("line 9 of `src/a.rs`"), "{:?}", out.warnings);
}

#[test]
fn the_same_review_on_the_same_head_is_kept_and_any_difference_replaces_it() {
    let plan = ReviewPlan { suggestions: vec![sug(2, 4, &["x"])], ..ReviewPlan::default() };
    let mut out = ReviewReport::default();
    let planned = planned_notes("m", &plan, &refs(), "m\nsummary", &mut out);
    let d = "d".repeat(40);
    let summary = Earlier {
        discussion: d.clone(),
        note: 1,
        body: "m\nold".into(),
        position: None,
        replied: false,
        resolved: false,
    };
    let on = |head: &str, body: &str| Earlier {
        note: 2,
        body: body.into(),
        position: Some(("src/a.rs".into(), 4, head.into())),
        ..summary.clone()
    };
    let same = [summary.clone(), on(&"h".repeat(40), &planned[1].body)];
    assert_eq!(same_review(&same, &planned, &"h".repeat(40)).map(|e| e.note), Some(1));
    let older_head = [summary.clone(), on(&"0".repeat(40), &planned[1].body)];
    assert!(same_review(&older_head, &planned, &"h".repeat(40)).is_none());
    let other_text = [summary.clone(), on(&"h".repeat(40), "m\n```suggestion:-2+0\nz\n```\n")];
    assert!(same_review(&other_text, &planned, &"h".repeat(40)).is_none());
    assert!(same_review(&[summary], &planned, &"h".repeat(40)).is_none());
}
