//! `provider: bedrock` end to end: the real binary against the Bedrock and STS stand-in
//! (`mock_bedrock`), which checks each signature with AWS's own signer and answers streams in
//! AWS's own framing. The happy path streamed and not, retried faults (throttling, cut and
//! corrupt streams, a stream exception), refused credentials and clocks, web identity through
//! STS, a Bedrock API key, and missing credentials.

use crate::common::mock_bedrock::{self, API_KEY, KEY_ID, MISMATCH, MockBedrock, Reply, SECRET, Trust};
use crate::common::mock_model::{Turn, call, text};
use crate::common::*;
use serde_json::{Value, json};

const MODEL_ID: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const PROFILE_ARN: &str = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/hone1";

/// The mock-model job with a Bedrock model block (`extra`: more lines of it).
fn yaml(name: &str, model: &str, stream: bool, extra: &str) -> String {
    let base = job_yaml(name, "STAND-IN", stream);
    let from =
        "provider: openai-compatible\n  name: mock-model\n  base_url: STAND-IN\n  api_key_env: HONE_TEST_API_KEY\n";
    assert!(base.contains(from), "the fixture's model block changed: {base}");
    base.replace(from, &format!("provider: bedrock\n  name: \"{model}\"\n{extra}"))
}

/// The stand-in as the endpoint, in us-east-1, with `creds`; every other AWS setting blank (so
/// unset for hone) and the shared files pointed at nothing, so that the machine's own never count.
fn aws_env(mock: &MockBedrock, creds: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_ROLE_SESSION_NAME",
        "AWS_PROFILE",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_STS",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ]
    .iter()
    .map(|k| (k.to_string(), String::new()))
    .collect();
    env.push(("AWS_CONFIG_FILE".into(), "/nonexistent/hone-test/config".into()));
    env.push(("AWS_SHARED_CREDENTIALS_FILE".into(), "/nonexistent/hone-test/credentials".into()));
    env.push(("AWS_REGION".into(), mock_bedrock::REGION.into()));
    env.push(("AWS_ENDPOINT_URL_BEDROCK_RUNTIME".into(), mock.url.clone()));
    for (k, v) in creds {
        env.retain(|(n, _)| n != k);
        env.push((k.to_string(), v.to_string()));
    }
    env
}

const KEYS: [(&str, &str); 2] = [("AWS_ACCESS_KEY_ID", KEY_ID), ("AWS_SECRET_ACCESS_KEY", SECRET)];

async fn run(repo: &repo::TestRepo, yaml: &str, env: &[(String, String)]) -> Run {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    run_job_env(repo, yaml, &env).await
}

fn fix() -> Turn {
    call("write_file", json!({"path": "status.txt", "content": "fixed\n"}))
}

fn last_block(body: &Value, key: &str) -> Value {
    body[key].as_array().and_then(|a| a.last()).cloned().unwrap_or(Value::Null)
}

