use super::*;
use proptest::prelude::*;

/// What the runner could read as a command in one printed line (see the module's doc).
fn runner_sees_a_command(l: &str) -> bool {
    l.contains(['\n', '\r']) || l.chars().any(must_escape) || l.contains("##[") || l.trim_start().starts_with("::")
}

#[test]
fn both_command_forms_line_ends_and_ignorables_are_shown_not_obeyed() {
    assert_eq!(line("echo '##[error]x'"), "echo '##\\[error]x'");
    assert_eq!(line("a\r::error::x"), "a\\r::error::x");
    assert_eq!(line("   ::stop-commands::tok"), "   \\::stop-commands::tok");
    assert_eq!(line("\u{a0}::add-mask::x"), "\u{a0}\\::add-mask::x");
    assert_eq!(line("#\u{200b}#[warning]x"), "#\\u{200b}#[warning]x");
    assert_eq!(line("x\u{2028}y\u{1b}[31m"), "x\\u{2028}y\\u{1b}[31m");
    assert_eq!(line("###[a] ##[b]"), "###\\[a] ##\\[b]");
    // Ordinary text is left alone: `::` inside a line, tabs, emoji, accents.
    assert_eq!(line("  run_cmd cargo test std::fs\t✅ é"), "  run_cmd cargo test std::fs\t✅ é");
    assert_eq!(lines("first\n  ::error::x\nlast"), "first\n  \\::error::x\nlast");
}

#[test]
fn json_lines_stay_the_same_json() {
    let text = "a\u{2028}b ##[error]c #\u{200d}#[x] \u{85} \u{e0001}";
    let compact = serde_json::to_string(&serde_json::json!({ "args": text })).unwrap();
    let neutral = json(&compact);
    assert!(!runner_sees_a_command(&neutral), "{neutral}");
    let back: serde_json::Value = serde_json::from_str(&neutral).unwrap();
    assert_eq!(back["args"], text);
}

#[test]
fn commands_escape_their_data_and_properties_as_the_runner_unescapes_them() {
    let e = Command::error(&[("file", "a,b:c.py"), ("line", "3"), ("title", "hone: x")], "50% done\r\nnext ##[x]");
    assert_eq!(e.as_str(), "::error file=a%2Cb%3Ac.py,line=3,title=hone%3A x::50%25 done%0D%0Anext ##\\[x]");
    assert_eq!(Command::group("hone EXECUTING: a\nb").as_str(), "::group::hone EXECUTING: a%0Ab");
    assert_eq!(Command::endgroup().as_str(), "::endgroup::");
    // A mask is the value exactly: only the runner's own escapes.
    assert_eq!(Command::add_mask("s3cr%t\u{200b}##[x]").as_str(), "::add-mask::s3cr%25t\u{200b}##[x]");
}

proptest! {
    #![proptest_config(crate::testutil::proptest_config(512))]

    #[test]
    fn no_text_makes_a_command(s in "(\\PC|[\\r\\n\\t :#\\[\\]\u{200b}\u{2028}\u{a0}])*") {
        let one = line(&s);
        prop_assert!(!runner_sees_a_command(&one), "{:?} -> {:?}", s, one);
        for l in lines(&s).split('\n') {
            prop_assert!(!runner_sees_a_command(l), "{:?} -> {:?}", s, l);
        }
        let compact = serde_json::to_string(&s).unwrap();
        let j = json(&compact);
        prop_assert!(!runner_sees_a_command(&j));
        prop_assert_eq!(serde_json::from_str::<String>(&j).unwrap(), s);
    }
}
