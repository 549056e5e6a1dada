//! `mcp.servers` in the job spec: the MCP servers whose tools the model may be offered, each
//! started over stdio (in the jail) or reached over streamable HTTP, checked with positions.

use super::duration::Dur;
use super::yaml::join;
use super::{Checker, dur_ser};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMcp {
    pub servers: Option<Vec<RawMcpServer>>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMcpServer {
    pub name: Option<String>,
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub env: Option<Vec<String>>,
    pub url: Option<String>,
    pub headers: Option<BTreeMap<String, String>>,
    pub required: Option<bool>,
    pub timeout: Option<Dur>,
    pub start_timeout: Option<Dur>,
}

/// One MCP server of the job.
#[derive(Debug, Clone, Serialize)]
pub struct McpServerSpec {
    /// The prefix of its tools (`NAME__TOOL`) and the `SERVER` of the policy's patterns.
    pub name: String,
    pub transport: McpTransport,
    /// A server that cannot start, or stops, ends the run; others are reported and left out.
    pub required: bool,
    /// The longest one tool call may take.
    #[serde(with = "dur_ser")]
    pub timeout: Duration,
    /// The longest the start (spawn or connect, handshake, tool list) may take.
    #[serde(with = "dur_ser")]
    pub start_timeout: Duration,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum McpTransport {
    /// `command args…` started in the jail, speaking MCP on its stdin and stdout; `env` names
    /// the variables passed through to it from hone's environment.
    Stdio { command: String, args: Vec<String>, env: Vec<String> },
    /// Streamable HTTP at `url`; each header's value is a template whose `${NAME}` parts come
    /// from hone's environment.
    Http { url: String, headers: Vec<(String, String)> },
}

/// A server name: letters, digits, `_` and `-`, at most 32, starting and ending with a letter
/// or digit, without `__` (which separates it from the tool's name, so that no two servers'
/// tools can share a name).
pub fn valid_server_name(n: &str) -> bool {
    (1..=32).contains(&n.len())
        && n.starts_with(|c: char| c.is_ascii_alphanumeric())
        && n.ends_with(|c: char| c.is_ascii_alphanumeric())
        && n.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        && !n.contains("__")
}

fn valid_env_name(n: &str) -> bool {
    !n.is_empty()
        && !n.starts_with(|c: char| c.is_ascii_digit())
        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What is wrong with a template (`${NAME}` in a header's value or the URL), or with filling it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The template, which has a `${` that does not close.
    #[error("`${{` without `}}` in `{0}`")]
    Unclosed(String),
    #[error("`${{{0}}}` is not a variable name")]
    NotAName(String),
    #[error("the environment variable `{0}` is not set")]
    Unset(String),
}

/// The variables `${NAME}` in a header template, or what is wrong with it.
pub fn template_vars(t: &str) -> Result<Vec<&str>, TemplateError> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(i) = rest.find("${") {
        let after = &rest[i + 2..];
        let end = after.find('}').ok_or_else(|| TemplateError::Unclosed(t.into()))?;
        let name = &after[..end];
        if !valid_env_name(name) {
            return Err(TemplateError::NotAName(name.into()));
        }
        out.push(name);
        rest = &after[end + 1..];
    }
    Ok(out)
}

/// Expand a header template from `lookup`; the first variable that is not set is the error.
pub fn expand(t: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, TemplateError> {
    let mut out = String::new();
    let mut rest = t;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after.find('}').ok_or_else(|| TemplateError::Unclosed(t.into()))?;
        let name = &after[..end];
        out.push_str(&lookup(name).ok_or_else(|| TemplateError::Unset(name.into()))?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Checker<'_> {
    pub(super) fn mcp(&mut self, raw: Option<RawMcp>) -> Vec<McpServerSpec> {
        let mut out: Vec<McpServerSpec> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for (i, s) in raw.and_then(|m| m.servers).unwrap_or_default().into_iter().enumerate() {
            let base = format!("mcp.servers[{i}]");
            if self.removed.contains(&base) {
                continue;
            }
            let name = s.name.clone().unwrap_or_default();
            if s.name.is_none() {
                self.missing(&join(&base, "name"), "give each server a short `name`: it prefixes its tools");
            } else if !valid_server_name(&name) {
                let help = "use letters, digits, `_` and `-` (at most 32, no `__`), starting and ending with a letter or digit";
                self.err(&join(&base, "name"), format!("`{name}` is not a valid server name"), help);
            } else if names.contains(&name) {
                self.err(&join(&base, "name"), format!("duplicate server name `{name}`"), "names must be unique");
            }
            names.push(name.clone());
            let Some(transport) = self.transport(&base, &s) else { continue };
            let timeout = |d: Option<Dur>, default: u64| d.map_or(Duration::from_secs(default), |d| d.0);
            let (timeout, start_timeout) = (timeout(s.timeout, 60), timeout(s.start_timeout, 30));
            for (key, d) in [("timeout", timeout), ("start_timeout", start_timeout)] {
                if d.is_zero() {
                    self.err(&join(&base, key), "must be more than zero", "for example `30s`");
                }
            }
            out.push(McpServerSpec { name, transport, required: s.required.unwrap_or(false), timeout, start_timeout });
        }
        out
    }

    fn transport(&mut self, base: &str, s: &RawMcpServer) -> Option<McpTransport> {
        match (&s.command, &s.url) {
            (Some(_), Some(_)) | (None, None) => {
                let help = "a stdio server has `command` (and `args`, `env`); an HTTP server has `url` (and `headers`)";
                self.err(base, "give exactly one of `command` and `url`", help);
                None
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    self.err(
                        &join(base, "command"),
                        "the command is empty",
                        "name the program, like `npx` or `python3`",
                    );
                }
                if s.headers.is_some() {
                    self.err(&join(base, "headers"), "`headers` is for HTTP servers", "remove it, or use `url`");
                }
                let env = s.env.clone().unwrap_or_default();
                for (j, e) in env.iter().enumerate() {
                    if !valid_env_name(e) {
                        let help = "list the names of variables to pass through, like `ISSUES_TOKEN`";
                        self.err(&format!("{base}.env[{j}]"), format!("`{e}` is not a variable name"), help);
                    }
                }
                Some(McpTransport::Stdio { command: command.clone(), args: s.args.clone().unwrap_or_default(), env })
            }
            (None, Some(url)) => {
                for (key, present) in [("args", s.args.is_some()), ("env", s.env.is_some())] {
                    if present {
                        let help = "use `headers` with `${NAME}` to send a variable's value";
                        self.err(&join(base, key), format!("`{key}` is for stdio servers"), help);
                    }
                }
                // A `${NAME}` in the URL (a key in its query) is filled from the environment.
                let shape = expand(url, |_| Some("x".into()));
                if let Err(e) = template_vars(url) {
                    self.err(&join(base, "url"), e.to_string(), "write `${NAME}` for a variable's value");
                } else if !(url.starts_with("http://") || url.starts_with("https://"))
                    || shape.as_deref().map_or(true, |u| reqwest::Url::parse(u).is_err())
                {
                    let help = "give the server's endpoint, like `https://mcp.example.com/mcp`";
                    self.err(&join(base, "url"), format!("`{url}` is not an http(s) URL"), help);
                }
                let headers: Vec<(String, String)> = s.headers.clone().unwrap_or_default().into_iter().collect();
                for (k, v) in &headers {
                    let at = format!("{base}.headers.{k}");
                    if http::HeaderName::from_bytes(k.as_bytes()).is_err() {
                        self.err(&at, format!("`{k}` is not a header name"), "for example `Authorization`");
                    } else if let Err(e) = template_vars(v) {
                        self.err(
                            &at,
                            e.to_string(),
                            "write the value with `${NAME}` for a variable, like `Bearer ${DOCS_TOKEN}`",
                        );
                    } else if v.contains(['\r', '\n']) {
                        self.err(&at, "a header value cannot hold a line break", "write it on one line");
                    }
                }
                Some(McpTransport::Http { url: url.clone(), headers })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Diagnostic, SpecError, parse};
    use std::path::Path;

    const HEAD: &str =
        "version: 1\ntask: t\nmodel: { provider: openai, name: m }\nverify:\n  - { name: t, run: 'true' }\n";

    fn check(mcp: &str) -> Result<Vec<McpServerSpec>, Vec<Diagnostic>> {
        match parse(Path::new("dir/job.yaml"), &format!("{HEAD}mcp:\n  servers:\n{mcp}")) {
            Ok(job) => Ok(job.mcp),
            Err(SpecError::Invalid(d)) => Err(d),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn servers_are_read_with_their_defaults() {
        let s = check(
            "    - { name: issues, command: npx, args: [-y, srv], env: [TOKEN] }\n    - name: docs\n      url: https://mcp.example.com/mcp\n      headers: { Authorization: 'Bearer ${DOCS_TOKEN}' }\n      required: true\n      timeout: 10s\n",
        )
        .unwrap();
        assert_eq!(
            (s[0].name.as_str(), s[0].required, s[0].timeout.as_secs(), s[0].start_timeout.as_secs()),
            ("issues", false, 60, 30)
        );
        let McpTransport::Stdio { command, args, env } = &s[0].transport else { panic!() };
        assert_eq!((command.as_str(), args.len(), env[0].as_str()), ("npx", 2, "TOKEN"));
        let McpTransport::Http { url, headers } = &s[1].transport else { panic!() };
        assert_eq!(url, "https://mcp.example.com/mcp");
        assert_eq!(headers[0], ("Authorization".to_string(), "Bearer ${DOCS_TOKEN}".to_string()));
        assert!(s[1].required && s[1].timeout.as_secs() == 10);
    }

    #[test]
    fn mistakes_are_reported_where_they_are() {
        let e = check(
            "    - { name: a__b, command: x }\n    - { name: ok, command: x, url: 'http://h/' }\n    - { name: ok2, url: 'ftp://h/', env: [A] }\n    - { name: ok3, command: x, headers: { A: b }, env: ['1X'] }\n    - { name: ok4, url: 'http://h/', headers: { A: '${' } }\n    - { command: x }\n    - { name: ok, command: x, timeout: 0s }\n",
        )
        .unwrap_err();
        let got: Vec<(String, u64, &str)> =
            e.iter().map(|d| (d.path.clone(), d.line, d.message.split(':').next().unwrap_or(""))).collect();
        let mut paths: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
        paths.sort();
        assert_eq!(
            paths,
            [
                "mcp.servers[0].name",
                "mcp.servers[1]",
                "mcp.servers[2].env",
                "mcp.servers[2].url",
                "mcp.servers[3].env[0]",
                "mcp.servers[3].headers",
                "mcp.servers[4].headers.A",
                "mcp.servers[5].name",
                "mcp.servers[6].name",
                "mcp.servers[6].timeout",
            ],
            "{e:#?}"
        );
        let at = |p: &str| e.iter().find(|d| d.path == p).unwrap();
        assert_eq!(at("mcp.servers[0].name").line, 8, "the line of the first server");
        assert!(at("mcp.servers[1]").message.contains("exactly one of `command` and `url`"));
        assert!(at("mcp.servers[6].name").message.contains("duplicate server name `ok`"));
        assert!(at("mcp.servers[2].env").message.contains("for stdio servers"));
    }

    #[test]
    fn header_templates_expand_from_the_environment() {
        assert_eq!(template_vars("Bearer ${A_1} ${B}").unwrap(), vec!["A_1", "B"]);
        assert!(template_vars("x ${1A}").is_err());
        assert!(template_vars("x ${A").is_err());
        assert_eq!(template_vars("$5 plain").unwrap(), Vec::<&str>::new());
        let env = |n: &str| (n == "T").then(|| "s3cret".to_string());
        assert_eq!(expand("Bearer ${T}!", env).unwrap(), "Bearer s3cret!");
        assert_eq!(expand("${U}", env), Err(TemplateError::Unset("U".into())));
        assert_eq!(expand("${U}", env).unwrap_err().to_string(), "the environment variable `U` is not set");
    }

    #[test]
    fn server_names_are_prefixes() {
        for ok in ["issues", "a", "my-docs_2"] {
            assert!(valid_server_name(ok), "{ok}");
        }
        for bad in ["", "-x", "x_", "x-", "a__b", "a/b", "a.b", &"x".repeat(33)] {
            assert!(!valid_server_name(bad), "{bad}");
        }
    }

    #[test]
    fn urls_may_take_a_key_from_the_environment_and_values_stay_on_one_line() {
        let ok = check("    - { name: u, url: 'https://h.example/mcp?key=${KEY}' }\n").unwrap();
        let McpTransport::Http { url, .. } = &ok[0].transport else { panic!() };
        assert_eq!(url, "https://h.example/mcp?key=${KEY}");
        let e = check(
            "    - { name: a, url: 'https://h/${1X}' }\n    - { name: b, command: '' }\n    - { name: c, url: 'http://h/', headers: { A: \"x\\ny\" } }\n",
        )
        .unwrap_err();
        let got: Vec<(&str, &str)> = e.iter().map(|d| (d.path.as_str(), d.message.as_str())).collect();
        assert_eq!(
            got,
            [
                ("mcp.servers[0].url", "`${1X}` is not a variable name"),
                ("mcp.servers[1].command", "the command is empty"),
                ("mcp.servers[2].headers.A", "a header value cannot hold a line break"),
            ]
        );
    }
}
