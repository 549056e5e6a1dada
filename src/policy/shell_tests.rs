//! Shell analysis: what is refused, nesting limits, redirections, braces and the helpers.

use super::*;

fn one(cmd: &str) -> SimpleCmd {
    let mut cmds = analyse(cmd).unwrap();
    assert_eq!(cmds.len(), 1, "{cmd}: {cmds:?}");
    cmds.remove(0)
}

fn refusal(cmd: &str) -> String {
    analyse(cmd).expect_err(cmd).to_string()
}

/// `inner` inside `depth` nested command substitutions.
fn nested(depth: usize, inner: &str) -> String {
    (0..depth).fold(inner.to_string(), |s, _| format!("echo $( {s} )"))
}

#[test]
fn variables_that_change_what_runs_are_refused() {
    for var in ["PATH", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_12"] {
        assert!(is_dangerous_var(var), "{var}");
        let why = refusal(&format!("{var}=x ls"));
        assert_eq!(why, format!("sets `{var}`, which changes what runs (not allowed in commands)"));
    }
    for var in ["HOME_DIR", "GIT_CONFIG_KEYS", "X"] {
        assert!(!is_dangerous_var(var), "{var}");
    }
}

#[test]
fn control_and_invisible_characters_are_refused_but_tab_and_newline_are_not() {
    assert_eq!(refusal("ls\r"), "contains the control or invisible character U+000D");
    assert_eq!(refusal("ls \u{7}x"), "contains the control or invisible character U+0007");
    assert_eq!(refusal("ls \u{FEFF}x"), "contains the control or invisible character U+FEFF");
    let cmds = analyse("ls\tsrc\nls").unwrap();
    assert_eq!(cmds.iter().map(SimpleCmd::text).collect::<Vec<_>>(), ["ls src", "ls"]);
}

#[test]
fn nesting_is_counted_and_limited() {
    assert_eq!(analyse(&nested(MAX_DEPTH, "ls")).unwrap().len(), MAX_DEPTH + 1);
    assert_eq!(refusal(&nested(MAX_DEPTH + 1, "ls")), format!("nested more than {MAX_DEPTH} levels deep"));
    // An arithmetic body read as a command is one level deeper.
    assert!(analyse(&nested(MAX_DEPTH - 1, "((a b))")).is_ok());
    assert!(refusal(&nested(MAX_DEPTH, "((a b))")).starts_with("nested more than"));
}

#[test]
fn computed_command_names_are_refused() {
    for cmd in ["c?rl x", "$CMD x", "cur[l] x", "c*l x"] {
        assert!(refusal(cmd).contains("is computed at run time"), "{cmd}");
    }
    assert!(refusal("\u{0441}url x").contains("non-ASCII"));
}

#[test]
fn redirection_targets_are_reads_and_writes() {
    let c = one("cat <> data.txt");
    assert_eq!((c.reads, c.writes), (vec!["data.txt".to_string()], vec!["data.txt".to_string()]));
    let c = one("make &> build.log");
    assert_eq!((c.argv, c.writes), (vec!["make".to_string()], vec!["build.log".to_string()]));
    let c = one("make &> $LOG < in.txt 2>> err.txt");
    assert_eq!((c.reads, c.writes), (vec!["in.txt".to_string()], vec!["err.txt".to_string()]));
}

#[test]
fn words_are_brace_expanded_only_when_bash_would() {
    assert_eq!(one("echo {a,b}.py").argv, ["echo", "a.py", "b.py"]);
    assert_eq!(one("echo '{a,b}' \"{c,d}\"").argv, ["echo", "{a,b}", "{c,d}"]);
    assert_eq!(one("echo {} {x} a{b").argv, ["echo", "{}", "{x}", "a{b"]);
    let c = one("echo $HOME x");
    assert_eq!((c.argv, c.dynamic), (vec!["echo".to_string(), "$HOME".into(), "x".into()], vec![false, true, false]));
    assert!(refusal("echo {$A,b}").contains("brace-expands words computed at run time"));
}

