//! Unit tests: what is a mention or a reference, and what is not; plain text broken.

use super::*;

fn refs(text: &str) -> Vec<&str> {
    find(text).into_iter().map(|f| &text[f.range]).collect()
}

#[test]
fn mentions_teams_issues_and_closing_references_are_found() {
    assert_eq!(refs("thanks @octocat."), ["@octocat"]);
    assert_eq!(refs("cc @acme/security-team, please"), ["@acme/security-team"]);
    assert_eq!(refs("fixes #12 and closes acme/app#3"), ["#12", "acme/app#3"]);
    assert_eq!(refs("Resolves: GH-7; see !42 (GitLab)"), ["GH-7", "!42"]);
    assert_eq!(refs("(#5)"), ["#5"]);
    assert_eq!(refs("`@octocat`"), ["@octocat"], "plain text: a backtick is no code");
    assert_eq!(refs("#9"), ["#9"]);
    assert_eq!(
        refs("Fixes https://github.com/acme/app/issues/12."),
        ["https://github.com/acme/app/issues/12."],
        "the URL, to the end of its token"
    );
    assert_eq!(
        refs("see https://gitlab.example/g/p/-/merge_requests/4"),
        ["https://gitlab.example/g/p/-/merge_requests/4"]
    );
    assert_eq!(refs("<https://github.com/a/b/pull/1>"), ["https://github.com/a/b/pull/1"]);
}

#[test]
fn ordinary_text_is_not_a_reference() {
    for text in [
        "mail me at dev@example.com",
        "C# and F#, #include <x>",
        "the colour #fff and ##",
        "a decorator-free @ sign alone, and @-",
        "https://github.com/acme/app/blob/main/x.rs#L12",
        "https://github.com/acme/app/issues",
        "GH-x and agh-12",
        "http://host:8080#12",
    ] {
        assert_eq!(refs(text), Vec::<&str>::new(), "{text}");
    }
}

#[test]
fn plain_text_breaks_each_reference_after_its_sign() {
    let b = BREAK;
    assert_eq!(plain("fixes #12, cc @octocat"), format!("fixes #{b}12, cc @{b}octocat"));
    assert_eq!(plain("acme/app#3 GH-4"), format!("acme/app#{b}3 GH{b}-4"));
    assert_eq!(plain("https://h/a/b/issues/9"), format!("https://h/a/b/issues/{b}9"));
    assert_eq!(plain("nothing here"), "nothing here");
    // Broken, it is found no more.
    assert!(!any(&plain("fixes #12, cc @octocat/team and https://h/a/b/pull/1")));
}

#[test]
fn split_keeps_every_byte_in_order() {
    let text = "a @b c #1";
    let parts = split(text);
    assert_eq!(parts, [(false, "a "), (true, "@b"), (false, " c "), (true, "#1")]);
    assert_eq!(parts.iter().map(|p| p.1).collect::<String>(), text);
    assert_eq!(split(""), [(false, "")]);
    assert_eq!(split("@a@b"), [(true, "@a"), (true, "@b")], "after a code span, `@b` stands alone");
    assert_eq!(split("@a/b#1"), [(true, "@a/b"), (true, "#1")], "a path never takes back a mention");
    assert!(!any(&plain("@a/b#1")));
}

#[test]
fn issue_urls_as_link_destinations() {
    assert!(is_issue_url("https://github.com/acme/app/issues/12"));
    assert!(is_issue_url("https://gitlab.com/g/p/-/merge_requests/3"));
    assert!(!is_issue_url("https://github.com/acme/app"));
    assert!(!is_issue_url("https://example.com/docs/issues/x"));
}

/// References the forges honour that sit where a word-bounded finder would not look: after
/// punctuation that is not a word character (GitHub's and GitLab's patterns look behind for
/// `\W`, GitLab none at all before `#`), GitLab's own forms, and issue URLs with more after
/// their number.
#[test]
fn references_after_punctuation_and_other_forms_are_found() {
    for (text, want) in [
        ("cc -@octocat", "@octocat"),
        ("thanks.@octocat", "@octocat"),
        ("@@octocat", "@octocat"),
        ("and/@octocat", "@octocat"),
        ("ping @_bot", "@_bot"),
        ("&#12", "#12"),
        ("a/#12", "#12"),
        ("fix -#12", "#12"),
        ("fixes:acme/app#12", "acme/app#12"),
        ("git@github.com:acme/app#12", "acme/app#12"),
        ("closes sibling#12", "sibling#12"),
        ("closes sibling!12", "sibling!12"),
        ("/group/project#12", "group/project#12"),
        ("x-GH-12", "GH-12"),
        ("see https://github.com/a/b/pull/12/files", "https://github.com/a/b/pull/12/files"),
        ("HTTPS://github.com/a/b/issues/12", "HTTPS://github.com/a/b/issues/12"),
        ("www.github.com/a/b/issues/12", "www.github.com/a/b/issues/12"),
        ("https://gitlab.com/g/p/-/work_items/12", "https://gitlab.com/g/p/-/work_items/12"),
        ("'https://x.example/@octocat'", "@octocat"),
    ] {
        assert_eq!(refs(text), [want], "{text}");
        assert!(!any(&plain(text)), "{text}: {:?}", plain(text));
    }
    // A name before the sign is a project beside this one to GitLab (`sibling#12`): the whole
    // is the reference, whatever the name.
    assert_eq!(refs("issue#12, v1.2#3 or &#8203;"), ["issue#12", "v1.2#3", "#8203"]);
    assert!(is_issue_url("/acme/app/issues/12"), "a relative link to an issue");
    assert!(is_issue_url("https://github.com/a/b/pull/12/files#diff-1"));
}

#[test]
fn a_url_the_forge_links_is_no_reference_inside() {
    for text in [
        "https://medium.com/@octocat/post",
        "(https://example.com/docs#12)",
        "see https://example.com/a/#12, then",
        "www.example.com/@octocat",
        "http://host:8080#12",
    ] {
        assert_eq!(refs(text), Vec::<&str>::new(), "{text}");
    }
    assert_eq!(refs("https://example.com/x. @octocat"), ["@octocat"], "after the URL, text again");
}

use proptest::prelude::{Just, prop, prop_assert, prop_assert_eq, prop_oneof, proptest};

proptest! {
    #![proptest_config(crate::testutil::proptest_config(512))]

    /// Broken, plain text holds no reference; split, the parts are the text.
    #[test]
    fn plain_text_holds_no_reference_once_broken(
        v in prop::collection::vec(prop_oneof![
            Just("@".to_string()), Just("#".into()), Just("!".into()), Just("/".into()), Just("-".into()),
            Just(".".into()), Just("&".into()), Just("GH-".into()), Just("12".into()), Just("https://".into()),
            Just("www.".into()), Just("issues/".into()), Just("pull/".into()), Just("(".into()), Just(")".into()),
            Just(" ".into()), "[a-zA-Z_]{1,4}", "\\PC{0,2}",
        ], 0..16)
    ) {
        let s = v.concat();
        let broken = plain(&s);
        prop_assert!(find(&broken).is_empty(), "{:?} -> {:?}: {:?}", s, broken, find(&broken));
        prop_assert_eq!(split(&s).iter().map(|p| p.1).collect::<String>(), s);
    }
}
