//! Commands that run other commands: shells with `-c`, `env`, `timeout`, `nice`, `xargs`,
//! `find -exec`, `sudo` and friends. Their inner commands are analysed too, so wrapping a denied
//! command never hides it. Also refuses known escape hatches (`git -c`, `sed e`, `awk system`).

use super::shell::{SimpleCmd, analyse_into, is_dangerous_var};

const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox"];

fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// Analyse what `cmd` runs in turn, appending those commands to `out`.
pub fn unwrap(cmd: &SimpleCmd, depth: usize, out: &mut Vec<SimpleCmd>) -> Result<(), String> {
    let argv = &cmd.argv;
    let name = basename(&argv[0]);
    let rest = &argv[1..];
    let dyn_rest = &cmd.dynamic[1..];
    match name {
        "eval" => Err("uses `eval`, which runs text that cannot be analysed".into()),
        _ if SHELLS.contains(&name) => shell(name, rest, dyn_rest, depth, out),
        "env" => env(rest, dyn_rest, depth, out),
        "exec" | "command" | "builtin" => {
            if rest.first().is_some_and(|a| a == "-v" || a == "-V") {
                return Ok(());
            }
            inner(skip_flags(rest, &["-a"]), depth, out)
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
            inner(args, depth, out)
        }
        "timeout" => {
            let args = skip_flags(rest, &["-s", "-k", "--signal", "--kill-after"]);
            inner(args.get(1..).unwrap_or(&[]), depth, out)
        }
        "xargs" => xargs(rest, depth, out),
        "find" => find(rest, depth, out),
        "watch" => script(&skip_flags(rest, &["-n", "-d", "--interval"]).join(" "), depth, out),
        "flock" | "su" | "runuser" | "script" => match rest.iter().position(|a| a == "-c" || a == "--command") {
            Some(i) => script(rest.get(i + 1).map_or("", String::as_str), depth, out),
            None if name == "flock" => inner(skip_flags(rest, &["-w", "-E"]).get(1..).unwrap_or(&[]), depth, out),
            None => Ok(()),
        },
        "git" => git(rest),
        "sed" | "gsed" => sed(rest),
        "awk" | "gawk" | "mawk" | "nawk" => awk(rest),
        _ => Ok(()),
    }
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

fn inner(args: &[String], depth: usize, out: &mut Vec<SimpleCmd>) -> Result<(), String> {
    if args.is_empty() {
        return Ok(());
    }
    // Re-quote the words so the parser sees exactly these arguments.
    let line: Vec<String> = args.iter().map(|a| quote(a)).collect();
    analyse_into(&line.join(" "), depth + 1, out)
}

fn script(text: &str, depth: usize, out: &mut Vec<SimpleCmd>) -> Result<(), String> {
    analyse_into(text, depth + 1, out)
}

pub fn quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn shell(name: &str, rest: &[String], dynamic: &[bool], depth: usize, out: &mut Vec<SimpleCmd>) -> Result<(), String> {
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
        let Some(text) = rest.get(i) else { return Err(format!("`{name} -c` without a command string")) };
        if dynamic.get(i).copied().unwrap_or(true) {
            return Err(format!("`{name} -c` runs a string computed at run time, which cannot be analysed"));
        }
        return script(text, depth, out);
    }
    if rest.get(i).is_none_or(|a| a == "-s" || a == "-") {
        return Err(format!("`{name}` reading commands from stdin cannot be analysed"));
    }
    Ok(()) // `bash script.sh`: runs a file; it is matched by the policy's patterns as written
}

