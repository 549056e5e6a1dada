//! Entry points for the benchmarks in `benches/`: a tool context over a tree under the built-in
//! policy, and a call through the tools' dispatch as the agent loop makes it. Not a stable API.

use crate::protocol::ToolCall;
use crate::tools::{ToolContext, dispatch};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The read tools over one tree, as one run would have them.
pub struct Tools {
    ctx: Arc<ToolContext>,
    rt: tokio::runtime::Runtime,
}

impl Tools {
    pub fn new(tree: &Path) -> std::io::Result<Tools> {
        let limits = crate::spec::ToolLimits {
            cmd_timeout: Duration::from_secs(30),
            max_output_bytes: 1 << 24,
            max_read_bytes: 1 << 20,
        };
        let ctx = Arc::new(ToolContext::standalone(tree, limits, vec![])?);
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        Ok(Tools { ctx, rt })
    }

    /// The content of the result of tool `name` called with `args` (JSON).
    pub fn call(&self, name: &str, args: &str) -> String {
        let call = ToolCall { id: "bench".into(), name: name.into(), arguments: args.into() };
        self.rt.block_on(dispatch(&self.ctx, &call)).content
    }
}

/// The redactor with `secrets` registered, as a run has it.
pub fn redactor(secrets: &[&str]) -> impl Fn(&str) -> String {
    let r = crate::redact::Redactor::new();
    for s in secrets {
        r.add(s);
    }
    move |text| r.apply(text)
}

/// The spelled-out scan of the redactor alone (`redact::spaced`): `text` with `secret` masked.
pub fn spelled_out(text: &str, secret: &str) -> String {
    crate::redact::spaced::mask(text, secret.as_bytes(), crate::redact::MASK)
}
