//! Why a rule of the policy file does not compile (`RuleError`): a command pattern, a path
//! glob, an `mcp` pattern or a network rule. Its text is the message of the policy's diagnostic
//! at the rule's position (`E_POLICY`); the egress proxy reads a request's host with the same
//! parser (`network::Target::parse`), and refuses it with its own answer.

use crate::error::Code;

/// A rule that does not compile, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// globset's own words.
    #[error("{0}")]
    Glob(#[from] globset::Error),
    #[error("the pattern is empty")]
    EmptyPattern,
    #[error("`{0}` is not a `SERVER/TOOL` pattern")]
    NotServerTool(String),
    /// A glob in an `mcp` pattern.
    #[error("bad glob: {0}")]
    McpGlob(globset::Error),
    #[error("`{0}` is not a port")]
    NotAPort(String),
    #[error("an IPv6 address in brackets lacks its `]`")]
    UnclosedBracket,
    #[error("unexpected `{0}` after the address")]
    AfterAddress(String),
    #[error("`*` may only start a name (`*.example.com`); `network: true` allows every host")]
    Wildcard,
    #[error("`{}` is not a host name", .0.escape_debug())]
    NotAHostName(String),
    #[error(
        "`{}` is an IPv4 address in a spelling hone does not take; write it as four decimal numbers (`127.0.0.1`)",
        .0.escape_debug()
    )]
    OddIpv4(String),
}

impl RuleError {
    /// A rule that does not compile makes the policy file invalid.
    pub const fn code(&self) -> Code {
        Code::Policy
    }
}
