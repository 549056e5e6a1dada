//! Shared helpers for the integration tests: the mock model, temp repos, job specs, running hone.
//!
//! The defaults are what users do: the spec (and any policy file) is committed inside the
//! repository, which has no `.gitignore`; hone runs from the repository with the relative spec
//! path `job.yaml`; the reports go to the default `.hone/reports`. Every run goes through
//! `run_hone_at`, which checks what a successful run committed (`commits`).
//!
//! - `fixtures`: the repositories, job specs and policies a test starts from;
//! - `hone`: starting the binary; `run`: what a run left; `run_checks`: the checks around every run;
//! - `mock_model`: the model server; `repo`: git repositories; `commits`: the commit check;
//! - `mock_bedrock`: Amazon Bedrock's and STS's stand-in, checking signatures as AWS does;
//! - `mock_vertex`: Vertex AI and Google's identity services (token endpoint, STS, IAM, metadata);
//! - `mock_github`: GitHub's REST and GraphQL API with state (PRs in every state, checks, reviews,
//!   merges, the merge queue, rate limits) for `hone fleet prs`;
//! - `mock_github_app`: GitHub's API as a GitHub App sees it (JWT, installations, tokens, PRs);
//! - `mock_github_review`: GitHub's pull-request review API, the PR diff computed from the origin;
//! - `mermaid`: Mermaid's own parser (in Node), for the charts in the reports;
//! - `processes`: marker files and surviving processes; `require`: what a test needs;
//! - `git_http`: a git server over HTTP(S) that records credentials; `tls`: its HTTPS listener;
//! - `mock_feedback`: GitHub's reviews and review comments, GitLab's notes and members, for feedback;
//! - `mock_gitlab`: a GitLab instance (REST API and git over HTTPS) checked against GitLab's API description.
//! - `connect_proxy`: a recording HTTP proxy, a CA the test makes and TLS in front of a stand-in.
//! - `otlp`: an OpenTelemetry collector's stand-in (OTLP/HTTP, decoded with the official protobuf
//!   definitions), a collector that never answers, and one that refuses; `otlp_grpc`: the same
//!   over gRPC (tonic's server with the generated services).

#![allow(dead_code)]

/// The one place a test says what it needs from the machine: `require!(Need::Root)` goes on when
/// the machine has it, fails the test when it does not, and returns from the test (printing
/// `WAIVED: …`) only when `HONE_TEST_WAIVE` names it.
macro_rules! require {
    ($need:expr) => {
        if !$crate::common::require::require($need) {
            return;
        }
    };
}

pub mod actions;
pub mod answer;
pub mod commits;
pub mod connect_proxy;
pub mod fixtures;
pub mod git_http;
pub mod hone;
pub mod mermaid;
pub mod mock_azure;
pub mod mock_bedrock;
pub mod mock_feedback;
pub mod mock_forgejo;
pub mod mock_github;
pub mod mock_github_app;
pub mod mock_github_review;
pub mod mock_gitlab;
pub mod mock_model;
pub mod mock_vertex;
pub mod otlp;
pub mod otlp_grpc;
pub mod path_router;
pub mod processes;
pub mod repo;
pub mod require;
pub mod run;
pub mod run_checks;
pub mod runner;
pub mod tls;

pub use fixtures::*;
pub use hone::*;
pub use processes::*;
pub use repo::committed;
pub use require::Need;
pub use run::*;
#[allow(unused_imports)] // a public helper no suite calls today
pub use run_checks::spec_arg;

/// The API key the tests hand to hone; it must never appear in any output.
pub const KEY: &str = "sk-test-canary-9f8e7d6c5b4a";
