//! `hone fleet prs` on GitLab acts only on hone's own merge requests at the commit hone pushed,
//! and counts approvals only as GitLab's approvals API gives them: a push by someone else between
//! `status` and `merge` is never merged, a merge request someone else opened is never noted,
//! closed or stripped of its branch, a branch that moved is kept.

use super::fleet_prs::{BRANCH, entry};
use super::fleet_prs_gitlab::lab;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_a_push_by_another_identity_between_status_and_merge_is_never_merged() {
    let lab = lab(&["app"], &[("app", 1)]).await;
    lab.mr("app", BRANCH, None);
    lab.gl.with_mr("acme/app", 1, |m| m.pipeline = Some("success".into()));
    let ours = lab.gl.head("acme/app", BRANCH).unwrap();
    let status = lab.prs(&["status"]).await;
    assert_eq!(status.code, 4, "{}\n{}", status.stdout, status.stderr);
    assert_eq!(entry(&lab.report("status"), "app")["head_sha"], ours.as_str());
    // A developer who may push to hone's branch, but not merge, adds `backdoor.py`; the pipeline
    // of the new head passes.
    let theirs = lab.gl.push("acme/app", BRANCH);
    let merge = lab.prs(&["merge"]).await;
    assert_eq!(merge.code, 4, "{}\n{}", merge.stdout, merge.stderr);
    assert_eq!(lab.gl.mrs("acme/app")[0]["state"], "opened", "a head hone never pushed is never merged");
    assert!(lab.mutations().is_empty(), "nothing was changed: {:?}", lab.mutations());
    let r = lab.report("merge");
    let e = entry(&r, "app");
    assert_eq!(e["action"], "skipped", "{e:#}");
    let reason = e["reason"].as_str().unwrap();
    assert!(reason.starts_with("not hone's head:"), "{reason}");
    assert!(reason.contains(&theirs[..12]) && reason.contains(&ours[..12]), "{reason}");
    assert_eq!((e["owned"].clone(), r["counts"].clone()), (json!("not_hones_head"), json!({"not_hones": 1})));
    lab.clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_a_fleet_json_naming_someone_elses_merge_request_is_left_alone() {
    let lab = lab(&["app"], &[("app", 1)]).await;
    lab.mr_by("app", "feature", None, "dev");
    let path = lab.dir.path().join("out/fleet.json");
    let text = std::fs::read_to_string(&path).unwrap().replace(BRANCH, "feature");
    std::fs::write(&path, text).unwrap();
    for cmd in ["close", "merge"] {
        let run = lab.prs(&[cmd]).await;
        assert_eq!(run.code, 4, "{cmd}: {}\n{}", run.stdout, run.stderr);
        let e = entry(&lab.report(cmd), "app").clone();
        assert_eq!(e["action"], "skipped", "{cmd}: {e:#}");
        assert!(e["reason"].as_str().unwrap().starts_with("not hone's PR: opened by `dev`"), "{cmd}: {e:#}");
    }
    assert!(lab.mutations().is_empty(), "nothing noted, closed, merged or deleted: {:?}", lab.mutations());
    assert_eq!(lab.gl.mrs("acme/app")[0]["state"], "opened");
    assert!(lab.gl.notes("acme/app", 1).is_empty());
    assert!(lab.gl.branches("acme/app").contains(&"feature".to_string()));
    lab.clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_close_keeps_a_branch_whose_head_moved() {
    let lab = lab(&["app"], &[("app", 1)]).await;
    lab.mr("app", BRANCH, None);
    let theirs = lab.gl.push("acme/app", BRANCH);
    let run = lab.prs(&["close"]).await;
    assert_eq!(run.code, 0, "hone's merge request is closed: {}\n{}", run.stdout, run.stderr);
    assert!(!lab.mutations().iter().any(|m| m.starts_with("DELETE")), "no branch deleted: {:?}", lab.mutations());
    assert_eq!(lab.gl.head("acme/app", BRANCH), Some(theirs), "their commit is still on the branch");
    assert_eq!(lab.gl.mrs("acme/app")[0]["state"], "closed");
    let e = entry(&lab.report("close"), "app").clone();
    assert_eq!((e["action"].clone(), e["branch_deleted"].clone()), (json!("closed"), json!(false)), "{e:#}");
    assert!(e["reason"].as_str().unwrap().starts_with("closed; branch kept: its head moved"), "{e:#}");
    lab.clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gitlab_approvals_come_from_its_approvals_api_not_from_notes() {
    let lab = lab(&["approved", "noted"], &[("approved", 1), ("noted", 1)]).await;
    for n in ["approved", "noted"] {
        lab.mr(n, BRANCH, None);
        lab.gl.with_mr(&format!("acme/{n}"), 1, |m| {
            (m.pipeline, m.approvals_required) = (Some("success".into()), Some(1));
        });
    }
    lab.gl.approve("acme/approved", 1, "maintainer");
    // A note is not an approval, whoever writes it.
    lab.gl.add_note("acme/noted", 1, "stranger", "/approve LGTM, approved!");
    let status = lab.prs(&["status"]).await;
    assert_eq!(status.code, 4, "{}\n{}", status.stdout, status.stderr);
    let r = lab.report("status");
    assert_eq!(entry(&r, "approved")["review"], "approved", "{r:#}");
    assert_eq!(entry(&r, "noted")["review"], "review_required", "{r:#}");
    let merge = lab.prs(&["merge"]).await;
    assert_eq!(merge.code, 4, "{}\n{}", merge.stdout, merge.stderr);
    assert_eq!(lab.gl.mrs("acme/approved")[0]["state"], "merged");
    assert_eq!(lab.gl.mrs("acme/noted")[0]["state"], "opened");
    assert_eq!(entry(&lab.report("merge"), "noted")["reason"], "review required");
    lab.clean();
}
