//! The App hone speaks as, from the environment: its id (`GITHUB_APP_ID`) and private key
//! (`GITHUB_APP_PRIVATE_KEY`, the PEM text, or `GITHUB_APP_PRIVATE_KEY_FILE`, a path), and the
//! JWT it signs to call the App's endpoints: RS256, `iss` the id, issued a minute ago (clock
//! drift) and valid nine minutes more (GitHub takes at most ten).

use crate::env::RunEnv;
use crate::error::{Code, HoneError, Result};
use crate::jwt::Signer;
use crate::redact::Redactor;
use serde_json::{Value, json};
use std::path::Path;

pub const ID_VAR: &str = "GITHUB_APP_ID";
pub const KEY_VAR: &str = "GITHUB_APP_PRIVATE_KEY";
pub const KEY_FILE_VAR: &str = "GITHUB_APP_PRIVATE_KEY_FILE";

/// The largest key file read (a 4096-bit PEM key is about 3.3 KiB).
const MAX_KEY_FILE: u64 = 64 * 1024;
/// The JWT is dated this far back, for a GitHub clock a little behind this machine's.
pub const BACKDATE_SECS: u64 = 60;
/// And valid this long after now: `exp - iat` is ten minutes, GitHub's limit.
pub const VALID_SECS: u64 = 9 * 60;

/// Where to get an App's key, for the hints.
const KEY_HELP: &str = "generate a private key in the App's settings (Settings → Developer settings → GitHub Apps → the App → Private keys) and pass the downloaded `.pem` file's text in GITHUB_APP_PRIVATE_KEY or its path in GITHUB_APP_PRIVATE_KEY_FILE";

/// A GitHub App: its id and the key it signs with. `Debug` shows the id only.
pub struct App {
    pub id: String,
    signer: Signer,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App").field("id", &self.id).finish_non_exhaustive()
    }
}

/// Whether the environment asks for an App: any of its variables is set.
pub fn configured(env: &RunEnv) -> bool {
    [ID_VAR, KEY_VAR, KEY_FILE_VAR].iter().any(|v| env.var(v).is_some())
}

impl App {
    /// The App the environment names, its key registered with `redactor` (whole, and line by
    /// line, so no part of it can be shown). `None` when none of its variables is set; an error
    /// naming the variable when one is missing, both keys are given, or the key is not an RSA
    /// private key in PEM.
    pub fn from_env(env: &RunEnv, redactor: &Redactor) -> Result<Option<App>> {
        if !configured(env) {
            return Ok(None);
        }
        let id = app_id(env)?;
        let pem = match (env.var(KEY_VAR), env.var(KEY_FILE_VAR)) {
            (Some(_), Some(_)) => {
                return Err(HoneError::new(Code::Spec, format!("both {KEY_VAR} and {KEY_FILE_VAR} are set"))
                    .hint(format!("give the App's private key once: unset one of them (GITHUB_APP_ID={id})")));
            }
            (None, None) => {
                return Err(HoneError::new(Code::Spec, format!("{ID_VAR} is set, but the App's private key is not"))
                    .hint(KEY_HELP));
            }
            (Some(text), None) => unescape(text),
            (None, Some(path)) => read_key_file(Path::new(path))?,
        };
        register(redactor, &pem);
        let from = if env.var(KEY_VAR).is_some() { KEY_VAR } else { KEY_FILE_VAR };
        let signer = Signer::from_pem(&pem, None).map_err(|why| {
            HoneError::new(why.code(), format!("the GitHub App's private key in {from} {why}")).hint(KEY_HELP)
        })?;
        Ok(Some(App { id, signer }))
    }

    /// A JWT for the App's own endpoints, issued at `now` (Unix seconds).
    pub fn jwt(&self, now: u64) -> Result<String> {
        self.signer
            .assertion(&claims(&self.id, now))
            .map_err(|e| HoneError::new(e.code(), format!("cannot sign the GitHub App's JWT: {e}")))
    }
}

/// `GITHUB_APP_ID`: the App's numeric id, or its client id (`Iv23…`), which GitHub also takes
/// as the JWT's issuer.
fn app_id(env: &RunEnv) -> Result<String> {
    let Some(id) = env.var(ID_VAR).map(str::trim) else {
        return Err(HoneError::new(Code::Spec, format!("the GitHub App's private key is set, but {ID_VAR} is not"))
            .hint("set GITHUB_APP_ID to the App's id (its settings page, \"App ID\"), or unset the key to use `git.token_env`'s token"));
    };
    let ok = !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.');
    if !ok {
        return Err(HoneError::new(Code::Spec, format!("{ID_VAR} is not a GitHub App id"))
            .hint("set it to the App's numeric \"App ID\" or its \"Client ID\", from the App's settings page"));
    }
    Ok(id.to_string())
}

