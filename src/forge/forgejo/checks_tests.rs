use super::*;
use serde_json::json;

#[test]
fn checks_come_from_the_combined_status_and_the_protection() {
    let st = |list: Value| json!({"state": "x", "statuses": list});
    let ok = json!({"context": "ci", "status": "success"});
    assert_eq!(checks_of(&st(json!([ok])), &[]).0, Checks::Passing);
    assert_eq!(checks_of(&st(json!([])), &[]).0, Checks::Pending, "nothing reported is never passing");
    let (c, why) = checks_of(&st(json!([ok])), &["lint".into()]);
    assert!(c == Checks::Pending && why.unwrap().contains("`lint`"));
    let bad = json!({"context": "lint", "status": "failure"});
    assert_eq!(checks_of(&st(json!([ok, bad])), &[]).0, Checks::Failing);
    assert_eq!(checks_of(&st(json!([{"context": "ci", "status": "pending"}])), &[]).0, Checks::Pending);
    let p =
        protection_of(&json!({"required_approvals": 2, "enable_status_check": true, "status_check_contexts": ["ci"]}));
    assert_eq!(p, Protection { required_approvals: 2, required_checks: vec!["ci".into()] });
    assert!(
        protection_of(&json!({"enable_status_check": false, "status_check_contexts": ["ci"]}))
            .required_checks
            .is_empty()
    );
}

#[test]
fn only_official_current_reviews_decide() {
    let r = |id: u64, state: &str, official: bool| json!({"user": {"id": id}, "state": state, "official": official});
    assert_eq!(review_of(&[r(1, "APPROVED", true)], 0), Review::Approved);
    assert_eq!(review_of(&[r(1, "APPROVED", false)], 0), Review::None, "a drive-by approval");
    assert_eq!(review_of(&[r(1, "APPROVED", true)], 2), Review::ReviewRequired);
    assert_eq!(review_of(&[r(1, "REQUEST_CHANGES", true), r(1, "APPROVED", true)], 1), Review::Approved);
    assert_eq!(review_of(&[r(1, "APPROVED", true), r(2, "REQUEST_CHANGES", true)], 0), Review::ChangesRequested);
    let mut stale = r(2, "REQUEST_CHANGES", true);
    stale["dismissed"] = json!(true);
    assert_eq!(review_of(&[r(1, "APPROVED", true), stale], 0), Review::Approved);
}
