//! What a run spent, as plain CI outputs: the Action's step outputs (`GITHUB_OUTPUT`) and GitLab's
//! dotenv report (`hone.env`) carry the tokens, the cost, the turns and the model requests the
//! mock model's answers make; a fleet's `fleet.env` sums them per campaign.

use crate::common::actions::output_value;
use crate::common::mock_model::{MockModel, call, text};
use crate::common::*;
use serde_json::json;
use std::collections::HashMap;

/// The mock's usage per turn (100 prompt tokens, 64 of them cached, 20 out) at these prices:
/// 36 × $10 + 64 × $1 + 20 × $1000 per million = $0.020424 a turn.
const PRICED: &str = "  pricing: { input: 10, cached_input: 1, output: 1000 }\n  max_output_tokens: 10\n";

fn dotenv(text: &str) -> HashMap<String, String> {
    text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_step_outputs_and_the_dotenv_report_carry_tokens_and_cost() {
    let repo = broken_repo();
    let mock = MockModel::start().await;
    mock.turn(call("read_file", json!({"path": "check.sh"})), false)
        .turn(call("write_file", json!({"path": "status.txt", "content": "fixed\n"})), false)
        .turn(text("Done."), false);
    let yaml = job_yaml("spent", &mock.base_url, false)
        .replace("  api_key_env: HONE_TEST_API_KEY\n", &format!("  api_key_env: HONE_TEST_API_KEY\n{PRICED}"));
    let out = repo.dir.path().join("gh-output");
    let env = [("GITHUB_ACTIONS", "true"), ("GITHUB_OUTPUT", out.to_str().unwrap())];
    let run = run_job_env(&repo, &yaml, &env).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report = run.report();
    let file = std::fs::read_to_string(&out).unwrap();
    let gl = dotenv(&run.read("hone.env"));
    let expected = [
        ("input-tokens", "300"),
        ("output-tokens", "60"),
        ("cached-tokens", "192"),
        ("cost-usd", "0.061272"),
        ("turns", "3"),
        ("model-requests", "3"),
    ];
    for (name, value) in expected {
        assert_eq!(output_value(&file, name), value, "GITHUB_OUTPUT {name}");
        let var = format!("HONE_{}", name.to_uppercase().replace('-', "_"));
        assert_eq!(gl.get(&var).map(String::as_str), Some(value), "hone.env {var}");
    }
    assert_eq!(output_value(&file, "duration-ms"), report["duration_ms"].to_string());
    assert_eq!(gl["HONE_STATUS"], "success");
    assert_eq!(gl["HONE_COMMIT"], report["commit"]["sha"].as_str().unwrap());
    assert_eq!(output_value(&file, "cost-usd"), report["cost"]["usd"].to_string(), "the report's cost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_sums_the_spend_of_its_repositories() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = fleet_of_one(dir.path(), "summed", "pr: { enabled: false }\ngit: { push: false }\n");
    let out = dir.path().join("gh-output");
    let env = [("GITHUB_ACTIONS", "true"), ("GITHUB_OUTPUT", out.to_str().unwrap())];
    let run = run_hone_env(&["fleet", fleet.to_str().unwrap()], &[], dir.path().join("unused"), &env).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ws/fleet.json")).unwrap()).unwrap();
    let spent = report["repos"][0]["spend"]["input_tokens"].as_u64().unwrap();
    assert!(spent > 0);
    assert_eq!(report["spend"]["input_tokens"].as_u64(), Some(spent));
    let gl = dotenv(&std::fs::read_to_string(dir.path().join("ws/fleet.env")).unwrap());
    assert_eq!(gl["HONE_INPUT_TOKENS"], spent.to_string());
    assert_eq!((gl["HONE_REPOSITORIES"].as_str(), gl["HONE_FAILED"].as_str()), ("1", "0"));
    let file = std::fs::read_to_string(&out).unwrap();
    assert_eq!(output_value(&file, "input-tokens"), spent.to_string());
    assert_eq!(output_value(&file, "turns"), report["spend"]["turns"].to_string());
}
