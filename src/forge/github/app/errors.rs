//! What GitHub's refusals of the App's requests mean, said as what to do: a JWT refused (the key
//! or the id is wrong), the App not installed where the repository is, a token refused for the
//! permissions or the repository asked for. GitHub's own message is quoted, cut and cleaned.

use super::permissions::Permissions;
use crate::error::{Code, HoneError};
use serde_json::Value;

/// The request GitHub refused.
#[derive(Debug, Clone, Copy)]
pub enum Step<'a> {
    /// `GET /repos/{owner}/{repo}/installation`, with the JWT.
    Installation { owner: &'a str, repo: &'a str },
    /// `POST /app/installations/{id}/access_tokens`, with the JWT.
    Mint { owner: &'a str, repo: &'a str, permissions: &'a Permissions },
    /// `GET /app`, with the JWT.
    App,
    /// `GET /users/{slug}[bot]`, with the installation token.
    Bot { login: &'a str },
}

/// GitHub's `message`, at most 200 characters, without control characters (it is the server's
/// text, quoted in hone's error).
pub fn quoted(body: &Value) -> String {
    let m = body.get("message").and_then(Value::as_str).unwrap_or("");
    let cleaned: String = m.chars().filter(|c| !c.is_control()).take(200).collect();
    if cleaned.is_empty() { String::new() } else { format!(": {cleaned}") }
}

/// The error for `status` (and GitHub's answer `body`) at `step`, for the App `app_id`.
pub fn refused(app_id: &str, step: Step<'_>, status: u16, body: &Value) -> HoneError {
    let said = format!("HTTP {status}{}", quoted(body));
    if status == 401 {
        return HoneError::new(Code::Forge, format!("GitHub refused the JWT of the GitHub App {app_id} ({said})")).hint(
            "the private key is not this App's (or was deleted), GITHUB_APP_ID names another App, or this machine's clock is off by more than a minute: check GITHUB_APP_ID and generate a new key in the App's settings",
        );
    }
    match step {
        Step::Installation { owner, repo } if status == 404 => HoneError::new(
            Code::Forge,
            format!("the GitHub App {app_id} is not installed on {owner}/{repo} ({said})"),
        )
        .hint(format!(
            "install the App on `{owner}` (the App's page → Install App) with access to `{repo}`; a fleet needs it installed on every owner it names"
        )),
        Step::Mint { owner, repo, permissions } if matches!(status, 403 | 404 | 422) => HoneError::new(
            Code::Forge,
            format!(
                "the GitHub App {app_id}'s installation on {owner} refused a token for {repo} with the permissions {permissions} ({said})"
            ),
        )
        .hint(format!(
            "grant the App these repository permissions ({permissions}) in its settings, have `{owner}` accept them on the installation, and give the installation access to `{repo}`"
        )),
        Step::App => HoneError::new(Code::Forge, format!("GitHub did not tell the GitHub App {app_id}'s name ({said})")),
        Step::Bot { login } => {
            HoneError::new(Code::Forge, format!("GitHub did not tell the id of the App's bot user {login} ({said})"))
        }
        Step::Installation { owner, repo } | Step::Mint { owner, repo, .. } => HoneError::new(
            Code::Forge,
            format!("GitHub refused the GitHub App {app_id}'s request for {owner}/{repo} ({said})"),
        ),
    }
}

/// What `step` asked for, for a message.
fn asked(step: Step<'_>) -> String {
    match step {
        Step::Installation { owner, repo } => format!("the installation for {owner}/{repo}"),
        Step::Mint { owner, repo, .. } => format!("a token for {owner}/{repo}"),
        Step::App => "the App's name".into(),
        Step::Bot { login } => format!("the id of {login}"),
    }
}

/// The error for a success whose body lacks `what` hone needs (or holds it in a form hone does
/// not take).
pub fn malformed(app_id: &str, step: Step<'_>, what: &str) -> HoneError {
    HoneError::new(
        Code::Forge,
        format!("GitHub's answer to the GitHub App {app_id}'s request for {} has {what}", asked(step)),
    )
    .hint("check that GITHUB_API_URL is GitHub's API (api.github.com, or your GitHub Enterprise Server's /api/v3)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_refusal_says_what_to_do() {
        let msg = json!({"message": "Not Found\u{1b}[31m"});
        let e = refused("42", Step::Installation { owner: "acme", repo: "app" }, 404, &msg);
        assert!(e.message.contains("not installed on acme/app"), "{}", e.message);
        assert!(e.hint.as_deref().unwrap().contains("install the App on `acme`"), "{e:?}");
        assert!(!e.message.contains('\u{1b}'), "GitHub's text is cleaned: {:?}", e.message);

        let permissions = Permissions::for_job(&super::super::test_job(""), false);
        let body = json!({"message": "The permissions requested are not granted to this installation."});
        let e = refused("42", Step::Mint { owner: "acme", repo: "app", permissions: &permissions }, 422, &body);
        assert!(e.message.contains("contents: write, pull_requests: write"), "names the permissions: {}", e.message);
        assert!(e.message.contains("not granted"), "quotes GitHub: {}", e.message);
        assert!(e.hint.as_deref().unwrap().contains("grant the App"), "{e:?}");

        let e = refused("42", Step::App, 401, &json!({"message": "A JSON web token could not be decoded"}));
        assert!(e.message.contains("refused the JWT of the GitHub App 42"), "{}", e.message);
        assert!(e.hint.as_deref().unwrap().contains("private key"), "{e:?}");
        assert!(quoted(&json!({"message": "x".repeat(500)})).len() <= 202);
        assert_eq!(quoted(&json!([])), "");
    }
}
