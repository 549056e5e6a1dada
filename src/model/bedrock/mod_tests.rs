//! The client as intake builds it (endpoint, URL, region, credentials), and how stream frames
//! are read.

use super::*;
use eventstream::{Frame, Value as H};
use std::collections::BTreeMap;
use std::path::Path;

fn spec(extra: &str) -> ModelSpec {
    let yaml = format!(
        "version: 1\nname: t\ntask: x\nmodel:\n  provider: bedrock\n{extra}verify:\n  - {{ name: c, run: \"true\" }}\n"
    );
    crate::spec::parse(Path::new("job.yaml"), &yaml).unwrap().model
}

fn env(vars: &[(&str, &str)]) -> RunEnv {
    let mut all: BTreeMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    all.insert("HOME".into(), "/nonexistent-home".into());
    RunEnv::from_vars(all)
}

const KEYS: [(&str, &str); 3] =
    [("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"), ("AWS_SECRET_ACCESS_KEY", "secretsecret"), ("AWS_REGION", "eu-west-3")];

fn built(extra: &str, vars: &[(&str, &str)]) -> Result<Bedrock, HoneError> {
    match client(&spec(extra), &env(vars), &Redactor::default())?.0 {
        Model::Bedrock(b) => Ok(b),
        _ => panic!("not a Bedrock client"),
    }
}