fn env(rest: &[String], dynamic: &[bool], depth: usize, out: &mut Vec<SimpleCmd>) -> Result<(), String> {
    let mut i = 0;
    while i < rest.len() {
        let a = &rest[i];
        if dynamic.get(i).copied().unwrap_or(false) {
            return Err("`env` with arguments computed at run time cannot be analysed".into());
        }
        if a == "-S"
            || a == "--split-string"
            || a.starts_with("--split-string=")
            || (a.starts_with("-S") && a.len() > 2)
        {
            let text = if let Some(v) = a.strip_prefix("--split-string=") {
                v.to_string()
            } else if a.len() > 2 && a.starts_with("-S") {
                a[2..].to_string()
            } else {
                rest.get(i + 1).cloned().unwrap_or_default()
            };
            return script(&text, depth, out);
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
                return Err(format!("sets `{k}`, which changes what runs (not allowed in commands)"));
            }
            i += 1;
            continue;
        }
        break;
    }
    inner(rest.get(i..).unwrap_or(&[]), depth, out)
}

fn xargs(rest: &[String], depth: usize, out: &mut Vec<SimpleCmd>) -> Result<(), String> {
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
        return Err("`xargs -I` puts its input in the command name, which cannot be analysed".into());
    }
    inner(args, depth, out)
}

fn find(rest: &[String], depth: usize, out: &mut Vec<SimpleCmd>) -> Result<(), String> {
    let mut i = 0;
    while i < rest.len() {
        if matches!(rest[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let end = (start..rest.len()).find(|&j| rest[j] == ";" || rest[j] == "+").unwrap_or(rest.len());
            let cmd = &rest[start..end];
            if cmd.first().is_some_and(|c| c.contains("{}")) {
                return Err("`find -exec` with `{}` as the command cannot be analysed".into());
            }
            inner(cmd, depth, out)?;
            i = end;
        }
        i += 1;
    }
    Ok(())
}

fn git(rest: &[String]) -> Result<(), String> {
    for (i, a) in rest.iter().enumerate() {
        if a == "-c"
            || a.starts_with("--config-env")
            || a.starts_with("--exec-path")
            || (a.starts_with("-c") && a.len() > 2)
        {
            return Err("`git -c`/`--config-env`/`--exec-path` can make git run arbitrary programs (core.sshCommand, alias.*, …)".into());
        }
        if !a.starts_with('-') {
            let sub = a.as_str();
            let tail = &rest[i + 1..];
            let runs = match sub {
                "rebase" => tail.iter().any(|t| t == "-x" || t.starts_with("--exec")),
                "bisect" => tail.first().is_some_and(|t| t == "run"),
                "submodule" => tail.iter().any(|t| t == "foreach"),
                "filter-branch" => true,
                "difftool" | "mergetool" => {
                    tail.iter().any(|t| t == "-x" || t.starts_with("--extcmd") || t.starts_with("--tool"))
                }
                _ => false,
            };
            if runs {
                return Err(format!("`git {sub}` with this form runs arbitrary commands"));
            }
            return Ok(());
        }
        if a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" {
            continue;
        }
    }
    Ok(())
}

/// GNU sed's `e` command and `s///e` flag run shell commands; `w`/`W` write files.
fn sed(rest: &[String]) -> Result<(), String> {
    for a in rest.iter().filter(|a| !a.starts_with('-')) {
        for cmd in a.split([';', '\n']).map(str::trim) {
            let body = cmd.trim_start_matches(|c: char| c.is_ascii_digit() || matches!(c, ',' | '$' | '!' | ' '));
            if body == "e" || body.starts_with("e ") {
                return Err("sed's `e` command runs shell commands".into());
            }
            if let Some(rest) = body.strip_prefix('s') {
                let mut chars = rest.chars();
                if let Some(delim) = chars.next() {
                    let parts: Vec<&str> = rest[delim.len_utf8()..].split(delim).collect();
                    if parts.len() >= 3 && parts[2].contains('e') {
                        return Err("sed's `s///e` flag runs shell commands".into());
                    }
                }
            }
        }
    }
    Ok(())
}

fn awk(rest: &[String]) -> Result<(), String> {
    for a in rest.iter().filter(|a| !a.starts_with('-')) {
        if a.contains("system")
            || a.contains("| getline")
            || a.contains("|getline")
            || a.contains("print |")
            || a.contains("printf |")
        {
            return Err("awk's `system()` and command pipes run shell commands".into());
        }
    }
    Ok(())
}
