use super::*;
use std::collections::HashMap;

fn cfg(vars: &[(&str, &str)], job: &TelemetrySpec) -> Result<Option<Config>, TelemetryError> {
    let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    config(|k| map.get(k).map(String::as_str), job)
}

fn on(vars: &[(&str, &str)]) -> Config {
    cfg(vars, &TelemetrySpec::default()).unwrap().expect("telemetry is on")
}

#[test]
fn nothing_is_exported_without_an_endpoint_or_when_disabled() {
    let job = TelemetrySpec::default();
    assert_eq!(cfg(&[], &job), Ok(None));
    assert_eq!(cfg(&[("OTEL_SERVICE_NAME", "x")], &job), Ok(None));
    let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
    assert_eq!(cfg(&[endpoint, ("OTEL_SDK_DISABLED", "TRUE")], &job), Ok(None));
    let off = TelemetrySpec { enabled: false, ..TelemetrySpec::default() };
    assert_eq!(cfg(&[endpoint], &off), Ok(None), "the job's `enabled: false` wins");
    let none = [endpoint, ("OTEL_TRACES_EXPORTER", "none"), ("OTEL_METRICS_EXPORTER", "none")];
    assert_eq!(cfg(&none, &job), Ok(None));
}

#[test]
fn the_shared_endpoint_is_a_base_and_a_signals_own_is_used_as_given() {
    let c = on(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.example.com:4318/")]);
    assert_eq!(c.traces.as_ref().unwrap().url, "https://otel.example.com:4318/v1/traces");
    assert_eq!(c.metrics.as_ref().unwrap().url, "https://otel.example.com:4318/v1/metrics");
    assert_eq!(c.service_name, "hone");
    let c = on(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://a.example.com"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://b.example.com/custom"),
        ("OTEL_METRICS_EXPORTER", "none"),
    ]);
    assert_eq!(c.traces.unwrap().url, "https://b.example.com/custom");
    assert_eq!(c.metrics, None);
    let g =
        on(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c.example.com:4317"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
    let t = g.traces.unwrap();
    assert_eq!((t.url.as_str(), t.protocol), ("https://c.example.com:4317", Protocol::Grpc), "gRPC has no paths");
}

#[test]
fn headers_timeouts_and_resources_are_read_and_header_values_are_secrets() {
    let c = on(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.example.com"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s3cr%3Dt-value, x-team=a"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "2000"),
        ("OTEL_SERVICE_NAME", "hone-ci"),
        ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci,team=payments"),
    ]);
    let t = c.traces.as_ref().unwrap();
    assert_eq!(t.headers, [("x-api-key".to_string(), "s3cr=t-value".to_string()), ("x-team".into(), "a".into())]);
    assert_eq!(t.timeout, Duration::from_secs(2));
    assert_eq!(c.service_name, "hone-ci");
    assert_eq!(c.resource[1], ("team".to_string(), "payments".to_string()));
    assert!(c.secrets().contains(&"s3cr=t-value".to_string()));
    let slow = on(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://o.example.com"), ("OTEL_EXPORTER_OTLP_TIMEOUT", "60000")]);
    assert_eq!(
        slow.traces.unwrap().timeout,
        Duration::from_secs(60),
        "the flush bound ends the export, not the request's limit"
    );
    let huge = on(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://o.example.com"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "18446744073709551615"),
    ]);
    assert_eq!(huge.traces.unwrap().timeout, Duration::from_secs(3600));
}

#[test]
fn wrong_variables_are_errors_that_say_which() {
    let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://o.example.com");
    let job = TelemetrySpec::default();
    assert_eq!(
        cfg(&[base, ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")], &job),
        Err(TelemetryError::Protocol("http/json".into()))
    );
    assert!(matches!(cfg(&[base, ("OTEL_TRACES_EXPORTER", "console")], &job), Err(TelemetryError::Exporter { .. })));
    assert!(matches!(cfg(&[base, ("OTEL_EXPORTER_OTLP_HEADERS", "novalue")], &job), Err(TelemetryError::Pairs(_))));
    let per_signal = cfg(&[base, ("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "5s")], &job);
    assert!(
        matches!(per_signal, Err(TelemetryError::Timeout { ref var, .. }) if var == "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT")
    );
    assert!(matches!(cfg(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x")], &job), Err(TelemetryError::Endpoint(_))));
}

#[test]
fn a_key_never_crosses_the_network_in_clear() {
    let job = TelemetrySpec::default();
    let key = ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20abcd");
    let remote = cfg(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://user:pw@collector.internal:4318"), key], &job);
    match remote {
        Err(TelemetryError::Userinfo(url)) => assert!(!url.contains("pw"), "{url}"),
        other => panic!("{other:?}"),
    }
    let plain = cfg(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.internal:4318?k=v"), key], &job);
    match plain {
        Err(TelemetryError::PlainHeaders(url)) => assert!(!url.contains("k=v"), "no query in messages: {url}"),
        other => panic!("{other:?}"),
    }
    let userinfo = cfg(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://u:p%5Ess@collector.example.com")], &job);
    assert!(matches!(userinfo, Err(TelemetryError::Userinfo(_))), "a password in the URL is refused, headers or not");
    assert!(cfg(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), key], &job).unwrap().is_some());
    assert!(cfg(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.internal:4318")], &job).unwrap().is_some());
}

#[test]
fn a_wrong_variable_with_no_collector_named_is_no_warning_and_lists_are_read() {
    let job = TelemetrySpec::default();
    assert_eq!(
        cfg(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"), ("OTEL_METRICS_EXPORTER", "prometheus")], &job),
        Ok(None)
    );
    let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://o.example.com/base?tenant=a");
    let c = on(&[base, ("OTEL_TRACES_EXPORTER", "otlp,console")]);
    assert_eq!(
        c.traces.as_ref().unwrap().url,
        "https://o.example.com/base/v1/traces?tenant=a",
        "the path before the query"
    );
    assert_eq!(
        c.scrub("failed at https://o.example.com/base/v1/traces?tenant=a"),
        "failed at https://o.example.com/base/v1/traces?***"
    );
    let secrets = header_secrets(|k| (k == "OTEL_EXPORTER_OTLP_TRACES_HEADERS").then_some("x-key=abcd1234"));
    assert_eq!(secrets, ["abcd1234"]);
}

#[test]
fn content_capture_is_opt_in() {
    let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://o.example.com");
    assert!(!on(&[base]).capture_content);
    assert!(on(&[base, ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")]).capture_content);
    let job = TelemetrySpec { capture_content: true, ..TelemetrySpec::default() };
    assert!(cfg(&[base], &job).unwrap().unwrap().capture_content);
}