#[test]
fn the_endpoint_from_the_region_or_the_operator_with_the_id_as_one_segment() {
    let b = built("  name: us.anthropic.claude-sonnet-4-5-20250929-v1:0\n", &KEYS).unwrap();
    assert_eq!(
        b.url.as_str(),
        "https://bedrock-runtime.eu-west-3.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    assert_eq!((b.region.as_str(), b.cache.tools), ("eu-west-3", true));
    let arn = "arn:aws:bedrock:eu-west-3:123456789012:application-inference-profile/abc";
    let mut vars = KEYS.to_vec();
    vars.push(("AWS_ENDPOINT_URL", "http://127.0.0.1:1/"));
    let b = built(&format!("  name: \"{arn}\"\n  stream: false\n"), &vars).unwrap();
    assert_eq!(
        b.url.as_str(),
        "http://127.0.0.1:1/model/arn%3Aaws%3Abedrock%3Aeu-west-3%3A123456789012%3Aapplication-inference-profile%2Fabc/converse"
    );
    assert_eq!(host_header(&b.url), "127.0.0.1:1");
    vars.push(("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "https://vpce-1.bedrock-runtime.eu-west-3.vpce.amazonaws.com"));
    let b = built("  name: m\n", &vars).unwrap();
    assert_eq!(b.url.as_str(), "https://vpce-1.bedrock-runtime.eu-west-3.vpce.amazonaws.com/model/m/converse-stream");
    assert_eq!(host_header(&b.url), "vpce-1.bedrock-runtime.eu-west-3.vpce.amazonaws.com");
    let b = built("  name: m\n  base_url: http://localhost:8080/br\n", &vars).unwrap();
    assert_eq!(b.url.as_str(), "http://localhost:8080/br/model/m/converse-stream", "the spec wins");
}

#[test]
fn intake_refuses_what_cannot_work_naming_it() {
    let mut vars = KEYS.to_vec();
    vars.push(("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "file:///etc/passwd"));
    let e = built("  name: m\n", &vars).err().unwrap();
    assert_eq!(e.code, Code::Spec);
    assert!(e.message.contains("`AWS_ENDPOINT_URL_BEDROCK_RUNTIME` is `file:///etc/passwd`"), "{}", e.message);
    let e = built("  name: \"..\"\n", &KEYS).err().unwrap();
    assert!(e.message.contains("not a Bedrock model id"), "{}", e.message);
    let e = built("  name: m\n", &KEYS[..2]).err().unwrap();
    assert!(e.message.contains("no AWS region"), "{}", e.message);
    let e = built("  name: m\n", &KEYS[2..]).err().unwrap();
    assert!(e.message.contains("no AWS credentials") && e.hint.unwrap().contains("AWS_ACCESS_KEY_ID"));
}

fn frame(headers: &[(&str, &str)], payload: &str) -> Frame {
    Frame {
        headers: headers.iter().map(|(k, v)| (k.to_string(), H::String(v.to_string()))).collect(),
        payload: payload.as_bytes().to_vec(),
    }
}

#[test]
fn stream_frames_are_events_or_the_exception_that_ends_the_stream() {
    let mut asm = answer::Assembler::default();
    let ev = |t: &str, p: &str| frame(&[(":message-type", "event"), (":event-type", t)], p);
    assert_eq!(on_frame(&mut asm, &ev("contentBlockDelta", r#"{"delta":{"text":"hi"}}"#)).ok(), Some(false));
    assert_eq!(on_frame(&mut asm, &ev("messageStop", r#"{"stopReason":"end_turn"}"#)).ok(), Some(false));
    assert_eq!(asm.finish().unwrap().message.content, "hi");
    let mut asm = answer::Assembler::default();
    let e = on_frame(&mut asm, &ev("contentBlockDelta", "{not json")).unwrap_err();
    assert_eq!(e.kind(), ModelErrorKind::StreamCut);
    let throttled =
        frame(&[(":message-type", "exception"), (":exception-type", "throttlingException")], r#"{"message":"slow"}"#);
    let e = on_frame(&mut asm, &throttled).unwrap_err();
    assert_eq!((e.class(), e.kind()), ("retryable", ModelErrorKind::RateLimited));
    let error =
        frame(&[(":message-type", "error"), (":error-code", "InternalFailure"), (":error-message", "boom")], "");
    let e = on_frame(&mut asm, &error).unwrap_err();
    assert!(e.to_string().contains("boom") && e.class() == "retryable", "{e}");
    assert_eq!(on_frame(&mut asm, &frame(&[], "")).ok(), Some(false), "a frame of no known type is passed over");
}

#[test]
fn credentials_go_only_over_https_or_to_this_machine() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "eyJ.token.sig").unwrap();
    let web = |sts: &str| {
        let vars = [
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token.to_str().unwrap()),
            ("AWS_ROLE_ARN", "arn:aws:iam::1:role/ci"),
            ("AWS_REGION", "eu-west-3"),
            ("AWS_ENDPOINT_URL_STS", sts),
        ];
        built("  name: m\n", &vars).map(|b| b.signer.describe()).map_err(|e| e.message)
    };
    assert_eq!(web("https://sts.eu-west-3.amazonaws.com"), Ok("a web identity (STS)"));
    assert_eq!(web("http://127.0.0.1:4566"), Ok("a web identity (STS)"));
    assert_eq!(web("http://[::1]:4566/"), Ok("a web identity (STS)"));
    assert_eq!(web("http://localhost:4566"), Ok("a web identity (STS)"));
    let e = web("http://sts.internal.example:80").unwrap_err();
    assert!(e.contains("`AWS_ENDPOINT_URL_STS` is `http://sts.internal.example:80`, which is not an https URL"), "{e}");
    assert!(web("http://127.0.0.1.evil.example").is_err());
    let mut vars = KEYS.to_vec();
    vars.push(("AWS_ENDPOINT_URL", "http://bedrock.internal.example"));
    let e = built("  name: m\n", &vars).err().unwrap();
    assert!(
        e.message.contains("`AWS_ENDPOINT_URL` is `http://bedrock.internal.example`, which is not an https URL"),
        "{}",
        e.message
    );
    let e = built("  name: m\n  base_url: http://10.0.0.7:8080\n", &KEYS).err().unwrap();
    assert!(e.message.contains("`model.base_url` is `http://10.0.0.7:8080`"), "{}", e.message);
}
