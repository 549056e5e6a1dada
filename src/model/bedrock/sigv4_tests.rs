//! The signer against AWS's published SigV4 test suite (aws-sig-v4-test-suite: the example key
//! `AKIDEXAMPLE`, 2015-08-30 12:36:00 UTC, us-east-1, service `service`; the signatures are the
//! suite's `header-signature.txt`), and against AWS's own signer (`aws-sigv4`, a dev-dependency)
//! on Bedrock-shaped requests.

use super::*;
use proptest::prelude::*;

const DATE: &str = "20150830T123600Z";

fn example(token: Option<&str>) -> Credentials {
    Credentials {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
        session_token: token.map(str::to_string),
    }
}

/// The suite's scope; `sign_body` is its `context.json`'s.
fn suite_scope(sign_body: bool) -> Scope<'static> {
    Scope { region: "us-east-1", service: "service", amz_date: DATE, content_sha256_header: sign_body }
}

fn signature_of(headers: &SignedHeaders) -> String {
    let auth = &headers.iter().find(|(k, _)| *k == "authorization").unwrap().1;
    auth.rsplit("Signature=").next().unwrap().to_string()
}

fn suite(
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    creds: &Credentials,
    sign_body: bool,
) -> SignedHeaders {
    let req = Request { method, host: "example.amazonaws.com", path, headers, body };
    sign(creds, &suite_scope(sign_body), &req)
}

#[test]
fn get_vanilla() {
    let h = suite("GET", "/", &[], b"", &example(None), false);
    let auth = &h[0].1;
    assert_eq!(
        auth,
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    );
    assert_eq!(h[1], ("x-amz-date", DATE.to_string()));
}

#[test]
fn post_vanilla() {
    let h = suite("POST", "/", &[], b"", &example(None), false);
    assert_eq!(signature_of(&h), "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
}

#[test]
fn get_vanilla_with_session_token() {
    let token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267";
    let h = suite("GET", "/", &[], b"", &example(Some(token)), false);
    assert_eq!(signature_of(&h), "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8");
    assert!(h[0].1.contains("SignedHeaders=host;x-amz-date;x-amz-security-token,"), "{}", h[0].1);
    assert!(h.contains(&("x-amz-security-token", token.to_string())));
}

#[test]
fn get_utf8() {
    let h = suite("GET", "/ሴ", &[], b"", &example(None), false);
    assert_eq!(signature_of(&h), "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85");
}

#[test]
fn get_header_value_trim() {
    let headers = [("My-Header1", " value1"), ("My-Header2", " \"a   b   c\"")];
    let h = suite("GET", "/", &headers, b"", &example(None), false);
    assert_eq!(signature_of(&h), "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736");
}

#[test]
fn post_x_www_form_urlencoded() {
    let headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Content-Length", "13")];
    let h = suite("POST", "/", &headers, b"Param1=value1", &example(None), true);
    assert_eq!(signature_of(&h), "d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b");
    let hash = "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e";
    assert!(h.contains(&("x-amz-content-sha256", hash.to_string())));
}

/// The suite's `double-encode-path`: a path already encoded once for the wire is encoded again.
#[test]
fn double_encode_path() {
    let headers = vec![("host".to_string(), "tj9n5r0m12.execute-api.us-east-1.amazonaws.com".to_string())];
    let (canonical, _) = canonical_request("POST", "/test/@connections/JBDvjfGEIAMCERw%3D", &headers, "h");
    assert_eq!(canonical.lines().nth(1), Some("/test/%40connections/JBDvjfGEIAMCERw%253D"));
}

#[test]
fn an_inference_profile_arn_is_one_segment_encoded_twice_in_the_canonical_uri() {
    let arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123";
    let wire = format!("/model/{}/converse", uri_encode(arn.as_bytes(), false));
    assert_eq!(
        wire,
        "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fabc123/converse"
    );
    let (canonical, _) = canonical_request("POST", &wire, &[], "h");
    assert_eq!(
        canonical.lines().nth(1),
        Some(
            "/model/arn%253Aaws%253Abedrock%253Aus-east-1%253A123456789012%253Aapplication-inference-profile%252Fabc123/converse"
        )
    );
}

#[test]
fn amz_dates_are_utc_and_zero_padded() {
    let t = time::macros::datetime!(2015-08-30 14:36:00 +02:00);
    assert_eq!(amz_date(t), DATE);
    assert_eq!(amz_date(time::macros::datetime!(2026-01-02 03:04:05 UTC)), "20260102T030405Z");
}

#[test]
fn debug_never_shows_the_secret_or_token() {
    let c = example(Some("the-session-token"));
    let shown = format!("{c:?}");
    assert!(shown.contains("AKIDEXAMPLE") && !shown.contains("EXAMPLEKEY") && !shown.contains("the-session-token"));
    assert_eq!(c.secrets(), ["wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "the-session-token"]);
}

/// What AWS's own signer puts in `authorization` for the same request.
fn aws_sigv4(
    creds: &Credentials,
    host: &str,
    path: &str,
    body: &[u8],
    hash: &str,
    when: std::time::SystemTime,
) -> String {
    use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign as aws_sign};
    let identity = aws_credential_types::Credentials::new(
        &creds.access_key_id,
        &creds.secret_access_key,
        creds.session_token.clone(),
        None,
        "test",
    )
    .into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region("eu-west-3")
        .name("bedrock")
        .time(when)
        .settings(SigningSettings::default())
        .build()
        .unwrap()
        .into();
    let headers = [("host", host), ("content-type", "application/json"), ("x-amz-content-sha256", hash)];
    let uri = format!("https://{host}{path}");
    let req = SignableRequest::new("POST", uri, headers.into_iter(), SignableBody::Bytes(body)).unwrap();
    let (instructions, _) = aws_sign(req, &params).unwrap().into_parts();
    instructions.headers().find(|(k, _)| *k == "authorization").unwrap().1.to_string()
}

proptest! {
    /// Any model id (ARNs, profiles, odd bytes), body, key and time: hone's signature is AWS's.
    #[test]
    fn agrees_with_aws_own_signer(
        id in "[a-zA-Z0-9.:/_~ -]{1,60}|\\PC{1,20}",
        body in proptest::collection::vec(any::<u8>(), 0..200),
        secret in "[A-Za-z0-9/+]{40}",
        token in proptest::option::of("[A-Za-z0-9/+=]{20,80}"),
        secs in 1_400_000_000i64..2_000_000_000,
    ) {
        prop_assume!(id != "." && id != "..");
        let creds = Credentials { access_key_id: "AKIAEXAMPLE12345".into(), secret_access_key: secret, session_token: token };
        let host = "bedrock-runtime.eu-west-3.amazonaws.com";
        let path = format!("/model/{}/converse-stream", uri_encode(id.as_bytes(), false));
        let when = time::OffsetDateTime::from_unix_timestamp(secs).unwrap();
        let date = amz_date(when);
        let scope = Scope { region: "eu-west-3", service: "bedrock", amz_date: &date, content_sha256_header: true };
        let req = Request { method: "POST", host, path: &path, headers: &[("content-type", "application/json")], body: &body };
        let ours = sign(&creds, &scope, &req);
        let hash = &ours.iter().find(|(k, _)| *k == "x-amz-content-sha256").unwrap().1;
        let theirs = aws_sigv4(&creds, host, &path, &body, hash, when.into());
        prop_assert_eq!(&ours[0].1, &theirs);
    }
}
