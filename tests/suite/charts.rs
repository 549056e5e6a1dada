//! The charts in the Markdown reports are valid Mermaid, read by Mermaid's own parser
//! (`common::mermaid`, installed by .ci/run): `fleet-summary.md` from a real fleet with
//! repositories in different outcomes, a real run's `summary.md`, and charts whose labels are
//! hostile. And the check itself fails on a broken chart.

use crate::common::*;
use ::hone::output::chart;
use serde_json::Value;
use std::path::Path;

/// Labels a repository or the model could choose, each aimed at a way out of a chart.
const HOSTILE: &[&str] = &[
    "a\"b",
    "x\n```\n![](http://attacker.example/i.png)",
    "%%{init: {'theme':'dark'}}%%",
    "click t1 href \"http://attacker.example\"",
    "<img src=x onerror=alert(1)>",
    "excludes weekends",
    "section pwned",
    "2024-01-01 x",
    "a: b; c # d",
    "a\", \"b\"] bar [1",
    "",
    "a very long repository name that goes on and on and on forever",
];

/// Three origins (one the model fixes, one whose check never passes, one already fixed) and a
/// path that is no repository, with a name no chart could hold as it is.
fn fleet(dir: &Path) -> std::path::PathBuf {
    let mut lines = Vec::new();
    for (name, status, check) in [
        ("fixable", "broken\n", CHECK_SH),
        ("hopeless", "broken\n", "echo 'never'; exit 1\n"),
        ("done", "fixed\n", CHECK_SH),
    ] {
        let work = dir.join(format!("src-{name}"));
        let origin = dir.join(format!("origins/{name}.git"));
        origin_with(dir, &work, &origin, status, check);
        lines.push(format!("  - url: {}", origin.display()));
    }
    let odd = "odd \"%%{init}%%\" <img src=x>";
    std::fs::create_dir_all(dir.join(odd)).unwrap();
    lines.push(format!("  - path: '{odd}'"));
    std::fs::write(dir.join("script.yaml"), FIX_SCRIPT).unwrap();
    std::fs::write(
        dir.join("job.yaml"),
        "version: 1\nname: charts\ntask: Make check.sh pass.\nmodel: { provider: script, script: script.yaml }\nverify:\n  - { name: \"click t1 <b>\", run: \"sh check.sh\", timeout: 30s }\nlimits: { max_fix_attempts: 1 }\nplan: false\n",
    )
    .unwrap();
    let file = dir.join("fleet.yaml");
    std::fs::write(
        &file,
        format!("version: 1\njob: job.yaml\nrepos:\n{}\nconcurrency: 2\nworkspace: ws\n", lines.join("\n")),
    )
    .unwrap();
    file
}

/// The blocks Mermaid read of one type.
fn of_type<'a>(blocks: &'a [Value], t: &str) -> Vec<&'a Value> {
    blocks.iter().filter(|b| b["type"] == t).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_charts_of_a_real_fleet_and_its_runs_are_valid_mermaid() {
    let dir = tempfile::tempdir().unwrap();
    let file = fleet(dir.path());
    let run = run_hone(&["fleet", file.to_str().unwrap(), "--dry-run"], &[], dir.path().join("unused")).await;
    assert_eq!(run.code, 1, "two repositories fail: {}\n{}", run.stdout, run.stderr);
    let ws = dir.path().join("ws");
    let summary = ws.join("fleet-summary.md");
    let Some(blocks) = mermaid::parse(&[&summary]) else { return };
    let text = std::fs::read_to_string(&summary).unwrap();
    let pies = of_type(&blocks, "pie");
    assert_eq!(pies.len(), 1, "{text}");
    let slices: Vec<(String, u64)> = pies[0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s[0].as_str().unwrap().to_string(), s[1].as_u64().unwrap()))
        .collect();
    assert_eq!(slices.iter().map(|(_, n)| n).sum::<u64>(), 4, "{slices:?}");
    assert!(slices.contains(&("failed".into(), 2)) && slices.contains(&("no_change".into(), 1)), "{slices:?}");
    let bars = of_type(&blocks, "xychart");
    assert_eq!(bars.len(), 1, "time only (no pricing, four repositories): {text}");
    assert_eq!(bars[0]["items"].as_array().unwrap().len(), 4, "a bar per repository: {text}");

    // Each repository's run, in its own report dir: its summary.md has a timeline.
    let report: Value = serde_json::from_str(&std::fs::read_to_string(ws.join("fleet.json")).unwrap()).unwrap();
    let mut runs = 0;
    for r in report["repos"].as_array().unwrap() {
        // (The path that is no repository stops at intake: no timings, no timeline.)
        let id = r["id"].as_str().unwrap();
        if !["fixable", "hopeless", "done"].iter().any(|n| id.ends_with(n)) {
            continue;
        }
        let md = Path::new(r["report_dir"].as_str().unwrap()).join("summary.md");
        let blocks = mermaid::parse(&[&md]).unwrap_or_default();
        let gantt = of_type(&blocks, "gantt");
        assert_eq!(gantt.len(), 1, "{}", std::fs::read_to_string(&md).unwrap());
        let tasks: Vec<String> =
            gantt[0]["items"].as_array().unwrap().iter().map(|t| format!("{}: {}", t[0], t[1])).collect();
        assert!(tasks.iter().any(|t| t.starts_with("\"States\": \"INTAKE")), "{tasks:?}");
        assert!(tasks.iter().any(|t| t.contains("baseline click t1 _b_")), "{tasks:?}");
        if r["id"].as_str().unwrap().ends_with("fixable") {
            assert!(tasks.iter().any(|t| t == "\"Turns\": \"turn 1\""), "{tasks:?}");
            assert!(tasks.iter().any(|t| t == "\"Checks\": \"round 1 click t1 _b_\""), "{tasks:?}");
        }
        runs += 1;
    }
    assert_eq!(runs, 3, "the three repositories ran");
}

