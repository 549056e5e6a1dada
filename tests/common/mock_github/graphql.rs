//! The stand-in's GraphQL endpoint: the token's `viewer`, a PR's `reviewDecision` (as GitHub computes it from the
//! reviews of users with write access and the rules' required approvals) and the mutation
//! `enqueuePullRequest`. Any other query is refused.

use super::State;
use super::routes::{answer, writers_verdict};
use axum::response::Response;
use serde_json::{Value, json};

/// `POST /graphql`.
pub fn answer_graphql(s: &State, body: &Value, n: usize) -> Response {
    let q = body["query"].as_str().unwrap_or("");
    if q.contains("enqueuePullRequest") {
        return enqueue(s, body, n);
    }
    if q.contains("reviewDecision") {
        return review_decision(s, body, n);
    }
    if q.contains("viewer") {
        let login = s.installation.lock().unwrap().clone().unwrap_or_else(|| super::LOGIN.to_string());
        return answer(200, json!({"data": {"viewer": {"login": login}}}), n, "graphql");
    }
    s.refused.lock().unwrap().push(format!("GraphQL query hone does not make: {q}"));
    answer(200, json!({"errors": [{"message": "unknown"}]}), n, "graphql")
}

/// `repository(owner:, name:) { pullRequest(number:) { reviewDecision } }`: null when the
/// rules require no approval (as GitHub answers), else APPROVED, CHANGES_REQUESTED or
/// REVIEW_REQUIRED from the writers' latest reviews.
fn review_decision(s: &State, body: &Value, n: usize) -> Response {
    let v = &body["variables"];
    let (Some(owner), Some(name), Some(number)) = (v["owner"].as_str(), v["name"].as_str(), v["number"].as_u64())
    else {
        s.refused.lock().unwrap().push(format!("reviewDecision asked without owner, name and number: {v}"));
        return answer(200, json!({"errors": [{"type": "MISSING_VARIABLE", "message": "missing"}]}), n, "graphql");
    };
    let repos = s.repos.lock().unwrap();
    let Some(r) = repos.get(&format!("{owner}/{name}").to_lowercase()) else {
        let m = format!("Could not resolve to a Repository with the name '{owner}/{name}'.");
        return answer(
            200,
            json!({"data": {"repository": null}, "errors": [{"type": "NOT_FOUND", "message": m}]}),
            n,
            "graphql",
        );
    };
    let Some(p) = r.prs.get(&number) else {
        let m = format!("Could not resolve to a PullRequest with the number of {number}.");
        let data =
            json!({"data": {"repository": {"pullRequest": null}}, "errors": [{"type": "NOT_FOUND", "message": m}]});
        return answer(200, data, n, "graphql");
    };
    let (approvals, changes) = writers_verdict(p);
    let decision = match r.required_reviews {
        0 => Value::Null,
        _ if changes => json!("CHANGES_REQUESTED"),
        req if approvals >= req => json!("APPROVED"),
        _ => json!("REVIEW_REQUIRED"),
    };
    answer(200, json!({"data": {"repository": {"pullRequest": {"reviewDecision": decision}}}}), n, "graphql")
}

/// `enqueuePullRequest(input: {pullRequestId, expectedHeadOid})`.
fn enqueue(s: &State, body: &Value, n: usize) -> Response {
    let (id, expected) = (body["variables"]["id"].as_str().unwrap_or(""), body["variables"]["sha"].as_str());
    let mut repos = s.repos.lock().unwrap();
    let found = repos.values_mut().find_map(|r| {
        let queue = r.merge_queue;
        r.prs.values_mut().find(|p| format!("PR_node{}", p.number) == id).map(|p| (queue, p))
    });
    let err = |m: &str| {
        answer(
            200,
            json!({"data": {"enqueuePullRequest": null}, "errors": [{"type": "UNPROCESSABLE", "message": m}]}),
            n,
            "graphql",
        )
    };
    match found {
        None => err(&format!("Could not resolve to a node with the global id of '{id}'")),
        Some((false, _)) => err("Pull request is not in a merge queue enabled branch"),
        Some((true, p)) if expected.is_some_and(|e| e != p.head_sha) => {
            err("Expected head oid does not match the pull request's head")
        }
        Some((true, p)) => {
            p.queued = true;
            answer(
                200,
                json!({"data": {"enqueuePullRequest": {"mergeQueueEntry": {"state": "QUEUED", "position": 1}}}}),
                n,
                "graphql",
            )
        }
    }
}
