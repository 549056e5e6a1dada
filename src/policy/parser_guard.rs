//! Command lines that brush's parser would panic on, found before it sees them (by fuzzing:
//! docs/fuzzing.md): each is refused as unanalysable instead.

/// Why the parser must not see `cmd`, if it must not.
pub fn refusal(cmd: &str) -> Option<String> {
    if let Some(fd) = oversized_fd(cmd) {
        return Some(format!("redirects file descriptor {fd}, which is out of range"));
    }
    if empty_heredoc_delimiter(cmd) {
        return Some("a here-document's delimiter is empty".into());
    }
    parens_too_deep(cmd).then(|| format!("nests parentheses more than {MAX_PARENS} deep"))
}

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

/// Whether a here-document's delimiter is an empty quoted word (`<<''`, `<<-""`): with nothing
/// after it on the line, the parser allocates without end; no real command has one.
pub fn empty_heredoc_delimiter(cmd: &str) -> bool {
    // Every `<` starts a candidate, so `<<<<""` (a here-string, then `<<""`) is seen too.
    cmd.match_indices('<').filter(|(i, _)| cmd[i + 1..].starts_with('<')).any(|(i, _)| {
        let rest = cmd[i + 2..].strip_prefix('-').unwrap_or(&cmd[i + 2..]);
        let rest = rest.trim_start_matches([' ', '\t']);
        rest.starts_with("''") || rest.starts_with("\"\"")
    })
}
