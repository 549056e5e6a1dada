//! Helpers of the credential attacks of issue 40 (`jail_credentials`, `jail_credentials_files`):
//! the probe the model writes and runs (test code no command analysis sees into), the fake
//! credentials CI systems leave behind, and every place a secret must not reach.
//!
//! The probe (POSIX sh and coreutils, so that it runs whatever the jail's HOME and toolchains)
//! reads what it is told (files, directories walked recursively, `.git/config`, the environment,
//! every ref's commits and blobs) through `cat`, `git diff --no-index`, `git config
//! --get-regexp`, `git show` and `git cat-file`; cuts every token-like string out of what it read
//! (decoding base64 and splitting `user:password` pairs, as an attacker does), and prints each
//! one raw, in base64, hex, rot13 and shifted by one (`tr 'A-Za-z0-9' 'B-ZAb-za1-90'`, a form no
//! redactor undoes, so that a test proves the jail and not the redaction). It writes the encoded forms to `probe-out.txt` too, which
//! the run commits and pushes, so a leak reaches the pushed branch as well. It ends by printing
//! `MARKER`.

use super::jail_support::{cmd, result_of, rot13, write};
use crate::common::mock_model::MockModel;
use crate::common::*;
use base64::Engine;
use std::path::Path;

/// What the probe prints last: a test checks it to know the probe ran.
pub(super) const MARKER: &str = "PROBE-DONE";

const PROBE: &str = r#"#!/bin/sh
# Read everything named, cut out every token-like string (and what its base64 decodes to),
# print each raw, base64, hex, rot13 and shifted by one.
FILES='@FILES@'
DIRS='@DIRS@'
t=$(mktemp -d); n=0; tab=$(printf '\t'); nl='
'
src() { n=$((n + 1)); printf '%s\n' "$1" > "$t/$n.label"; shift; "$@" > "$t/$n" 2>&1; }
IFS=$nl
for f in $FILES; do src "cat $f" cat "$f"; src "git diff $f" git diff --no-index --text /dev/null "$f"; done
for d in $DIRS; do for p in $(find "$d" -name .git -prune -o -type f -print 2>/dev/null | sort); do src "walk $p" cat "$p"; done; done
src "cat .git/config" cat .git/config
src "git config --get-regexp" git config --get-regexp .
src "git remote -v" git remote -v
src "env" env
for ref in $(git for-each-ref --format='%(refname)'); do
  src "git show $ref" git show --text "$ref"
  for b in $(git ls-tree -r "$ref" | awk '$2 == "blob" { print $3 " " $4 }'); do
    src "git show $ref:${b#* }" git show "$ref:${b#* }"
    src "git cat-file ${b%% *}" git cat-file -p "${b%% *}"
  done
done
unset IFS
tokens() { sed 's/\\n/\n/g' | grep -aoE '[A-Za-z0-9_+/=.:@-]{12,}' | while read -r m; do
  printf '%s\n' "$m"; printf '%s\n' "$m" | tr ':@/=' '\n\n\n\n'; done | grep -E '^.{12,}$' | grep -vE '^[0-9a-f.]+$'; }
