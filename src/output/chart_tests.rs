//! Charts with hostile labels stay one valid block: the fence holds, every line keeps its shape.

use super::*;
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

/// Labels a repository or the model could choose, each aimed at a way out of a chart.
pub(crate) const HOSTILE: &[&str] = &[
    "a\"b",
    "a'b",
    "x\n```\n![](http://attacker.example/i.png)",
    "%%{init: {'theme':'dark'}}%%",
    "click t1 href \"http://attacker.example\"",
    "call alert(1)",
    "<img src=x onerror=alert(1)>",
    "excludes weekends",
    "section pwned",
    "title pwned",
    "2024-01-01 x",
    "a: b; c # d",
    "[REDACTED]",
    "",
    "\u{202e}gnp.exe",
    "`code` ~~~",
    "a\", \"b\"] bar [1",
    "#quot; &lt;script&gt;",
    "line\rreturn\u{2028}sep",
    "a very long repository name that goes on and on and on forever",
];

/// The one fenced block in `md`: its info string and text. Fails unless `md` is exactly one
/// fenced block and nothing else.
fn only_block(md: &str) -> (String, String) {
    let mut events = Parser::new(md).filter(|e| !matches!(e, Event::SoftBreak | Event::HardBreak));
    let info = match events.next() {
        Some(Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info)))) => info.to_string(),
        other => panic!("not a fenced block: {other:?} in\n{md}"),
    };
    let mut text = String::new();
    for e in events.by_ref() {
        match e {
            Event::Text(t) => text.push_str(&t),
            Event::End(TagEnd::CodeBlock) => break,
            other => panic!("{other:?} inside the block:\n{md}"),
        }
    }
    let rest: Vec<Event<'_>> = events.collect();
    assert!(rest.is_empty(), "after the block: {rest:?}\n{md}");
    assert_eq!(format!("```{info}\n{text}```\n\n"), md, "the block is the whole chart");
    (info, text)
}

/// A label as it must look: no character that could end it, its line or the block.
fn assert_safe(l: &str) {
    assert!(!l.is_empty() && l.chars().count() <= LABEL_CHARS + 4, "{l:?}");
    for c in l.chars() {
        assert!(c.is_alphanumeric() || " -_./+@()…".contains(c), "{c:?} in {l:?}");
    }
}

#[test]
fn a_pie_with_hostile_labels_is_one_block_with_a_slice_each() {
    let slices: Vec<(&str, usize)> = HOSTILE.iter().take(MAX_SLICES).map(|l| (*l, 1)).collect();
    let md = pie("Outcomes\n```", &slices).unwrap();
    let (info, text) = only_block(&md);
    assert_eq!(info, "mermaid");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "pie showData");
    assert_safe(lines[1].strip_prefix("    title ").unwrap());
    assert_eq!(lines.len(), 2 + slices.len(), "{text}");
    let mut seen = Vec::new();
    for line in &lines[2..] {
        let l = line.strip_prefix("    \"").and_then(|l| l.strip_suffix("\" : 1")).unwrap_or_else(|| panic!("{line}"));
        assert_safe(l);
        assert!(!seen.contains(&l), "a repeated label loses its slice: {l}");
        seen.push(l);
    }
}

#[test]
fn a_bar_chart_with_hostile_labels_is_one_block_with_a_bar_each() {
    let bars_in: Vec<(&str, f64)> = HOSTILE.iter().enumerate().map(|(i, l)| (*l, i as f64 + 0.5)).collect();
    let md = bars("Time\"]", "seconds\n", &bars_in).unwrap();
    let (_, text) = only_block(&md);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert_eq!(lines[0], "xychart-beta");
    assert_safe(lines[1].strip_prefix("    title \"").and_then(|l| l.strip_suffix('"')).unwrap());
    let axis = lines[2].strip_prefix("    x-axis [\"").and_then(|l| l.strip_suffix("\"]")).unwrap();
    let names: Vec<&str> = axis.split("\", \"").collect();
    assert_eq!(names.len(), bars_in.len(), "{axis}");
    names.iter().for_each(|n| assert_safe(n));
    assert!(lines[3].starts_with("    y-axis \"seconds\" 0 --> "), "{}", lines[3]);
    let values = lines[4].strip_prefix("    bar [").and_then(|l| l.strip_suffix(']')).unwrap();
    assert_eq!(values.split(", ").count(), bars_in.len());
}

