//! Diagnostics for YAML input files: `file:line:col`, key path, source line with a caret, and help.

use std::fmt::Write as _;

/// One problem found in a spec or policy file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    pub file: String,
    pub line: u64,
    pub col: u64,
    /// The key path, like `verify[1].timeout`; empty for the whole document.
    pub path: String,
    pub message: String,
    pub help: Option<String>,
    /// The source line the position points into (for rendering).
    #[serde(skip)]
    pub source_line: Option<String>,
    /// How many characters the caret underlines.
    #[serde(skip)]
    pub width: usize,
}

impl Diagnostic {
    /// A file that cannot be read at all: positioned at 1:1, with `help` saying where it is looked for.
    pub fn unreadable(file: &str, what: &str, err: &std::io::Error, help: &str) -> Self {
        Diagnostic {
            file: file.to_string(),
            line: 1,
            col: 1,
            path: String::new(),
            message: format!("cannot read the {what}: {err}"),
            help: Some(help.to_string()),
            source_line: None,
            width: 1,
        }
    }

    /// Render in the style of compilers: location, message, source line, caret, help.
    pub fn render(&self, code: &str) -> String {
        let mut out = String::new();
        let at = if self.path.is_empty() { String::new() } else { format!(" at `{}`", self.path) };
        let _ = writeln!(out, "{}:{}:{}: error[{code}]{at}: {}", self.file, self.line, self.col, self.message);
        if let Some(src) = &self.source_line {
            let num = self.line.to_string();
            let pad = " ".repeat(num.len());
            let _ = writeln!(out, " {pad} |");
            let _ = writeln!(out, " {num} | {src}");
            let lead: String = src
                .chars()
                .take(self.col.saturating_sub(1) as usize)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            let _ = writeln!(out, " {pad} | {lead}{}", "^".repeat(self.width.max(1)));
        }
        if let Some(h) = &self.help {
            let _ = writeln!(out, "  = help: {h}");
        }
        out
    }
}

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