#[test]
fn two_plain_words_read_as_a_command() {
    for cmd in ["curl x", "/usr/bin/curl x", "./run x", "a.b c", "/bin/id"] {
        assert!(looks_like_command(cmd), "{cmd}");
    }
    for expr in ["i + 1", "x++", "1 2", "-x y", "a", "", "i < /x"] {
        assert!(!looks_like_command(expr), "{expr}");
    }
}

#[test]
fn substitutions_where_they_are_not_analysed_are_refused() {
    for src in ["a $(b)", "a `b`", "a <(b)", "a >(b)"] {
        let e = no_substitution(src, "a test");
        assert_eq!(e, Err(ShellError::HiddenSubstitution("a test")), "{src}");
        let text = e.unwrap_err().to_string();
        assert_eq!(text, "has a command substitution inside a test, which cannot be analysed");
    }
    assert_eq!(no_substitution("a $b (c) <d >e", "a test"), Ok(()));
    assert!(refusal("echo $(( `id` ))").contains("inside an expansion"));
}

/// After the command name, `NAME=value` words are arguments: they stay in argv in their place
/// (the parser marks them as assignments). Dropping them let `awk -v x=1 '{system(…)}'` read the
/// program as `-v`'s value, so it was never analysed.
#[test]
fn assignment_words_after_the_command_name_are_arguments() {
    let argv = |cmd: &str| analyse(cmd).unwrap().into_iter().map(|c| c.argv).collect::<Vec<_>>();
    assert_eq!(argv("make CC=gcc all"), [["make", "CC=gcc", "all"]]);
    assert_eq!(argv("X=1 make Y=2"), [["make", "Y=2"]], "a prefix assignment is not an argument");
    assert!(analyse("awk -v x=1 '{ system(\"id\") }' f").is_err());
    assert!(analyse("export LD_PRELOAD=/tmp/x.so").is_err());
    assert!(analyse("make PATH=/tmp/evil").is_err());
    assert_eq!(argv("env X=1 ls"), [vec!["ls"], vec!["env", "X=1", "ls"]]);
}

/// Each refusal is a `ShellError` the caller can tell apart, and a denial by the policy when it
/// becomes a `HoneError`; its text is what the model reads.
#[test]
fn refusals_are_typed_and_denied_by_the_policy() {
    assert_eq!(analyse("eval x"), Err(ShellError::Eval));
    assert_eq!(analyse("bash -c \"$X\""), Err(ShellError::DynamicScript("bash".into())));
    assert_eq!(analyse("git -C sub lg"), Err(ShellError::GitAlias("lg".into())));
    assert_eq!(analyse("sed 'w out' f"), Err(ShellError::SedWrites("`w` command")));
    assert_eq!(analyse("ls\r"), Err(ShellError::Deceptive('\r')));
    let e = crate::error::HoneError::from(ShellError::Eval);
    assert_eq!(e.code, crate::error::Code::PolicyDenied);
    assert_eq!(e.message, "unanalysable: uses `eval`, which runs text that cannot be analysed");
}

/// Found by fuzzing (`scripts/fuzz.sh shell`): brush's parser panics on a redirection's file
/// descriptor that does not fit an `i32` (it unwraps the number's parse). Such a command is
/// refused as unanalysable; one that fits is analysed as before.
#[test]
fn a_redirected_file_descriptor_too_large_is_refused_not_a_panic() {
    for cmd in ["cat 6666666666666666666666666666666<k", "ls 2147483648>x", "é; make 99999999999>>log"] {
        assert!(refusal(cmd).contains("file descriptor"), "{cmd}: {}", refusal(cmd));
    }
    assert_eq!(one("ls 2147483647>x").argv, ["ls"]);
    assert_eq!(one("echo 99999999999 >x").argv, ["echo", "99999999999"], "a word, not a descriptor");
}

