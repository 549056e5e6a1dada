//! Planning, checkpoints, rollback and replanning; asking for clarification.

use crate::common::mock_model::{MockModel, call, text};
use crate::common::repo::TestRepo;
use crate::common::*;
use serde_json::{Value, json};

/// Two checks: `status` (fails at the start) and `math` (passes at the start).
fn repo() -> TestRepo {
    TestRepo::new(&[("status.txt", "broken\n"), ("math.txt", "4\n")])
}

fn yaml(name: &str, url: &str) -> String {
    job_yaml(name, url, false).replace("plan: false\n", "").replace(
        r#"  - { name: check, run: "sh check.sh", timeout: 30s }"#,
        "  - { name: status, run: \"grep -qx fixed status.txt\", timeout: 30s }\n  - { name: math, run: \"grep -qx 4 math.txt\", timeout: 30s }",
    )
}

fn plan(steps: &[(&str, &str)]) -> Value {
    json!({"steps": steps.iter().map(|(t, s)| json!({"title": t, "intent": "", "status": s, "expected_files": []})).collect::<Vec<_>>(),
           "verification": "the status and math checks", "risk": "low"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_breaks_a_passing_check_is_rolled_back_then_replanned_to_success() {
    let repo = repo();
    let mock = MockModel::start().await;
    mock.turn(call("update_plan", plan(&[("tidy math.txt", "in_progress"), ("fix status.txt", "pending")])), false)
        .turn(call("write_file", json!({"path": "math.txt", "content": "5\n"})), false)
        .turn(call("update_plan", plan(&[("tidy math.txt", "done"), ("fix status.txt", "in_progress")])), false)
        .turn(call("update_plan", plan(&[("fix status.txt", "in_progress")])), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(call("update_plan", plan(&[("fix status.txt", "done")])), false)
        .turn(text("status.txt is fixed; math.txt is untouched."), false);
    let run = run_job(&repo, &yaml("rollback", &mock.base_url), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    // The step that broke `math` was rolled back to the baseline checkpoint.
    assert_eq!(report["rollbacks"].as_array().unwrap().len(), 1, "{}", report["rollbacks"]);
    assert_eq!(report["rollbacks"][0]["to_checkpoint"], 0);
    let note = mock.requests()[3].body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        note.contains("rolled the work tree back to checkpoint 0") && note.contains("Replan the remaining steps"),
        "{note}"
    );
    // After the replan, the fixed step is kept as checkpoint 1, and the commit has math.txt intact.
    assert_eq!(report["checkpoints"].as_array().unwrap().len(), 2);
    assert_eq!(report["checkpoints"][1]["score"], json!([0, 0]));
    assert_eq!(repo.show("hone/rollback", "math.txt"), "4");
    assert_eq!(repo.show("hone/rollback", "status.txt"), "fixed");
    assert_eq!(
        repo.git(&["rev-parse", "refs/hone/rollback/checkpoints/1^{tree}"]),
        repo.git(&["rev-parse", "hone/rollback^{tree}"])
    );
    // The plan, with final statuses, is in the report, the summary and the events.
    assert_eq!(report["plan"]["steps"][0]["status"], "done");
    assert_eq!(report["plan"]["updates"], 4);
    assert!(run.read("summary.md").contains("1. [x] fix status.txt"), "{}", run.read("summary.md"));
    let types: Vec<String> = run.events().iter().map(|e| e["type"].as_str().unwrap().to_string()).collect();
    for t in ["plan_updated", "checkpoint", "rollback"] {
        assert!(types.contains(&t.to_string()), "missing {t}");
    }
    let states: Vec<&str> = report["states"].as_array().unwrap().iter().map(|s| s["state"].as_str().unwrap()).collect();
    assert_eq!(&states[..4], ["INTAKE", "CONTEXT_BUILDING", "PLANNING", "EXECUTING"]);
    mock.assert_pairing();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ambiguous_task_stops_with_questions() {
    let repo = repo();
    let mock = MockModel::start().await;
    mock.turn(
        call(
            "request_clarification",
            json!({"questions": ["Should math.txt hold 4 or 5?", "Is status.txt generated?"]}),
        ),
        false,
    );
    let run = run_job(&repo, &yaml("clarify", &mock.base_url), &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let report = run.report();
    assert_eq!(report["status"], "needs_clarification");
    assert_eq!(report["clarification"], json!(["Should math.txt hold 4 or 5?", "Is status.txt generated?"]));
    assert_eq!(report["states"].as_array().unwrap().last().unwrap()["state"], "NEEDS_CLARIFICATION");
    assert!(run.read("summary.md").contains("Should math.txt hold 4 or 5?"));
    assert_eq!(mock.requests().len(), 1);
}
