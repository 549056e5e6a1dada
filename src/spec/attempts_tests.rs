//! `attempts:` as users write it, and what is refused, where.

use super::*;
use crate::spec::{Diagnostic, SpecError, parse};
use std::path::Path;

const JOB: &str = "version: 1\nname: j\ntask: Fix it.\nmodel: { provider: openai, name: gpt-4.1 }\nverify:\n  - { name: test, run: \"make test\" }\n";

fn job(tail: &str) -> crate::spec::Job {
    parse(Path::new("dir/job.yaml"), &format!("{JOB}{tail}")).unwrap_or_else(|e| panic!("{tail}: {e}"))
}

fn errors(tail: &str) -> Vec<Diagnostic> {
    match parse(Path::new("dir/job.yaml"), &format!("{JOB}{tail}")) {
        Err(SpecError::Invalid(d)) => d,
        other => panic!("{tail} is refused, not {other:?}"),
    }
}

#[test]
fn without_attempts_a_job_makes_one_try_of_its_model() {
    let j = job("");
    assert_eq!(j.attempts.tries.len(), 1);
    assert_eq!(j.attempts.tries[0].model.name, "gpt-4.1");
    assert!(!j.attempts.several());
}

#[test]
fn a_number_a_list_and_a_block_are_read_alike() {
    let n = job("attempts: 3\n");
    assert_eq!(n.attempts.tries.len(), 3);
    assert_eq!(n.attempts.strategy, Strategy::Parallel);
    let list = job("attempts:\n  - {}\n  - model: { provider: anthropic, name: claude-sonnet-4 }\n");
    let names: Vec<&str> = list.attempts.tries.iter().map(|t| t.model.name.as_str()).collect();
    assert_eq!(names, ["gpt-4.1", "claude-sonnet-4"]);
    let block = job(
        "attempts:\n  strategy: cascade\n  tries:\n    - {}\n    - {}\n    - model: { provider: openai, name: o3 }\n",
    );
    assert_eq!((block.attempts.tries.len(), block.attempts.strategy), (3, Strategy::Cascade));
    assert_eq!(block.attempts.tries[2].model.name, "o3");
}

#[test]
fn wrong_attempts_are_refused_where_they_are_with_what_to_do() {
    let zero = errors("attempts: 0\n");
    assert_eq!((zero[0].path.as_str(), zero[0].line), ("attempts", 7), "{zero:?}");
    assert!(zero[0].message.contains("at least one try"));
    let many = errors("attempts: 9\n");
    assert!(many[0].message.contains("at most 8"), "{many:?}");
    let word = errors("attempts: lots\n");
    assert!(word[0].message.contains("a number of tries"), "{word:?}");
    // A try's model block is checked where it is.
    let model = errors("attempts:\n  - model: { provider: openai }\n  - {}\n");
    assert_eq!(model[0].path, "attempts[0].model.name", "{model:?}");
    let key = errors("attempts:\n  strategy: sideways\n");
    assert_eq!(key[0].path, "attempts.strategy", "{key:?}");
}

#[test]
fn several_tries_refuse_what_a_worktree_cannot_hold() {
    let dirty = errors("repo: { allow_dirty: true }\nattempts: 2\n");
    assert!(dirty[0].message.contains("repo.allow_dirty"), "{dirty:?}");
    let review = errors("change: review\nattempts: 2\n");
    assert!(review[0].message.contains("change: commit"), "{review:?}");
    // One try is the job as always: nothing to refuse.
    job("repo: { allow_dirty: true }\nattempts: 1\n");
}

#[test]
fn the_cost_budget_needs_every_try_s_prices() {
    let priced = "model: { provider: openai, name: gpt-4.1, pricing: { input: 2, output: 8 } }\n";
    let text = "limits: { max_cost_usd: 1 }\nattempts:\n  - {}\n  - model: { provider: openai, name: o3 }\n";
    let e = match parse(
        Path::new("dir/job.yaml"),
        &format!("{}{text}", JOB.replace("model: { provider: openai, name: gpt-4.1 }\n", priced)),
    ) {
        Err(SpecError::Invalid(d)) => d,
        other => panic!("refused, not {other:?}"),
    };
    assert_eq!(e[0].path, "attempts[1].model", "{e:?}");
    assert!(e[0].message.contains("no prices"));
}

#[test]
fn attempts_overridden_keep_the_spec_s_first_tries() {
    let mut j = job("attempts:\n  - model: { provider: openai, name: o3 }\n  - {}\n");
    let model = j.model.clone();
    j.attempts.resized(3, &model);
    let names: Vec<&str> = j.attempts.tries.iter().map(|t| t.model.name.as_str()).collect();
    assert_eq!(names, ["o3", "gpt-4.1", "gpt-4.1"]);
    j.attempts.resized(1, &model);
    assert_eq!(j.attempts.tries.len(), 1);
    assert_eq!(j.attempts.tries[0].model.name, "gpt-4.1", "one try is the job's own");
    let alone = errors("attempts:\n  - model: { provider: openai, name: o3 }\n");
    assert_eq!(alone[0].path, "attempts[0]", "{alone:?}");
    assert_eq!(
        refusal(9, false, crate::spec::answer::Change::Commit).map(|r| r.0),
        Some("a job makes at most 8 tries")
    );
}

#[test]
fn a_try_s_own_limits_are_read_and_checked_where_they_are() {
    let j = job("attempts:\n  - limits: { max_turns: 5, max_wall_time: 2m, max_tokens: 1000 }\n  - {}\n");
    let own = j.attempts.tries[0].limits;
    assert_eq!((own.max_turns, own.max_tokens), (Some(5), Some(1000)));
    assert_eq!(own.max_wall_time, Some(std::time::Duration::from_secs(120)));
    assert!(j.attempts.tries[1].limits.max_turns.is_none());
    let zero = errors("attempts:\n  - limits: { max_turns: 0 }\n  - {}\n");
    assert_eq!(zero[0].path, "attempts[0].limits.max_turns", "{zero:?}");
    // A try's own cost budget needs its model's prices too.
    let unpriced = errors("attempts:\n  - limits: { max_cost_usd: 0.5 }\n  - {}\n");
    assert_eq!(unpriced[0].path, "attempts[0].model", "{unpriced:?}");
}
