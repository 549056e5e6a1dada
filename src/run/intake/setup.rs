//! Run set-up that reads the environment: the model client, the secrets to redact, and the
//! environment commands run with.

use crate::diag::Diagnostic;
use crate::env::RunEnv;
use crate::error::{Code, HoneError};
use crate::model::azure::{self, Target};
use crate::model::chain::{Link, Models};
use crate::model::{Model, anthropic::Anthropic, auth::Auth, openai::OpenAi, script::Script};
use crate::policy::Policy;
use crate::redact::Redactor;
use crate::spec::raw::Api;
use crate::spec::{Job, ModelSpec, Provider};
use std::path::PathBuf;

pub use crate::redact::is_secret_name;

/// Register the value of every secret-looking variable, each model's key and the forge token of
/// `git.token_env` (whatever their names) with the redactor.
pub fn collect_secrets(redactor: &Redactor, job: &Job, env: &RunEnv) {
    for (k, v) in env.vars() {
        let named = job.model.chain().any(|m| *k == m.api_key_env) || job.git.token_env.as_ref() == Some(k);
        if is_secret_name(k) || named {
            redactor.add(v);
            // As clients send it: a CI secret often ends in a newline.
            redactor.add(v.trim());
        }
    }
}

/// Register the values of the policy's named secrets, and of `env.pass_secrets`, for redaction.
pub fn policy_secrets(redactor: &Redactor, policy: &Policy, env: &RunEnv) {
    for name in policy.secrets.iter().chain(&policy.pass_secrets) {
        if let Some(v) = env.var(name) {
            redactor.add(v);
        }
    }
}

/// The provider and model of a one-off job's `--model NAME`: `azure:`, `bedrock:` or `vertex:`
/// before the name picks that cloud (its endpoint, region and project then come from its own
/// variables); else Anthropic for `claude-*`; an OpenAI-compatible server when `OPENAI_BASE_URL`
/// is set without `OPENAI_API_KEY`; else OpenAI.
pub fn provider_for(model: &str, env: &RunEnv) -> (&'static str, String) {
    for cloud in ["azure", "bedrock", "vertex"] {
        if let Some(name) = model.strip_prefix(cloud).and_then(|m| m.strip_prefix(':')) {
            return (cloud, name.to_string());
        }
    }
    (openai_or_anthropic(model, env), model.to_string())
}

fn openai_or_anthropic(model: &str, env: &RunEnv) -> &'static str {
    let set = |k: &str| env.var(k).is_some();
    if model.to_ascii_lowercase().starts_with("claude") {
        "anthropic"
    } else if set("OPENAI_BASE_URL") && !set("OPENAI_API_KEY") {
        "openai-compatible"
    } else {
        "openai"
    }
}

/// The run's models: the job's, then its fallbacks, each with its client (a fallback without
/// its credentials stops the run here, not when it is needed). Errors are user-facing input
/// problems (exit 2).
pub fn models(job: &Job, env: &RunEnv, run_id: &str, redactor: &Redactor) -> Result<Models, HoneError> {
    let link = |m: &crate::spec::ModelSpec| {
        let (client, secret_files) = client(m, job, env, run_id, redactor)?;
        Ok::<_, HoneError>(Link { spec: m.clone(), client, secret_files })
    };
    let first = link(&job.model)?;
    let rest = job.model.fallback.iter().map(link).collect::<Result<Vec<_>, _>>()?;
    Ok(Models::new(first, rest))
}

/// The client of one model block (the job's model, or one of its fallbacks), and the
/// credentials files it reads.
fn client(
    m: &ModelSpec,
    job: &Job,
    env: &RunEnv,
    run_id: &str,
    redactor: &Redactor,
) -> Result<(Model, Vec<PathBuf>), HoneError> {
    match m.provider {
        Provider::Bedrock => crate::model::bedrock::client(m, env, redactor),
        Provider::Vertex => crate::model::vertex::client(m, env, redactor, job.repo.path.as_deref()),
        _ => keyed_client(m, job, env, run_id, redactor).map(|c| (c, Vec::new())),
    }
}

