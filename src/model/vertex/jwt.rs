//! The JWT a service account proves itself with (RFC 7523): the claims Google's token endpoint
//! checks (`iss`, `sub`, `aud`, `scope`, `iat`, `exp`), signed RS256 (`crate::jwt`) with the key
//! from the credentials file.

use serde_json::{Value, json};

/// How long an assertion is valid: an hour, the longest Google accepts.
pub const LIFETIME_SECS: u64 = 3600;

/// The claims for `email` asking `token_uri` for a `scope` token, issued at `now` (Unix
/// seconds), valid an hour.
pub fn claims(email: &str, token_uri: &str, scope: &str, now: u64) -> Value {
    json!({
        "iss": email,
        "sub": email,
        "aud": token_uri,
        "scope": scope,
        "iat": now,
        "exp": now + LIFETIME_SECS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_what_google_checks() {
        let c = claims("sa@p.iam.gserviceaccount.com", "https://oauth2.googleapis.com/token", "s", 1_700_000_000);
        assert_eq!(c["iss"], "sa@p.iam.gserviceaccount.com");
        assert_eq!(c["sub"], c["iss"]);
        assert_eq!(c["aud"], "https://oauth2.googleapis.com/token");
        assert_eq!(c["scope"], "s");
        assert_eq!(c["iat"], 1_700_000_000u64);
        assert_eq!(c["exp"], 1_700_003_600u64, "an hour");
    }
}
