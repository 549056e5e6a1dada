//! Tests for the positioned YAML loader.
use super::*;

#[derive(serde::Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Inner {
    a: Option<u32>,
    b: Option<String>,
}

#[derive(serde::Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Doc {
    x: Option<u32>,
    inner: Option<Inner>,
    list: Option<Vec<Inner>>,
}

#[test]
fn collects_every_error_with_positions() {
    let text = "x: nope\ninner:\n  a: 1\n  c: 2\nlist:\n  - a: 1\n  - a: [1]\n    bb: x\n";
    let l = load::<Doc>("t.yaml", text).unwrap();
    let got: Vec<_> = l.errors.iter().map(|d| (d.path.clone(), d.line, d.col)).collect();
    assert_eq!(
        got,
        vec![
            ("x".to_string(), 1, 4),
            ("inner.c".to_string(), 4, 3),
            ("list[1].a".to_string(), 7, 8),
            ("list[1].bb".to_string(), 8, 5),
        ]
    );
    assert_eq!(l.value.inner.unwrap().a, Some(1));
    assert!(l.errors[3].help.as_deref().unwrap().contains("did you mean `b`"), "{:?}", l.errors[3]);
}

#[test]
fn syntax_error_has_position() {
    let d = load::<Doc>("t.yaml", "x: [1, 2\ny: 3").err().unwrap();
    assert!(d.line >= 1 && d.message.starts_with("invalid YAML"), "{d:?}");
}

#[test]
fn empty_document_is_empty_mapping() {
    let l = load::<Doc>("t.yaml", "").unwrap();
    assert!(l.errors.is_empty());
    assert!(l.value.x.is_none());
}

#[test]
fn top_level_non_mapping_is_an_error_not_a_panic() {
    let l = load::<Doc>("t.yaml", "- 1\n- 2\n").unwrap();
    assert_eq!(l.errors.len(), 1);
}

#[derive(serde::Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct Words {
    a: Option<String>,
    b: Option<String>,
    c: Option<bool>,
}

#[test]
fn only_yaml_1_2_booleans() {
    let l = load::<Words>("t.yaml", "a: off\nb: no\nc: true\n").unwrap();
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    assert_eq!((l.value.a.as_deref(), l.value.b.as_deref(), l.value.c), (Some("off"), Some("no"), Some(true)));
}