/// The client of a model with a key (or none): OpenAI, compatible servers, Anthropic, Azure.
fn keyed_client(m: &ModelSpec, job: &Job, env: &RunEnv, run_id: &str, redactor: &Redactor) -> Result<Model, HoneError> {
    let file = job.spec_path.display().to_string();
    let unset =
        |message: String, help: &str| HoneError::located(Code::Spec, vec![Diagnostic::file(&file, message, help)]);
    if m.provider == Provider::Script {
        let path = m.script.as_ref().ok_or_else(|| {
            HoneError::new(Code::Spec, format!("{file}: `model.script` is required for `provider: script`"))
        })?;
        return Script::load(path).map(Model::Script).map_err(|diags| HoneError::located(Code::Spec, diags));
    }
    if m.provider == Provider::Azure {
        return azure(m, env, redactor);
    }
    let key = env.var(&m.api_key_env).map(str::to_string);
    if m.provider == Provider::Anthropic {
        let Some(api_key) = key else {
            return Err(unset(
                format!("the environment variable `{}` (named by `model.api_key_env`) is not set", m.api_key_env),
                "export it with your Anthropic API key",
            ));
        };
        let base = m.base_url.clone().or_else(|| env.var("ANTHROPIC_BASE_URL").map(str::to_string));
        let base = base.unwrap_or_else(|| "https://api.anthropic.com".into());
        let base = base.trim_end_matches('/').trim_end_matches("/v1");
        return Ok(Model::Anthropic(Anthropic {
            http: crate::model::http::client(base)?,
            url: format!("{base}/v1/messages"),
            auth: Auth::Header("x-api-key", api_key),
            model: m.name.clone(),
            temperature: m.temperature,
            max_output_tokens: m.max_output_tokens,
            stream: m.stream,
            request_timeout: m.request_timeout,
            idle_timeout: m.idle_timeout,
        }));
    }
    let one_off = job.spec_path.ends_with("(command line)");
    if m.provider == Provider::Openai && key.is_none() && one_off {
        return Err(HoneError::new(Code::Spec, format!("`{}` is not set", m.api_key_env)).hint(
            "export it with your OpenAI API key, or point OPENAI_BASE_URL at a local OpenAI-compatible server (Ollama, vLLM, llama.cpp)",
        ));
    }
    if m.provider == Provider::Openai && key.is_none() {
        return Err(unset(
            format!("the environment variable `{}` (named by `model.api_key_env`) is not set", m.api_key_env),
            "export it with your API key, or for a local OpenAI-compatible server use `provider: openai-compatible`",
        ));
    }
    let env_base = env.var("OPENAI_BASE_URL").map(str::to_string);
    let base = match (&m.base_url, env_base, m.provider) {
        (Some(u), _, _) => u.clone(),
        (None, Some(u), _) => u,
        (None, None, Provider::Openai) => "https://api.openai.com/v1".to_string(),
        (None, None, _) => {
            return Err(unset(
                format!("`model.base_url` is not set for `provider: {}`", m.provider.as_str()),
                "set it to the server's API root (for example http://localhost:11434/v1 for Ollama), or export OPENAI_BASE_URL",
            ));
        }
    };
    openai_family(m, key, &base, run_id)
}

/// An OpenAI or OpenAI-compatible client: Chat Completions, or the Responses API.
fn openai_family(m: &ModelSpec, key: Option<String>, base: &str, run_id: &str) -> Result<Model, HoneError> {
    let cache_key = (m.provider == Provider::Openai).then(|| format!("hone-{run_id}"));
    let base = base.trim_end_matches('/');
    let path = if m.api == Api::Responses { "responses" } else { "chat/completions" };
    let target = Target { url: format!("{base}/{path}"), model: m.name.clone() };
    let auth = key.map_or(Auth::None, Auth::Bearer);
    openai_client(m, target, auth, crate::model::http::client(base)?, cache_key)
}

/// Azure OpenAI: OpenAI's clients at the deployment's URLs, with its credentials.
fn azure(m: &ModelSpec, env: &RunEnv, redactor: &Redactor) -> Result<Model, HoneError> {
    let endpoint = azure::endpoint(m, env)?;
    let http = crate::model::http::client(&endpoint)?;
    let auth = azure::auth(m, env, redactor)?;
    openai_client(m, azure::target(m, &endpoint), auth, http, None)
}

