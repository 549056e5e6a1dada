//! `policy.network` of the report: where each kind of jail could connect, and the connections
//! hone's proxy made for them.

use serde::Serialize;

/// `policy.network` of the report.
#[derive(Debug, Clone, Serialize, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct NetworkReport {
    /// Where commands could connect: `off`, `open` or `allow-list` (through hone's proxy).
    pub commands: String,
    /// Where setup could connect.
    pub setup: String,
    /// Where stdio MCP servers could connect.
    pub mcp: String,
    /// Connections through the proxy, by purpose, host, port and whether they were allowed.
    pub hosts: Vec<crate::egress::HostTally>,
}

impl NetworkReport {
    /// The modes of `policy`, with no connection yet.
    pub fn of(policy: &crate::policy::Policy) -> NetworkReport {
        NetworkReport {
            commands: policy.network.mode().into(),
            setup: policy.setup_egress().mode().into(),
            mcp: policy.mcp_egress().mode().into(),
            hosts: vec![],
        }
    }
}
