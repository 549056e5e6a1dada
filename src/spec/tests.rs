//! Unit tests for spec validation.

use super::*;

const GOOD: &str = r#"version: 1
name: fix-failing-tests
task: |
  Make the failing test pass.
repo: { path: ".", base: main }
model:
  provider: openai
  name: gpt-4.1
  base_url: null
  api_key_env: OPENAI_API_KEY
  temperature: 0
  max_output_tokens: 4096
  stream: true
verify:
  - { name: lint, run: "ruff check .", timeout: 2m }
  - { name: test, run: "python -m pytest -q", timeout: 10m }
limits: { max_turns: 40, max_wall_time: 20m, max_tokens: 2000000, max_fix_attempts: 3 }
policy: hone-policy.yaml
git: { branch: "hone/{name}", commit: true }
report: { dir: ".hone/reports" }
"#;

fn errors(text: &str) -> Vec<Diagnostic> {
    match parse(Path::new("dir/job.yaml"), text) {
        Ok(_) => vec![],
        Err(SpecError::Invalid(d)) => d,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn the_documented_example_is_valid() {
    let job = parse(Path::new("dir/job.yaml"), GOOD).unwrap();
    assert_eq!(job.name, "fix-failing-tests");
    assert_eq!(job.git.branch, "hone/fix-failing-tests");
    assert_eq!(job.verify[1].timeout, Duration::from_secs(600));
    assert_eq!(job.limits.max_wall_time, Duration::from_secs(1200));
    // Paths are relative to the spec's directory, and absolute, so that the report names them
    // the same from wherever it is read.
    let dir = std::env::current_dir().unwrap().join("dir");
    assert_eq!(job.policy, Some(dir.join("hone-policy.yaml")));
    assert_eq!(job.report_dir, Some(dir.join(".hone/reports")));
    assert_eq!(job.repo.path, Some(dir.join(".")));
}

#[test]
fn misspelt_key_suggests_the_right_one() {
    let e = errors(&GOOD.replace("max_turns: 40", "max_turn: 40"));
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].path, "limits.max_turn");
    assert_eq!((e[0].line, e[0].col), (17, 11));
    assert!(e[0].help.as_deref().unwrap().starts_with("did you mean `max_turns`?"), "{:?}", e[0].help);
}

#[test]
fn every_error_is_reported_not_only_the_first() {
    let text = GOOD
        .replace("max_turns: 40", "max_turns: many")
        .replace("timeout: 2m", "timeout: 2 minutes")
        .replace("stream: true", "stream: true\n  colour: blue")
        .replace("task: |\n  Make the failing test pass.\n", "");
    let e = errors(&text);
    let paths: Vec<_> = e.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, vec!["task", "model.colour", "verify[0].timeout", "limits.max_turns"], "{e:#?}");
}

#[test]
fn wrong_type_names_what_is_allowed() {
    let e = errors(&GOOD.replace("stream: true", "stream: [1]"));
    assert_eq!(e[0].path, "model.stream");
    assert!(e[0].message.contains("expected a boolean"), "{}", e[0].message);
}

#[test]
fn unknown_provider_lists_choices() {
    let e = errors(&GOOD.replace("provider: openai", "provider: opnai"));
    assert_eq!(e[0].path, "model.provider");
    assert!(e[0].help.as_deref().unwrap().contains("did you mean `openai`"), "{:?}", e[0]);
}

#[test]
fn bad_values_are_rejected() {
    let e = errors(&GOOD.replace("version: 1", "version: 2").replace("temperature: 0", "temperature: 7"));
    let paths: Vec<_> = e.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, vec!["version", "model.temperature"]);
}

#[test]
fn verify_entries_need_name_and_run_and_unique_names() {
    let text = GOOD.replace(r#"- { name: lint, run: "ruff check .", timeout: 2m }"#, "- { name: test }");
    let e = errors(&text);
    let paths: Vec<_> = e.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, vec!["verify[0].run", "verify[1].name"], "{e:#?}");
}

