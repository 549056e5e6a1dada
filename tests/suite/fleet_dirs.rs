//! Where a fleet works and writes, from the command line: `--workspace DIR` moves the clones and
//! per-repository reports (and the aggregate reports with them), `--out DIR` the aggregate
//! reports alone, which `--resume` then reads from there. Both win over the fleet file.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_and_out_from_the_command_line_win_over_the_fleet_file() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = fleet_of_one(dir.path(), "dirs", "pr: { enabled: false }\ngit: { push: false }\n");
    let (ws, out) = (dir.path().join("elsewhere/ws"), dir.path().join("elsewhere/out"));
    let (ws_s, out_s) = (ws.display().to_string(), out.display().to_string());
    let args = ["fleet", fleet.to_str().unwrap(), "--workspace", &ws_s, "--out", &out_s];
    let run = run_hone_env(&args, &[], dir.path().join("unused"), &[]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains(&format!("reports in {out_s}")), "{}", run.stdout);
    assert!(out.join("fleet.json").is_file() && out.join("fleet-summary.md").is_file());
    assert!(!ws.join("fleet.json").exists(), "the aggregate reports went to --out");
    assert!(ws.join("repos").is_dir() && ws.join("reports").is_dir(), "clones and reports are in --workspace");
    assert!(!dir.path().join("ws").exists(), "the fleet file's workspace was not used");

    // --resume reads the last reports from --out: the repository that succeeded is skipped.
    let resume = [&args[..], &["--resume"]].concat();
    let again = run_hone_env(&resume, &[], dir.path().join("unused"), &[]).await;
    assert_eq!(again.code, 0, "{}\n{}", again.stdout, again.stderr);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("fleet.json")).unwrap()).unwrap();
    assert_eq!(report["repos"][0]["resumed"], true, "{report:#}");

    // `--workspace` alone: the reports follow it.
    let moved = dir.path().join("moved");
    let moved_s = moved.display().to_string();
    let run =
        run_hone_env(&["fleet", fleet.to_str().unwrap(), "--workspace", &moved_s], &[], dir.path().join("unused"), &[])
            .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(moved.join("fleet.json").is_file());
}

/// `hone fleet` with no file is invalid input, said with its stable code and what to type.
#[test]
fn a_fleet_without_a_file_is_invalid_input_with_its_code() {
    let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_hone"))
        .arg("fleet")
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("error[E_INVALID_ARGS]: no fleet file given"), "{stderr}");
    assert!(stderr.contains("help: hone fleet FLEET.yaml"), "{stderr}");
}
