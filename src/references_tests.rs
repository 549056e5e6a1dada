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
        "C# and F#, #include <x>, issue#12",
        "the colour #fff and ##",
        "&#8203; is an entity",
        "a decorator-free @ sign alone, and @-",
        "https://github.com/acme/app/blob/main/x.rs#L12",
        "https://github.com/acme/app/issues",
        "v1.2#3 or 1#2",
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
}

#[test]
fn issue_urls_as_link_destinations() {
    assert!(is_issue_url("https://github.com/acme/app/issues/12"));
    assert!(is_issue_url("https://gitlab.com/g/p/-/merge_requests/3"));
    assert!(!is_issue_url("https://github.com/acme/app"));
    assert!(!is_issue_url("https://example.com/docs/issues/x"));
}
