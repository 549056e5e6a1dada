use super::*;
use crate::bound::Bound;
use crate::env::RunEnv;
use crate::forge::Shared;
use crate::redact::Redactor;
use axum::extract::State;
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::sync::Mutex;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const KEY: &str = include_str!("../../../../tests/data/github_app/app-key.pem");

#[test]
fn a_token_is_minted_again_five_minutes_before_it_expires() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    assert!(reusable(now + Duration::from_secs(3600), now), "a fresh token (an hour) is kept");
    assert!(reusable(now + Duration::from_secs(301), now));
    assert!(!reusable(now + Duration::from_secs(300), now), "five minutes left: minted again");
    assert!(!reusable(now + Duration::from_secs(240), now), "a token that expires in four minutes is not used");
    assert!(!reusable(now - Duration::from_secs(1), now), "expired");
}

/// GitHub's two endpoints in their simplest form, recording what they were asked.
async fn github(mints: Arc<Mutex<Vec<Value>>>) -> String {
    async fn mint(State(m): State<Arc<Mutex<Vec<Value>>>>, axum::Json(body): axum::Json<Value>) -> axum::Json<Value> {
        m.lock().unwrap().push(body);
        axum::Json(json!({"token": "ghs_unitcanary0123456789", "expires_at": "2999-01-01T00:00:00Z"}))
    }
    async fn installation(State(m): State<Arc<Mutex<Vec<Value>>>>, h: axum::http::HeaderMap) -> axum::Json<Value> {
        let auth = h.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
        m.lock().unwrap().push(json!({"jwt": auth.trim_start_matches("Bearer ")}));
        axum::Json(json!({"id": 7}))
    }
    let app = axum::Router::new()
        .route("/repos/acme/app/installation", get(installation))
        .route("/app/installations/7/access_tokens", post(mint))
        .with_state(mints);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

fn env(api: &str) -> RunEnv {
    let vars = [("GITHUB_APP_ID", "42"), ("GITHUB_APP_PRIVATE_KEY", KEY), ("GITHUB_API_URL", api)];
    RunEnv::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

#[tokio::test]
async fn every_token_is_redacted_before_it_is_handed_out_and_kept_while_fresh() {
    let mints = Arc::new(Mutex::new(Vec::new()));
    let env = env(&github(mints.clone()).await);
    let (shared, redactor, cancel) = (Shared::default(), Redactor::new(), CancellationToken::new());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let cx = Context { env: &env, shared: &shared, redactor: &redactor, bound: &Bound::new(deadline, &cancel) };
    let p = Permissions::for_job(&super::super::test_job(""), false);
    let token = shared.app.token(&cx, &p, "acme", "app").await.unwrap().unwrap();
    assert_eq!(token, "ghs_unitcanary0123456789");
    assert!(!redactor.apply(&format!("x {token} y")).contains(&token), "the token is a secret from the start");
    let again = shared.app.clone().token(&cx, &p, "ACME", "App").await.unwrap().unwrap();
    assert_eq!(again, token, "kept (owner and repository as GitHub compares them)");
    let asked = mints.lock().unwrap().clone();
    let jwt = asked[0]["jwt"].as_str().unwrap().to_string();
    assert_eq!(jwt.split('.').count(), 3, "{asked:?}");
    assert!(!redactor.apply(&jwt).contains(&jwt), "the JWT is a secret too");
    let mint = json!({"repositories": ["app"], "permissions": {"contents": "write", "pull_requests": "write"}});
    assert_eq!(asked[1..], [mint], "one token for the one repository, with the least permissions");
}

#[tokio::test]
async fn no_credential_leaves_over_plain_http_and_cancellation_stops_a_request() {
    let (shared, redactor, cancel) = (Shared::default(), Redactor::new(), CancellationToken::new());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let p = Permissions::for_job(&super::super::test_job(""), false);
    let remote = env("http://api.example.com");
    let cx = Context { env: &remote, shared: &shared, redactor: &redactor, bound: &Bound::new(deadline, &cancel) };
    let e = shared.app.token(&cx, &p, "acme", "app").await.unwrap_err();
    assert_eq!(e.code, Code::Spec);
    assert!(e.message.contains("not an HTTPS URL"), "{}", e.message);
    // A server that takes the connection and never answers: only the cancellation ends the wait.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let hung = env(&url);
    cancel.cancel();
    let cx =
        Context { env: &hung, shared: &Shared::default(), redactor: &redactor, bound: &Bound::new(deadline, &cancel) };
    let e = cx.shared.app.token(&cx, &p, "acme", "app").await.unwrap_err();
    assert_eq!(e.code, Code::Cancelled, "{}", e.message);
    drop(silent);
}
