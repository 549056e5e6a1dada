//! Commands that run other commands: shells with `-c`, `env`, `timeout`, `nice`, `xargs`,
//! `find -exec`, `sudo`, `taskset` and friends. Their inner commands are analysed too, so
//! wrapping a denied command never hides it. Programs with command languages of their own (git,
//! sed, awk, tar) are checked in `interpreters.rs`; aliases are refused, each refusal a
//! `ShellError`.

use super::interpreters;
use super::shell::{SimpleCmd, analyse_into, is_dangerous_var};
use super::shell_error::ShellError;

const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox"];

fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// Analyse what `cmd` runs in turn, appending those commands to `out` (and files it writes
/// through its options to its `writes`).
pub fn unwrap(cmd: &mut SimpleCmd, depth: usize, out: &mut Vec<SimpleCmd>) -> Result<(), ShellError> {
    let name = basename(&cmd.argv[0]).to_string();
    match name.as_str() {
        "git" => return interpreters::git(cmd),
        "sed" | "gsed" => return interpreters::sed(cmd),
        "awk" | "gawk" | "mawk" | "nawk" => return interpreters::awk(cmd),
        "tar" | "gtar" | "bsdtar" => return interpreters::tar(cmd),
        "find" => find_writes(cmd),
        _ => {}
    }
    let argv = &cmd.argv;
    let name = name.as_str();
    let rest = &argv[1..];
    let dyn_rest = &cmd.dynamic[1..];
    if let Some(args) = runner_args(name, rest) {
        return inner(args, depth, out);
    }
    match name {
        "eval" => Err(ShellError::Eval),
        "alias" | "unalias" => Err(ShellError::Alias),
        "shopt" if rest.iter().any(|a| a == "expand_aliases") => Err(ShellError::AliasesOn),
        _ if SHELLS.contains(&name) => shell(name, rest, dyn_rest, depth, out),
        "env" => env(rest, dyn_rest, depth, out),
        "xargs" => xargs(rest, depth, out),
        "find" => find(rest, depth, out),
        "source" | "." => Ok(()), // runs a file, like `bash script.sh`: matched as written
        "watch" => script(&skip_flags(rest, &["-n", "-d", "--interval"]).join(" "), depth, out),
        "flock" | "su" | "runuser" | "script" => match rest.iter().position(|a| a == "-c" || a == "--command") {
            Some(i) => script(rest.get(i + 1).map_or("", String::as_str), depth, out),
            None if name == "flock" => inner(skip_flags(rest, &["-w", "-E"]).get(1..).unwrap_or(&[]), depth, out),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// What a pure runner (`timeout`, `nice`, `sudo`, `taskset`, `exec`, …) runs: the words after
/// its own options. `None` when `name` is not one.
fn runner_args<'a>(name: &str, rest: &'a [String]) -> Option<&'a [String]> {
    let args: &'a [String] = match name {
        "taskset" => {
            let args = skip_flags(rest, &["-c", "--cpu-list", "-p", "--pid"]);
            let mask_given = rest.iter().any(|a| a == "-c" || a == "--cpu-list" || a.starts_with("-c"));
            if mask_given { args } else { args.get(1..).unwrap_or(&[]) }
        }
        "setarch" | "linux32" | "linux64" | "i386" | "x86_64" => {
            let args = if name == "setarch" { rest.get(1..).unwrap_or(&[]) } else { rest };
            skip_flags(args, &["--uname-2.6"])
        }
        "prlimit" | "chrt" | "numactl" | "cgexec" | "nsenter" | "firejail" | "systemd-run" | "strace" | "ltrace" => {
            let with_values: &[&str] = match name {
                "prlimit" => &["-p", "--pid"],
                "numactl" => &["-C", "-N", "-m", "-i", "-p"],
                "cgexec" => &["-g"],
                "nsenter" => &["-t", "--target"],
                "strace" | "ltrace" => &["-o", "-e", "-p", "-s", "-a"],
                _ => &[],
            };
            let mut args = skip_flags(rest, with_values);
            if name == "chrt" && !args.is_empty() {
                args = &args[1..];
            }
            args
        }
        "exec" | "command" | "builtin" => {
            if rest.first().is_some_and(|a| a == "-v" || a == "-V") {
                return Some(&[]);
            }
            skip_flags(rest, &["-a"])
        }
        "nohup" | "setsid" | "unbuffer" | "time" | "nice" | "ionice" | "stdbuf" | "sudo" | "doas" | "chroot"
        | "unshare" => {
            let with_values: &[&str] = match name {
                "nice" => &["-n", "--adjustment"],
                "ionice" => &["-c", "-n", "-p", "--class", "--classdata"],
                "sudo" => &["-u", "-g", "-h", "-p", "-U", "-C", "-D", "-r", "-t"],
                "doas" => &["-u", "-C"],
                _ => &[],
            };
            let mut args = skip_flags(rest, with_values);
            if name == "chroot" && !args.is_empty() {
                args = &args[1..];
            }
            args
        }
        "timeout" => {
            let args = skip_flags(rest, &["-s", "-k", "--signal", "--kill-after"]);
            args.get(1..).unwrap_or(&[])
        }
        _ => return None,
    };
    Some(args)
}

/// `find`'s output actions write the file they name: `-fprint`, `-fprint0`, `-fprintf`, `-fls`.
fn find_writes(cmd: &mut SimpleCmd) {
    let targets: Vec<String> = cmd
        .argv
        .windows(2)
        .filter(|w| matches!(w[0].as_str(), "-fprint" | "-fprint0" | "-fprintf" | "-fls"))
        .map(|w| w[1].clone())
        .collect();
    cmd.writes.extend(targets);
}

