//! The secrets in a credential's text, for the redactor: PEM private keys, the values a JSON
//! credential file or a `key: value` / `key = value` file keeps under a credential's name (a
//! refresh token, a client secret, a kube token, Docker's `auth`), an HTTP header's credentials
//! (`http.extraheader`), and the user and password in URLs. Pure: text in, secrets out; what is
//! shorter than the redactor's minimum is the redactor's to drop.

use base64::Engine;

/// The largest file hone reads as a credentials file: a bigger one is not one.
pub const MAX_FILE: u64 = 64 * 1024;

/// Google's credential file types (`type` of an ADC file).
const GOOGLE_TYPES: [&str; 5] = [
    "service_account",
    "external_account",
    "authorized_user",
    "impersonated_service_account",
    "external_account_authorized_user",
];

/// The keys whose presence (with a value) makes a JSON object a credential.
const CREDENTIAL_KEYS: [&str; 3] = ["private_key", "refresh_token", "client_secret"];

/// User names that are no secret: the fixed names git hosts take a token with.
const PUBLIC_USERS: [&str; 6] = ["x-access-token", "x-oauth-basic", "oauth2", "gitlab-ci-token", "git", "token"];

/// Whether the key `name` holds a secret: its letters (case, `_` and `-` aside) end in `token`,
/// `secret`, `password`, `passwd`, `apikey`, `privatekey`, `secretkey` or `accesskey`, or are
/// `auth` (Docker) or `clientkeydata` (kubeconfig). Not `token_type`, `token_uri`, `*_id`.
pub fn is_secret_key(name: &str) -> bool {
    let n: String =
        name.chars().filter(|c| !matches!(c, '_' | '-' | '"' | '\'')).map(|c| c.to_ascii_lowercase()).collect();
    ["token", "secret", "password", "passwd", "apikey", "privatekey", "secretkey", "accesskey"]
        .iter()
        .any(|s| n.ends_with(s))
        || n == "auth"
        || n == "clientkeydata"
}

/// Whether `text` is a credentials file: it holds a PEM private key, or it is JSON with a
/// Google credential `type` or an object with a `private_key`, `refresh_token` or
/// `client_secret`.
pub fn is_credential(text: &str) -> bool {
    if has_private_key(text) {
        return true;
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) => is_credential_json(&v, 0) || docker_auths(&v),
        Err(_) => credential_lines(text) || token_file(text) || !netrc_values(text).is_empty(),
    }
}

/// Keys that name a credential in a `key = value` or `key: value` file whatever else it holds:
/// AWS's credentials file, npm's and pip's upload config, a kubeconfig's client key.
const CREDENTIAL_LINE_KEYS: &[&str] =
    &["aws_secret_access_key", "aws_session_token", "_authtoken", "_auth", "_password", "client-key-data"];

/// Whether a text file is a credentials file by its lines: a key of `CREDENTIAL_LINE_KEYS` (npm's
/// `//registry/:_authToken=` too), a kubeconfig's `token:`, or a `.pypirc`'s `password`.
fn credential_lines(text: &str) -> bool {
    let kubeconfig = text.lines().any(|l| l.trim() == "kind: Config");
    let pypirc = text.lines().any(|l| matches!(l.trim(), "[distutils]" | "[pypi]" | "[testpypi]"));
    text.lines().filter_map(|l| key_value(l.trim())).any(|(key, value)| {
        let key = key.to_ascii_lowercase();
        !value.is_empty()
            && (CREDENTIAL_LINE_KEYS.contains(&key.as_str())
                || (kubeconfig && key == "token")
                || (pypirc && key == "password"))
    })
}

/// Whether a file is one token alone: a JWT (`eyJ…` in three parts), or a word with the prefix
/// of a forge's, registry's or chat service's token.
fn token_file(text: &str) -> bool {
    const PREFIXES: &[&str] =
        &["ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_", "glpat-", "glcbt-", "npm_", "pypi-", "xoxb-", "xoxp-"];
    let word = text.trim();
    if word.is_empty() || word.contains(char::is_whitespace) || word.len() > 16 << 10 {
        return false;
    }
    let jwt = word.starts_with("eyJ") && word.split('.').count() == 3;
    jwt || PREFIXES.iter().any(|p| word.starts_with(p) && word.len() >= p.len() + 16)
}

