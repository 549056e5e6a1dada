//! Secret redaction: every value registered here, and its other forms (base64, URL-encoded,
//! JSON-escaped at any depth, hex, upper- and lower-case, reversed, spelled out with a separator
//! between its characters), is replaced by `[REDACTED]` before text reaches any sink: logs,
//! events, reports, tool results, commit messages. The diff guard uses the same forms to refuse a
//! change that carries a secret.

use std::sync::{Arc, RwLock};

pub mod extract;
pub mod found;
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
    /// One automaton over every needle, made by the first `apply` after an `add`: masking costs
    /// one pass over the text however many secrets a long process (a fleet with a GitHub App
    /// token per repository) has registered.
    matcher: Arc<RwLock<Option<Arc<aho_corasick::AhoCorasick>>>>,
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
        if let Ok(mut m) = self.matcher.write() {
            *m = None;
        }
    }

    /// The automaton over every needle (made now if an `add` came since the last), or `None`
    /// when there is none (or it cannot be made: then `apply` goes needle by needle).
    /// `needles`: the needles, read under their lock by the caller.
    fn matcher(&self, needles: &[String]) -> Option<Arc<aho_corasick::AhoCorasick>> {
        if let Some(m) = self.matcher.read().ok()?.as_ref() {
            return Some(m.clone());
        }
        let made = Arc::new(aho_corasick::AhoCorasick::new(needles).ok()?);
        if let Ok(mut m) = self.matcher.write() {
            *m = Some(made.clone());
        }
        Some(made)
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
        let mut out = match (n.is_empty(), self.matcher(&n)) {
            (true, _) => text.to_string(),
            (false, Some(ac)) => mask_all(&ac, text),
            (false, None) => n.iter().fold(text.to_string(), |out, needle| out.replace(needle.as_str(), MASK)),
        };
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
        let Ok(needles) = self.needles.read() else { return true };
        if needles.is_empty() {
            return false;
        }
        let Some(ac) = self.matcher(&needles) else { return true };
        if ac.is_match(bytes) {
            return true;
        }
        bytes.contains(&0) && ac.is_match(&bytes.iter().copied().filter(|b| *b != 0).collect::<Vec<u8>>())
    }
}

/// `text` with every byte that any needle's occurrence covers masked: overlapping occurrences
/// (of one needle or of several) become one `MASK`.
fn mask_all(ac: &aho_corasick::AhoCorasick, text: &str) -> String {
    let mut spans: Vec<(usize, usize)> = ac.find_overlapping_iter(text).map(|m| (m.start(), m.end())).collect();
    if spans.is_empty() {
        return text.to_string();
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let (mut at, mut i) = (0, 0);
    while i < spans.len() {
        let (start, mut end) = spans[i];
        while i + 1 < spans.len() && spans[i + 1].0 < end {
            i += 1;
            end = end.max(spans[i].1);
        }
        // A needle is whole UTF-8, so each span starts and ends at a character boundary.
        out.push_str(text.get(at..start).unwrap_or_default());
        out.push_str(MASK);
        (at, i) = (end, i + 1);
    }
    out.push_str(text.get(at..).unwrap_or_default());
    out
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
/// hex in either case, the whole value upper- or lower-cased, reversed, and rot13'd.
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
    forms.push(secret.chars().map(rot13).collect());
    forms
}

/// `c` rotated 13 places in the Latin alphabet (anything else as it is).
fn rot13(c: char) -> char {
    match c {
        'a'..='m' | 'A'..='M' => char::from(c as u8 + 13),
        'n'..='z' | 'N'..='Z' => char::from(c as u8 - 13),
        _ => c,
    }
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
#[path = "redact_tests.rs"]
mod tests;
