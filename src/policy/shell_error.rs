//! Why a command line cannot be analysed (`ShellError`): each refusal of the shell analysis
//! (`shell`, `wrappers`, `interpreters`). Its text is what the model reads after
//! `unanalysable: ` in the denial; its code is `E_POLICY_DENIED`.

use crate::error::{Code, HoneError};

/// A command the analysis refuses, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShellError {
    #[error("nested more than {0} levels deep")]
    TooDeep(usize),
    #[error("redirects file descriptor {0}, which is out of range")]
    FdOutOfRange(String),
    #[error("a here-document's delimiter is empty")]
    EmptyDelimiter,
    #[error("nests parentheses more than {0} deep, or leaves too many parentheses and braces open")]
    ParensTooDeep(usize),
    /// The shell parser itself failed on the line (a panic inside it, contained).
    #[error("is beyond what the shell parser can read")]
    ParserFailed,
    #[error("contains the control or invisible character U+{:04X}", u32::from(*.0))]
    Deceptive(char),
    /// The parser's own words follow.
    #[error("does not parse as a shell command ({0})")]
    Syntax(String),
    #[error("cannot parse the word `{word}` ({why})")]
    Word { word: String, why: String },
    #[error("the command name `{0}` is computed at run time (dynamic command names cannot be checked)")]
    DynamicName(String),
    #[error("the command name `{0}` has non-ASCII characters (possible look-alike)")]
    NonAsciiName(String),
    #[error("sets `{0}`, which changes what runs (not allowed in commands)")]
    DangerousVar(String),
    /// A substitution where it is not analysed: inside `{0}` (`a [[ ]] test`, `an expansion`, …).
    #[error("has a command substitution inside {0}, which cannot be analysed")]
    HiddenSubstitution(&'static str),
    #[error("`{0}` brace-expands words computed at run time, which cannot be checked")]
    DynamicBraces(String),
    #[error("`{0}` expands to too many words")]
    TooManyWords(String),
    #[error("uses `eval`, which runs text that cannot be analysed")]
    Eval,
    #[error("defines aliases, which cannot be analysed; write the command out")]
    Alias,
    #[error("turns on aliases, which cannot be analysed; write the command out")]
    AliasesOn,
    /// `{0} -c` (a shell) with nothing after it.
    #[error("`{0} -c` without a command string")]
    NoScript(String),
    #[error("`{0} -c` runs a string computed at run time, which cannot be analysed")]
    DynamicScript(String),
    #[error("`{0}` reading commands from stdin cannot be analysed")]
    Stdin(String),
    #[error("`env` with arguments computed at run time cannot be analysed")]
    DynamicEnv,
    #[error("`xargs -I` puts its input in the command name, which cannot be analysed")]
    XargsName,
    #[error("`find -exec` with `{{}}` as the command cannot be analysed")]
    FindExecName,
    #[error("`git -c`/`--config-env`/`--exec-path` can make git run arbitrary programs (core.sshCommand, alias.*, …)")]
    GitConfig,
    /// `git {0}`, where `{0}` is no git command.
    #[error("`git {0}` is not a git command (an alias, which cannot be analysed); write the command out")]
    GitAlias(String),
    #[error("`git {0}` with this form runs other programs")]
    GitRuns(String),
    #[error("sed script files cannot be analysed; give the script on the command line")]
    SedFile,
    /// sed's `{0}` (its `e` command, its `s///e` flag).
    #[error("sed's {0} runs shell commands")]
    SedRuns(&'static str),
    /// sed's `{0}` (its `w` command, its `s///w` flag).
    #[error("sed's {0} writes files; use write_file")]
    SedWrites(&'static str),
    #[error("awk program files cannot be analysed; give the program on the command line")]
    AwkFile,
    #[error("awk's `system()`, command pipes and output redirection run commands or write files")]
    AwkRuns,
    /// tar's option `{0}`, which runs a program.
    #[error("tar's `{0}` runs another program")]
    TarRuns(String),
}

impl ShellError {
    /// Every refusal is a denial by the policy.
    pub const fn code(&self) -> Code {
        Code::PolicyDenied
    }
}

impl From<ShellError> for HoneError {
    fn from(e: ShellError) -> Self {
        HoneError::new(e.code(), format!("unanalysable: {e}"))
    }
}