/// Docker's `config.json`: an `auths` object whose entries hold an `auth`.
fn docker_auths(v: &serde_json::Value) -> bool {
    v.get("auths").and_then(serde_json::Value::as_object).is_some_and(|a| {
        a.values().any(|e| e.get("auth").and_then(serde_json::Value::as_str).is_some_and(|s| !s.is_empty()))
    })
}

/// Whether `bytes` are a PKCS#12 bundle (a `.p12`/`.pfx`, a keystore): DER `SEQUENCE { INTEGER 3,
/// SEQUENCE … }`, whatever the file is called.
pub fn is_pkcs12(bytes: &[u8]) -> bool {
    let Some((&0x30, rest)) = bytes.split_first() else { return false };
    let skip = match rest.first() {
        Some(n) if *n < 0x80 => 1,
        Some(n @ 0x81..=0x84) => 1 + usize::from(n - 0x80),
        _ => return false,
    };
    rest.get(skip..skip + 4) == Some(&[0x02, 0x01, 0x03, 0x30])
}

fn is_credential_json(v: &serde_json::Value, depth: usize) -> bool {
    use serde_json::Value;
    match v {
        _ if depth > 16 => false,
        Value::Object(m) => {
            let typed = m.get("type").and_then(Value::as_str).is_some_and(|t| GOOGLE_TYPES.contains(&t));
            let keyed =
                CREDENTIAL_KEYS.iter().any(|k| m.get(*k).and_then(Value::as_str).is_some_and(|s| !s.trim().is_empty()));
            typed || keyed || m.values().any(|x| is_credential_json(x, depth + 1))
        }
        Value::Array(a) => a.iter().any(|x| is_credential_json(x, depth + 1)),
        _ => false,
    }
}

fn has_private_key(text: &str) -> bool {
    private_key_blocks(text).next().is_some()
}

/// The secrets in a credentials file's text: its PEM private keys; the values under a secret's
/// key (`is_secret_key`) of its JSON, or of its `key: value` and `key = value` lines when it is
/// not JSON; the `user:password` pair such a value holds in base64 (Docker's `auth`) and a PEM
/// key it holds so (kubeconfig's `client-key-data`); and the whole text when it is one word (a
/// token file).
pub fn secrets_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    pem_secrets(text, &mut out);
    // A key pasted into a JSON string or a YAML value with `\n` escapes.
    if text.contains("\\n") {
        pem_secrets(&text.replace("\\n", "\n"), &mut out);
    }
    let valued = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) => json_values(&v, 0),
        Err(_) => line_values(text).into_iter().chain(quoted_pairs(text)).chain(netrc_values(text)).collect(),
    };
    for (key, value) in valued {
        decoded(&key, &value, &mut out);
        pem_secrets(&value, &mut out);
        out.push(value);
    }
    let whole = text.trim();
    if !whole.is_empty() && !whole.contains(char::is_whitespace) {
        out.push(whole.to_string());
    }
    finish(out)
}