async fn happy(stream: bool) {
    let repo = broken_repo();
    let mock = MockBedrock::start().await;
    let read = Turn {
        content: "Reading the check.".into(),
        calls: vec![("read_file".into(), json!({"path": "check.sh"}).to_string())],
    };
    mock.turn(read).turn(fix()).turn(text("Fixed status.txt."));
    let run = run(&repo, &yaml("bedrock", MODEL_ID, stream, ""), &aws_env(&mock, &KEYS)).await;
    assert_eq!(run.code, 0, "{}\n{:#?}", run.stderr, mock.refusals());
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    let cache_point = json!({"cachePoint": {"type": "default"}});
    for r in &reqs {
        assert_eq!(r.model_id, MODEL_ID);
        assert_eq!(r.operation, if stream { "converse-stream" } else { "converse" });
        let auth = r.headers["authorization"].to_str().unwrap();
        assert!(
            auth.starts_with(&format!("AWS4-HMAC-SHA256 Credential={KEY_ID}/"))
                && auth.contains("/us-east-1/bedrock/aws4_request"),
            "{auth}"
        );
        assert_eq!(last_block(&r.body, "system"), cache_point, "the system prompt is cached");
        assert_eq!(last_block(&r.body["toolConfig"], "tools"), cache_point, "the tools are cached");
        let newest = r.body["messages"].as_array().unwrap().last().unwrap();
        assert_eq!(last_block(newest, "content"), cache_point, "the newest message is cached");
        assert!(r.body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"].is_object());
    }
    let second = reqs[1].body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(second["role"], "user");
    let result = &second["content"][0]["toolResult"];
    assert_eq!(result["toolUseId"], "tooluse_1_0");
    assert!(result["content"][0]["text"].as_str().unwrap().contains("grep -qx fixed"), "{second}");
    let report = run.report();
    assert_eq!(report["provider"], "bedrock");
    assert_eq!(report["model"], MODEL_ID);
    assert_eq!(report["usage"]["prompt_tokens"], 300, "tokens read from the cache count as prompt tokens");
    assert_eq!(report["usage"]["cached_prompt_tokens"], 180, "cacheReadInputTokens, summed");
    assert_eq!(repo.show("hone/bedrock", "status.txt"), "fixed");
    run.assert_no_secret(SECRET);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_run_with_tool_calls_signed_as_aws_checks() {
    happy(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_not_streamed() {
    happy(false).await;
}

/// An application inference profile's ARN goes through `model.base_url` as one path segment,
/// encoded once on the wire and twice in the signature (the stand-in would refuse otherwise);
/// its model is unknown, so no cache points.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inference_profile_arn_through_base_url() {
    let repo = broken_repo();
    let mock = MockBedrock::start().await;
    mock.turn(fix()).turn(text("done"));
    let y = yaml("arn", PROFILE_ARN, false, &format!("  base_url: {}/\n", mock.url));
    let mut env = aws_env(&mock, &KEYS);
    env.retain(|(k, _)| k != "AWS_ENDPOINT_URL_BEDROCK_RUNTIME");
    let run = run(&repo, &y, &env).await;
    assert_eq!(run.code, 0, "{}\n{:#?}", run.stderr, mock.refusals());
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs.iter().all(|r| r.model_id == PROFILE_ARN && r.operation == "converse"));
    assert!(!reqs[1].body.to_string().contains("cachePoint"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_twice_then_it_succeeds() {
    let repo = broken_repo();
    let mock = MockBedrock::start().await;
    mock.push(Reply::throttled(429)).push(Reply::throttled(400)).turn(fix()).turn(text("done"));
    let run = run(&repo, &yaml("throttled", MODEL_ID, true, ""), &aws_env(&mock, &KEYS)).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(mock.requests().len(), 4);
    assert_eq!(run.report()["faults"]["rate_limited"], 2, "{}", run.report()["faults"]);
    let retries: Vec<Value> = run.events().into_iter().filter(|e| e["type"] == "model_retry").collect();
    assert_eq!(retries.len(), 2);
    assert!(retries.iter().all(|e| e["reason"].as_str().unwrap().contains("ThrottlingException")), "{retries:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_corrupt_and_failing_streams_are_retried() {
    let repo = broken_repo();
    let mock = MockBedrock::start().await;
    mock.push(Reply::Cut(fix()))
        .push(Reply::Corrupt(fix()))
        .push(Reply::StreamException("modelStreamErrorException", "The model stream broke."))
        .turn(fix())
        .turn(text("done"));
    let y = yaml("cut", MODEL_ID, true, "").replace("max_attempts: 4", "max_attempts: 6");
    let run = run(&repo, &y, &aws_env(&mock, &KEYS)).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let faults = &run.report()["faults"];
    assert_eq!((faults["stream_cut"].as_u64(), faults["server_error"].as_u64()), (Some(2), Some(1)), "{faults}");
    assert_eq!(mock.remaining(), 0);
    assert_eq!(repo.show("hone/cut", "status.txt"), "fixed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_secret_exits_3_with_an_auth_error_and_never_shows_it() {
    let repo = broken_repo();
    let mock = MockBedrock::start().await;
    mock.expect_refusals(1);
    let wrong = "wrong/Secret+Key/0123456789abcdefghijKLMN";
    let run =
        run(&repo, &yaml("wrong", MODEL_ID, true, ""), &aws_env(&mock, &[KEYS[0], ("AWS_SECRET_ACCESS_KEY", wrong)]))
            .await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_eq!(mock.requests().len(), 1, "an auth error is not retried");
    assert_eq!(mock.refusals(), [format!("403 InvalidSignatureException: {MISMATCH}")]);
    let message = run.report()["errors"][0]["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("InvalidSignatureException") && message.contains("signature we calculated does not match"),
        "{message}"
    );
    run.assert_no_secret(wrong);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_out_of_step_is_refused_as_aws_refuses_it() {
    let repo = broken_repo();
    let mock = MockBedrock::start().await;
    mock.clock_ahead(600).expect_refusals(1);
    let run = run(&repo, &yaml("clock", MODEL_ID, true, ""), &aws_env(&mock, &KEYS)).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    let message = run.report()["errors"][0]["message"].as_str().unwrap().to_string();
    assert!(message.contains("Signature expired"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_identity_credentials_from_sts_sign_every_request() {
    let repo = broken_repo();
    let mock = MockBedrock::start().await;
    let token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJyZXBvOm9jdG8vcmVwbyJ9.c2lnbmF0dXJlLW9mLXRoZS1vaWRjLXRva2Vu";
    let role = "arn:aws:iam::123456789012:role/hone-ci";
    let file = repo.dir.path().join("oidc-token");
    std::fs::write(&file, format!("{token}\n")).unwrap();
    mock.trust(Trust { role_arn: role.into(), token: token.into() }).turn(fix()).turn(text("done"));
    let creds = [
        ("AWS_WEB_IDENTITY_TOKEN_FILE", file.to_str().unwrap()),
        ("AWS_ROLE_ARN", role),
        ("AWS_ROLE_SESSION_NAME", "hone-ci-run"),
        ("AWS_ENDPOINT_URL", mock.url.as_str()),
        ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", ""),
    ];
    let run = run(&repo, &yaml("oidc", MODEL_ID, true, ""), &aws_env(&mock, &creds)).await;
    assert_eq!(run.code, 0, "{}\n{:#?}", run.stderr, mock.refusals());
    assert_eq!(mock.sts_calls(), 1, "the credentials are kept while they are fresh");
    let issued = mock.issued();
    assert_eq!(issued.len(), 1);
    let session = issued[0].token.clone().unwrap();
    for r in mock.requests() {
        assert!(r.headers["authorization"].to_str().unwrap().contains(&format!("Credential={}/", issued[0].id)));
        assert_eq!(r.headers["x-amz-security-token"].to_str().unwrap(), session);
    }
    for secret in [token, issued[0].secret.as_str(), session.as_str()] {
        run.assert_no_secret(secret);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bedrock_api_key_is_a_bearer_token_and_wins() {
    let repo = broken_repo();
    let mock = MockBedrock::start().await;
    mock.turn(fix()).turn(text("done"));
    let creds =
        [("AWS_BEARER_TOKEN_BEDROCK", API_KEY), KEYS[0], ("AWS_SECRET_ACCESS_KEY", "not-the-secret-at-all-0123456789")];
    let run = run(&repo, &yaml("apikey", MODEL_ID, true, ""), &aws_env(&mock, &creds)).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    for r in mock.requests() {
        assert_eq!(r.headers["authorization"].to_str().unwrap(), format!("Bearer {API_KEY}"));
        assert!(r.headers.get("x-amz-date").is_none(), "no signature with an API key");
    }
    run.assert_no_secret(API_KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_credentials_exit_2_naming_what_to_set() {
    let repo = broken_repo();
    let mock = MockBedrock::start().await;
    let run = run(&repo, &yaml("nocreds", MODEL_ID, true, ""), &aws_env(&mock, &[])).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    for v in [
        "no AWS credentials",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_PROFILE",
    ] {
        assert!(run.stderr.contains(v), "{v}: {}", run.stderr);
    }
    assert!(mock.requests().is_empty());
}

/// The stand-in itself: it takes what AWS's signer signs, and refuses a wrong secret, an
/// unknown key, a stale date and a body changed after signing, as AWS does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stand_in_refuses_what_aws_refuses() {
    use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
    let mock = MockBedrock::start().await;
    mock.turn(text("hi")).expect_refusals(4);
    let url = format!("{}/model/{}/converse", mock.url, "us.amazon.nova-pro-v1%3A0");
    let host = mock.url.trim_start_matches("http://").to_string();
    let body = json!({"messages": [{"role": "user", "content": [{"text": "hello"}]}]}).to_string();
    let send = |key: &str, secret: &str, ago: u64, sent_body: String| {
        let identity = aws_credential_types::Credentials::new(key, secret, None, None, "t").into();
        let when = std::time::SystemTime::now() - std::time::Duration::from_secs(ago);
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region("us-east-1")
            .name("bedrock")
            .time(when)
            .settings(SigningSettings::default())
            .build()
            .unwrap()
            .into();
        let headers = [("host", host.as_str()), ("content-type", "application/json")];
        let req = SignableRequest::new("POST", url.clone(), headers.into_iter(), SignableBody::Bytes(body.as_bytes()))
            .unwrap();
        let (signed, _) = sign(req, &params).unwrap().into_parts();
        let mut rb = reqwest::Client::new().post(&url).header("content-type", "application/json").body(sent_body);
        for (k, v) in signed.headers() {
            rb = rb.header(k, v);
        }
        async move {
            let r = rb.send().await.unwrap();
            let kind =
                r.headers().get("x-amzn-errortype").map(|v| v.to_str().unwrap().split(':').next().unwrap().to_string());
            (r.status().as_u16(), kind, r.text().await.unwrap())
        }
    };
    let (status, _, answer) = send(KEY_ID, SECRET, 0, body.clone()).await;
    assert_eq!(status, 200, "{answer}");
    let (status, kind, answer) = send(KEY_ID, "another/secret+key/0123456789abcdefghijk", 0, body.clone()).await;
    assert_eq!((status, kind.as_deref()), (403, Some("InvalidSignatureException")));
    assert!(answer.contains("signature we calculated does not match"), "{answer}");
    let (status, kind, _) = send("AKIAUNKNOWNKEY000000", SECRET, 0, body.clone()).await;
    assert_eq!((status, kind.as_deref()), (403, Some("UnrecognizedClientException")));
    let (status, _, answer) = send(KEY_ID, SECRET, 600, body.clone()).await;
    assert!(status == 403 && answer.contains("Signature expired"), "{answer}");
    let (status, _, answer) = send(KEY_ID, SECRET, 0, body.replace("hello", "HELLO")).await;
    assert!(status == 403 && answer.contains("signature we calculated does not match"), "{answer}");
}

/// `hone run --model bedrock:ID`: a one-off job on Bedrock, its region and credentials from
/// the environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_off_job_on_bedrock() {
    let repo = broken_repo();
    let mock = MockBedrock::start().await;
    mock.turn(fix()).turn(text("done"));
    let model = format!("bedrock:{MODEL_ID}");
    let args = ["run", "--task", "Make check.sh pass.", "--model", &model, "--verify", "sh check.sh"];
    let env = aws_env(&mock, &KEYS);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let run = run_in(&repo.path, &args, &env, repo.path.join(".hone/reports")).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(run.report()["provider"], "bedrock");
}

/// Bedrock as the fallback of an OpenAI-compatible model that stays rate limited: it gets the
/// history with the first model's tool call and result as `toolUse` and `toolResult` (the
/// stand-in checks their pairing as Bedrock does).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bedrock_takes_over_as_the_fallback_with_the_history() {
    use crate::common::mock_model::{MockModel, Reply as Mock};
    let repo = broken_repo();
    let first = MockModel::start().await;
    let mock = MockBedrock::start().await;
    first.turn(call("read_file", json!({"path": "check.sh"})), true);
    for _ in 0..4 {
        let body = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
        first.push(Mock::Status { code: 429, headers: vec![("retry-after".into(), "0".into())], body: body.into() });
    }
    mock.turn(fix()).turn(text("done"));
    let fallback = format!("  fallback:\n    - provider: bedrock\n      name: \"{MODEL_ID}\"\nverify:");
    let y = job_yaml("handover", &first.base_url, true).replacen("verify:", &fallback, 1);
    let run = run(&repo, &y, &aws_env(&mock, &KEYS)).await;
    assert_eq!(run.code, 0, "{}\n{:#?}", run.stderr, mock.refusals());
    let handed = mock.requests()[0].body["messages"].clone();
    let (uses, results) = (handed[1]["content"][0]["toolUse"].clone(), handed[2]["content"][0]["toolResult"].clone());
    assert_eq!(
        (uses["name"].as_str(), uses["input"]["path"].as_str()),
        (Some("read_file"), Some("check.sh")),
        "{handed}"
    );
    assert_eq!(uses["toolUseId"], results["toolUseId"]);
    assert!(results["content"][0]["text"].as_str().unwrap().contains("grep -qx fixed"), "{handed}");
    assert_eq!(run.report()["models"][1]["provider"], "bedrock");
}

/// STS refusing the role is an auth error naming the role (exit 3), with no request to Bedrock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sts_refusing_the_role_exits_3_naming_it() {
    let repo = broken_repo();
    let mock = MockBedrock::start().await;
    let file = repo.dir.path().join("oidc-token");
    std::fs::write(&file, "eyJ.the-oidc-token.sig").unwrap();
    mock.trust(Trust {
        role_arn: "arn:aws:iam::123456789012:role/other".into(),
        token: "eyJ.the-oidc-token.sig".into(),
    });
    mock.expect_refusals(1);
    let role = "arn:aws:iam::123456789012:role/hone-ci";
    let creds = [
        ("AWS_WEB_IDENTITY_TOKEN_FILE", file.to_str().unwrap()),
        ("AWS_ROLE_ARN", role),
        ("AWS_ENDPOINT_URL_STS", mock.url.as_str()),
    ];
    let run = run(&repo, &yaml("norole", MODEL_ID, true, ""), &aws_env(&mock, &creds)).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    let message = run.report()["errors"][0]["message"].as_str().unwrap().to_string();
    assert!(message.contains(role) && message.contains("AccessDenied"), "{message}");
    assert!(mock.requests().is_empty());
    run.assert_no_secret("eyJ.the-oidc-token.sig");
}
