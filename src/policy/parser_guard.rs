//! Command lines that brush's parser would panic on, found before it sees them (by fuzzing:
//! docs/fuzzing.md): each is refused as unanalysable instead.

use super::shell_error::ShellError;
use std::cell::Cell;

/// Why the parser must not see `cmd`, if it must not.
pub fn refusal(cmd: &str) -> Option<ShellError> {
    if let Some(fd) = oversized_fd(cmd) {
        return Some(ShellError::FdOutOfRange(fd.to_string()));
    }
    if empty_heredoc_delimiter(cmd) {
        return Some(ShellError::EmptyDelimiter);
    }
    parens_too_deep(cmd).then_some(ShellError::ParensTooDeep(MAX_PARENS))
}

thread_local! {
    static PARSING: Cell<bool> = const { Cell::new(false) };
}

/// `parse` run so that a panic inside it (brush's parser has had several, each found by
/// fuzzing: the checks above refuse the known ones first) is a refusal, never a crash of hone.
/// While it runs, [`parsing`] is true, so hone's panic hook stays quiet about it.
pub fn contained<T>(parse: impl FnOnce() -> Result<T, ShellError>) -> Result<T, ShellError> {
    let was = PARSING.with(|p| p.replace(true));
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(parse));
    PARSING.with(|p| p.set(was));
    out.unwrap_or(Err(ShellError::ParserFailed))
}

/// Whether this thread is inside [`contained`]: a panic here is the parser's, and is refused.
pub fn parsing() -> bool {
    PARSING.with(Cell::get)
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

/// Whether `(` nest deeper than [`MAX_PARENS`] anywhere in `cmd`, or more than [`MAX_UNCLOSED`]
/// `(` and `{` are left open at its end, quoted or not (counting quoted ones too refuses a little more than
/// needed, never less).
pub fn parens_too_deep(cmd: &str) -> bool {
    let (mut depth, mut braces) = (0usize, 0usize);
    for c in cmd.bytes() {
        match c {
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b'{' => braces += 1,
            b'}' => braces = braces.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_PARENS {
            return true;
        }
    }
    depth + braces > MAX_UNCLOSED
}

/// The most `(` and `{` a command line may leave unclosed, together (six `$(` and six `${`
/// left open took the parser 14 s). A real one closes every substitution and
/// arithmetic expression it opens; an unclosed `(` is a quoted character (`grep -E "f("`), rarely
/// more than one or two. Left unclosed inside quotes and here-documents, the parser's backtracking
/// grows with each: 11 of them took it 19 s (found by the shell fuzz target).
pub const MAX_UNCLOSED: usize = 6;

/// Whether a here-document's delimiter is an empty quoted word (`<<''`, `<<-""`), or missing
/// (`<<` and blanks at the end of a line or of the text: `$(<<  `): the parser allocates without
/// end on them; no real command has one (bash calls the missing one a syntax error).
pub fn empty_heredoc_delimiter(cmd: &str) -> bool {
    // Every `<` starts a candidate, so `<<<<""` (a here-string, then `<<""`) is seen too.
    cmd.match_indices('<').filter(|(i, _)| cmd[i + 1..].starts_with('<')).any(|(i, _)| {
        let rest = cmd[i + 2..].strip_prefix('-').unwrap_or(&cmd[i + 2..]);
        let rest = rest.trim_start_matches([' ', '\t']);
        rest.starts_with("''") || rest.starts_with("\"\"") || rest.is_empty() || rest.starts_with(['\n', '\r'])
    })
}