/// The values under a secret's key anywhere in a JSON document, with their keys.
fn json_values(v: &serde_json::Value, depth: usize) -> Vec<(String, String)> {
    use serde_json::Value;
    let mut out = Vec::new();
    match v {
        _ if depth > 32 => {}
        Value::Object(m) => {
            for (k, x) in m {
                match x {
                    Value::String(s) if is_secret_key(k) => out.push((k.clone(), s.clone())),
                    Value::String(s) if s.contains("-----BEGIN") => out.push((k.clone(), s.clone())),
                    _ => out.extend(json_values(x, depth + 1)),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| out.extend(json_values(x, depth + 1))),
        _ => {}
    }
    out
}

/// The values of `key: value` and `key = value` lines (YAML, INI, env files) under a secret's
/// key, unquoted.
fn line_values(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim_start().trim_start_matches("- ").trim_start_matches("export ").trim_start();
        let Some((key, value)) = key_value(line) else { continue };
        if key.is_empty() || key.contains(char::is_whitespace) || !is_secret_key(key) {
            continue;
        }
        let value = value.trim_end_matches(',').trim().trim_matches(['"', '\'']).trim();
        if !value.is_empty() {
            out.push((key.to_string(), value.to_string()));
        }
    }
    out
}

/// The passwords of a `.netrc` (`machine HOST login USER password SECRET`, in any layout):
/// the word after each `password` (or `account`), in a text that names a `machine` or `default`.
fn netrc_values(text: &str) -> Vec<(String, String)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if !words.iter().any(|w| *w == "machine" || *w == "default") {
        return Vec::new();
    }
    let pairs = words.windows(2).filter(|w| w[0] == "password" || w[0] == "account");
    pairs.map(|w| ("password".to_string(), w[1].to_string())).collect()
}

/// A `key = value` or `key: value` line's key and value; for npm's
/// `//registry.example/:_authToken=…` the key is what comes before the `=`, less the registry.
fn key_value(line: &str) -> Option<(&str, &str)> {
    let at = match line.find('=') {
        Some(eq) if line.starts_with("//") => eq,
        _ => line.find([':', '='])?,
    };
    let key = line[..at].trim().rsplit(':').next().unwrap_or("").trim();
    Some((key, line[at + 1..].trim()))
}

/// The `"key": "value"` pairs under a secret's key in text that is not JSON as a whole (JSON
/// rows in a token cache's database file, a fragment of a document).
fn quoted_pairs(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('"') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find('"') else { break };
        let key = &rest[..close];
        let after = rest[close + 1..].trim_start();
        let Some(value) = after.strip_prefix(':').map(str::trim_start).and_then(|v| v.strip_prefix('"')) else {
            continue;
        };
        if key.is_empty() || key.len() > 64 || key.contains(char::is_whitespace) || !is_secret_key(key) {
            continue;
        }
        let end = value.char_indices().find(|&(i, c)| c == '"' && !value[..i].ends_with('\\')).map(|(i, _)| i);
        let Some(end) = end else { break };
        out.push((key.to_string(), value[..end].to_string()));
        rest = &value[end + 1..];
    }
    out
}

/// What a base64 value decodes to, when it is text: a PEM key's secrets, or a `user:password`
/// pair and its password.
fn decoded(key: &str, value: &str, out: &mut Vec<String>) {
    let k = key.to_ascii_lowercase();
    if !(k.contains("auth") || k.ends_with("data")) {
        return;
    }
    let Some(text) = base64_text(value) else { return };
    if text.contains("-----BEGIN") {
        pem_secrets(&text, out);
    } else {
        pair_secrets(&text, out);
    }
}

/// `value` decoded from base64 (standard or URL-safe, padded or not), when that is UTF-8 text.
fn base64_text(value: &str) -> Option<String> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let v = value.trim().trim_end_matches('=');
    let bytes = STANDARD_NO_PAD.decode(v).or_else(|_| URL_SAFE_NO_PAD.decode(v)).ok()?;
    String::from_utf8(bytes).ok().filter(|t| !t.chars().any(|c| c.is_control() && c != '\n' && c != '\r'))
}

/// A `user:password` pair: the pair, the password, and the user unless it is one of the fixed
/// names hosts take a token with (`x-access-token`), or a password that is one of those
/// (GitHub's `TOKEN:x-oauth-basic`).
fn pair_secrets(pair: &str, out: &mut Vec<String>) {
    let pair = pair.trim();
    out.push(pair.to_string());
    if let Some((user, password)) = pair.split_once(':') {
        if !PUBLIC_USERS.contains(&password) {
            out.push(password.to_string());
        }
        if !PUBLIC_USERS.contains(&user) {
            out.push(user.to_string());
        }
    }
}

