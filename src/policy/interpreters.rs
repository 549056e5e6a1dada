//! Programs that carry a command language of their own: git (options anywhere on the line,
//! aliases, pagers, output files), sed (`e`, `w`, `s///e`, script files), awk (`system`, pipes,
//! `getline` from commands, output redirection, program files) and tar (checkpoint actions,
//! compress and rsh programs). What would run a program is refused; files they would write are
//! added to the command's writes, so the write rules decide them. Pure; each refusal a
//! `ShellError`.

use super::shell::SimpleCmd;
use super::shell_error::ShellError;

/// git's own commands. Anything else after `git` is an alias (from a config a command may have
/// written), which cannot be analysed.
const GIT_COMMANDS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "fetch",
    "filter-branch",
    "for-each-ref",
    "format-patch",
    "fsck",
    "gc",
    "grep",
    "hash-object",
    "help",
    "init",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "merge",
    "merge-base",
    "merge-file",
    "merge-tree",
    "mergetool",
    "mv",
    "name-rev",
    "notes",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "reflog",
    "remote",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "sparse-checkout",
    "stash",
    "status",
    "stripspace",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "update-index",
    "update-ref",
    "var",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// git's global options that take a value as the next word.
const GIT_VALUE_OPTS: &[&str] = &["-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--list-cmds"];

pub fn git(cmd: &mut SimpleCmd) -> Result<(), ShellError> {
    let rest = &cmd.argv[1..];
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i].as_str();
        // `-c name=value` and `-cname=value`.
        if a.starts_with("-c") || a.starts_with("--config-env") || a.starts_with("--exec-path") {
            return Err(ShellError::GitConfig);
        }
        if GIT_VALUE_OPTS.contains(&a) {
            i += 2;
            continue;
        }
        if a.starts_with('-') {
            i += 1;
            continue;
        }
        break;
    }
    let Some(sub) = rest.get(i).map(String::as_str) else { return Ok(()) };
    if !GIT_COMMANDS.contains(&sub) {
        return Err(ShellError::GitAlias(sub.into()));
    }
    let tail: Vec<String> = rest[i + 1..].to_vec();
    let has = |f: &dyn Fn(&str) -> bool| tail.iter().any(|t| f(t));
    let runs = match sub {
        "rebase" => has(&|t| t == "-x" || t.starts_with("--exec")),
        "bisect" => tail.first().is_some_and(|t| t == "run"),
        "submodule" => has(&|t| t == "foreach"),
        "filter-branch" => true,
        "difftool" | "mergetool" => has(&|t| t == "-x" || t.starts_with("--extcmd") || t.starts_with("--tool")),
        "grep" => has(&|t| t.starts_with("--open-files-in-pager") || (t.starts_with("-O") && !t.starts_with("--"))),
        "clone" | "fetch" | "pull" | "ls-remote" | "push" | "archive" => has(&|t| {
            t.starts_with("--upload-pack") || t.starts_with("--receive-pack") || t.starts_with("--exec") || t == "-u"
        }),
        _ => has(&|t| t.starts_with("--ext-diff") || t.starts_with("--textconv")),
    };
    if runs {
        return Err(ShellError::GitRuns(sub.into()));
    }
    for (k, t) in tail.iter().enumerate() {
        let out = if let Some(v) = t.strip_prefix("--output=") {
            Some(v.to_string())
        } else if t == "--output" || (sub == "format-patch" && (t == "-o" || t == "--output-directory")) {
            tail.get(k + 1).cloned()
        } else {
            t.strip_prefix("--output-directory=").map(str::to_string)
        };
        cmd.writes.extend(out);
    }
    Ok(())
}

/// GNU sed: `e` and `s///e` run commands and are refused; `w`/`W` and `s///w` write files and are
/// refused (use write_file); script files cannot be analysed; `-i` writes the files it edits.
pub fn sed(cmd: &mut SimpleCmd) -> Result<(), ShellError> {
    let rest = cmd.argv[1..].to_vec();
    let mut scripts = Vec::new();
    let mut files = Vec::new();
    let mut in_place = false;
    let mut i = 0;
    while i < rest.len() {
        let a = &rest[i];
        // `-f file`, `-ffile`, `--file=file`.
        if a.starts_with("-f") || a.starts_with("--file") {
            return Err(ShellError::SedFile);
        }
        if a == "-e" || a == "--expression" {
            scripts.extend(rest.get(i + 1).cloned());
            i += 2;
            continue;
        }
        if let Some(v) = a.strip_prefix("--expression=") {
            scripts.push(v.to_string());
        } else if a.starts_with("-e") && !a.starts_with("--") {
            scripts.push(a[2..].to_string());
        } else if a.starts_with("-i")
            || a.starts_with("--in-place")
            || (a.starts_with('-') && !a.starts_with("--") && a.contains('i') && !a.contains('e'))
        {
            in_place = true;
        } else if a == "-l" || a == "--line-length" {
            i += 1;
        } else if !a.starts_with('-') {
            files.push(a.clone());
        }
        i += 1;
    }
    if scripts.is_empty() && !files.is_empty() {
        scripts.push(files.remove(0));
    }
    for s in &scripts {
        sed_script(s)?;
    }
    if in_place {
        cmd.writes.extend(files);
    }
    Ok(())
}

