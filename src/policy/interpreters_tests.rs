//! Examples for the analysis of command languages (sed, awk, git, tar).

use super::super::shell::analyse;

fn refused(cmd: &str) -> bool {
    analyse(cmd).is_err()
}

#[test]
fn command_languages_that_run_programs_are_refused() {
    for bad in [
        "sed -n '/broken/e id' f",
        "sed --expression='1e id' f",
        r"sed 's/\/*broken/id/e' f",
        "sed -f evil.sed f",
        "sed -n 'w out' f",
        "awk 'BEGIN { \"id\" | getline line }'",
        "awk -f evil.awk",
        "awk '{ print > \"out\" }' f",
        "git -C . -c alias.x='!id' x",
        "git {-c,alias.x=!id} x",
        "git grep --open-files-in-pager=id x",
        "git grep -Oid x",
        "git lg",
        "git log --ext-diff -p",
        "tar -cf /dev/null --checkpoint=1 --checkpoint-action=exec=id f",
        "tar -xf a.tar --to-command=id",
        "tar -I 'sh -c id' -cf x f",
    ] {
        assert!(refused(bad), "{bad} was not refused");
    }
    for ok in [
        "sed -n '1,5p' f",
        "sed -i 's/a/b/g' f",
        "awk '{ print $1 }' f",
        "git -C sub status",
        "git log --oneline",
        "tar -czf x.tgz src",
    ] {
        assert!(!refused(ok), "{ok} was refused: {:?}", analyse(ok));
    }
}

#[test]
fn files_written_through_options_become_writes() {
    let w = |cmd: &str| analyse(cmd).unwrap().into_iter().flat_map(|c| c.writes).collect::<Vec<_>>();
    assert_eq!(w("git diff --output=.github/workflows/x.yml"), [".github/workflows/x.yml"]);
    assert_eq!(w("git format-patch -o out HEAD~1"), ["out"]);
    assert_eq!(w("sed -i s/a/b/ a.py b.py"), ["a.py", "b.py"]);
}

/// Every form of git that runs another program, each next to a form of the same command that
/// does not, so that each rule is needed and none is too wide.
#[test]
fn git_forms_that_run_programs_are_refused_and_their_neighbours_are_not() {
    for (bad, ok) in [
        // Options before the subcommand that set config or the exec path.
        ("git -c core.pager=id log", "git -C sub log"),
        ("git -ccore.pager=id log", "git --no-pager log"),
        ("git --config-env=core.pager=P log", "git -P log"),
        ("git --exec-path=/tmp/x log", "git --git-dir .git --work-tree . log"),
        // An alias cannot be analysed, after value options too.
        ("git -C sub lg", "git -C sub status"),
        ("git --namespace x lg", "git --namespace x status"),
        // Subcommands with a way to run something.
        ("git rebase -x make main", "git rebase main"),
        ("git rebase --exec=make main", "git rebase --onto a b"),
        ("git bisect run make", "git bisect start"),
        ("git submodule foreach id", "git submodule status"),
        ("git filter-branch --tree-filter id", "git branch -a"),
        ("git difftool -x id", "git diff HEAD"),
        ("git difftool --extcmd=id", "git difftool HEAD"),
        ("git mergetool --tool=vimdiff", "git merge-base a b"),
        ("git grep --open-files-in-pager=id x", "git grep x"),
        ("git grep -O x", "git grep -o x"),
        ("git clone --upload-pack=id url", "git clone url"),
        ("git push --receive-pack=id origin", "git push origin"),
        ("git fetch --exec=id origin", "git fetch origin"),
        ("git ls-remote -u id origin", "git ls-remote origin"),
        ("git archive --exec=id HEAD", "git archive HEAD"),
        ("git log --ext-diff -p", "git log -p"),
        ("git diff --textconv", "git diff --stat"),
    ] {
        assert!(refused(bad), "{bad} was not refused");
        assert!(!refused(ok), "{ok} was refused: {:?}", analyse(ok));
    }
    // Only options, no subcommand: nothing runs.
    for ok in ["git --version", "git -C sub", "git --help"] {
        assert!(!refused(ok), "{ok} was refused: {:?}", analyse(ok));
    }
}

#[test]
fn refusals_name_what_git_would_do() {
    let why = |cmd: &str| analyse(cmd).unwrap_err().to_string();
    assert!(why("git -c x=y log").contains("can make git run arbitrary programs"));
    assert!(why("git -C sub lg").contains("`git lg` is not a git command"), "{}", why("git -C sub lg"));
    assert!(why("git bisect run make").contains("`git bisect` with this form runs other programs"));
}

