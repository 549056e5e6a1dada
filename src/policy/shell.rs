//! Shell analysis: parse a command line with a real bash parser (brush-parser) and list every
//! simple command it would run: through pipelines, lists, subshells, `$(…)`, backticks, process
//! substitution, heredocs, assignments, redirect targets, and recursively through `bash -c`
//! strings and command runners (`env`, `timeout`, `xargs`, `find -exec`, …). What cannot be
//! analysed is refused with a `ShellError`, which says why. Pure: no I/O.

use super::shell_error::ShellError;
use super::wrappers;
use brush_parser::ast::{
    self, Command, CommandPrefixOrSuffixItem as Item, CompoundCommand, IoFileRedirectKind, IoRedirect,
};
use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::{Parser, ParserOptions};

/// One simple command, with its words as the shell would see them when they are static.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCmd {
    /// The words; a word with expansions keeps its source text (e.g. `$HOME/x`).
    pub argv: Vec<String>,
    /// Per word: whether it contains expansions (its value is only known at run time).
    pub dynamic: Vec<bool>,
    /// Static targets of output redirections (`> f`, `>> f`, `<> f`).
    pub writes: Vec<String>,
    /// Static targets of input redirections (`< f`).
    pub reads: Vec<String>,
}

impl SimpleCmd {
    pub fn text(&self) -> String {
        self.argv.join(" ")
    }
}

pub const MAX_DEPTH: usize = 16;

/// Variables that change which program runs or what the shell does before it runs.
const DANGEROUS_VARS: &[&str] = &[
    "PATH",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "IFS",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PAGER",
    "GIT_PAGER",
    "EDITOR",
    "VISUAL",
    "GIT_EDITOR",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_EXEC_PATH",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_PROXY_COMMAND",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
    "GIT_DIR",
    "GIT_WORK_TREE",
];

pub fn is_dangerous_var(name: &str) -> bool {
    DANGEROUS_VARS.contains(&name) || name.starts_with("GIT_CONFIG_KEY_") || name.starts_with("GIT_CONFIG_VALUE_")
}

/// Characters that make text look like something it is not: CR and other controls, zero-width
/// and bidirectional-override characters.
fn deceptive_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}' | '\u{00AD}')
}

/// Every simple command `cmd` would run, or the reason it cannot be analysed.
pub fn analyse(cmd: &str) -> Result<Vec<SimpleCmd>, ShellError> {
    let mut out = Vec::new();
    analyse_into(cmd, 0, &mut out)?;
    Ok(out)
}

pub(crate) fn analyse_into(cmd: &str, depth: usize, out: &mut Vec<SimpleCmd>) -> Result<(), ShellError> {
    if depth > MAX_DEPTH {
        return Err(ShellError::TooDeep(MAX_DEPTH));
    }
    if let Some(c) = cmd.chars().find(|c| deceptive_char(*c)) {
        return Err(ShellError::Deceptive(c));
    }
    if let Some(why) = super::parser_guard::refusal(cmd) {
        return Err(why);
    }
    let program = super::parser_guard::contained(|| {
        let opts = ParserOptions::default();
        let mut parser = Parser::new(std::io::Cursor::new(cmd.as_bytes()), &opts);
        parser.parse_program().map_err(|e| ShellError::Syntax(e.to_string()))
    })?;
    let mut w = Walker { depth, out };
    for list in &program.complete_commands {
        w.list(list)?;
    }
    Ok(())
}

struct Walker<'a> {
    depth: usize,
    out: &'a mut Vec<SimpleCmd>,
}

