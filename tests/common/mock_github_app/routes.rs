//! The stand-in's answers: the App's endpoints behind a verified JWT, the pull request
//! endpoints behind a token it minted for that repository.

use super::{APP_ID, BOT_ID, Minted, SLUG, Seen, State};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State as With;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rsa::signature::Verifier;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

type Shared = Arc<State>;

pub fn routes() -> Router<Shared> {
    Router::new().fallback(handle)
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn answer(status: u16, body: Value) -> Response {
    (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response()
}

/// A refusal as GitHub words it, counted.
fn refuse(s: &State, status: u16, message: &str, why: String) -> Response {
    s.refuse(why);
    answer(status, json!({"message": message, "documentation_url": "https://docs.github.com/rest"}))
}

async fn handle(With(s): With<Shared>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = percent_encoding::percent_decode_str(uri.path()).decode_utf8_lossy().into_owned();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
    let credential = auth.strip_prefix("Bearer ").or_else(|| auth.strip_prefix("token ")).unwrap_or("").to_string();
    let shown = if credential.is_empty() {
        "none".to_string()
    } else if credential.split('.').count() == 3 {
        "jwt".to_string()
    } else {
        credential.clone()
    };
    s.seen.lock().unwrap().push(Seen {
        method: method.to_string(),
        path: path.clone(),
        credential: shown,
        body: body.clone(),
    });
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let m = method.as_str();
    match (m, segs.as_slice()) {
        ("GET", ["app"]) => {
            as_app(&s, &credential, || answer(200, json!({"id": APP_ID, "slug": SLUG, "name": "hone test app"})))
        }
        ("GET", ["repos", owner, _, "installation"]) => {
            as_app(&s, &credential, || match s.installations.get(&owner.to_lowercase()) {
                Some(id) => answer(200, json!({"id": id, "account": {"login": owner}, "app_id": APP_ID})),
                None => refuse(&s, 404, "Not Found", format!("the App is not installed on {owner}")),
            })
        }
        ("POST", ["app", "installations", id, "access_tokens"]) => as_app(&s, &credential, || mint(&s, id, &body)),
        // An installation token cannot read `/user`: GitHub answers 403.
        ("GET", ["user"]) => {
            refuse(&s, 403, "Resource not accessible by integration", "GET /user with an installation token".into())
        }
        ("GET", ["users", login]) => match valid(&s, &credential) {
            Some(_) if *login == format!("{SLUG}[bot]") => {
                answer(200, json!({"login": login, "id": BOT_ID, "type": "Bot"}))
            }
            Some(_) => refuse(&s, 404, "Not Found", format!("no user {login}")),
            None => refuse(&s, 401, "Bad credentials", format!("GET /users/{login} without a valid token")),
        },
        (_, ["repos", owner, repo, rest @ ..]) => {
            let Some(need) = permission(m, rest) else {
                return refuse(&s, 404, "Not Found", format!("{m} {path} is not an endpoint the stand-in knows"));
            };
            match valid(&s, &credential) {
                None => refuse(&s, 401, "Bad credentials", format!("{m} {path} without a valid token")),
                Some(t) if !t.owner.eq_ignore_ascii_case(owner) || !t.repo.eq_ignore_ascii_case(repo) => {
                    refuse(&s, 404, "Not Found", format!("{m} {path} with a token for {}/{}", t.owner, t.repo))
                }
                Some(t) if !need.iter().any(|(p, level)| allows(&t.permissions, p, level)) => refuse(
                    &s,
                    403,
                    "Resource not accessible by integration",
                    format!("{m} {path} needs {need:?}, the token has {:?}", t.permissions),
                ),
                Some(_) => pull_requests(&s, m, (owner, repo), rest, &body),
            }
        }
        _ => refuse(&s, 404, "Not Found", format!("{m} {path} is not an endpoint the stand-in knows")),
    }
}

/// The permission sets (any one suffices, as GitHub's docs list them) an endpoint under
/// `/repos/{owner}/{repo}/` needs.
fn permission(method: &str, rest: &[&str]) -> Option<Vec<(&'static str, &'static str)>> {
    Some(match (method, rest) {
        ("GET", ["pulls"]) | ("GET", ["pulls", _]) | ("GET", ["issues", _, "comments"]) => {
            vec![("pull_requests", "read"), ("issues", "read")]
        }
        ("GET", ["pulls", _, "reviews"]) | ("GET", ["pulls", _, "comments"]) => vec![("pull_requests", "read")],
        ("POST", ["issues", _, "comments"]) | ("PATCH", ["issues", "comments", _]) => {
            vec![("pull_requests", "write"), ("issues", "write")]
        }
        ("POST", ["pulls"]) | ("PATCH", ["pulls", _]) | ("POST", ["pulls", _, "requested_reviewers"]) => {
            vec![("pull_requests", "write")]
        }
        ("POST", ["issues", _, "labels"]) => vec![("issues", "write"), ("pull_requests", "write")],
        _ => return None,
    })
}

fn allows(have: &BTreeMap<String, String>, permission: &str, level: &str) -> bool {
    match have.get(permission).map(String::as_str) {
        Some("write") => true,
        Some("read") => level == "read",
        _ => false,
    }
}

fn pull_requests(s: &State, method: &str, (owner, repo): (&str, &str), rest: &[&str], body: &Value) -> Response {
    let pr = |n: u64| json!({"number": n, "state": "open", "html_url": format!("https://github.example/{owner}/{repo}/pull/{n}")});
    match (method, rest) {
        ("GET", ["pulls"]) => answer(200, json!([])),
        ("POST", ["pulls"]) => {
            let mut next = s.next_pr.lock().unwrap();
            let n = *next;
            *next += 1;
            answer(201, pr(n))
        }
        ("POST", ["issues", _, "labels"]) => answer(200, json!([])),
        ("GET", ["pulls", n]) if s.prs.lock().unwrap().contains_key(&n.parse().unwrap_or(0)) => {
            let (head, sha) = s.prs.lock().unwrap()[&n.parse::<u64>().unwrap_or(0)].clone();
            let full = format!("{owner}/{repo}");
            let mut body = pr(n.parse().unwrap_or(0));
            body["head"] = json!({"ref": head, "sha": sha, "repo": {"full_name": full}});
            body["base"] = json!({"ref": "main", "repo": {"full_name": full}});
            // The App opened it: its author is the App's bot.
            body["user"] = json!({"login": format!("{SLUG}[bot]"), "id": BOT_ID, "type": "Bot"});
            answer(200, body)
        }
        // Nobody has reviewed the stand-in's PRs.
        ("GET", ["pulls", _, "reviews"]) | ("GET", ["pulls", _, "comments"]) => answer(200, json!([])),
        ("GET", ["issues", _, "comments"]) => {
            let list: Vec<Value> =
                s.comments.lock().unwrap().iter().map(|(id, login, body)| comment(*id, login, body)).collect();
            answer(200, json!(list))
        }
        ("POST", ["issues", _, "comments"]) => {
            let mut all = s.comments.lock().unwrap();
            let (id, text) = (all.len() as u64 + 100, body["body"].as_str().unwrap_or_default().to_string());
            all.push((id, format!("{SLUG}[bot]"), text.clone()));
            answer(201, comment(id, &format!("{SLUG}[bot]"), &text))
        }
        ("PATCH", ["issues", "comments", id]) => {
            let mut all = s.comments.lock().unwrap();
            let bot = format!("{SLUG}[bot]");
            match all.iter_mut().find(|(i, _, _)| i.to_string() == *id) {
                Some((i, login, text)) if *login == bot => {
                    *text = body["body"].as_str().unwrap_or_default().to_string();
                    answer(200, comment(*i, login, text))
                }
                _ => refuse(
                    s,
                    403,
                    "Resource not accessible by integration",
                    format!("PATCH comment {id}, not the App's"),
                ),
            }
        }
        (_, ["pulls", n, ..]) => answer(if method == "POST" { 201 } else { 200 }, pr(n.parse().unwrap_or(0))),
        _ => answer(404, json!({"message": "Not Found"})),
    }
}

/// The token, when the stand-in minted it and it has not expired.
fn valid(s: &State, token: &str) -> Option<Minted> {
    let minted = s.minted.lock().unwrap();
    minted.iter().find(|m| m.token == token && SystemTime::now() < m.expires).cloned()
}

/// `then()` when `jwt` is the App's, else GitHub's 401.
fn as_app(s: &State, jwt: &str, then: impl FnOnce() -> Response) -> Response {
    match verify(s, jwt) {
        Ok(()) => then(),
        Err(why) => refuse(s, 401, &why, format!("JWT refused: {why}")),
    }
}

/// What GitHub checks of an App's JWT: an RS256 signature by the App's key, then its claims
/// (`iss` the App, issued no later than now, expiring in the future, at most ten minutes after
/// it was issued).
fn verify(s: &State, jwt: &str) -> Result<(), String> {
    let parts: Vec<&str> = jwt.split('.').collect();
    let [header, claims, signature] = parts[..] else {
        return Err("A JSON web token could not be decoded".into());
    };
    let decode = |p: &str| -> Result<Value, String> {
        let bytes = URL_SAFE_NO_PAD.decode(p).map_err(|_| "A JSON web token could not be decoded".to_string())?;
        serde_json::from_slice(&bytes).map_err(|_| "A JSON web token could not be decoded".to_string())
    };
    if decode(header)?["alg"] != "RS256" {
        return Err("A JSON web token could not be decoded".into());
    }
    let sig = URL_SAFE_NO_PAD.decode(signature).map_err(|_| "A JSON web token could not be decoded".to_string())?;
    let sig = rsa::pkcs1v15::Signature::try_from(sig.as_slice())
        .map_err(|_| "A JSON web token could not be decoded".to_string())?;
    let key = rsa::pkcs1v15::VerifyingKey::<rsa::sha2::Sha256>::new(s.public_key.clone());
    key.verify(format!("{header}.{claims}").as_bytes(), &sig)
        .map_err(|_| "A JSON web token could not be decoded".to_string())?;
    let c = decode(claims)?;
    let (iat, exp) = (c["iat"].as_u64().unwrap_or(u64::MAX), c["exp"].as_u64().unwrap_or(0));
    let iss_ok = c["iss"] == json!(APP_ID) || c["iss"] == json!(APP_ID.to_string());
    let problems = [
        (!iss_ok, format!("'Issuer' claim ('iss') {} is not this App", c["iss"])),
        (iat > now() + 1, "'Issued at' claim ('iat') must be an Integer representing a time in the past".into()),
        (exp <= now(), "'Expiration time' claim ('exp') must be a numeric value representing the future time".into()),
        (exp < iat || exp - iat > 600, "'Expiration time' claim ('exp') is too far in the future".into()),
    ];
    match problems.into_iter().find(|(bad, _)| *bad) {
        Some((_, why)) => Err(why),
        None => Ok(()),
    }
}

/// `POST /app/installations/{id}/access_tokens`: a token for exactly one repository of the
/// installation's owner, with permissions the App was granted, living as long as the test says.
fn mint(s: &State, id: &str, body: &Value) -> Response {
    let Some(owner) = id.parse().ok().and_then(|id| s.installation_owner(id)) else {
        return refuse(s, 404, "Not Found", format!("no installation {id}"));
    };
    let repos: Vec<&str> = body["repositories"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let [repo] = repos[..] else {
        return refuse(s, 422, "Exactly one repository is expected here", format!("a token for {repos:?}"));
    };
    let asked: BTreeMap<String, String> = body["permissions"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
        .collect();
    let granted = s.granted.lock().unwrap().clone();
    if asked.is_empty() || asked.iter().any(|(p, level)| !allows(&granted, p, level)) {
        let why = format!("permissions {asked:?} beyond {granted:?}");
        return refuse(s, 422, "The permissions requested are not granted to this installation.", why);
    }
    let token = format!("ghs_{:032x}", rand::random::<u128>());
    let expires = SystemTime::now() + *s.lifetime.lock().unwrap();
    let at = time::OffsetDateTime::from(expires).replace_nanosecond(0).unwrap();
    let expires_at = at.format(&time::format_description::well_known::Rfc3339).unwrap();
    let minted = Minted { token: token.clone(), owner, repo: repo.to_string(), permissions: asked.clone(), expires };
    s.minted.lock().unwrap().push(minted);
    answer(
        201,
        json!({"token": token, "expires_at": expires_at, "permissions": asked, "repository_selection": "selected"}),
    )
}

fn comment(id: u64, login: &str, body: &str) -> Value {
    json!({"id": id, "body": body, "user": {"login": login}, "html_url": format!("https://github.example/c/{id}")})
}
