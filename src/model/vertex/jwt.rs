//! The JWT a service account proves itself with (RFC 7523): RS256 over the claims Google's
//! token endpoint checks (`iss`, `sub`, `aud`, `scope`, `iat`, `exp`), signed with the key from
//! the credentials file. aws-lc-rs signs (it is rustls's crypto already); rustls-pki-types reads
//! the PEM.

use aws_lc_rs::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rustls_pki_types::PrivateKeyDer;
use rustls_pki_types::pem::PemObject;
use serde_json::{Value, json};

/// How long an assertion is valid: an hour, the longest Google accepts.
pub const LIFETIME_SECS: u64 = 3600;

/// A service account's private key, ready to sign.
pub struct Signer {
    key: RsaKeyPair,
    /// `private_key_id`, sent as the header's `kid` so Google picks the key at once.
    key_id: Option<String>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

impl Signer {
    /// The RSA key in `pem` (PKCS#8, as Google issues them, or PKCS#1). The error says what is
    /// wrong without repeating any of the key.
    pub fn from_pem(pem: &str, key_id: Option<String>) -> Result<Signer, String> {
        let der = PrivateKeyDer::from_pem_slice(pem.as_bytes())
            .map_err(|e| format!("has a `private_key` that is not a PEM private key ({})", pem_problem(&e)))?;
        let key = match &der {
            PrivateKeyDer::Pkcs8(k) => RsaKeyPair::from_pkcs8(k.secret_pkcs8_der()),
            PrivateKeyDer::Pkcs1(k) => RsaKeyPair::from_der(k.secret_pkcs1_der()),
            _ => return Err("has a `private_key` that is not an RSA key".into()),
        }
        .map_err(|e| format!("has a `private_key` that is not a usable RSA key ({e})"))?;
        Ok(Signer { key, key_id })
    }

    /// The signed assertion `header.claims.signature`, each part base64url without padding.
    pub fn assertion(&self, claims: &Value) -> Result<String, String> {
        let mut header = json!({"alg": "RS256", "typ": "JWT"});
        if let Some(kid) = &self.key_id {
            header["kid"] = json!(kid);
        }
        let signing_input =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let mut sig = vec![0u8; self.key.public_modulus_len()];
        let rng = aws_lc_rs::rand::SystemRandom::new();
        self.key
            .sign(&RSA_PKCS1_SHA256, &rng, signing_input.as_bytes(), &mut sig)
            .map_err(|_| "the key could not sign the assertion".to_string())?;
        Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig)))
    }
}

/// The PEM error without echoing the input.
fn pem_problem(e: &rustls_pki_types::pem::Error) -> &'static str {
    use rustls_pki_types::pem::Error as E;
    match e {
        E::NoItemsFound => "no `-----BEGIN PRIVATE KEY-----` block",
        E::Base64Decode(_) => "its base64 does not decode",
        E::MissingSectionEnd { .. } | E::IllegalSectionStart { .. } => "a section is cut or malformed",
        _ => "it does not parse",
    }
}

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

    const KEY: &str = include_str!("../../../tests/data/vertex/service-account-key.pem");

    fn part(token: &str, i: usize) -> Value {
        let p = token.split('.').nth(i).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap()
    }

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

    #[test]
    fn signs_rs256_with_a_kid() {
        let s = Signer::from_pem(KEY, Some("key-1".into())).unwrap();
        let c = claims("a@b", "aud", "s", 1);
        let t = s.assertion(&c).unwrap();
        assert_eq!(t.split('.').count(), 3);
        assert_eq!(part(&t, 0), json!({"alg": "RS256", "typ": "JWT", "kid": "key-1"}));
        assert_eq!(part(&t, 1), c);
        let sig = URL_SAFE_NO_PAD.decode(t.split('.').nth(2).unwrap()).unwrap();
        assert_eq!(sig.len(), 256, "a 2048-bit key signs 256 bytes");
        assert_eq!(t, s.assertion(&c).unwrap(), "PKCS#1 v1.5 signatures are deterministic");
    }

    #[test]
    fn bad_keys_say_why_without_echoing_them() {
        for (pem, why) in [
            ("", "no `-----BEGIN"),
            ("-----BEGIN PRIVATE KEY-----\nnot base64!!\n-----END PRIVATE KEY-----\n", "PEM"),
            ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "not a usable RSA key"),
        ] {
            let e = Signer::from_pem(pem, None).unwrap_err();
            assert!(e.contains(why), "{pem:?}: {e}");
            assert!(!e.contains("AAAA") && !e.contains("not base64"), "{e}");
        }
        let cut = &KEY[..KEY.len() / 2];
        assert!(Signer::from_pem(cut, None).is_err());
    }
}
