//! The shipped autofix workflow takes hone's own inputs (the job spec and the policy beside it)
//! from the base branch, never from the PR: the PR's checkout is only the repository hone works
//! on. A PR author could otherwise name where the API key goes (`model.base_url`), turn the jail
//! off, or add setup commands and MCP servers.

use serde_json::Value;

fn workflow(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workflows").join(name);
    serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn steps(w: &Value) -> Vec<Value> {
    w["jobs"].as_object().unwrap().values().flat_map(|j| j["steps"].as_array().unwrap().clone()).collect()
}

fn uses(step: &Value, what: &str) -> bool {
    step["uses"].as_str().is_some_and(|u| u.starts_with(what))
}

/// The directory a checkout step fills, relative to the workspace ("" for the workspace).
fn checkout_path(step: &Value) -> String {
    step["with"]["path"].as_str().unwrap_or("").trim_end_matches('/').to_string()
}

/// `p` (an input, maybe `${{ github.workspace }}/x`) relative to the workspace.
fn in_workspace(p: &str) -> String {
    p.trim_start_matches("${{ github.workspace }}").trim_start_matches('/').trim_end_matches('/').to_string()
}

fn under(path: &str, dir: &str) -> bool {
    dir.is_empty() || path == dir || path.starts_with(&format!("{dir}/"))
}

#[test]
fn autofix_reads_its_job_and_policy_from_the_base_branch() {
    let w = workflow("autofix.yml");
    let all = steps(&w);
    let checkouts: Vec<&Value> = all.iter().filter(|s| uses(s, "actions/checkout@")).collect();
    let by_ref = |r: &str| -> Vec<String> {
        checkouts
            .iter()
            .filter(|s| s["with"]["ref"].as_str().is_some_and(|v| v.contains(r)))
            .map(|s| checkout_path(s))
            .collect()
    };
    let (head, base) = (by_ref("pull_request.head."), by_ref("pull_request.base."));
    assert_eq!(head.len(), 1, "one checkout of the PR's head: {checkouts:#?}");
    assert_eq!(base.len(), 1, "one checkout of the base branch: {checkouts:#?}");
    let hone = all.iter().find(|s| uses(s, "hone/hone@")).expect("a hone step");
    let job = in_workspace(hone["with"]["job"].as_str().expect("the hone step names its job"));
    let repo = in_workspace(hone["with"]["repo"].as_str().unwrap_or(""));
    assert!(under(&job, &base[0]), "the job `{job}` is not in the base checkout `{}`", base[0]);
    assert!(!under(&job, &head[0]), "the job `{job}` is in the PR's checkout `{}`", head[0]);
    assert_eq!(repo, head[0], "hone works on the PR's checkout");
    for s in &checkouts {
        assert_eq!(s["with"]["persist-credentials"], Value::Bool(false), "{s:#}");
    }
    // The reports are uploaded from where hone writes them.
    let upload = all.iter().find(|s| uses(s, "actions/upload-artifact@")).expect("an upload step");
    let reports = in_workspace(hone["with"]["report-dir"].as_str().unwrap_or(".hone/reports"));
    assert_eq!(in_workspace(upload["with"]["path"].as_str().unwrap()), reports);
}
