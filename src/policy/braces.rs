//! Bash brace expansion of a static word (`{a,b}c` -> `ac bc`, `x{1..3}` -> `x1 x2 x3`), so that
//! the words checked are the words bash would run: `{curl,-s,x}` is `curl -s x`. Pure.

/// Results past this many are refused rather than expanded.
pub const MAX_WORDS: usize = 256;

/// Whether `s` has something bash would brace-expand.
pub fn has_braces(s: &str) -> bool {
    expand(s).is_some_and(|v| v.len() != 1 || v[0] != s)
}

/// The words `s` expands to (`None` when the expansion would be too large).
pub fn expand(s: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    expand_into(s, &mut out)?;
    Some(out)
}

fn expand_into(s: &str, out: &mut Vec<String>) -> Option<()> {
    let Some((open, close, parts)) = first_group(s) else {
        out.push(s.to_string());
        return Some(());
    };
    let (pre, post) = (&s[..open], &s[close + 1..]);
    for p in parts {
        expand_into(&format!("{pre}{p}{post}"), out)?;
        if out.len() > MAX_WORDS {
            return None;
        }
    }
    Some(())
}

/// The first `{…}` that expands: its byte range and its alternatives.
fn first_group(s: &str) -> Option<(usize, usize, Vec<String>)> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == b'{'
            && !(i > 0 && b[i - 1] == b'$')
            && let Some((close, parts)) = group_at(s, i)
        {
            return Some((i, close, parts));
        }
        i += 1;
    }
    None
}

/// The group opening at `open`: alternatives split on top-level commas, or a sequence.
fn group_at(s: &str, open: usize) -> Option<(usize, Vec<String>)> {
    let b = s.as_bytes();
    let (mut depth, mut start, mut parts) = (0usize, open + 1, Vec::new());
    let mut i = open + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'{' => depth += 1,
            b'}' if depth > 0 => depth -= 1,
            b'}' => {
                parts.push(s[start..i].to_string());
                if parts.len() > 1 {
                    return Some((i, parts));
                }
                return sequence(&s[open + 1..i]).map(|seq| (i, seq));
            }
            b',' if depth == 0 => {
                parts.push(s[start..i].to_string());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `1..3`, `a..c`, `10..1..3`: the words of a sequence expression.
fn sequence(body: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = body.split("..").collect();
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let step: i64 = parts.get(2).map_or(Some(1i64), |p| p.parse::<i64>().ok())?.abs().max(1);
    if let (Ok(a), Ok(z)) = (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
        let n = (a - z).unsigned_abs() / step as u64 + 1;
        if n > MAX_WORDS as u64 {
            return Some(vec![String::new(); MAX_WORDS + 1]);
        }
        let dir = if z >= a { 1 } else { -1 };
        return Some((0..n as i64).map(|k| (a + dir * k * step).to_string()).collect());
    }
    let (a, z) = (parts[0].chars().collect::<Vec<_>>(), parts[1].chars().collect::<Vec<_>>());
    if a.len() == 1 && z.len() == 1 && a[0].is_ascii_alphabetic() && z[0].is_ascii_alphabetic() {
        let (a, z) = (a[0] as i64, z[0] as i64);
        let dir = if z >= a { 1 } else { -1 };
        let n = (a - z).abs() / step + 1;
        return Some((0..n).filter_map(|k| char::from_u32((a + dir * k * step) as u32)).map(String::from).collect());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_like_bash() {
        let e = |s: &str| expand(s).unwrap();
        assert_eq!(e("{curl,-s,x}"), ["curl", "-s", "x"]);
        assert_eq!(e("git {-c,alias.x=!id}"), ["git -c", "git alias.x=!id"]);
        assert_eq!(e("src/{a,b}.py"), ["src/a.py", "src/b.py"]);
        assert_eq!(e("f{,.bak}"), ["f", "f.bak"]);
        assert_eq!(e("x{1..3}"), ["x1", "x2", "x3"]);
        assert_eq!(e("{a..c}"), ["a", "b", "c"]);
        assert_eq!(e("{a,{b,c}}d"), ["ad", "bd", "cd"]);
        assert_eq!(e("{x}"), ["{x}"], "one alternative is not an expansion");
        assert_eq!(e("${HOME}"), ["${HOME}"]);
        assert!(!has_braces("plain") && !has_braces("{}") && has_braces("c{u,}rl"));
        assert!(expand("{1..100000}").is_none(), "huge expansions are refused");
    }
}
