//! Text hone prints where a CI runner reads commands: every line neutral for the GitHub Actions
//! runner, and hone's own workflow commands built with the runner's escapes.
//!
//! What the runner does (actions/runner): `src/Runner.Sdk/ProcessInvoker.cs` reads a step's stdout
//! and stderr a line at a time with `StreamReader.ReadLine`, so a line ends at LF, CR or CRLF.
//! `src/Runner.Worker/ActionCommandManager.cs` (`TryProcessCommand`) hands each line to
//! `ActionCommand.TryParseV2`, then to `ActionCommand.TryParse` (`src/Runner.Common/ActionCommand.cs`):
//! - V2: `message.TrimStart()` (leading white space), then `StartsWith("::")`: `::name props::data`;
//! - V1: `message.IndexOf("##[")` anywhere in the line: `##[name props]data`.
//!
//! Both compare with the current culture (no `StringComparison.Ordinal`), which skips ignorable code
//! points: `"#\u{200B}#["` is found as `"##["`. After `::stop-commands::TOKEN` every command is
//! ignored until `::TOKEN::`, so one forged line silences hone's own annotations.
//!
//! A line is therefore neutral when it holds no line end, control, format or other ignorable
//! character (each is shown as a visible escape, `\r`, `\u{200b}`), no `##[` (shown `##\[`), and does
//! not start with `::` after its white space (it gets a leading `\`). Every line hone prints goes
//! through [`lines`] (the crate's `println!`/`eprintln!` in `lib.rs`, progress, logs) or is a [`Command`] built
//! here; the `--json` stream goes through [`json`].

use std::io::Write;

/// Characters that must not reach the runner raw: they end a line, or the culture-aware
/// comparison may skip them (controls, format characters, default-ignorable code points).
pub fn must_escape(c: char) -> bool {
    if c == '\t' {
        return false;
    }
    c.is_control()
        || matches!(c as u32,
            0x00AD | 0x034F | 0x061C | 0x0600..=0x0605 | 0x06DD | 0x070F | 0x0890..=0x0891 | 0x08E2
            | 0x115F..=0x1160 | 0x17B4..=0x17B5 | 0x180B..=0x180F | 0x200B..=0x200F | 0x2028..=0x202E
            | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0 | 0xFFF0..=0xFFFB
            | 0x110BD | 0x110CD | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF)
}

/// `c` as a visible escape when it must not be printed raw (`\r`, `\n`, `\u{200b}`).
fn push_visible(out: &mut String, c: char) {
    if must_escape(c) {
        out.extend(c.escape_default());
    } else {
        out.push(c);
    }
}

/// `##[` wherever it is, broken so that `IndexOf("##[")` cannot find it.
fn break_v1(s: String) -> String {
    if s.contains("##[") { s.replace("##[", "##\\[") } else { s }
}

/// One line of text, neutral for the runner whatever it holds: a line end in it is a visible
/// escape, not a new line.
pub fn line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_visible(&mut out, c);
    }
    let out = break_v1(out);
    // After the escapes the only leading white space left is what `TrimStart` trims too.
    if out.trim_start().starts_with("::") {
        let at = out.len() - out.trim_start().len();
        return format!("{}\\{}", &out[..at], &out[at..]);
    }
    out
}

/// Text of several lines (hone's own message around untrusted parts): each LF-separated line made
/// neutral with [`line`], so no part of it, wherever it stands, can be a command.
pub fn lines(text: &str) -> String {
    text.split('\n').map(line).collect::<Vec<_>>().join("\n")
}

/// One line of compact JSON, neutral for the runner and still the same JSON: every character
/// [`must_escape`] names becomes a `\uXXXX` escape and `##[` becomes `\u0023#[` (such characters
/// occur only inside strings, where these escapes decode to the same text).
pub fn json(compact: &str) -> String {
    let mut out = String::with_capacity(compact.len());
    for c in compact.chars() {
        if must_escape(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    if out.contains("##[") { out.replace("##[", "\\u0023#[") } else { out }
}

/// Data of a workflow command, with the runner's escapes (`%`, CR, LF), then made neutral.
fn data(s: &str) -> String {
    line(&s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A"))
}

/// A property value: data, with `:` and `,` escaped as well (they end a property).
fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

/// A workflow command hone means to give the runner. Only these constructors make one, and each
/// escapes what it is given, so untrusted text inside a command stays its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command(String);

impl Command {
    /// `::group::TITLE`: a collapsible section of the log.
    pub fn group(title: &str) -> Command {
        Command(format!("::group::{}", data(title)))
    }

    pub fn endgroup() -> Command {
        Command("::endgroup::".into())
    }

    /// `::error k=v,…::MESSAGE`: an annotation; `props` are `file`, `line`, `title` and the like.
    pub fn error(props: &[(&str, &str)], message: &str) -> Command {
        let props: Vec<String> = props.iter().map(|(k, v)| format!("{k}={}", property(v))).collect();
        Command(format!("::error {}::{}", props.join(","), data(message)))
    }

    /// `::add-mask::VALUE`: the runner masks `value` in the log from now on. The value is given
    /// exactly (only the runner's own escapes), or the mask would not match it.
    pub fn add_mask(value: &str) -> Command {
        Command(format!("::add-mask::{}", value.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A stream the runner reads (stdout or stderr): it takes neutral lines, hone's commands and JSON
/// lines, and nothing else.
pub struct Out {
    w: Box<dyn Write + Send>,
}

impl Out {
    pub fn new(w: Box<dyn Write + Send>) -> Self {
        Out { w }
    }

    #[allow(clippy::disallowed_methods)] // the one place stdout is opened for lines
    pub fn stdout() -> Self {
        Self::new(Box::new(std::io::stdout()))
    }

    #[allow(clippy::disallowed_methods)] // the one place stderr is opened for lines
    pub fn stderr() -> Self {
        Self::new(Box::new(std::io::stderr()))
    }

    /// stdout as a plain writer, for the `--json` stream: `Events` wraps it in an `Out` and
    /// writes it with [`Out::json`].
    #[allow(clippy::disallowed_methods)]
    pub fn json_stdout() -> Box<dyn Write + Send> {
        Box::new(std::io::stdout())
    }

    /// One write per line, so that concurrent runs (a fleet) never interleave mid-line.
    fn put(&mut self, text: &str) -> std::io::Result<()> {
        self.w.write_all(format!("{text}\n").as_bytes()).and_then(|()| self.w.flush())
    }

    /// Text for people, made neutral line by line.
    pub fn text(&mut self, text: &str) -> std::io::Result<()> {
        self.put(&lines(text))
    }

    pub fn command(&mut self, c: &Command) -> std::io::Result<()> {
        self.put(c.as_str())
    }

    /// One compact JSON value as a line of the `--json` stream.
    pub fn json(&mut self, compact: &str) -> std::io::Result<()> {
        self.put(&json(compact))
    }
}

#[cfg(test)]
#[path = "ci_text_tests.rs"]
mod tests;