/// The private key blocks (`-----BEGIN … PRIVATE KEY-----` to its `END` line, or to the end of
/// the text when that is missing) in `text`.
fn private_key_blocks(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        loop {
            let start = rest.find("-----BEGIN ")?;
            let after = &rest[start + "-----BEGIN ".len()..];
            let Some(label_end) = after.find("-----") else {
                rest = "";
                return None;
            };
            let label = &after[..label_end];
            if !label.ends_with("PRIVATE KEY") || label.contains('\n') {
                rest = &after[label_end..];
                continue;
            }
            let end_marker = format!("-----END {label}-----");
            let block = match rest[start..].find(&end_marker) {
                Some(e) => &rest[start..start + e + end_marker.len()],
                None => &rest[start..],
            };
            rest = &rest[start + block.len()..];
            return Some(block);
        }
    })
}

/// The secrets of each private key in `text`: the block whole, its body joined into one line,
/// and each line of its body.
pub fn pem_secrets(text: &str, out: &mut Vec<String>) {
    for block in private_key_blocks(text) {
        out.push(block.trim().to_string());
        let body: Vec<&str> =
            block.lines().map(str::trim).filter(|l| !l.starts_with("-----") && !l.contains(": ")).collect();
        out.push(body.concat());
        out.extend(body.iter().map(|l| l.to_string()));
    }
}

/// The secrets of an HTTP header as git's `http.extraheader` holds it (`AUTHORIZATION: basic
/// BASE64`): the header's value, its credentials, and for `basic` the decoded `user:token`
/// pair and the token.
pub fn header_secrets(header: &str) -> Vec<String> {
    let header = header.trim();
    let mut out = vec![header.to_string()];
    let value = match header.split_once(':') {
        Some((name, v)) if !name.trim().is_empty() && !name.trim().contains(char::is_whitespace) => v.trim(),
        _ => header,
    };
    out.push(value.to_string());
    let credentials = match value.split_once(char::is_whitespace) {
        Some((scheme, c)) => {
            let c = c.trim();
            if scheme.eq_ignore_ascii_case("basic")
                && let Some(pair) = base64_text(c)
            {
                pair_secrets(&pair, &mut out);
            }
            c
        }
        None => value,
    };
    out.push(credentials.to_string());
    finish(out)
}

/// The secrets in the user and password of every `scheme://user:password@host` in `text` (a git
/// config's URLs, as keys or values): as `forge::credential::url_secrets` finds them, and the
/// user too when the password is empty or GitHub's `x-oauth-basic` (the token is the user).
pub fn userinfo_secrets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("://").map(|i| from + i) {
        let scheme_start =
            text[..i].rfind(|c: char| !(c.is_ascii_alphanumeric() || "+.-".contains(c))).map_or(0, |p| p + 1);
        let after = &text[i + 3..];
        let end = after.find(|c: char| "/?#\"'<>[]`".contains(c) || c.is_whitespace()).unwrap_or(after.len());
        let url = format!("{}://{}", &text[scheme_start..i], &after[..end]);
        let named = crate::forge::credential::url_secrets(&url);
        out.extend(named.into_iter().filter(|s| !PUBLIC_USERS.contains(&s.as_str())));
        if let Some((userinfo, _)) = after[..end].rsplit_once('@')
            && let Some((user, password)) = userinfo.split_once(':')
            && (password.is_empty() || password == "x-oauth-basic")
        {
            out.push(user.to_string());
            out.push(percent_encoding::percent_decode_str(user).decode_utf8_lossy().into_owned());
        }
        from = i + 3;
    }
    finish(out)
}

/// `out` without blanks and repeats, each trimmed.
fn finish(out: Vec<String>) -> Vec<String> {
    let mut seen = Vec::new();
    for s in out.into_iter().map(|s| s.trim().to_string()) {
        if !s.is_empty() && !seen.contains(&s) {
            seen.push(s);
        }
    }
    seen
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