#[test]
fn sed_script_files_are_refused_however_they_are_given() {
    for bad in ["sed -f evil.sed f", "sed --file=evil.sed f", "sed --file evil.sed f", "sed -fevil.sed f"] {
        assert!(refused(bad), "{bad} was not refused");
    }
    for ok in ["sed -n 1p f", "sed --quiet 1p f", "sed -E s/a/b/ f"] {
        assert!(!refused(ok), "{ok} was refused: {:?}", analyse(ok));
    }
}

/// How sed's options are read: every way to pass a script is analysed, and `-i` (however it is
/// spelled or clustered) makes the files written, and only the files.
#[test]
fn sed_options_pass_scripts_and_in_place_edits_the_way_sed_reads_them() {
    for bad in [
        "sed -e '1e id' f",
        "sed --expression '1e id' f",
        "sed --expression='1e id' f",
        "sed -e1p -e '1e id' f",
        "sed -e'1e id' f",
        "sed 's/a\\/b/c/e' f",
    ] {
        assert!(refused(bad), "{bad} was not refused");
    }
    let writes = |cmd: &str| analyse(cmd).unwrap().into_iter().flat_map(|c| c.writes).collect::<Vec<_>>();
    for (cmd, written) in [
        ("sed -i s/a/b/ f", vec!["f"]),
        ("sed --in-place=.bak s/a/b/ f g", vec!["f", "g"]),
        ("sed -ni s/a/b/p f", vec!["f"]),
        ("sed -i -e s/a/b/ f", vec!["f"]),
        ("sed -i -l 5 s/a/b/ f", vec!["f"]),
        ("sed -i --line-length 5 s/a/b/ f", vec!["f"]),
        ("sed -n s/a/b/p f", vec![]),
        ("sed -E s/x/y/ f", vec![]),
        ("sed --silent s/i/j/p f", vec![]),
        ("sed -e s/a/b/ f", vec![]),
    ] {
        assert_eq!(writes(cmd), written, "{cmd}");
    }
}

/// The walk through a script skips what is not a command: delimited regexes (any delimiter,
/// escapes included), `y` tables, addresses. An `e` or `w` inside them is text, not a command.
#[test]
fn sed_scripts_are_walked_command_by_command() {
    for ok in [
        "sed -n '\\%e%p' f",
        "sed 'y/ew/xy/' f",
        "sed 's/a\\/e/x/' f",
        "sed '1d; 2d' f",
        "sed -n '0~2p' f",
        "sed '$!d' f",
        "sed 's/a/b' f",
        "sed 's/a\\' f",
        "sed 'y/ab/ew/' f",
        "sed 's/a\\/b/e/' f",
        "sed '/x/i written' f",
        "sed '1a hello' f",
        "sed '1a x\\; w out' f",
    ] {
        assert!(!refused(ok), "{ok} was refused: {:?}", analyse(ok));
    }
    // What follows a regex, a table or a line of text is a command again.
    for bad in [
        "sed '\\%x%e' f",
        "sed '1s/a/b/e' f",
        "sed 'y/a/b/;e' f",
        "sed '1y/a/b/;e' f",
        "sed '1a text\nw out' f",
        "sed '1a x; w out' f",
    ] {
        assert!(refused(bad), "{bad} was not refused");
    }
}

/// awk: program files are refused however they are named; the options that take a value are
/// skipped with it, so the program after them is the one analysed; only the program is.
#[test]
fn awk_programs_are_found_after_the_options_that_take_values() {
    for bad in [
        "awk -f p.awk f",
        "awk --file=p.awk f",
        "awk -fp.awk f",
        "awk -E p.awk f",
        "awk --exec p.awk",
        "awk -v x=1 '{ system(\"id\") }' f",
        "awk -F : '{ system(\"id\") }' f",
        "awk --assign x=1 '{ print | \"sh\" }' f",
        "awk --field-separator : '{ print > \"out\" }' f",
    ] {
        assert!(refused(bad), "{bad} was not refused");
    }
    for ok in [
        "awk --posix '{ print $1 }' f",
        "awk --field-separator=, '{ print $1 }' f",
        "awk '-vx=print|' '{ print $1 }' f",
        "awk '{ print $1 }' 'print|x'",
    ] {
        assert!(!refused(ok), "{ok} was refused: {:?}", analyse(ok));
    }
}
