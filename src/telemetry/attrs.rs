//! Attribute values as hone exports them: every text bounded in size (what the repository or the
//! model wrote can be anything), times read from the events' stamps, and the GenAI conventions'
//! names for hone's providers.

use opentelemetry::KeyValue;
use std::time::{Duration, SystemTime};

/// The longest attribute value taken from the repository, the model or a command (bytes).
pub const MAX_VALUE: usize = 256;
/// The longest captured content (a message, a tool's arguments or result), with content capture.
pub const MAX_CONTENT: usize = 8 * 1024;

/// `s` cut to at most `max` bytes at a character boundary, marked when cut.
pub fn bounded(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub(3);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

/// A text attribute, bounded.
pub fn text(key: &'static str, value: &str) -> KeyValue {
    KeyValue::new(key, bounded(value, MAX_VALUE))
}

pub fn int(key: &'static str, value: impl TryInto<i64>) -> KeyValue {
    KeyValue::new(key, value.try_into().unwrap_or(i64::MAX))
}

/// An RFC 3339 stamp as a time (`None` when it is not one).
pub fn at(ts: &str) -> Option<SystemTime> {
    time::OffsetDateTime::parse(ts, &time::format_description::well_known::Rfc3339).ok().map(SystemTime::from)
}

/// `t` less `ms` milliseconds (a span that ended at `t` after lasting `ms`).
pub fn before(t: SystemTime, ms: u64) -> SystemTime {
    t.checked_sub(Duration::from_millis(ms)).unwrap_or(t)
}

/// A tool's name as telemetry shows it: the name when it is one a tool could have (letters,
/// digits, `_`, `-`, `.`, `:`, at most 64), `unknown` otherwise (what a model made up).
pub fn tool_name(name: &str) -> &str {
    let plain = name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'));
    if plain && !name.is_empty() && name.len() <= 64 { name } else { "unknown" }
}

/// A check's verdict as telemetry names it (from a `verify_completed` event's fields).
pub fn verdict(passed: bool, accepted: bool, timed_out: bool) -> &'static str {
    match (passed, accepted, timed_out) {
        (_, _, true) => "timed_out",
        (true, _, _) => "pass",
        (false, true, _) => "no_regression",
        (false, false, _) => "fail",
    }
}

/// The GenAI conventions' `gen_ai.provider.name` for a provider of hone's.
pub fn provider(p: &str) -> &str {
    match p {
        "azure" => "azure.ai.openai",
        "bedrock" => "aws.bedrock",
        "vertex" => "gcp.vertex_ai",
        "openai_compatible" | "openai-compatible" => "openai",
        other => other,
    }
}

/// `provider/model`, as a turn names the model that answered, split.
pub fn split_model(m: &str) -> (&str, &str) {
    m.split_once('/').unwrap_or(("", m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_bounded_at_a_character_boundary() {
        assert_eq!(bounded("short", 10), "short");
        let long = "é".repeat(200);
        let b = bounded(&long, 256);
        assert!(b.len() <= 256 && b.ends_with("..."), "{}", b.len());
        assert_eq!(provider("bedrock"), "aws.bedrock");
        assert_eq!(split_model("openai/gpt-4o"), ("openai", "gpt-4o"));
        assert_eq!(split_model("bare"), ("", "bare"));
        let t = at("2026-11-29T10:00:01.5Z").unwrap();
        assert_eq!(before(t, 500), at("2026-11-29T10:00:01Z").unwrap());
        assert_eq!(at("yesterday"), None);
    }
}
