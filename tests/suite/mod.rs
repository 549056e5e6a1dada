mod answer_workflows;
mod answers;
mod anthropic;
#[cfg(target_os = "linux")]
mod attack_review;
#[cfg(target_os = "linux")]
mod attack_review2;
#[cfg(target_os = "linux")]
mod attack_view;
mod attempts;
mod attempts_runs;
mod autofix;
mod azure;
mod baseline;
mod bedrock;
mod budgets;
mod cancel;
mod chaos;
mod charts;
mod ci_outputs;
mod circles;
mod cloud_credentials;
mod code_quality;
mod context;
#[cfg(target_os = "linux")]
mod cred_probe;
mod deputy_branch;
mod deputy_fleet_clone;
mod deputy_github;
mod deputy_http;
#[cfg(target_os = "linux")]
mod deputy_limits;
#[cfg(target_os = "linux")]
mod deputy_reads;
mod deputy_remotes;
#[cfg(target_os = "linux")]
mod deputy_restore;
#[cfg(target_os = "linux")]
mod deputy_tools;
mod deputy_workflow;
mod doc_links;
#[cfg(target_os = "linux")]
mod egress;
#[cfg(target_os = "linux")]
mod egress_attacks;
#[cfg(target_os = "linux")]
mod egress_tunnels;
mod end_to_end;
#[cfg(target_os = "linux")]
mod eval_attacks;
#[cfg(target_os = "linux")]
mod eval_issues;
#[cfg(target_os = "linux")]
mod eval_mine;
#[cfg(target_os = "linux")]
mod eval_swebench;
mod examples;
mod fallback;
mod feedback;
mod first_runs;
mod fleet;
mod fleet_clone_base;
mod fleet_dirs;
mod fleet_events;
mod fleet_kill;
mod fleet_pace;
mod fleet_pace_gitlab;
mod fleet_paths;
mod fleet_progress;
mod fleet_prs;
mod fleet_prs_atk;
mod fleet_prs_attacks;
mod fleet_prs_gitlab;
mod fleet_prs_gitlab_attacks;
mod fleet_prs_runs;
mod fleet_queries;
mod forge_credentials;
mod forge_names;
mod forgejo;
mod forgejo_fleet;
mod forgejo_standin;
mod fuzz_targets;
mod ghes;
mod github_app;
mod github_app_autofix;
mod gitlab;
mod gitlab_fleet;
mod gitlab_standin;
mod gitlab_template;
mod gitlab_template_instructions;
mod gitlab_template_memory;
mod gitlab_template_memory_edges;
mod harness;
mod hooks;
mod init;
mod install;
mod instructions;
mod instructions_pr;
#[cfg(target_os = "linux")]
mod jail_credentials;
#[cfg(target_os = "linux")]
mod jail_credentials_files;
#[cfg(target_os = "linux")]
mod jail_files;
#[cfg(target_os = "macos")]
mod jail_macos;
#[cfg(target_os = "linux")]
mod jail_network;
#[cfg(target_os = "linux")]
mod jail_processes;
#[cfg(target_os = "linux")]
mod jail_projects;
#[cfg(target_os = "linux")]
mod jail_secrets;
mod jail_support;
#[cfg(target_os = "linux")]
mod killed;
mod layering;
mod mcp;
mod mcp_attacks;
#[cfg(target_os = "linux")]
mod mcp_secrets;
mod memory_attacks;
mod memory_cli;
mod memory_feedback;
mod memory_messages;
mod memory_run;
mod mentions;
mod model_faults;
mod named_params;
mod outcomes;
mod plan;
mod policy;
mod pr;
mod progress;
mod prompt_cache;
mod proxy;
mod rendered_markdown;
mod replay;
mod replay_attacks;
mod report_schema;
mod responses;
mod review_github;
mod review_gitlab;
mod review_gitlab_drafts;
mod safe_directory;
mod safety;
mod second_attempt;
mod setup_cmds;
mod spec_errors;
mod telemetry;
mod telemetry_fleet;
mod typed_errors;
mod versions;
mod vertex;
mod workflow_commands;