/// Skip leading options; `with_values` take the next word as their value.
fn skip_flags<'a>(args: &'a [String], with_values: &[&str]) -> &'a [String] {
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') && args[i] != "-" {
        if args[i] == "--" {
            return &args[i + 1..];
        }
        if with_values.contains(&args[i].as_str()) {
            i += 1;
        }
        i += 1;
    }
    &args[i.min(args.len())..]
}

fn inner(args: &[String], depth: usize, out: &mut Vec<SimpleCmd>) -> Result<(), ShellError> {
    if args.is_empty() {
        return Ok(());
    }
    // Re-quote the words so the parser sees exactly these arguments.
    let line: Vec<String> = args.iter().map(|a| quote(a)).collect();
    analyse_into(&line.join(" "), depth + 1, out)
}

fn script(text: &str, depth: usize, out: &mut Vec<SimpleCmd>) -> Result<(), ShellError> {
    analyse_into(text, depth + 1, out)
}

pub fn quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn shell(
    name: &str,
    rest: &[String],
    dynamic: &[bool],
    depth: usize,
    out: &mut Vec<SimpleCmd>,
) -> Result<(), ShellError> {
    let mut i = 0;
    let mut has_c = false;
    while i < rest.len() && rest[i].starts_with('-') && rest[i] != "-" && rest[i] != "--" {
        let opt = &rest[i];
        if !opt.starts_with("--") && opt.contains('c') {
            has_c = true;
        }
        if matches!(opt.as_str(), "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            i += 1;
        }
        i += 1;
    }
    if name == "busybox" {
        return inner(rest, depth, out);
    }
    if has_c {
        let Some(text) = rest.get(i) else { return Err(ShellError::NoScript(name.into())) };
        if dynamic.get(i).copied().unwrap_or(true) {
            return Err(ShellError::DynamicScript(name.into()));
        }
        return script(text, depth, out);
    }
    if rest.get(i).is_none_or(|a| a == "-s" || a == "-") {
        return Err(ShellError::Stdin(name.into()));
    }
    Ok(()) // `bash script.sh`: runs a file; it is matched by the policy's patterns as written
}

fn env(rest: &[String], dynamic: &[bool], depth: usize, out: &mut Vec<SimpleCmd>) -> Result<(), ShellError> {
    let mut i = 0;
    while i < rest.len() {
        let a = &rest[i];
        if dynamic.get(i).copied().unwrap_or(false) {
            return Err(ShellError::DynamicEnv);
        }
        if a == "--split-string" || a.starts_with("--split-string=") {
            let text = a.strip_prefix("--split-string=").map(str::to_string);
            return script(&text.unwrap_or_else(|| rest.get(i + 1).cloned().unwrap_or_default()), depth, out);
        }
        // A cluster of short options (`-iS'…'`, `-vu NAME`): `S` splits the rest into a command.
        if a.starts_with('-') && !a.starts_with("--") && a.len() > 1 {
            let flags: Vec<char> = a[1..].chars().collect();
            if let Some(k) = flags.iter().position(|c| *c == 'S') {
                let tail: String = flags[k + 1..].iter().collect();
                let text = if tail.is_empty() { rest.get(i + 1).cloned().unwrap_or_default() } else { tail };
                return script(&text, depth, out);
            }
            let takes_value = flags.last().is_some_and(|c| matches!(c, 'u' | 'C'));
            i += if takes_value { 2 } else { 1 };
            continue;
        }
        if a == "-u" || a == "--unset" || a == "-C" || a == "--chdir" {
            i += 2;
            continue;
        }
        if a == "--" {
            i += 1;
            break;
        }
        if a.starts_with('-') {
            i += 1;
            continue;
        }
        if let Some((k, _)) = a.split_once('=') {
            if is_dangerous_var(k) {
                return Err(ShellError::DangerousVar(k.into()));
            }
            i += 1;
            continue;
        }
        break;
    }
    inner(rest.get(i..).unwrap_or(&[]), depth, out)
}

fn xargs(rest: &[String], depth: usize, out: &mut Vec<SimpleCmd>) -> Result<(), ShellError> {
    let with_values = [
        "-a",
        "-d",
        "-E",
        "-e",
        "-I",
        "-i",
        "-L",
        "-l",
        "-n",
        "-P",
        "-s",
        "--arg-file",
        "--delimiter",
        "--max-args",
        "--max-procs",
        "--replace",
    ];
    let replace = rest.iter().position(|a| a == "-I" || a == "--replace").and_then(|i| rest.get(i + 1)).cloned();
    let args = skip_flags(rest, &with_values);
    if let (Some(r), Some(first)) = (replace, args.first())
        && first.contains(&r)
    {
        return Err(ShellError::XargsName);
    }
    inner(args, depth, out)
}

fn find(rest: &[String], depth: usize, out: &mut Vec<SimpleCmd>) -> Result<(), ShellError> {
    let mut i = 0;
    while i < rest.len() {
        if matches!(rest[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let end = (start..rest.len()).find(|&j| rest[j] == ";" || rest[j] == "+").unwrap_or(rest.len());
            let cmd = &rest[start..end];
            if cmd.first().is_some_and(|c| c.contains("{}")) {
                return Err(ShellError::FindExecName);
            }
            inner(cmd, depth, out)?;
            i = end;
        }
        i += 1;
    }
    Ok(())
}