#[test]
fn charts_with_hostile_labels_are_valid_mermaid_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let slices: Vec<(&str, usize)> = HOSTILE.iter().take(chart::MAX_SLICES).map(|l| (*l, 2)).collect();
    let bars: Vec<(&str, f64)> = HOSTILE.iter().map(|l| (*l, 1.5)).collect();
    let tasks: Vec<chart::Task> = HOSTILE
        .iter()
        .enumerate()
        .map(|(i, n)| chart::Task {
            kind: "check",
            name: n.to_string(),
            start_ms: i as u64 * 10,
            end_ms: i as u64 * 10 + 5,
            mark: chart::Mark::Failed,
        })
        .collect();
    let mut gantt = chart::Gantt::new("Run %%{init}%%", 1_700_000_000_000);
    gantt.section("Checks", tasks);
    let md = [
        chart::pie("Outcomes\n```", &slices).unwrap(),
        chart::bars("Time\"]", "seconds", &bars).unwrap(),
        gantt.render().unwrap(),
        chart::pr_states(&[("open", 3), ("merged", 5), ("closed <b>", 1)]).unwrap(),
        chart::pr_checks(&[("passing", 2), ("failing", 1)]).unwrap(),
    ]
    .concat();
    let path = dir.path().join("hostile.md");
    std::fs::write(&path, &md).unwrap();
    let Some(blocks) = mermaid::parse(&[&path]) else { return };
    let counts: Vec<(&str, usize)> =
        blocks.iter().map(|b| (b["type"].as_str().unwrap(), b["items"].as_array().unwrap().len())).collect();
    assert_eq!(
        counts,
        [("pie", chart::MAX_SLICES), ("xychart", HOSTILE.len()), ("gantt", HOSTILE.len()), ("pie", 3), ("pie", 2)],
        "every slice, bar and task survived:\n{md}"
    );
    for task in blocks[2]["items"].as_array().unwrap() {
        assert_eq!(task[0], "Checks", "no task left its section: {task}");
        assert!(task[1].as_str().unwrap().starts_with("check"), "{task}");
        assert_eq!(task[4], "crit", "{task}");
    }
}

/// The check can fail: a chart Mermaid cannot read (a quote that ends its label early, a
/// keyword that swallows a task) is reported, not passed.
#[test]
fn the_mermaid_check_fails_on_a_broken_chart() {
    if !require::require(require::Need::Mermaid) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.md");
    std::fs::write(&good, chart::pie("ok", &[("a", 1)]).unwrap()).unwrap();
    assert!(mermaid::try_parse(&[&good]).is_ok());
    let broken = dir.path().join("broken.md");
    std::fs::write(&broken, "# r\n\n```mermaid\npie showData\n    title x\n    \"a\"b\" : 1\n```\n").unwrap();
    let err = mermaid::try_parse(&[&good, &broken]).expect_err("a broken pie passed");
    assert!(err.contains("broken.md: mermaid block 0 is not valid Mermaid"), "{err}");
    let bars = dir.path().join("bars.md");
    std::fs::write(&bars, "```mermaid\nxychart-beta\n    x-axis [\"a\", \"b\"]\n    bar [1]\n```\n").unwrap();
    assert!(mermaid::try_parse(&[&bars]).unwrap_err().contains("1 bars for 2 categories"));
}