#[test]
fn a_gantt_with_hostile_names_is_one_block_each_task_led_by_hones_word() {
    let tasks: Vec<Task> = HOSTILE
        .iter()
        .enumerate()
        .map(|(i, n)| Task {
            kind: "check",
            name: n.to_string(),
            start_ms: i as u64,
            end_ms: i as u64 + 5,
            mark: Mark::Failed,
        })
        .collect();
    let mut g = Gantt::new("Run\n```", 1_700_000_000_000);
    g.section("Checks", tasks);
    let md = g.render().unwrap();
    let (_, text) = only_block(&md);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(&lines[..4], ["gantt", "    title Run ___", "    dateFormat x", "    axisFormat %H:%M:%S"]);
    assert_eq!(lines[4], "    section Checks");
    assert_eq!(lines.len(), 5 + HOSTILE.len(), "{text}");
    for (i, line) in lines[5..].iter().enumerate() {
        let (task, data) = line.split_once(" :").unwrap_or_else(|| panic!("{line}"));
        let name = task.strip_prefix("    check").unwrap_or_else(|| panic!("{line}"));
        if !HOSTILE[i].is_empty() {
            assert_safe(name.strip_prefix(' ').unwrap_or_else(|| panic!("{line}")));
        }
        let start = 1_700_000_000_000u64 + i as u64;
        assert_eq!(data, format!("crit, t{}, {start}, {}", i + 1, start + 5));
    }
}

#[test]
fn labels_keep_what_is_plain_and_cut_what_is_long() {
    assert_eq!(label("org/repo-name_1.2"), "org/repo-name_1.2");
    assert_eq!(label("  unit   tests (fast) "), "unit tests (fast)");
    assert_eq!(label("naïve 日本"), "naïve 日本");
    assert_eq!(label("a\"b<c>"), "a_b_c_");
    assert_eq!(label(""), "_");
    assert_eq!(label(&"x".repeat(100)).chars().count(), LABEL_CHARS + 1);
    assert_eq!(labels(["a", "a", "a\"", "a_"]), ["a", "a (2)", "a_", "a_ (2)"]);
}

#[test]
fn empty_charts_are_left_out_and_big_ones_summed() {
    assert_eq!(pie("x", &[]), None);
    assert_eq!(pie("x", &[("a", 0)]), None);
    assert_eq!(bars("x", "s", &[]), None);
    assert_eq!(Gantt::new("x", 0).render(), None);
    let names: Vec<String> = (0..1000).map(|i| format!("repo-{i}")).collect();
    let slices: Vec<(&str, usize)> = names.iter().map(|n| (n.as_str(), 1)).collect();
    let md = pie("x", &slices).unwrap();
    assert_eq!(md.lines().filter(|l| l.contains("\" : ")).count(), MAX_SLICES);
    assert!(md.contains("\"991 others\" : 991"), "{md}");
    let values: Vec<(&str, f64)> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i as f64)).collect();
    let (first, rest, sum) = top(&values, 3);
    assert_eq!(first, [("repo-999", 999.0), ("repo-998", 998.0), ("repo-997", 997.0)]);
    assert_eq!((rest, sum), (997, (0..997).sum::<usize>() as f64));
}

#[test]
fn numbers_are_plain() {
    assert_eq!(number(1.5), "1.5");
    assert_eq!(number(0.0042), "0.0042");
    assert_eq!(number(2.0), "2");
    assert_eq!(number(f64::NAN), "0");
    assert_eq!(number(-3.0), "0");
    assert_eq!(number(f64::INFINITY), "0");
    assert_eq!(number(1e300), "1000000000000000");
}

#[test]
fn points_sit_on_shares_of_the_largest_x_and_their_labels_are_safe() {
    assert_eq!(points("x", "USD", "resolved", &[]), None);
    assert_eq!(points("x", "USD", "resolved", &[("free", 0.0, 0.5)]), None, "no x to scale by");
    let md = points(
        "Rate",
        "USD",
        "resolved",
        &[("a.yaml", 0.5, 0.25), ("b\"]\n%%{init}", 2.0, 1.5), ("a.yaml", f64::NAN, 1.0)],
    )
    .unwrap();
    assert!(md.starts_with("```mermaid\nquadrantChart\n"), "{md}");
    assert!(md.contains("x-axis \"USD 0\" --> \"USD 2\""), "{md}");
    assert!(md.contains("    \"a.yaml\": [0.25, 0.25]\n"), "{md}");
    assert!(md.contains(&format!("    \"{}\": [1, 1]\n", label("b\"]\n%%{init}"))), "{md}");
    assert!(md.contains("    \"a.yaml (2)\": [0, 1]\n"), "{md}");
    assert!(!md.contains("{init}") && md.matches("```").count() == 2, "{md}");
}
