//! The trace a run or fleet joins: the W3C `TRACEPARENT` of the environment, as CI systems and
//! tools that trace them set it, read with OpenTelemetry's own propagator (its sampled flag
//! kept: an unsampled parent gets no spans); a new trace when there is none or it is not valid.

use super::tree::Parent;
use crate::env::RunEnv;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use std::collections::HashMap;

/// The W3C form: `version-trace-span-flags`, lower-case hex of 2, 32, 16 and 2 digits (the
/// propagator alone takes shorter ids too).
fn well_formed(t: &str) -> bool {
    let parts: Vec<&str> = t.split('-').collect();
    parts.len() >= 4
        && parts.iter().zip([2, 32, 16, 2]).all(|(p, n)| p.len() == n)
        && parts.iter().all(|p| p.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// The parent `traceparent` names, or `None` when it is not a valid one.
pub fn parse(traceparent: &str) -> Option<Parent> {
    if !well_formed(traceparent.trim()) {
        return None;
    }
    let carrier = HashMap::from([("traceparent".to_string(), traceparent.trim().to_string())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    let span = cx.span();
    let sc = span.span_context();
    let sampled = sc.is_sampled();
    sc.is_valid().then(|| Parent { trace_id: sc.trace_id(), span_id: sc.span_id(), remote: true, sampled })
}

/// The environment's `TRACEPARENT`, or a new trace.
pub fn from_env(env: &RunEnv) -> Parent {
    env.var("TRACEPARENT").and_then(parse).unwrap_or_else(Parent::new_trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_traceparent_is_the_parent_and_anything_else_starts_a_trace() {
        let p = parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert!(p.sampled);
        assert!(!parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").unwrap().sampled);
        assert_eq!(p.trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(p.span_id.to_string(), "00f067aa0ba902b7");
        assert!(p.remote);
        let upper = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01";
        for bad in
            ["", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f35-00f0-01", upper]
        {
            assert_eq!(parse(bad), None, "{bad}");
        }
        let env = RunEnv::from_vars([("TRACEPARENT".to_string(), "nonsense".to_string())].into());
        let fresh = from_env(&env);
        assert!(!fresh.remote && fresh.trace_id != opentelemetry::trace::TraceId::INVALID);
    }
}
