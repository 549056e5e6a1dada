//! A located problem in a file hone reads (a job spec, a policy, a fleet file): `file:line:col`,
//! the key path, the source line with a caret, and what to do. Rendered only at the edge.

use std::fmt::Write as _;

/// One problem found in a spec or policy file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
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
    #[schemars(skip)]
    pub source_line: Option<String>,
    /// How many characters the caret underlines.
    #[serde(skip)]
    #[schemars(skip)]
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

    /// `file:line:col`, or the file alone when the problem is the whole file (line 0).
    pub fn place(&self) -> String {
        if self.line == 0 { self.file.clone() } else { format!("{}:{}:{}", self.file, self.line, self.col) }
    }

    /// The problem on one line, without a code: `file:line:col at `key`: message`.
    pub fn summary(&self) -> String {
        let at = if self.path.is_empty() { String::new() } else { format!(" at `{}`", self.path) };
        format!("{}{at}: {}", self.place(), self.message)
    }

    /// A problem with a whole file (no line in it): rendered as `file: error[CODE]: message`.
    pub fn file(file: &str, message: impl Into<String>, help: impl Into<String>) -> Self {
        Diagnostic {
            file: file.to_string(),
            line: 0,
            col: 0,
            path: String::new(),
            message: message.into(),
            help: Some(help.into()),
            source_line: None,
            width: 0,
        }
    }

    /// Render in the style of compilers: location, message, source line, caret, help.
    pub fn render(&self, code: &str) -> String {
        let mut out = String::new();
        let at = if self.path.is_empty() { String::new() } else { format!(" at `{}`", self.path) };
        let _ = writeln!(out, "{}: error[{code}]{at}: {}", self.place(), self.message);
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