/// The claims GitHub checks: `iat` a minute back, `exp` nine minutes on, `iss` the App (a
/// number for a numeric id, as GitHub's examples give it; a string for a client id).
pub fn claims(id: &str, now: u64) -> Value {
    let iss = id.parse::<u64>().map_or_else(|_| json!(id), |n| json!(n));
    json!({"iat": now.saturating_sub(BACKDATE_SECS), "exp": now + VALID_SECS, "iss": iss})
}

/// A key pasted into a CI variable as one line with `\n` escapes, as PEM again.
fn unescape(text: &str) -> String {
    if !text.contains('\n') && text.contains("\\n") { text.replace("\\n", "\n") } else { text.to_string() }
}

/// The key file, read as a credentials file (a regular file, at most 64 KiB).
fn read_key_file(path: &Path) -> Result<String> {
    let bytes = crate::safe_fs::read_small(path, MAX_KEY_FILE).map_err(|e| {
        HoneError::new(Code::Spec, format!("cannot read {KEY_FILE_VAR} ({}): {e}", path.display()))
            .hint(format!("point {KEY_FILE_VAR} at the App's private key file (`.pem`), readable by hone"))
    })?;
    String::from_utf8(bytes).map_err(|_| {
        HoneError::new(Code::Spec, format!("{KEY_FILE_VAR} ({}) is not a PEM text file", path.display())).hint(KEY_HELP)
    })
}

/// The key, whole and each of its lines (but the `-----BEGIN`/`END` ones), as secrets.
fn register(redactor: &Redactor, pem: &str) {
    redactor.add(pem.trim());
    for line in pem.lines().map(str::trim).filter(|l| !l.starts_with("-----")) {
        redactor.add(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const KEY: &str = include_str!("../../../../tests/data/github_app/app-key.pem");

    fn env(vars: &[(&str, &str)]) -> RunEnv {
        RunEnv::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>())
    }

    #[test]
    fn claims_are_what_github_checks() {
        let c = claims("123456", 1_700_000_000);
        assert_eq!(c, json!({"iat": 1_699_999_940u64, "exp": 1_700_000_540u64, "iss": 123456}));
        assert_eq!(c["exp"].as_u64().unwrap() - c["iat"].as_u64().unwrap(), 600, "ten minutes, GitHub's most");
        assert_eq!(claims("Iv23liAbc", 100)["iss"], "Iv23liAbc", "a client id stays a string");
        assert_eq!(claims("1", 10)["iat"], 0, "never before the epoch");
    }

    #[test]
    fn the_key_comes_from_the_variable_or_the_file_and_is_redacted() {
        let r = Redactor::new();
        assert!(App::from_env(&env(&[("GITHUB_TOKEN", "x")]), &r).unwrap().is_none(), "no App: none");
        let app = App::from_env(&env(&[(ID_VAR, "42"), (KEY_VAR, KEY)]), &r).unwrap().unwrap();
        assert_eq!(app.id, "42");
        assert_eq!(app.jwt(1_000).unwrap().split('.').count(), 3);
        let line = KEY.lines().nth(3).unwrap();
        assert!(r.apply(&format!("a line of it: {line}")).contains(crate::redact::MASK), "each line is a secret");
        let escaped = KEY.replace('\n', "\\n");
        assert!(App::from_env(&env(&[(ID_VAR, "42"), (KEY_VAR, &escaped)]), &r).unwrap().is_some(), "`\\n` escapes");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("k");
        std::fs::write(&file, KEY).unwrap();
        let from_file = App::from_env(&env(&[(ID_VAR, "42"), (KEY_FILE_VAR, file.to_str().unwrap())]), &r);
        assert!(from_file.unwrap().is_some());
        assert!(format!("{app:?}").contains("42") && !format!("{app:?}").contains("BEGIN"), "{app:?}");
    }

    #[test]
    fn a_missing_or_bad_key_names_the_variable_and_what_to_do() {
        let r = Redactor::new();
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("absent.pem");
        let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
            (vec![(ID_VAR, "42")], "GITHUB_APP_ID is set, but the App's private key is not"),
            (vec![(KEY_VAR, KEY)], "GITHUB_APP_ID is not"),
            (vec![(ID_VAR, "4 2"), (KEY_VAR, KEY)], "is not a GitHub App id"),
            (vec![(ID_VAR, "42"), (KEY_VAR, KEY), (KEY_FILE_VAR, "/k")], "both"),
            (vec![(ID_VAR, "42"), (KEY_VAR, "not a key at all")], "in GITHUB_APP_PRIVATE_KEY is not a PEM private key"),
            (
                vec![(ID_VAR, "42"), (KEY_FILE_VAR, missing.to_str().unwrap())],
                "cannot read GITHUB_APP_PRIVATE_KEY_FILE",
            ),
        ];
        for (vars, want) in cases {
            let e = App::from_env(&env(&vars), &r).unwrap_err();
            assert_eq!(e.code, Code::Spec, "{vars:?}");
            assert!(e.message.contains(want), "{vars:?}: {}", e.message);
            assert!(e.hint.is_some(), "{vars:?}: says what to do");
            assert!(!e.message.contains("not a key at all"), "never echoes the key: {}", e.message);
        }
    }
}
