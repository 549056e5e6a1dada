//! Secret redaction: every value registered here, and its other forms (base64, URL-encoded,
//! JSON-escaped at any depth, hex, upper- and lower-case, reversed, spelled out with a separator
//! between its characters), is replaced by `[REDACTED]` before text reaches any sink: logs,
//! events, reports, tool results, commit messages. The diff guard uses the same forms to refuse a
//! change that carries a secret.

use std::sync::{Arc, RwLock};

pub(crate) mod spaced;

pub const MASK: &str = "[REDACTED]";

/// Whether an environment variable's name says it holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    ["TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL"].iter().any(|s| n.contains(s))
}
/// Shorter values are not treated as secrets: masking them would shred ordinary text.
pub const MIN_SECRET_LEN: usize = 6;

/// A shared, cheaply cloned set of secret strings.
#[derive(Clone, Default, Debug)]
pub struct Redactor {
    needles: Arc<RwLock<Vec<String>>>,
    /// The secrets themselves (ASCII ones), for their spelled-out forms (`spaced`).
    spelled: Arc<RwLock<Vec<Vec<u8>>>>,
}

impl Redactor {
    pub fn new() -> Self {
        Self::default()
    }

    /// Register a secret value. Its encoded forms are registered too.
    pub fn add(&self, secret: &str) {
        if secret.len() < MIN_SECRET_LEN {
            return;
        }
        if secret.is_ascii()
            && let Ok(mut s) = self.spelled.write()
            && !s.iter().any(|x| x == secret.as_bytes())
        {
            s.push(secret.as_bytes().to_vec());
        }
        let mut forms = vec![secret.to_string()];
        forms.extend(encoded_forms(secret));
        forms.extend(transformed_forms(secret));
        let Ok(mut n) = self.needles.write() else {
            return;
        };
        for f in forms {
            if f.len() >= MIN_SECRET_LEN && !n.contains(&f) {
                n.push(f);
            }
        }
        // Longest first, so a secret that contains another is masked whole.
        n.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    /// The secret values (and their encoded forms), for `::add-mask::`.
    pub fn values(&self) -> Vec<String> {
        self.needles.read().map(|n| n.clone()).unwrap_or_default()
    }

    pub fn is_empty(&self) -> bool {
        self.needles.read().map(|n| n.is_empty()).unwrap_or(true)
    }

    /// `e` with every registered secret replaced in its text.
    pub fn error(&self, mut e: crate::error::HoneError) -> crate::error::HoneError {
        e.message = self.apply(&e.message);
        e.hint = e.hint.map(|h| self.apply(&h));
        for d in &mut e.located {
            d.message = self.apply(&d.message);
            d.source_line = d.source_line.as_deref().map(|l| self.apply(l));
        }
        e
    }

    /// Replace every registered secret in `text`.
    pub fn apply(&self, text: &str) -> String {
        let Ok(n) = self.needles.read() else {
            return text.to_string();
        };
        let mut out = text.to_string();
        for needle in n.iter() {
            if out.contains(needle.as_str()) {
                out = out.replace(needle.as_str(), MASK);
            }
        }
        if let Ok(spelled) = self.spelled.read() {
            for secret in spelled.iter() {
                out = spaced::mask(&out, secret, MASK);
            }
        }
        out
    }
}

impl Redactor {
    /// Whether `bytes` (content that need not be text: a binary file of the change) hold any
    /// registered form of a secret, as they are or with their NUL bytes taken out (a secret
    /// written as UTF-16, or split by NULs). One pass over the bytes for all forms.
    pub fn found_in(&self, bytes: &[u8]) -> bool {
        let needles = self.values();
        if needles.is_empty() {
            return false;
        }
        let Ok(ac) = aho_corasick::AhoCorasick::new(&needles) else { return true };
        if ac.is_match(bytes) {
            return true;
        }
        bytes.contains(&0) && ac.is_match(&bytes.iter().copied().filter(|b| *b != 0).collect::<Vec<u8>>())
    }
}

/// The shortest piece of a secret masked at a cut (shorter pieces are too common to matter).
const MIN_PIECE: usize = 4;

impl Redactor {
    /// `apply`, and where `text` was cut short (head and tail around a `[... omitted ...]`
    /// line), also a piece of a secret that the cut split: the start of one ending the head,
    /// the end of one starting the tail.
    pub fn apply_cut(&self, text: &str) -> String {
        let out = self.apply(text);
        let (Some(start), Ok(n)) = (out.find("\n[... "), self.needles.read()) else {
            return out;
        };
        let Some(end) = out[start..].find(" ...]\n").map(|e| start + e + " ...]\n".len()) else {
            return out;
        };
        let (mut head, marker, mut tail) = (out[..start].to_string(), &out[start..end], out[end..].to_string());
        for needle in n.iter() {
            for k in (MIN_PIECE..needle.len()).rev() {
                if let Some(p) = needle.get(..k)
                    && head.ends_with(p)
                {
                    head.truncate(head.len() - k);
                    head.push_str(MASK);
                    break;
                }
            }
            for k in (MIN_PIECE..needle.len()).rev() {
                if let Some(p) = needle.get(needle.len() - k..)
                    && tail.starts_with(p)
                {
                    tail = format!("{MASK}{}", &tail[k..]);
                    break;
                }
            }
        }
        format!("{head}{marker}{tail}")
    }
}

/// base64 (standard and URL-safe, with and without padding, and the three shifted alignments
/// that appear when the secret sits inside a longer encoded string) and percent-encoding.
fn encoded_forms(secret: &str) -> Vec<String> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let bytes = secret.as_bytes();
    let mut forms = Vec::new();
    for engine in [&STANDARD, &URL_SAFE] {
        forms.push(engine.encode(bytes).trim_end_matches('=').to_string());
    }
    // Embedded in a longer base64 string: prefix 1 or 2 bytes and keep only the stable middle.
    for pad in 1..=2usize {
        let mut shifted = vec![0u8; pad];
        shifted.extend_from_slice(bytes);
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let enc = engine.encode(&shifted);
            // The first 4 chars mix in the prefix bytes; the last 3 may mix in what follows.
            forms.extend(enc.get(4..enc.len().saturating_sub(3)).map(str::to_string));
        }
    }
    // Percent-encoding: everything but alphanumerics, and RFC 3986 (unreserved `-._~` kept), in
    // upper- and lower-case hex.
    const UNRESERVED: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');
    for set in [percent_encoding::NON_ALPHANUMERIC, UNRESERVED] {
        let url = percent_encoding::utf8_percent_encode(secret, set).to_string();
        if url != secret {
            forms.push(lower_hex(&url));
            forms.push(url);
        }
    }
    forms
}

/// Forms a model (or a command it wrote) can turn a secret into with one line of code: escaped
/// for JSON once, twice or three times (a JSON file inside an event's arguments inside a report),
/// hex in either case, the whole value upper- or lower-cased, and reversed.
fn transformed_forms(secret: &str) -> Vec<String> {
    let mut forms = Vec::new();
    let mut escaped = secret.to_string();
    for _ in 0..3 {
        let next = serde_json::to_string(&escaped).unwrap_or_default();
        let next = next[1..next.len().saturating_sub(1).max(1)].to_string();
        if next == escaped {
            break;
        }
        forms.push(next.clone());
        escaped = next;
    }
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    forms.push(hex.to_ascii_uppercase());
    forms.push(hex);
    forms.push(secret.to_uppercase());
    forms.push(secret.to_lowercase());
    forms.push(secret.chars().rev().collect());
    forms
}

/// `%2F` -> `%2f`.
fn lower_hex(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '%' {
            out.extend(chars.by_ref().take(2).map(|h| h.to_ascii_lowercase()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
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
}
