//! Helpers that locate a YAML input file's problems: the source line, the token's width under
//! the caret, the nearest key to a misspelt one. The diagnostic itself is `crate::diag`.

pub use crate::diag::Diagnostic;

/// Text of line `line` (1-based) of `text`, without its newline and without CR.
pub fn line_of(text: &str, line: u64) -> Option<String> {
    let idx = usize::try_from(line).ok()?.checked_sub(1)?;
    text.lines().nth(idx).map(|l| l.trim_end_matches('\r').to_string())
}

/// Width of the token that starts at `col` (1-based, in characters) on `src`.
pub fn token_width(src: &str, col: u64, is_key: bool) -> usize {
    let start = col.saturating_sub(1) as usize;
    let rest: String = src.chars().skip(start).collect();
    let mut chars = rest.chars();
    match chars.next() {
        Some(q @ ('"' | '\'')) => chars.position(|c| c == q).map_or(rest.chars().count(), |p| p + 2),
        Some(_) => {
            let w = rest.chars().take_while(|c| !(matches!(c, ',' | '}' | ']' | '#') || is_key && *c == ':')).count();
            let token: String = rest.chars().take(w).collect();
            token.trim_end().chars().count().max(1)
        }
        None => 1,
    }
}

/// The candidate closest to `word`, if it is close enough to be a likely typo.
pub fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(word, c), *c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_nearest_key() {
        let keys = ["max_turns", "max_wall_time", "max_tokens", "max_fix_attempts"];
        assert_eq!(did_you_mean("max_turn", &keys), Some("max_turns"));
        assert_eq!(did_you_mean("max_token", &keys), Some("max_tokens"));
        assert_eq!(did_you_mean("banana", &keys), None);
    }

    #[test]
    fn token_width_stops_at_flow_delimiters() {
        assert_eq!(token_width("limits: { max_turn: 40 }", 11, true), 8);
        assert_eq!(token_width("limits: { max_turn: 40 }", 21, false), 2);
        assert_eq!(token_width("x: \"a b\" # c", 4, false), 5);
        assert_eq!(token_width("x: 5 minutes # c", 4, false), 9);
    }

    #[test]
    fn renders_caret_under_column() {
        let d = Diagnostic {
            file: "job.yaml".into(),
            line: 2,
            col: 3,
            path: "a.b".into(),
            message: "bad".into(),
            help: Some("fix it".into()),
            source_line: Some("  b: 1".into()),
            width: 1,
        };
        let r = d.render("E_SPEC");
        assert!(r.starts_with("job.yaml:2:3: error[E_SPEC] at `a.b`: bad\n"), "{r}");
        assert!(r.contains(" 2 |   b: 1\n   |   ^\n"), "{r}");
        assert!(r.contains("= help: fix it"));
    }
}
