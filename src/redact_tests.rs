//! Tests of the redactor: every form of a secret, pieces at a cut, overlapping secrets, thousands of them.
use super::*;
use base64::Engine;

const CANARY: &str = "hone-canary-Zx9/q+T0k3n=";

#[test]
fn masks_plain_base64_and_url_forms() {
    let r = Redactor::new();
    r.add(CANARY);
    let b64 = base64::engine::general_purpose::STANDARD.encode(CANARY);
    let b64url = base64::engine::general_purpose::URL_SAFE.encode(CANARY);
    let pct = percent_encoding::utf8_percent_encode(CANARY, percent_encoding::NON_ALPHANUMERIC).to_string();
    let rfc3986 = "hone-canary-Zx9%2Fq%2BT0k3n%3D".to_string();
    for leak in [CANARY.to_string(), b64, b64url, pct, "hone%2dcanary%2dZx9%2fq%2bT0k3n%3d".to_string(), rfc3986] {
        let out = r.apply(&format!("before {leak} after"));
        assert!(!out.contains(&leak), "{leak} survived: {out}");
        assert!(out.contains(MASK));
    }
}

#[test]
fn masks_base64_of_a_longer_string_containing_the_secret() {
    let r = Redactor::new();
    r.add(CANARY);
    for prefix in ["", "a", "ab", "abc", "Authorization: Basic x:"] {
        let enc = base64::engine::general_purpose::STANDARD.encode(format!("{prefix}{CANARY}tail"));
        let out = r.apply(&enc);
        assert!(out.contains(MASK), "prefix {prefix:?}: {enc} -> {out}");
        // Masked whole: of the secret's encoding, at most the few characters that mix in its
        // neighbours' bits are left.
        let secret_chars = CANARY.len() * 4 / 3;
        assert!(out.len() + secret_chars <= enc.len() + MASK.len() + 8, "prefix {prefix:?}: {enc} -> {out}");
    }
}

#[test]
fn masks_json_escaped_hex_case_changed_and_reversed_forms() {
    let secret = r#"s3cr"et\Tok_9"#;
    let r = Redactor::new();
    r.add(secret);
    let once = serde_json::to_string(secret).unwrap();
    let twice = serde_json::to_string(&once).unwrap();
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    for (what, text) in [
        ("json", once.clone()),
        ("json twice", twice),
        ("hex", hex.clone()),
        ("HEX", hex.to_uppercase()),
        ("upper", secret.to_uppercase()),
        ("lower", secret.to_lowercase()),
        ("reversed", secret.chars().rev().collect()),
    ] {
        let out = r.apply(&format!("x {text} y"));
        assert!(!out.contains(&text), "{what} form survived: {out}");
        assert!(out.contains(MASK), "{what}: {out}");
    }
}

#[test]
fn masks_a_secret_spelled_out_in_every_sink_that_applies_it() {
    let r = Redactor::new();
    r.add(CANARY);
    let spelled: String = CANARY.chars().map(|c| format!("{c} ")).collect();
    let out = r.apply(&format!("token: {spelled}done"));
    assert_eq!(out, format!("token: {MASK} done"));
    // A secret that is not ASCII has no spelled-out form (its other forms still count).
    r.add("pässwörd-ünicode");
    assert_eq!(r.apply("p ä s s w ö r d"), "p ä s s w ö r d");
    assert_eq!(r.apply("x pässwörd-ünicode y"), format!("x {MASK} y"));
}

#[test]
fn short_values_are_ignored_and_ordinary_text_is_untouched() {
    let r = Redactor::new();
    r.add("abc");
    assert!(r.is_empty());
    r.add(CANARY);
    assert!(!r.is_empty());
    assert_eq!(r.apply("nothing secret here"), "nothing secret here");
}

#[test]
fn a_secret_of_the_minimum_length_counts_and_each_form_is_kept_once() {
    let r = Redactor::new();
    r.add("12345");
    assert!(r.is_empty(), "five characters are too short to mask");
    r.add("123456");
    assert_eq!(r.apply("pin 123456."), format!("pin {MASK}."));
    let once = r.values();
    assert!(once.contains(&"123456".to_string()) && once.contains(&"654321".to_string()), "{once:?}");
    assert!(once.iter().all(|v| v.len() >= MIN_SECRET_LEN), "no form shorter than a secret: {once:?}");
    r.add("123456");
    assert_eq!(r.values(), once, "registering it again adds nothing");
    assert!(once.windows(2).all(|w| w[0].len() >= w[1].len()), "longest first: {once:?}");
}

#[test]
fn a_secret_split_by_a_cut_is_masked_on_both_sides() {
    let r = Redactor::new();
    r.add("Zq81x0RaW4mcpTOKEN99");
    let mut c = crate::exec::Capture::new(40);
    c.push(format!("{}Zq81x0RaW4mcp", "a".repeat(7)).as_bytes());
    c.push(&[b'.'; 100]);
    c.push(b"pTOKEN99bbbbbbbbbbbb");
    let cut = r.apply_cut(&c.render());
    assert!(!cut.contains("Zq81x0RaW4") && !cut.contains("TOKEN99"), "{cut}");
    assert!(cut.starts_with("aaaaaaa[REDACTED]\n[... ") && cut.contains(" ...]\n"), "{cut}");
    // Uncut text is left as `apply` leaves it.
    assert_eq!(r.apply_cut("the Zq81 prefix alone"), "the Zq81 prefix alone");
}

#[test]
fn overlapping_secrets_are_masked_together() {
    let r = Redactor::new();
    r.add("abcdef-1234");
    r.add("1234-ghijkl");
    // Needle by needle, the first masked left `-ghijkl` of the second in the text.
    assert_eq!(r.apply("xx abcdef-1234-ghijkl yy"), format!("xx {MASK} yy"));
    assert_eq!(r.apply("abcdef-1234 and 1234-ghijkl"), format!("{MASK} and {MASK}"));
}

#[test]
fn a_secret_added_after_thousands_is_masked_and_so_are_they() {
    // A fleet with a GitHub App registers a token per repository: one automaton for them all,
    // made again after each add.
    let r = Redactor::new();
    for i in 0..2000 {
        r.add(&format!("ghs_token{i:05}xyzw"));
    }
    assert_eq!(r.apply("a ghs_token01500xyzw b"), format!("a {MASK} b"));
    r.add("ghs_latecomer-9876");
    assert_eq!(r.apply("ghs_latecomer-9876 ghs_token00000xyzw é"), format!("{MASK} {MASK} é"));
    assert!(r.found_in(b"x ghs_token01999xyzw"));
}

#[test]
fn masks_the_rot13_form() {
    let r = Redactor::new();
    r.add("ghp_Abc123xyzTOKEN");
    let out = r.apply("leak: tuc_Nop123klmGBXRA end");
    assert!(!out.contains("tuc_Nop123klmGBXRA"), "{out}");
}
