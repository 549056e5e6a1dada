use super::*;
use crate::forge::listing::{Keep, filters::Visibility};

fn repo(path: &str) -> Listed {
    Listed {
        path: path.into(),
        archived: Some(false),
        fork: Some(false),
        visibility: Some("public".into()),
        topics: vec!["python".into(), "Service".into()],
        language: Some("Python".into()),
    }
}

fn org(o: &str) -> Query {
    Query::Github(github::query::Query { org: Some(o.into()), ..Default::default() })
}

#[test]
fn filters_keep_what_they_say() {
    let f = |topics: &[&str], language: Option<&str>| Filters {
        topics: topics.iter().map(|t| t.to_string()).collect(),
        language: language.map(str::to_string),
        ..Default::default()
    };
    let r = repo("acme/app");
    assert!(Filters::default().keep(&r));
    assert!(f(&["python"], None).keep(&r));
    assert!(f(&["PYTHON", "service"], Some("python")).keep(&r), "topics and language in any case");
    assert!(!f(&["python", "go"], None).keep(&r), "every topic is needed");
    assert!(!f(&[], Some("Go")).keep(&r));
    assert!(!f(&[], Some("Go")).keep(&Listed { language: None, ..r.clone() }), "an unknown language is not Go");
    let archived = Listed { archived: Some(true), ..r.clone() };
    let fork = Listed { fork: Some(true), ..r.clone() };
    assert!(!Filters::default().keep(&archived) && !Filters::default().keep(&fork), "left out by default");
    let include = Filters { archived: Keep::Include, forks: Keep::Include, ..Default::default() };
    assert!(include.keep(&archived) && include.keep(&fork) && include.keep(&r));
    let only = Filters { archived: Keep::Only, ..Default::default() };
    assert!(only.keep(&archived) && !only.keep(&r));
    assert!(!only.keep(&Listed { archived: None, ..r.clone() }), "`only` needs the answer to say so");
    assert!(Filters::default().keep(&Listed { archived: None, ..r.clone() }), "unknown is not archived");
    let private = Filters { visibility: Some(Visibility::Private), ..Default::default() };
    assert!(!private.keep(&r) && private.keep(&Listed { visibility: Some("private".into()), ..r.clone() }));
}

#[test]
fn only_names_the_forge_gives_under_the_owner_asked_for_become_targets() {
    let q = org("acme");
    assert!(q.accept(&repo("acme/app")));
    assert!(q.accept(&repo("ACME/app")), "GitHub owners are case-insensitive");
    for hostile in [
        "evil/app",
        "acme/../evil/app",
        "acme/app/../../x",
        "acme/..",
        "acme/app?x=1",
        "acme/app#x",
        "acme/a b",
        "acme/app.git/x",
        "//evil.example/acme",
        "https://evil.example/acme/app",
        "acme",
        "acme/",
        "",
    ] {
        assert!(!q.accept(&repo(hostile)) && !q.placed(hostile), "{hostile}");
    }
    let search = Query::Github(github::query::Query { search: Some("topic:x".into()), ..Default::default() });
    assert!(search.accept(&repo("anyone/app")), "a search may find any owner");
    assert!(!search.accept(&repo("anyone/app/x")));
    let group = |subgroups| {
        Query::Gitlab(gitlab::query::Query { group: "platform/be".into(), subgroups, ..Default::default() })
    };
    assert!(group(true).accept(&repo("platform/be/api")));
    assert!(group(true).accept(&repo("platform/be/deep/api")));
    assert!(!group(false).accept(&repo("platform/be/deep/api")), "no subgroups");
    for hostile in ["platform/bex/api", "platform/api", "other/be/api", "platform/be/../x/api", "platform/be"] {
        assert!(!group(true).accept(&repo(hostile)), "{hostile}");
    }
}

#[test]
fn queries_are_checked_before_anything_is_asked() {
    let gh = |q: github::query::Query| Query::Github(q).check();
    assert!(gh(github::query::Query::default()).unwrap().contains("exactly one"));
    let both = github::query::Query { org: Some("a".into()), user: Some("b".into()), ..Default::default() };
    assert!(gh(both).unwrap().contains("exactly one"));
    assert!(
        gh(github::query::Query { org: Some("a/b".into()), ..Default::default() })
            .unwrap()
            .contains("not a GitHub account")
    );
    assert_eq!(gh(github::query::Query { org: Some("acme".into()), ..Default::default() }), None);
    let code = |filters| github::query::Query { code_search: Some("org:acme x".into()), filters, ..Default::default() };
    assert_eq!(gh(code(Filters::default())), None);
    assert_eq!(gh(code(Filters { forks: Keep::Include, ..Default::default() })), None);
    let topics = Filters { topics: vec!["x".into()], ..Default::default() };
    assert!(gh(code(topics)).unwrap().contains("code search"));
    assert!(gh(github::query::Query { search: Some(" ".into()), ..Default::default() }).unwrap().contains("empty"));
    let gl = |g: &str| {
        Query::Gitlab(gitlab::query::Query { group: g.into(), subgroups: true, ..Default::default() }).check()
    };
    assert_eq!(gl("platform"), None);
    assert_eq!(gl("platform/backend/"), None);
    for bad in ["", "a/../b", "a?x", "a b"] {
        assert!(gl(bad).is_some(), "{bad}");
    }
}

#[test]
fn what_is_asked_and_where_it_clones_from() {
    let Query::Github(q) = org("acme") else { unreachable!() };
    assert_eq!(q.source(), github::listing::Source::Org("acme".into()));
    let gl = gitlab::query::Query { group: "/platform/".into(), subgroups: false, ..Default::default() };
    assert_eq!(gl.group_path(), "platform");
    let language = Filters { language: Some("Go".into()), ..Default::default() };
    let gl = Query::Gitlab(gitlab::query::Query { group: "platform".into(), subgroups: true, filters: language });
    assert!(gl.check().unwrap().contains("does not say a project's language"));
    assert_eq!(clone_url("https://gitlab.example/gl/", "platform/api"), "https://gitlab.example/gl/platform/api.git");
    assert_eq!(clone_url("https://github.com", "acme/app"), "https://github.com/acme/app.git");
}