impl Walker<'_> {
    fn list(&mut self, l: &ast::CompoundList) -> Result<(), ShellError> {
        for ast::CompoundListItem(and_or, _) in &l.0 {
            self.pipeline(&and_or.first)?;
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p)?,
                }
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, p: &ast::Pipeline) -> Result<(), ShellError> {
        p.seq.iter().try_for_each(|c| self.command(c))
    }

    fn command(&mut self, c: &Command) -> Result<(), ShellError> {
        match c {
            Command::Simple(s) => self.simple(s),
            Command::Compound(cc, redirects) => {
                self.compound(cc)?;
                redirects.iter().flat_map(|r| r.0.iter()).try_for_each(|r| self.redirect(r, &mut None))
            }
            Command::Function(f) => {
                self.compound(&f.body.0)?;
                f.body.1.iter().flat_map(|r| r.0.iter()).try_for_each(|r| self.redirect(r, &mut None))
            }
            Command::ExtendedTest(t, redirects) => {
                no_substitution(&t.to_string(), "a [[ ]] test")?;
                redirects.iter().flat_map(|r| r.0.iter()).try_for_each(|r| self.redirect(r, &mut None))
            }
        }
    }

    fn compound(&mut self, c: &CompoundCommand) -> Result<(), ShellError> {
        match c {
            CompoundCommand::Arithmetic(a) => {
                no_substitution(&c.to_string(), "an arithmetic command")?;
                // `((cmd x))` is arithmetic to bash but nested subshells to sh/dash, and so is
                // `(((cmd x)))`: when the body, parentheses aside, reads like a command, it must
                // also pass as one (a body that does not parse as commands is refused).
                let body = a.expr.value.as_str();
                if looks_like_command(&body.replace(['(', ')'], " ")) {
                    analyse_into(body, self.depth + 1, self.out)
                } else {
                    Ok(())
                }
            }
            CompoundCommand::ArithmeticForClause(_) => no_substitution(&c.to_string(), "an arithmetic command"),
            CompoundCommand::BraceGroup(b) => self.list(&b.list),
            CompoundCommand::Subshell(s) => self.list(&s.list),
            CompoundCommand::ForClause(f) => {
                for v in f.values.iter().flatten() {
                    self.word(&v.value)?;
                }
                self.list(&f.body.list)
            }
            CompoundCommand::CaseClause(cc) => {
                self.word(&cc.value.value)?;
                for item in &cc.cases {
                    for p in &item.patterns {
                        self.word(&p.value)?;
                    }
                    if let Some(l) = &item.cmd {
                        self.list(l)?;
                    }
                }
                Ok(())
            }
            CompoundCommand::IfClause(i) => {
                self.list(&i.condition)?;
                self.list(&i.then)?;
                for e in i.elses.iter().flatten() {
                    if let Some(cond) = &e.condition {
                        self.list(cond)?;
                    }
                    self.list(&e.body)?;
                }
                Ok(())
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.list(&w.0)?;
                self.list(&w.1.list)
            }
            CompoundCommand::Coprocess(c) => self.command(&c.body),
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand) -> Result<(), ShellError> {
        let mut cmd = SimpleCmd { argv: vec![], dynamic: vec![], writes: vec![], reads: vec![] };
        let prefix = s.prefix.iter().flat_map(|p| p.0.iter()).map(|i| (i, true));
        let items: Vec<(&Item, bool)> =
            prefix.chain(s.suffix.iter().flat_map(|p| p.0.iter()).map(|i| (i, false))).collect();
        let mut words: Vec<(String, bool)> = Vec::new();
        if let Some(name) = &s.word_or_name {
            words.extend(self.words(&name.value)?);
        }
        for (item, in_prefix) in items {
            match item {
                Item::IoRedirect(r) => {
                    let mut target = Some(&mut cmd);
                    self.redirect(r, &mut target)?;
                }
                Item::Word(w) => words.extend(self.words(&w.value)?),
                Item::AssignmentWord(a, _) if in_prefix => self.assignment(a)?,
                // After the command name, `x=1` is an argument (`awk -v x=1 …`, `make CC=cc`,
                // `export X=1`), which the parser still marks as an assignment: it stays in
                // argv, so that what follows it is read in its place. A name that changes what
                // runs (`export LD_PRELOAD=…`) is refused as in the prefix.
                Item::AssignmentWord(a, w) => {
                    assignment_name_allowed(a)?;
                    words.extend(self.words(&w.value)?);
                }
                Item::ProcessSubstitution(_, sub) => self.list(&sub.list)?,
            }
        }
        if words.is_empty() {
            return Ok(()); // only assignments and redirections
        }
        let (name, dynamic_name) = &words[0];
        if *dynamic_name || name.contains(['*', '?', '[']) {
            return Err(ShellError::DynamicName(name.clone()));
        }
        if !name.is_ascii() {
            return Err(ShellError::NonAsciiName(name.clone()));
        }
        cmd.argv = words.iter().map(|(w, _)| w.clone()).collect();
        cmd.dynamic = words.iter().map(|(_, d)| *d).collect();
        wrappers::unwrap(&mut cmd, self.depth, self.out)?;
        self.out.push(cmd);
        Ok(())
    }

    fn assignment(&mut self, a: &ast::Assignment) -> Result<(), ShellError> {
        assignment_name_allowed(a)?;
        match &a.value {
            ast::AssignmentValue::Scalar(w) => self.word(&w.value).map(|_| ()),
            ast::AssignmentValue::Array(items) => items.iter().try_for_each(|(k, v)| {
                if let Some(k) = k {
                    self.word(&k.value)?;
                }
                self.word(&v.value).map(|_| ())
            }),
        }
    }

    fn redirect(&mut self, r: &IoRedirect, target: &mut Option<&mut SimpleCmd>) -> Result<(), ShellError> {
        match r {
            IoRedirect::File(_, kind, t) => match t {
                ast::IoFileRedirectTarget::Filename(w) => {
                    let (path, dynamic) = self.word(&w.value)?;
                    if let Some(cmd) = target.as_deref_mut().filter(|_| !dynamic) {
                        match kind {
                            IoFileRedirectKind::Read => cmd.reads.push(path),
                            IoFileRedirectKind::Write | IoFileRedirectKind::Append | IoFileRedirectKind::Clobber => {
                                cmd.writes.push(path)
                            }
                            IoFileRedirectKind::ReadAndWrite => {
                                cmd.reads.push(path.clone());
                                cmd.writes.push(path);
                            }
                            _ => {}
                        }
                    }
                    Ok(())
                }
                ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => self.list(&sub.list),
                ast::IoFileRedirectTarget::Duplicate(w) => self.word(&w.value).map(|_| ()),
                ast::IoFileRedirectTarget::Fd(_) => Ok(()),
            },
            IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    self.word(&doc.doc.value)?;
                }
                Ok(())
            }
            IoRedirect::HereString(_, w) => self.word(&w.value).map(|_| ()),
            IoRedirect::OutputAndError(w, _) => {
                let (path, dynamic) = self.word(&w.value)?;
                if let Some(cmd) = target.as_deref_mut().filter(|_| !dynamic) {
                    cmd.writes.push(path);
                }
                Ok(())
            }
        }
    }

    /// The static value of a word (or its source text), and whether it has expansions.
    /// Command substitutions inside it are analysed as commands in their own right.
    fn word(&mut self, raw: &str) -> Result<(String, bool), ShellError> {
        Ok(self.words(raw)?.swap_remove(0))
    }

    /// The words `raw` becomes: one, or several when bash would brace-expand it.
    fn words(&mut self, raw: &str) -> Result<Vec<(String, bool)>, ShellError> {
        let pieces = super::parser_guard::contained(|| {
            word::parse(raw, &ParserOptions::default())
                .map_err(|e| ShellError::Word { word: raw.to_string(), why: e.to_string() })
        })?;
        let mut text = String::new();
        let mut dynamic = false;
        self.pieces(raw, &pieces, &mut text, &mut dynamic)?;
        let unquoted_braces = pieces.iter().any(|p| matches!(&p.piece, WordPiece::Text(t) if t.contains('{')))
            && super::braces::has_braces(&text);
        if !unquoted_braces {
            return Ok(vec![(text, dynamic)]);
        }
        if dynamic {
            return Err(ShellError::DynamicBraces(raw.to_string()));
        }
        let expanded = super::braces::expand(&text).ok_or_else(|| ShellError::TooManyWords(raw.to_string()))?;
        Ok(expanded.into_iter().map(|w| (w, false)).collect())
    }

    fn pieces(
        &mut self,
        raw: &str,
        pieces: &[WordPieceWithSource],
        text: &mut String,
        dynamic: &mut bool,
    ) -> Result<(), ShellError> {
        for p in pieces {
            let src = raw.get(p.start_index..p.end_index).unwrap_or(raw);
            match &p.piece {
                WordPiece::Text(s) | WordPiece::SingleQuotedText(s) => text.push_str(s),
                WordPiece::EscapeSequence(s) => text.push_str(s.strip_prefix('\\').unwrap_or(s)),
                WordPiece::AnsiCQuotedText(s) => {
                    text.push_str(s);
                    *dynamic = true;
                }
                WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(raw, inner, text, dynamic)?
                }
                WordPiece::TildeExpansion(_) => {
                    text.push_str(src);
                    *dynamic = true;
                }
                WordPiece::ParameterExpansion(_) | WordPiece::ArithmeticExpression(_) => {
                    no_substitution(src, "an expansion")?;
                    text.push_str(src);
                    *dynamic = true;
                }
                WordPiece::CommandSubstitution(inner) | WordPiece::BackquotedCommandSubstitution(inner) => {
                    analyse_into(inner, self.depth + 1, self.out)?;
                    text.push_str(src);
                    *dynamic = true;
                }
            }
        }
        Ok(())
    }
}

