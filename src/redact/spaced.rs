//! A secret spelled out: its characters in order with the same separator between each two
//! (`s k - t e s t`, `s.k.-.t`, `s, k, -`, `['s', 'k', '-'`, `["s","k","-"`, one per line), the
//! form one line of code (`' '.join(token)`, `sed 's/./& /g'`) turns it into. A separator is one
//! to `MAX_SEP` bytes, the same throughout, so ordinary text does not match by chance: a match
//! needs every character of the secret at a fixed stride. Linear in the text for a secret whose
//! first character is rare in it; at worst `MAX_SEP` times the secret's length per byte.

/// The longest separator recognized between two characters (`', '` is four).
pub const MAX_SEP: usize = 4;

/// Where `secret` (ASCII, two characters or more) is spelled out in `text`: the byte ranges.
pub fn find(text: &[u8], secret: &[u8]) -> Vec<std::ops::Range<usize>> {
    let n = secret.len();
    let mut found = Vec::new();
    let (Some(&first), true) = (secret.first(), n >= 2) else { return found };
    let mut from = 0;
    while let Some(off) = memchr::memchr(first, &text[from..]) {
        let start = from + off;
        let end = (1..=MAX_SEP).filter(|k| text.get(start + 1 + k) == Some(&secret[1])).find_map(|k| {
            let end = start + (n - 1) * (k + 1) + 1;
            let sep = text.get(start + 1..start + 1 + k)?;
            let spelled = end <= text.len()
                && (1..n).all(|j| {
                    let at = start + j * (k + 1);
                    text[at] == secret[j] && &text[at - k..at] == sep
                });
            spelled.then_some(end)
        });
        match end {
            Some(end) => {
                found.push(start..end);
                from = end;
            }
            None => from = start + 1,
        }
    }
    found
}

/// `text` with every spelled-out `secret` replaced by `mask`. The ranges start and end at ASCII
/// bytes (the secret's), so they are character boundaries.
pub fn mask(text: &str, secret: &[u8], mask: &str) -> String {
    let found = find(text.as_bytes(), secret);
    if found.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for r in found {
        out.push_str(&text[last..r.start]);
        out.push_str(mask);
        last = r.end;
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "sk-test-Zq81x0RaW4";

    fn spell(sep: &str) -> String {
        SECRET.chars().map(String::from).collect::<Vec<_>>().join(sep)
    }

    #[test]
    fn a_secret_spelled_out_with_any_short_separator_is_masked_whole() {
        for sep in [" ", "-", ".", "\n", "\t", ", ", "', '", "\",\"", "\\n", "·"] {
            let text = format!("before {} after", spell(sep));
            let out = mask(&text, SECRET.as_bytes(), "[M]");
            assert_eq!(out, "before [M] after", "separator {sep:?}");
        }
        // Python's list of the characters, and JSON's.
        let list = format!("{:?}", SECRET.chars().map(String::from).collect::<Vec<_>>());
        assert_eq!(mask(&list, SECRET.as_bytes(), "[M]"), "[\"[M]\"]");
        let json = serde_json::to_string(&SECRET.chars().map(String::from).collect::<Vec<_>>()).unwrap();
        assert_eq!(mask(&json, SECRET.as_bytes(), "[M]"), "[\"[M]\"]");
        let twice = format!("{} and {}", spell(" "), spell("."));
        assert_eq!(mask(&twice, SECRET.as_bytes(), "[M]"), "[M] and [M]");
    }

    #[test]
    fn ordinary_text_and_near_misses_are_left_alone() {
        let prose = "skip the test: s k - t e s t is what a spaced prefix looks like, and so is s.k.";
        assert_eq!(mask(prose, SECRET.as_bytes(), "[M]"), prose);
        for near in [
            spell("     "),                                 // a separator longer than MAX_SEP
            spell(" ").replacen(' ', "  ", 1),              // separators that differ
            spell(" ")[..spell(" ").len() - 2].to_string(), // the last character missing
            spell(" ").replace('W', "w"),                   // one character changed
        ] {
            assert_eq!(mask(&near, SECRET.as_bytes(), "[M]"), near, "{near:?}");
        }
        assert!(find(b"", SECRET.as_bytes()).is_empty() && find(b"abc", b"a").is_empty());
    }

    #[test]
    fn the_worst_case_is_bounded_and_still_exact() {
        // Every byte starts a candidate, and each fails only at the secret's last character.
        let secret = b"aaaaaaaaaaaaaaab";
        let text = "a".repeat(20_000);
        assert!(find(text.as_bytes(), secret).is_empty());
        let hit = format!("{}{}", text, "a-a-a-a-a-a-a-a-a-a-a-a-a-a-a-b");
        assert_eq!(find(hit.as_bytes(), secret), vec![std::ops::Range { start: 20_000, end: 20_031 }]);
    }
}
