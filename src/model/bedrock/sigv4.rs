//! AWS Signature Version 4 (`AWS4-HMAC-SHA256`) for hone's Bedrock requests, on `hmac` and
//! `sha2`: the canonical request (the path as sent, encoded once more as AWS does for every
//! service but S3; no query; the signed headers sorted by name with their values trimmed), the
//! string to sign over the credential scope, and the key derived from the secret, the date, the
//! region and the service.

use crate::model::auth::Secrets;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// AWS credentials: an access key, and the session token of temporary ones.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    /// Never the secret or the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("access_key_id", &self.access_key_id).finish_non_exhaustive()
    }
}

impl Secrets for Credentials {
    fn secrets(&self) -> Vec<&str> {
        let mut s = vec![self.secret_access_key.as_str()];
        s.extend(self.session_token.as_deref());
        s
    }
}

/// What a signature covers of one request.
pub struct Request<'a> {
    pub method: &'a str,
    /// The `Host` header as sent: the host, with the port when it is not the scheme's default.
    pub host: &'a str,
    /// The path as it goes on the wire (each segment already percent-encoded once).
    pub path: &'a str,
    /// Further headers to sign (`content-type`, …), beyond the ones the signer adds.
    pub headers: &'a [(&'a str, &'a str)],
    pub body: &'a [u8],
}

/// Where and when: the credential scope's region and service, the time, and whether the body's
/// hash goes in an `x-amz-content-sha256` header too.
pub struct Scope<'a> {
    pub region: &'a str,
    pub service: &'a str,
    /// `YYYYMMDDTHHMMSSZ`, UTC.
    pub amz_date: &'a str,
    pub content_sha256_header: bool,
}

/// The headers a signed request carries: `authorization`, `x-amz-date`, and the body's hash and
/// the session token when they are signed.
pub type SignedHeaders = Vec<(&'static str, String)>;

/// Sign `req`: the headers to add to it.
pub fn sign(creds: &Credentials, scope: &Scope<'_>, req: &Request<'_>) -> SignedHeaders {
    let payload_hash = hex(&Sha256::digest(req.body));
    let mut added: SignedHeaders = vec![("x-amz-date", scope.amz_date.to_string())];
    if scope.content_sha256_header {
        added.push(("x-amz-content-sha256", payload_hash.clone()));
    }
    if let Some(t) = &creds.session_token {
        added.push(("x-amz-security-token", t.clone()));
    }
    let mut all: Vec<(String, String)> = vec![("host".into(), req.host.to_string())];
    all.extend(req.headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    all.extend(added.iter().map(|(k, v)| (k.to_string(), v.clone())));
    let (canonical, signed) = canonical_request(req.method, req.path, &all, &payload_hash);
    let date = scope.amz_date.get(..8).unwrap_or_default();
    let credential_scope = format!("{date}/{}/{}/aws4_request", scope.region, scope.service);
    let to_sign = string_to_sign(scope.amz_date, &credential_scope, &canonical);
    let key = signing_key(&creds.secret_access_key, date, scope.region, scope.service);
    let signature = hex(&hmac(&key, to_sign.as_bytes()));
    let authorization = format!(
        "{ALGORITHM} Credential={}/{credential_scope}, SignedHeaders={signed}, Signature={signature}",
        creds.access_key_id
    );
    added.insert(0, ("authorization", authorization));
    added
}

/// The canonical request and its signed-header list. Header names are lower-cased and sorted,
/// values trimmed with inner runs of spaces made one, and a name given twice has its values
/// joined with commas.
pub fn canonical_request(
    method: &str,
    path: &str,
    headers: &[(String, String)],
    payload_hash: &str,
) -> (String, String) {
    let mut sorted: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    for (k, v) in headers {
        let value = v.split_whitespace().collect::<Vec<_>>().join(" ");
        sorted.entry(k.to_ascii_lowercase()).or_default().push(value);
    }
    let mut canonical_headers = String::new();
    for (k, vs) in &sorted {
        let _ = writeln!(canonical_headers, "{k}:{}", vs.join(","));
    }
    let signed = sorted.keys().cloned().collect::<Vec<_>>().join(";");
    let uri = uri_encode(path.as_bytes(), true);
    (format!("{method}\n{uri}\n\n{canonical_headers}\n{signed}\n{payload_hash}"), signed)
}

fn string_to_sign(amz_date: &str, credential_scope: &str, canonical: &str) -> String {
    format!("{ALGORITHM}\n{amz_date}\n{credential_scope}\n{}", hex(&Sha256::digest(canonical.as_bytes())))
}

/// The signing key: HMAC chained over the date, region, service and `aws4_request`.
fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> Vec<u8> {
    let k_date = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k_region = hmac(&k_date, region.as_bytes());
    let k_service = hmac(&k_region, service.as_bytes());
    hmac(&k_service, b"aws4_request")
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length: `new_from_slice` cannot fail for it.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        return Vec::new();
    };
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// AWS's URI encoding: every byte but the unreserved ones (`A-Z a-z 0-9 - _ . ~`) as `%XX` in
/// upper case; `/` kept when `keep_slash` (a path), encoded otherwise (a path segment, such as
/// a model id that is an ARN).
pub fn uri_encode(bytes: &[u8], keep_slash: bool) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') || (keep_slash && b == b'/') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The `x-amz-date` form of `t`: `YYYYMMDDTHHMMSSZ`.
pub fn amz_date(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

#[cfg(test)]
#[path = "sigv4_tests.rs"]
mod tests;