/// Walk a sed script command by command (addresses, `s` and `y` with any delimiter and escapes).
fn sed_script(script: &str) -> Result<(), ShellError> {
    let c: Vec<char> = script.chars().collect();
    let mut i = 0;
    let delimited = |i: &mut usize, parts: usize| {
        let Some(&d) = c.get(*i) else { return };
        *i += 1;
        let mut seen = 0;
        while *i < c.len() && seen < parts {
            if c[*i] == '\\' {
                *i += 1;
            } else if c[*i] == d {
                seen += 1;
            }
            *i += 1;
        }
        // A script that ends in a backslash steps past its end: stop at the end.
        *i = (*i).min(c.len());
    };
    while i < c.len() {
        match c[i] {
            // Separators, braces, `!`, address forms (`1,5`, `$`, `0~2`, `+3`) and everything else
            // that is no command of its own: the `_` arm below steps over it.
            '/' => delimited(&mut i, 1),
            '\\' => {
                i += 1;
                delimited(&mut i, 1);
            }
            'e' => return Err(ShellError::SedRuns("`e` command")),
            'w' | 'W' => return Err(ShellError::SedWrites("`w` command")),
            's' => {
                i += 1;
                delimited(&mut i, 2);
                let flags: String = c[i..].iter().take_while(|ch| !matches!(ch, ';' | '\n' | '}')).collect();
                if flags.contains('e') {
                    return Err(ShellError::SedRuns("`s///e` flag"));
                }
                if flags.contains('w') {
                    return Err(ShellError::SedWrites("`s///w` flag"));
                }
                i += flags.chars().count();
            }
            'y' => {
                i += 1;
                delimited(&mut i, 2);
            }
            // Text and labels run to the end of the line.
            'a' | 'i' | 'c' | 'r' | 'R' | ':' | 'b' | 't' | 'T' | 'q' | 'Q' | 'l' | 'L' | 'v' => {
                while i < c.len() && c[i] != '\n' && (c[i] != ';' || matches!(c.get(i.wrapping_sub(1)), Some('\\'))) {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// awk programs: `system()`, command pipes (`cmd | getline`, `print | cmd`, `|&`) and output
/// redirection (`print > file`) are refused; program files cannot be analysed.
pub fn awk(cmd: &SimpleCmd) -> Result<(), ShellError> {
    let rest = &cmd.argv[1..];
    let mut program_seen = false;
    let mut i = 0;
    while i < rest.len() {
        let a = &rest[i];
        if a == "-f"
            || a.starts_with("--file")
            || (a.starts_with("-f") && !a.starts_with("--"))
            || a == "-E"
            || a == "--exec"
        {
            return Err(ShellError::AwkFile);
        }
        if a == "-v" || a == "-F" || a == "--assign" || a == "--field-separator" {
            i += 2;
            continue;
        }
        if !a.starts_with('-') && !program_seen {
            program_seen = true;
            let compact: String = a.chars().filter(|c| !c.is_whitespace()).collect();
            let pipes = ["|getline", "print|", "printf|", "|&", "system(", ")|"];
            if pipes.iter().any(|p| compact.contains(p)) || redirects_output(a) {
                return Err(ShellError::AwkRuns);
            }
        }
        i += 1;
    }
    Ok(())
}

/// `print … > file` / `printf … >> file` inside an awk program (always a redirect in awk).
fn redirects_output(program: &str) -> bool {
    program.split(['{', '}', ';', '\n']).any(|stmt| {
        let s = stmt.trim_start();
        (s.starts_with("print") || s.starts_with("printf")) && s.contains('>')
    })
}

/// tar options that run programs.
pub fn tar(cmd: &SimpleCmd) -> Result<(), ShellError> {
    const RUNS: &[&str] = &[
        "--checkpoint-action",
        "--to-command",
        "--use-compress-program",
        "--rsh-command",
        "--rmt-command",
        "--info-script",
        "--new-volume-script",
        "-I",
        "-F",
    ];
    for a in &cmd.argv[1..] {
        if RUNS.iter().any(|r| a == r || a.starts_with(&format!("{r}="))) {
            return Err(ShellError::TarRuns(a.clone()));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "interpreters_tests.rs"]
mod tests;
