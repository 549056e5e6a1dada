//! Durations written as `90s`, `2m`, `1h` or `500ms` (and combinations such as `1h30m`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::time::Duration;

/// A duration that deserializes from the spec's compact form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub Duration);

pub const DURATION_HELP: &str = "write a number and a unit: `500ms`, `90s`, `2m` or `1h` (units may combine: `1h30m`)";

/// Parse `90s`, `2m`, `1h`, `500ms`, `1h30m`. Whitespace and other units are refused.
pub fn parse(s: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let n: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (unit, len) = if rest.starts_with("ms") {
            (Duration::from_millis(1), 2)
        } else if rest.starts_with('s') {
            (Duration::from_secs(1), 1)
        } else if rest.starts_with('m') {
            (Duration::from_secs(60), 1)
        } else if rest.starts_with('h') {
            (Duration::from_secs(3600), 1)
        } else {
            return None;
        };
        rest = &rest[len..];
        total = total.checked_add(unit.checked_mul(u32::try_from(n).ok()?)?)?;
    }
    Some(total)
}

/// Format as the shortest exact form (`90s`, `2m`, `1h`, `1500ms`).
pub fn format(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) {
        format!("{ms}ms")
    } else if ms.is_multiple_of(3_600_000) && ms > 0 {
        format!("{}h", ms / 3_600_000)
    } else if ms.is_multiple_of(60_000) && ms > 0 {
        format!("{}m", ms / 60_000)
    } else {
        format!("{}s", ms / 1000)
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let s = match &v {
            serde_json::Value::String(s) => s.clone(),
            other => {
                return Err(serde::de::Error::custom(format!("expected a duration, found `{other}`: {DURATION_HELP}")));
            }
        };
        parse(&s).map(Dur).ok_or_else(|| serde::de::Error::custom(format!("`{s}` is not a duration: {DURATION_HELP}")))
    }
}

impl schemars::JsonSchema for Dur {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^([0-9]+(ms|s|m|h))+$",
            "description": "a number and a unit: `500ms`, `90s`, `2m` or `1h` (units may combine: `1h30m`)",
        })
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_forms() {
        assert_eq!(parse("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(parse("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse("1h30m"), Some(Duration::from_secs(5400)));
    }

    #[test]
    fn refuses_other_forms() {
        for bad in ["", "5", "5 minutes", "m", "1d", "-1s", "1.5s", " 1s", "1s ", "99999999999999999999s"] {
            assert_eq!(parse(bad), None, "{bad:?} should not parse");
        }
    }

    #[test]
    fn formats_round_trip() {
        for s in ["90s", "2m", "1h", "1500ms"] {
            assert_eq!(format(parse(s).unwrap()), s);
        }
    }
}
