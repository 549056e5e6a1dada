//! RS256 JSON Web Tokens signed with an RSA private key in PEM: a Google service account's
//! assertion (`model::vertex`) and a GitHub App's JWT (`forge::app`). aws-lc-rs signs (it is
//! rustls's crypto already); rustls-pki-types reads the PEM.

use crate::error::Code;
use aws_lc_rs::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rustls_pki_types::PrivateKeyDer;
use rustls_pki_types::pem::PemObject;
use serde_json::{Value, json};

/// What is wrong with a private key. The text completes "the key …" (`is not a PEM private key
/// (…)`), saying what is wrong without repeating any of the key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("is not a PEM private key ({0})")]
    NotPem(&'static str),
    #[error("is not an RSA key")]
    NotRsa,
    #[error("is not a usable RSA key ({0})")]
    Unusable(aws_lc_rs::error::KeyRejected),
}

/// The key could not sign a token (aws-lc-rs says no more).
#[derive(Debug, thiserror::Error)]
#[error("the key could not sign the token")]
pub struct SignError;

impl KeyError {
    /// A key is part of the configuration hone is given.
    pub const fn code(&self) -> Code {
        Code::Spec
    }
}

impl SignError {
    /// A key that loaded but does not sign is the configuration's too.
    pub const fn code(&self) -> Code {
        Code::Spec
    }
}

/// An RSA private key, ready to sign.
pub struct Signer {
    key: RsaKeyPair,
    /// Sent as the header's `kid` (Google's `private_key_id`), so the verifier picks the key at once.
    key_id: Option<String>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

impl Signer {
    /// The RSA key in `pem` (PKCS#8 or PKCS#1, as GitHub issues App keys).
    pub fn from_pem(pem: &str, key_id: Option<String>) -> Result<Signer, KeyError> {
        let der = PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| KeyError::NotPem(pem_problem(&e)))?;
        let key = match &der {
            PrivateKeyDer::Pkcs8(k) => RsaKeyPair::from_pkcs8(k.secret_pkcs8_der()),
            PrivateKeyDer::Pkcs1(k) => RsaKeyPair::from_der(k.secret_pkcs1_der()),
            _ => return Err(KeyError::NotRsa),
        }
        .map_err(KeyError::Unusable)?;
        Ok(Signer { key, key_id })
    }

    /// The signed token `header.claims.signature`, each part base64url without padding.
    pub fn assertion(&self, claims: &Value) -> Result<String, SignError> {
        let mut header = json!({"alg": "RS256", "typ": "JWT"});
        if let Some(kid) = &self.key_id {
            header["kid"] = json!(kid);
        }
        let signing_input =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let mut sig = vec![0u8; self.key.public_modulus_len()];
        let rng = aws_lc_rs::rand::SystemRandom::new();
        self.key.sign(&RSA_PKCS1_SHA256, &rng, signing_input.as_bytes(), &mut sig).map_err(|_| SignError)?;
        Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig)))
    }
}

/// The PEM error without echoing the input.
fn pem_problem(e: &rustls_pki_types::pem::Error) -> &'static str {
    use rustls_pki_types::pem::Error as E;
    match e {
        E::NoItemsFound => "no `-----BEGIN PRIVATE KEY-----` or `-----BEGIN RSA PRIVATE KEY-----` block",
        E::Base64Decode(_) => "its base64 does not decode",
        E::MissingSectionEnd { .. } | E::IllegalSectionStart { .. } => "a section is cut or malformed",
        _ => "it does not parse",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = include_str!("../tests/data/vertex/service-account-key.pem");

    fn part(token: &str, i: usize) -> Value {
        let p = token.split('.').nth(i).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap()
    }

    #[test]
    fn signs_rs256_with_a_kid() {
        let s = Signer::from_pem(KEY, Some("key-1".into())).unwrap();
        let c = json!({"iss": "a@b", "iat": 1});
        let t = s.assertion(&c).unwrap();
        assert_eq!(t.split('.').count(), 3);
        assert_eq!(part(&t, 0), json!({"alg": "RS256", "typ": "JWT", "kid": "key-1"}));
        assert_eq!(part(&t, 1), c);
        let sig = URL_SAFE_NO_PAD.decode(t.split('.').nth(2).unwrap()).unwrap();
        assert_eq!(sig.len(), 256, "a 2048-bit key signs 256 bytes");
        assert_eq!(t, s.assertion(&c).unwrap(), "PKCS#1 v1.5 signatures are deterministic");
        let no_kid = Signer::from_pem(KEY, None).unwrap().assertion(&c).unwrap();
        assert_eq!(part(&no_kid, 0), json!({"alg": "RS256", "typ": "JWT"}));
    }

    #[test]
    fn bad_keys_say_why_without_echoing_them() {
        for (pem, why) in [
            ("", "no `-----BEGIN"),
            ("-----BEGIN PRIVATE KEY-----\nnot base64!!\n-----END PRIVATE KEY-----\n", "PEM"),
            ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "not a usable RSA key"),
        ] {
            let e = Signer::from_pem(pem, None).unwrap_err().to_string();
            assert!(e.contains(why), "{pem:?}: {e}");
            assert!(!e.contains("AAAA") && !e.contains("not base64"), "{e}");
        }
        let cut = &KEY[..KEY.len() / 2];
        assert!(Signer::from_pem(cut, None).is_err());
    }
}