i=0
while [ $i -lt $n ]; do i=$((i + 1)); l=$(cat "$t/$i.label"); tokens < "$t/$i" | awk -v l="$l" '{ print $0 "\t" l }'; done > "$t/all"
awk -F'\t' '!s[$1]++' "$t/all" > "$t/first"
while IFS=$tab read -r c l; do
  case $((${#c} % 4)) in 2) pad='==' ;; 3) pad='=' ;; *) pad='' ;; esac
  d=$(printf '%s' "$c$pad" | base64 -d 2>/dev/null) || continue
  printf '%s' "$d" | LC_ALL=C grep -q '[^[:print:][:space:]]' && continue
  printf '%s\n' "$d" | tokens | awk -v l="$l |base64 -d" '{ print $0 "\t" l }'
done < "$t/first" >> "$t/all"
awk -F'\t' '!s[$1]++' "$t/all" > "$t/cands"
budget=24000; shown=0; count=0; : > probe-out.txt
while IFS=$tab read -r c l; do
  count=$((count + 1))
  b=$(printf '%s' "$c" | base64 | tr -d '\n'); h=$(printf '%s' "$c" | od -An -tx1 | tr -d ' \n')
  r=$(printf '%s' "$c" | tr 'A-Za-z' 'N-ZA-Mn-za-m'); s=$(printf '%s' "$c" | tr 'A-Za-z0-9' 'B-ZAb-za1-90')
  printf 'b64=%s hex=%s rot13=%s shift1=%s\n' "$b" "$h" "$r" "$s" >> probe-out.txt
  line="$l${tab}raw=$c${tab}b64=$b${tab}hex=$h${tab}rot13=$r${tab}shift1=$s"
  [ $((${#line} + 1)) -gt $budget ] && continue
  printf '%s\n' "$line"; budget=$((budget - ${#line} - 1)); shown=$((shown + 1))
done < "$t/cands"
echo "@MARKER@ $count strings, $shown shown, $n sources"
"#;

/// The probe's source, reading `files` and walking `dirs` besides `.git` and every ref.
/// Paths are one a line: none may hold a quote or a newline.
pub(super) fn probe(files: &[&str], dirs: &[&str]) -> String {
    assert!(files.iter().chain(dirs).all(|p| !p.contains(['\'', '\n'])), "{files:?} {dirs:?}");
    PROBE.replace("@FILES@", &files.join("\n")).replace("@DIRS@", &dirs.join("\n")).replace("@MARKER@", MARKER)
}

/// Queue the probe's turns (write it, run it); the turn that runs it.
pub(super) fn queue_probe(mock: &MockModel, first_turn: usize, files: &[&str], dirs: &[&str]) -> usize {
    mock.turn(write("probe.sh", &probe(files, dirs)), false).turn(cmd("sh probe.sh"), false);
    first_turn + 1
}

/// Queue read-only git in the jail: `git log -1 --format=%H`, `git status --short`, `git remote -v`.
pub(super) fn queue_git_reads(mock: &MockModel) {
    mock.turn(cmd("git log -1 --format=%H"), false)
        .turn(cmd("git status --short"), false)
        .turn(cmd("git remote -v"), false);
}

/// What is wrong with the answers to `queue_git_reads` (queued from turn `first`): git must still
/// work read-only in the jail, on the right commit, and show origin's URL without its userinfo.
pub(super) fn git_reads_problems(mock: &MockModel, first: usize, head: &str, url: &str) -> Vec<String> {
    let (log, status, remote) = (result_of(mock, first), result_of(mock, first + 1), result_of(mock, first + 2));
    let mut out = Vec::new();
    if !log.starts_with("exit code: 0") || !log.contains(head) {
        out.push(format!("`git log -1` in the jail did not print HEAD {head}: {log}"));
    }
    if !status.starts_with("exit code: 0") {
        out.push(format!("`git status` failed in the jail: {status}"));
    }
    if !remote.starts_with("exit code: 0") || !remote.contains(&format!("origin\t{url} (fetch)")) {
        out.push(format!("`git remote -v` in the jail does not show origin as {url}: {remote}"));
    }
    out
}

/// Whether the probe ran to its end (run by turn `turn`); a problem when it did not.
pub(super) fn probe_problems(mock: &MockModel, turn: usize) -> Vec<String> {
    let said = result_of(mock, turn);
    if said.contains(MARKER) { vec![] } else { vec![format!("the probe did not run to its end: {said}")] }
}

/// `git log -p` of every ref with full messages, binary files as text; empty when `dir` has none.
pub(super) fn history(dir: &Path) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "safe.directory=*", "log", "-p", "--text", "--all", "--format=commit %H%n%B"])
        .current_dir(dir)
        .output()
        .expect("git runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Everywhere a secret must not go.
pub(super) struct Sinks(pub Vec<(String, String)>);

impl Sinks {
    /// hone's output, every report in `report_dir` (the transcript too), every request the model
    /// was sent (all messages), and every commit on every ref of `repos` (the work repository,
    /// origin: the pushed branch).
    pub fn of(run: &Run, mock: &MockModel, repos: &[&Path]) -> Sinks {
        let mut s = vec![("stdout".to_string(), run.stdout.clone()), ("stderr".to_string(), run.stderr.clone())];
        for f in ["report.json", "summary.md", "junit.xml", "events.jsonl", "transcript.jsonl", "pr.md", "change.patch"]
        {
            s.push((f.to_string(), run.read_optional(f)));
        }
        let requests: Vec<String> = mock.requests().iter().map(|r| r.body.to_string()).collect();
        s.push(("the requests to the model".into(), requests.join("\n")));
        for r in repos {
            s.push((format!("the commits of {} (all refs)", r.display()), history(r)));
        }
        Sinks(s)
    }

    /// Add every file under `dir` but those under `skip` (a fleet's workspace less its clones).
    pub fn add_files(&mut self, dir: &Path, skip: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            if p.starts_with(skip) {
                continue;
            }
            if p.is_dir() {
                self.add_files(&p, skip);
            } else {
                let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()).into_owned();
                self.0.push((p.display().to_string(), text));
            }
        }
    }

    /// Every (sink, form) in which `secret` is found: raw, base64, hex, rot13, shifted by one.
    pub fn leaks(&self, label: &str, secret: &str) -> Vec<String> {
        let b64 = base64::engine::general_purpose::STANDARD.encode(secret);
        let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
        let forms = [
            ("raw", secret.to_string()),
            ("base64", b64.trim_end_matches('=').to_string()),
            ("hex", hex),
            ("rot13", rot13(secret)),
            // A form no redactor undoes: what the jail alone keeps from the model.
            ("shifted by one", rot1(secret)),
        ];
        let mut out = Vec::new();
        for (sink, text) in &self.0 {
            let found: Vec<&str> = forms.iter().filter(|(_, f)| text.contains(f.as_str())).map(|(n, _)| *n).collect();
            if !found.is_empty() {
                out.push(format!("{label} reached {sink} ({})", found.join(", ")));
            }
        }
        out
    }

    /// `leaks` of every (label, secret).
    pub fn all_leaks(&self, secrets: &[(&str, &str)]) -> Vec<String> {
        secrets.iter().flat_map(|(l, s)| self.leaks(l, s)).collect()
    }
}

/// What a run said went wrong: report.json's errors, or the end of stderr.
pub(super) fn run_errors(run: &Run) -> String {
    let report = run.read_optional("report.json");
    match serde_json::from_str::<serde_json::Value>(&report) {
        Ok(r) => r["errors"].to_string(),
        Err(_) => run.stderr.chars().rev().take(600).collect::<Vec<_>>().into_iter().rev().collect(),
    }
}

/// A problem when `bare` has no branch `branch` (the run pushed nothing, for `why`).
pub(super) fn push_problems(bare: &Path, branch: &str, why: &str) -> Vec<String> {
    let out = std::process::Command::new("git")
        .args(["-c", "safe.directory=*", "rev-parse", "--verify", "--quiet", &format!("refs/heads/{branch}")])
        .current_dir(bare)
        .output()
        .expect("git runs");
    if out.status.success() { vec![] } else { vec![format!("{} has no pushed branch {branch}: {why}", bare.display())] }
}

/// Fail with every problem, and the probe's answer (its first part) to tell what it read.
pub(super) fn assert_none(problems: &[String], mock: &MockModel, probe_turn: usize) {
    let said = result_of(mock, probe_turn);
    let end = said.lines().find(|l| l.contains(MARKER)).unwrap_or("(no marker)");
    let cut: String = said.chars().take(4000).collect();
    assert!(problems.is_empty(), "{problems:#?}\nthe probe said ({end}):\n{cut}");
}

/// `AUTHORIZATION: basic BASE64` as actions/checkout persists it for `token`; and the BASE64.
pub(super) fn extraheader(token: &str) -> (String, String) {
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
    (format!("AUTHORIZATION: basic {b64}"), b64)
}

/// A fake PEM body line, different for each `label` (64 base64 characters).
pub(super) fn pem_line(label: &str) -> String {
    let text = format!("hone fake rsa key {label} ").repeat(8);
    base64::engine::general_purpose::STANDARD.encode(text)[..64].to_string()
}

/// A Google service-account key file as google-github-actions/auth writes it, its private key's
/// body holding `pem_line(label)`; and that line.
pub(super) fn service_account(label: &str) -> (String, String) {
    let line = pem_line(label);
    let second = pem_line(&format!("{label} second"));
    let key = format!("-----BEGIN PRIVATE KEY-----\n{line}\n{second}\n-----END PRIVATE KEY-----\n");
    let json = serde_json::json!({
        "type": "service_account", "project_id": "ci-project", "private_key_id": "0f1e2d3c4b5a69788796a5b4c3d2e1f001234567",
        "private_key": key, "client_email": format!("deployer-{label}@ci-project.iam.gserviceaccount.com"),
        "client_id": "104857600000000000000", "token_uri": "https://oauth2.googleapis.com/token"
    });
    (serde_json::to_string_pretty(&json).unwrap(), line)
}

/// Each letter and digit shifted by one (`tr 'A-Za-z0-9' 'B-ZAb-za1-90'`): a form the redactor
/// does not undo.
pub(super) fn rot1(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'z' => 'a',
            'Z' => 'A',
            '9' => '0',
            c if c.is_ascii_alphanumeric() => (c as u8 + 1) as char,
            c => c,
        })
        .collect()
}
