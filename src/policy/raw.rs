//! Raw serde types mirroring the policy file; `policy::load` applies defaults and checks.

use serde::Deserialize;

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    /// The policy format: must be 1.
    #[schemars(range(min = 1, max = 1))]
    pub version: Option<u32>,
    /// Which commands the model may run.
    pub commands: Option<RawCommands>,
    /// Which paths the model may read and write.
    pub paths: Option<RawPaths>,
    /// Where commands may connect: false (default, nowhere), true (anywhere), or
    /// `{ allow: [HOST, ...] }` (only there, through hone's proxy).
    pub network: Option<RawNetwork>,
    /// What the job's setup commands may do beyond every command.
    pub setup: Option<RawSetup>,
    /// Which MCP tools the model is offered: globs over SERVER/TOOL; none by default.
    pub mcp: Option<RawMcp>,
    /// on (default): commands run in the jail; off: unconfined, on purpose.
    pub sandbox: Option<SandboxMode>,
    /// Which environment variables commands get.
    pub env: Option<RawEnv>,
    /// Names of more environment variables whose values are redacted.
    pub secrets: Option<Vec<String>>,
    /// The size limits of a change.
    pub limits: Option<RawLimits>,
}

/// What the job's setup commands may do beyond every command.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawSetup {
    /// Where setup may connect beyond where commands may (to install dependencies): true, or
    /// `{ allow: [HOST, ...] }`; commands after it still get only `network`.
    pub network: Option<RawNetwork>,
}

/// `network:` (of commands, setup or MCP servers): a switch, or an allow-list of hosts.
#[derive(Debug, schemars::JsonSchema)]
#[serde(untagged)]
pub enum RawNetwork {
    /// false: no network; true: the host's whole network.
    Switch(bool),
    /// Only these hosts, through hone's proxy.
    List(RawAllow),
}

/// Read by hand, so that a wrong value says what is expected (an untagged enum's error names
/// only the enum).
impl<'de> Deserialize<'de> for RawNetwork {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RawNetwork;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("`true`, `false` or `{ allow: [HOST, ...] }`")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<RawNetwork, E> {
                Ok(RawNetwork::Switch(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawNetwork, A::Error> {
                RawAllow::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(RawNetwork::List)
            }
        }
        d.deserialize_any(Visit)
    }
}

/// `{ allow: [...] }`: host names (`pypi.org`), `*.` and a domain (`*.pythonhosted.org`), or
/// addresses, each with an optional `:PORT`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAllow {
    pub allow: Vec<String>,
}

/// Which MCP tools the model is offered: globs over `SERVER/TOOL`; a deny wins, and a tool no
/// allow names is not offered.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMcp {
    /// Globs over SERVER/TOOL of the tools to offer, like `issues/lookup_*`.
    pub allow: Option<Vec<String>>,
    /// Globs over SERVER/TOOL never offered, even when an allow matches.
    pub deny: Option<Vec<String>>,
    /// Where stdio MCP servers may connect beyond where commands may: true, or
    /// `{ allow: [HOST, ...] }`.
    pub network: Option<RawNetwork>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    On,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Default {
    Allow,
    Deny,
    /// An interactive tool would ask; with nobody to ask, this is a deny.
    Ask,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCommands {
    pub default: Option<Default>,
    pub allow: Option<Vec<String>>,
    pub deny: Option<Vec<String>>,
    pub examples: Option<RawExamples>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawExamples {
    pub allow: Option<Vec<String>>,
    pub deny: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPaths {
    pub read_deny: Option<Vec<String>>,
    pub write_allow: Option<Vec<String>>,
    pub write_deny: Option<Vec<String>>,
    pub sandbox_writable: Option<Vec<String>>,
    pub sandbox_readable: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEnv {
    pub pass: Option<Vec<String>>,
    pub pass_secrets: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    pub max_files_changed: Option<usize>,
    pub max_lines_changed: Option<usize>,
    /// The most bytes a change may add and remove (changed lines of text files, whole binary
    /// files); default 10485760 (10 MiB).
    pub max_bytes_changed: Option<u64>,
}