/// Found by fuzzing (`scripts/fuzz.sh shell`, a timeout): brush's parser takes time that doubles
/// with each unclosed `(` (`Ff|(((…(|`: 24 took 3 s, 31 minutes), so a command line could stall
/// the policy check. Parentheses nested deeper than any real command's are refused unparsed.
#[test]
fn parentheses_nested_too_deep_are_refused_before_the_parser_sees_them() {
    let deep = format!("Ff|{}|", "(".repeat(24));
    assert!(refusal(&deep).contains("parentheses"), "{}", refusal(&deep));
    let balanced = format!("echo {}1{}", "$(".repeat(24), ")".repeat(24));
    assert!(refusal(&balanced).contains("parentheses"), "{}", refusal(&balanced));
    assert_eq!(analyse("(cd src && (ls))").unwrap().len(), 2);
    // Seven left open inside quotes and a here-document (11 took brush's parser 19 s).
    let open = "cat <<EOF\n$=\"$((v ${F[\"$( x\" $((v\n\"$[\"\"$((v\nEOF\n";
    assert!(refusal(open).contains("parentheses"), "{}", refusal(open));
    assert_eq!(one("grep -E \"f(\" src").argv, ["grep", "-E", "f(", "src"], "one quoted `(` is a character");
    // Four `$(` and four `${` left open in a here-document (six and six took it 14 s).
    let open = format!("make <<EOF\n{}\nEOF\n", "$(v ${I[ ".repeat(4));
    assert!(refusal(&open).contains("parentheses"), "{}", refusal(&open));
    assert_eq!(one("awk '{print $1}' f").argv, ["awk", "{print $1}", "f"], "closed braces are fine");
}

/// Found by fuzzing (`scripts/fuzz.sh shell`, out of memory): a here-document whose delimiter is
/// an empty quoted word at the end of the line (`cat <<'' `) makes brush's parser allocate
/// without end. It is refused unparsed; a here-document with a delimiter is analysed as before.
#[test]
fn an_empty_here_document_delimiter_is_refused_before_the_parser_sees_it() {
    for cmd in ["cat <<'' ", "<<'' ", "cat <<-\"\"\t", "cat << '' ", "fT<<<<<\"\"<| ", "$(<<  ", "cat <<\nx\n"] {
        assert!(refusal(cmd).contains("here-document"), "{cmd}: {}", refusal(cmd));
    }
    assert_eq!(one("cat <<EOF\nhi\nEOF\n").argv, ["cat"]);
    assert_ne!(analyse("echo $((1 << 4))").err(), Some(ShellError::EmptyDelimiter), "a shift is no here-document");
}

/// Found by fuzzing (`scripts/fuzz.sh shell`): a here-document inside `${"…"$((…` makes brush's
/// tokenizer unwrap a `None`. Whatever panic the parser has left, it is contained: the line is
/// refused as unanalysable, and hone goes on.
#[test]
fn a_panic_inside_the_shell_parser_is_a_refusal_not_a_crash() {
    use base64::Engine;
    let found = "Rm1ha5vYPDxFT0Y7JHsid41kKU89IiQoKEZtYWubd41kKU89IiQoKEZtYWub2Dw8QCI9Itg8PEAiPSJkZmhCCkVPRgo=";
    let bytes = base64::engine::general_purpose::STANDARD.decode(found).unwrap();
    let cmd = String::from_utf8_lossy(&bytes).into_owned();
    // And one in brush's word parser: a tilde expression's number that does not fit.
    let tilde = "c|~99999999999999999999999999999999999999999;9--0--n] >capture".to_string();
    for cmd in [cmd, tilde] {
        let got = std::thread::spawn(move || analyse(&cmd)).join();
        let got = got.expect("the analysis does not panic");
        assert!(got.is_err(), "{got:?}");
    }
    assert_eq!(
        crate::policy::parser_guard::contained(|| -> Result<(), ShellError> { panic!("inside") }),
        Err(ShellError::ParserFailed)
    );
    assert!(!crate::policy::parser_guard::parsing(), "the flag is down after a contained panic");
}
