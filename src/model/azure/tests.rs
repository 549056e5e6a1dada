//! Azure's URLs, credentials order and content-filter errors.

use super::*;
use serde_json::json;

fn env(pairs: &[(&str, &str)]) -> RunEnv {
    RunEnv::from_vars(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

fn spec(yaml_model: &str) -> ModelSpec {
    let text = format!("version: 1\nname: n\ntask: t\nmodel:\n{yaml_model}verify: []\n");
    crate::spec::parse(std::path::Path::new("job.yaml"), &text).unwrap().model
}

#[test]
fn both_url_forms_for_both_apis() {
    let ep = "https://res.openai.azure.com";
    let d = spec("  provider: azure\n  deployment: gpt4o-prod\n");
    assert_eq!(
        target(&d, ep),
        Target {
            url: format!("{ep}/openai/deployments/gpt4o-prod/chat/completions?api-version={DEFAULT_API_VERSION}"),
            model: "gpt4o-prod".into()
        }
    );
    let r = spec("  provider: azure\n  deployment: codex\n  api: responses\n  api_version: 2025-03-01-preview\n");
    assert_eq!(target(&r, ep).url, format!("{ep}/openai/responses?api-version=2025-03-01-preview"));
    assert_eq!(target(&r, ep).model, "codex");
    let v1 = spec("  provider: azure\n  name: gpt-4.1\n");
    assert_eq!(target(&v1, ep), Target { url: format!("{ep}/openai/v1/chat/completions"), model: "gpt-4.1".into() });
    let v1r = spec("  provider: azure\n  name: gpt-5-codex\n");
    assert_eq!(target(&v1r, ep).url, format!("{ep}/openai/v1/responses"), "codex models are served by Responses");
}

#[test]
fn the_endpoint_from_the_spec_or_the_environment_without_its_api_path() {
    let mut m = spec("  provider: azure\n  name: gpt-4.1\n");
    let from_env = env(&[("AZURE_OPENAI_ENDPOINT", "https://env.openai.azure.com/openai/v1/")]);
    assert_eq!(endpoint(&m, &from_env).unwrap(), "https://env.openai.azure.com");
    m.base_url = Some("https://spec.openai.azure.com/openai".into());
    assert_eq!(endpoint(&m, &from_env).unwrap(), "https://spec.openai.azure.com");
    m.base_url = Some("http://10.0.0.5".into());
    assert!(endpoint(&m, &env(&[])).is_err(), "a key never goes out in clear text");
    m.base_url = Some("http://127.0.0.1:8080".into());
    assert!(endpoint(&m, &env(&[])).is_ok(), "but to this machine");
    m.base_url = None;
    let e = endpoint(&m, &env(&[])).unwrap_err();
    assert_eq!(e.code, Code::Spec);
    assert!(e.render().contains("AZURE_OPENAI_ENDPOINT"), "{}", e.render());
}

#[test]
fn the_key_first_then_a_given_token_then_nothing_is_an_input_error() {
    let m = spec("  provider: azure\n  name: gpt-4.1\n");
    let redactor = Redactor::default();
    let both = env(&[("AZURE_OPENAI_API_KEY", "key-1234567890"), ("AZURE_OPENAI_AD_TOKEN", "tok-1234567890")]);
    assert!(matches!(auth(&m, &both, &redactor), Ok(Auth::Header("api-key", k)) if k == "key-1234567890"));
    let token = env(&[("AZURE_OPENAI_AD_TOKEN", "tok-1234567890")]);
    assert!(matches!(auth(&m, &token, &redactor), Ok(Auth::Bearer(t)) if t == "tok-1234567890"));
    let Err(e) = auth(&m, &env(&[]), &redactor) else { panic!("no credentials accepted") };
    assert_eq!(e.code, Code::Spec);
    for named in ["AZURE_OPENAI_API_KEY", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_CLIENT_ID"] {
        assert!(e.render().contains(named), "{}", e.render());
    }
}

#[test]
fn content_filter_refusals_are_their_own_class_with_the_categories() {
    let err = json!({
        "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
        "type": null, "param": "prompt", "code": "content_filter", "status": 400,
        "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": {
            "hate": {"filtered": false, "severity": "safe"},
            "jailbreak": {"filtered": true, "detected": true},
            "violence": {"filtered": true, "severity": "medium"}}}
    });
    let e = content_filter(Some(400), &err).unwrap();
    assert_eq!((e.kind(), e.class()), (ModelErrorKind::ContentFilter, "permanent"));
    assert!(e.to_string().contains("[jailbreak, violence (medium)]"), "{e}");
    assert!(content_filter(Some(400), &json!({"code": "invalid_request_error", "message": "bad"})).is_none());
}