/// Two adjacent plain words (`curl x`) read as a command, not as arithmetic (`i + 1`, `x++`).
fn looks_like_command(expr: &str) -> bool {
    let plain = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || "_./-:@=".contains(c));
    let toks: Vec<&str> = expr.split_whitespace().collect();
    toks.windows(2).any(|w| {
        plain(w[0]) && plain(w[1]) && w[0].starts_with(|c: char| c.is_ascii_alphabetic() || c == '/' || c == '.')
    }) || (toks.len() == 1 && toks[0].starts_with('/'))
}

/// Refuse text that hides a command substitution where hone does not analyse it.
/// Refuse an assignment to a variable that changes what runs (`LD_PRELOAD`, `PATH`, …).
fn assignment_name_allowed(a: &ast::Assignment) -> Result<(), ShellError> {
    let (ast::AssignmentName::VariableName(name) | ast::AssignmentName::ArrayElementName(name, _)) = &a.name;
    if is_dangerous_var(name) {
        return Err(ShellError::DangerousVar(name.to_string()));
    }
    Ok(())
}

fn no_substitution(src: &str, what: &'static str) -> Result<(), ShellError> {
    if src.contains("$(") || src.contains('`') || src.contains("<(") || src.contains(">(") {
        return Err(ShellError::HiddenSubstitution(what));
    }
    Ok(())
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
