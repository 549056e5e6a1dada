//! Raw serde types mirroring the policy file; `policy::load` applies defaults and checks.

use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    pub version: Option<u32>,
    pub commands: Option<RawCommands>,
    pub paths: Option<RawPaths>,
    pub network: Option<bool>,
    pub setup: Option<RawSetup>,
    pub mcp: Option<RawMcp>,
    pub sandbox: Option<SandboxMode>,
    pub env: Option<RawEnv>,
    pub secrets: Option<Vec<String>>,
    pub limits: Option<RawLimits>,
}

/// What the job's setup commands may do beyond every command.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSetup {
    /// Setup reaches the network (to install dependencies); commands after it still do not.
    pub network: Option<bool>,
}

/// Which MCP tools the model is offered: globs over `SERVER/TOOL`; a deny wins, and a tool no
/// allow names is not offered.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMcp {
    pub allow: Option<Vec<String>>,
    pub deny: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    On,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Default {
    Allow,
    Deny,
    /// An interactive tool would ask; with nobody to ask, this is a deny.
    Ask,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCommands {
    pub default: Option<Default>,
    pub allow: Option<Vec<String>>,
    pub deny: Option<Vec<String>>,
    pub examples: Option<RawExamples>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExamples {
    pub allow: Option<Vec<String>>,
    pub deny: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPaths {
    pub read_deny: Option<Vec<String>>,
    pub write_allow: Option<Vec<String>>,
    pub write_deny: Option<Vec<String>>,
    pub sandbox_writable: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEnv {
    pub pass: Option<Vec<String>>,
    pub pass_secrets: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    pub max_files_changed: Option<usize>,
    pub max_lines_changed: Option<usize>,
}