/// The Chat Completions or Responses client for `m` at `target`. OpenAI's own API and Azure's
/// take `max_completion_tokens` and give reasoning back encrypted; compatible servers neither.
fn openai_client(
    m: &ModelSpec,
    target: Target,
    auth: Auth,
    http: reqwest::Client,
    prompt_cache_key: Option<String>,
) -> Result<Model, HoneError> {
    let openai = matches!(m.provider, Provider::Openai | Provider::Azure);
    if m.api == Api::Responses {
        return Ok(Model::Responses(crate::model::responses::Responses {
            http,
            url: target.url,
            auth,
            model: target.model,
            temperature: m.temperature,
            max_output_tokens: m.max_output_tokens,
            stream: m.stream,
            request_timeout: m.request_timeout,
            idle_timeout: m.idle_timeout,
            openai,
            prompt_cache_key,
        }));
    }
    Ok(Model::OpenAi(OpenAi {
        http,
        url: target.url,
        auth,
        model: target.model,
        temperature: m.temperature,
        max_output_tokens: m.max_output_tokens,
        stream: m.stream,
        use_max_completion_tokens: openai,
        request_timeout: m.request_timeout,
        idle_timeout: m.idle_timeout,
        text_tools: m.tool_mode == crate::spec::ToolMode::Text,
        calls: std::sync::atomic::AtomicU32::new(0),
        prompt_cache_key,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_off_model_names_its_cloud_before_a_colon() {
        let env = RunEnv::from_vars([("OPENAI_BASE_URL".to_string(), "http://localhost:11434/v1".to_string())].into());
        let cases = [
            (
                "bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0",
                "bedrock",
                "anthropic.claude-3-5-sonnet-20240620-v1:0",
            ),
            ("vertex:claude-sonnet-4@20250514", "vertex", "claude-sonnet-4@20250514"),
            ("azure:gpt-4.1", "azure", "gpt-4.1"),
            ("qwen2.5-coder:7b", "openai-compatible", "qwen2.5-coder:7b"),
            ("claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
        ];
        for (given, provider, name) in cases {
            assert_eq!(provider_for(given, &env), (provider, name.to_string()), "{given}");
        }
    }

    fn job(yaml: &str) -> Job {
        let dir = tempfile::tempdir().unwrap();
        let spec = format!("version: 1\nname: j\ntask: t\nmodel: {{ provider: openai, name: m }}\n{yaml}");
        std::fs::write(dir.path().join("j.yaml"), spec).unwrap();
        crate::spec::load(&dir.path().join("j.yaml")).unwrap()
    }

    #[test]
    fn the_token_of_git_token_env_is_a_secret_whatever_its_name() {
        let vars = [("GH_PAT", "ghp_PatWithPlainName0123\n"), ("EDITOR", "vim-nox-value")];
        let env = RunEnv::from_vars(vars.map(|(k, v)| (k.to_string(), v.to_string())).into());
        let redactor = Redactor::new();
        collect_secrets(&redactor, &job("git: { token_env: GH_PAT }\n"), &env);
        assert_eq!(redactor.apply("ghp_PatWithPlainName0123"), crate::redact::MASK);
        use base64::Engine;
        let header = base64::engine::general_purpose::STANDARD.encode("x-access-token:ghp_PatWithPlainName0123");
        assert!(!redactor.apply(&header).contains(&header[24..]), "the base64 git sends");
        assert_eq!(redactor.apply("vim-nox-value"), "vim-nox-value", "other plain names are not secrets");
    }

    #[test]
    fn secret_names() {
        for s in ["GITHUB_TOKEN", "OPENAI_API_KEY", "aws_secret_access_key", "DB_PASSWORD", "NPM_AUTH_TOKEN"] {
            assert!(is_secret_name(s), "{s}");
        }
        for s in ["PATH", "HOME", "LANG", "CI", "RUNNER_OS"] {
            assert!(!is_secret_name(s), "{s}");
        }
    }
}