#[test]
fn setup_entries_are_checked_like_verify_entries_and_keep_their_order() {
    let setup = "setup:\n  - { name: venv, run: \"python3 -m venv .venv\", timeout: 5m }\n  - { name: deps, run: \"npm ci\" }\nverify:\n";
    let job = parse(Path::new("dir/job.yaml"), &GOOD.replace("verify:\n", setup)).unwrap();
    let names: Vec<(&str, u64)> = job.setup.iter().map(|s| (s.name.as_str(), s.timeout.as_secs())).collect();
    assert_eq!(names, [("venv", 300), ("deps", 600)]);
    let bad =
        "setup:\n  - { name: deps }\n  - { name: deps, run: x, timeout: 0s }\n  - { run: y, colour: red }\nverify:\n";
    let e = errors(&GOOD.replace("verify:\n", bad));
    let mut paths: Vec<_> = e.iter().map(|d| d.path.as_str()).collect();
    paths.sort();
    let want = ["setup[0].run", "setup[1].name", "setup[1].timeout", "setup[2].colour", "setup[2].name"];
    assert_eq!(paths, want, "{e:#?}");
}

#[test]
fn empty_file_reports_missing_required_keys() {
    let e = errors("");
    let paths: Vec<_> = e.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, vec!["version", "task", "model"]);
}

#[test]
fn script_provider_needs_a_script() {
    let e = errors("version: 1\ntask: x\nmodel: { provider: script }\n");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].path, "model.script");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(crate::testutil::proptest_config(400))]
        #[test]
        fn parsing_never_panics_on_arbitrary_text(s in "\\PC{0,200}") {
            let _ = parse(Path::new("job.yaml"), &s);
        }

        #[test]
        fn parsing_never_panics_on_mutated_specs(cut in 0usize..700, insert in "[ :\\[\\]{}\\-#'\"\n\tA-z0-9]{0,12}") {
            let mut s = GOOD.to_string();
            let at = s.char_indices().map(|(i, _)| i).nth(cut % GOOD.chars().count()).unwrap_or(0);
            s.insert_str(at, &insert);
            let _ = parse(Path::new("job.yaml"), &s);
        }
    }
}

#[test]
fn a_wrong_item_in_a_list_is_one_error_not_a_flood() {
    for (list, path) in [
        ("setup: [null]\n", "setup[0]"),
        ("mcp:\n  servers:\n    - { name: a, command: x, args: [1, 2] }\n", "mcp.servers[0].args[0]"),
        ("mcp:\n  servers: [null]\n", "mcp.servers[0]"),
    ] {
        let e = errors(&format!("version: 1\ntask: t\nmodel: {{ provider: openai, name: m }}\n{list}verify: []\n"));
        let paths: Vec<&str> = e.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, [path], "{e:#?}");
    }
}

#[test]
fn the_api_defaults_to_responses_for_models_served_only_there() {
    let api = |model: &str| {
        parse(Path::new("j.yaml"), &format!("version: 1\ntask: t\nmodel: {{ {model} }}\nverify: []\n"))
            .map(|j| j.model.api)
    };
    assert_eq!(api("provider: openai, name: gpt-5-codex").unwrap(), raw::Api::Responses);
    assert_eq!(api("provider: openai, name: o3-pro").unwrap(), raw::Api::Responses);
    assert_eq!(api("provider: openai, name: gpt-4.1").unwrap(), raw::Api::Chat);
    assert_eq!(api("provider: openai-compatible, name: qwen-codex, base_url: 'http://x/v1'").unwrap(), raw::Api::Chat);
    assert_eq!(api("provider: openai, name: gpt-5-codex, api: chat").unwrap(), raw::Api::Chat, "said is said");
    for bad in [
        "provider: anthropic, name: claude-x, api: responses",
        "provider: openai, name: m, api: responses, tool_mode: text",
    ] {
        let Err(SpecError::Invalid(d)) = api(bad) else { panic!("{bad} is refused") };
        assert_eq!(d[0].path, "model.api", "{d:#?}");
    }
}

#[test]
fn the_campaign_pace_is_positive_and_located() {
    let job = parse(
        Path::new("dir/hone.yaml"),
        &GOOD.replace("version: 1\n", "version: 1\npr: { hourly_limit: 10, open_limit: 3 }\n"),
    )
    .unwrap();
    assert_eq!((job.pr.hourly_limit, job.pr.open_limit), (Some(10), Some(3)));
    let job = parse(Path::new("dir/hone.yaml"), GOOD).unwrap();
    assert_eq!((job.pr.hourly_limit, job.pr.open_limit), (None, None));
    let e = errors(&GOOD.replace("version: 1\n", "version: 1\npr:\n  hourly_limit: 0\n  open_limit: -2\n"));
    let found: Vec<_> = e.iter().map(|d| (d.path.as_str(), d.line, d.col)).collect();
    assert_eq!(found, vec![("pr.hourly_limit", 3, 17), ("pr.open_limit", 4, 15)], "{e:#?}");
    assert!(e[0].message.contains("must be at least 1"), "{}", e[0].message);
}
