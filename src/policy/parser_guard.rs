//! Command lines that brush's parser would panic on, found before it sees them (by fuzzing:
//! docs/fuzzing.md): each is refused as unanalysable instead.

/// A redirection's file descriptor (digits right before `<` or `>`) that does not fit the
/// parser's `i32`: the parser unwraps its parse. Digits inside a longer word or quoted are
/// matched too, which refuses a little more than needed, never less.
pub fn oversized_fd(cmd: &str) -> Option<&str> {
    let b = cmd.as_bytes();
    let mut start = 0;
    for (i, c) in b.iter().enumerate() {
        if !c.is_ascii_digit() {
            // ASCII digits only: never a cut through a character.
            let digits = std::str::from_utf8(&b[start..i]).unwrap_or_default();
            if matches!(c, b'<' | b'>') && !digits.is_empty() && digits.parse::<i32>().is_err() {
                return Some(digits);
            }
            start = i + 1;
        }
    }
    None
}

/// The deepest nesting of parentheses a command line may have: the parser's time doubles with
/// each level left open (20 take 0.2 s, 24 seconds, 31 minutes). Above the analysis's own limit
/// (`shell::MAX_DEPTH` substitutions, an arithmetic `((…))` in the deepest), which says why.
pub const MAX_PARENS: usize = 20;

/// Whether `(` nest deeper than [`MAX_PARENS`] anywhere in `cmd`, quoted or not (counting
/// quoted ones too refuses a little more than needed, never less).
pub fn parens_too_deep(cmd: &str) -> bool {
    let mut depth = 0usize;
    for c in cmd.bytes() {
        match c {
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_PARENS {
            return true;
        }
    }
    false
}
