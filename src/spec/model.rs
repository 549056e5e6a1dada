//! The `model` section of a job spec: provider, name, endpoint, key variable, streaming, retry
//! and context window, each checked with its position.

use super::raw::{self, Provider};
use super::{Checker, ModelSpec, RetrySpec, resolve};
use std::path::Path;
use std::time::Duration;

impl Checker<'_> {
    pub(super) fn model(&mut self, raw: Option<raw::RawModel>, dir: &Path) -> ModelSpec {
        if raw.is_none() && !self.removed.contains("model") {
            self.missing("model", "add a `model:` section with at least `provider` and `name`");
        }
        self.model_at(raw.unwrap_or_default(), "model", dir)
    }

    /// A model block and its fallbacks at `at` (`model`, or a try's `attempts[k].model`).
    pub(super) fn model_at(&mut self, mut m: raw::RawModel, at: &str, dir: &Path) -> ModelSpec {
        let fallback = m.fallback.take().unwrap_or_default();
        let mut spec = self.model_block(m, at, dir);
        for (i, mut f) in fallback.into_iter().enumerate() {
            let at = format!("{at}.fallback[{i}]");
            if f.fallback.take().is_some() {
                let help = if at == "model" {
                    "list every model to fall back to in the top-level `model.fallback`, in order".to_string()
                } else {
                    format!("list every model to fall back to in `{at}.fallback`, in order")
                };
                self.err(&format!("{at}.fallback"), "a fallback model has no fallback of its own", help);
            }
            let block = self.model_block(f, &at, dir);
            if block.provider == Provider::Script && spec.provider != Provider::Script {
                let help = "fall back to a real model, or use scripted models throughout";
                self.err(&format!("{at}.provider"), "a scripted model cannot stand in for a real one", help);
            }
            spec.fallback.push(block);
        }
        spec
    }

    /// One model block (`model`, or `model.fallback[i]` at `at`).
    fn model_block(&mut self, m: raw::RawModel, at: &str, dir: &Path) -> ModelSpec {
        let path = |key: &str| format!("{at}.{key}");
        self.check_ranges(&m, at);
        let provider = m.provider.unwrap_or(Provider::Openai);
        if m.provider.is_none() && self.map.has(at) && !self.removed.contains(&path("provider")) {
            self.missing(
                &path("provider"),
                "set `provider:` to openai, anthropic, openai-compatible, azure, bedrock, vertex or script",
            );
        }
        let name = match (m.name, provider) {
            (Some(n), _) if !n.trim().is_empty() => n,
            (_, Provider::Script) => "script".into(),
            (_, Provider::Azure) if m.deployment.is_some() => m.deployment.clone().unwrap_or_default(),
            (_, _) => {
                if self.map.has(at) && !self.removed.contains(&path("name")) {
                    self.missing(&path("name"), "set `name:` to the model id, for example gpt-4.1 or qwen2.5-coder");
                }
                String::new()
            }
        };
        let script = m.script.as_deref().map(|s| resolve(dir, s));
        if provider == Provider::Script && script.is_none() && self.map.has(at) {
            self.missing(
                &path("script"),
                "`provider: script` replays turns from a file: set `script: path/to/script.yaml`",
            );
        }
        if provider != Provider::Script && script.is_some() {
            self.err(
                &path("script"),
                "`script` only applies to `provider: script`",
                "remove it, or set `provider: script`",
            );
        }
        let api_key_env = self.key_variable(m.api_key_env, provider, at);
        let cloud = super::cloud::Cloud {
            deployment: m.deployment.as_deref(),
            api_version: m.api_version.as_deref(),
            region: m.region.as_deref(),
            project: m.project.as_deref(),
        };
        self.cloud_fields(&cloud, provider, at);
        let api = self.api(m.api, provider, &name, m.tool_mode, at);
        // Reasoning counts against the output limit of the Responses API's models: OpenAI
        // advises room for about 25,000 tokens of it.
        let max_output_tokens = m.max_output_tokens.unwrap_or(if api == raw::Api::Responses { 32_768 } else { 4096 });
        let retry = self.retry(m.retry.unwrap_or_default(), at);
        let context_window = m.context_window.unwrap_or_else(|| default_context_window(&name));
        let pricing = self.pricing(m.pricing, at);
        ModelSpec {
            provider,
            name,
            base_url: m.base_url,
            api_key_env,
            temperature: m.temperature,
            max_output_tokens,
            stream: m.stream.unwrap_or(true),
            script,
            request_timeout: m.request_timeout.map_or(Duration::from_secs(600), |d| d.0),
            idle_timeout: m.idle_timeout.map_or(Duration::from_secs(120), |d| d.0),
            retry,
            tool_mode: m.tool_mode.unwrap_or_default(),
            context_window,
            api,
            pricing,
            deployment: m.deployment,
            api_version: m.api_version,
            region: m.region,
            project: m.project,
            fallback: Vec::new(),
        }
    }

    /// `api_key_env`: the variable holding the key (its default per provider), or `""` for the
    /// providers whose credentials come from their cloud's own chain.
    fn key_variable(&mut self, named: Option<String>, provider: Provider, at: &str) -> String {
        let default_key = match provider {
            Provider::Anthropic => "ANTHROPIC_API_KEY",
            Provider::Azure => "AZURE_OPENAI_API_KEY",
            Provider::Bedrock => "AWS_BEARER_TOKEN_BEDROCK",
            Provider::Vertex => "",
            _ => "OPENAI_API_KEY",
        };
        if provider == Provider::Vertex && named.is_some() {
            let help = "Vertex AI takes Application Default Credentials: remove `api_key_env` and set GOOGLE_APPLICATION_CREDENTIALS, or run where the metadata server answers";
            self.err(&format!("{at}.api_key_env"), "`provider: vertex` takes no API key", help);
            return String::new();
        }
        let api_key_env = named.unwrap_or_else(|| default_key.into());
        if provider != Provider::Vertex
            && (api_key_env.is_empty() || !api_key_env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            self.err(
                &format!("{at}.api_key_env"),
                format!("`{api_key_env}` is not an environment variable name"),
                "name the variable that holds the key (e.g. OPENAI_API_KEY), never the key itself",
            );
        }
        api_key_env
    }

    /// The values that must be in range: the endpoint URL, temperature, output tokens and
    /// context window.
    fn check_ranges(&mut self, m: &raw::RawModel, at: &str) {
        let path = |key: &str| format!("{at}.{key}");
        if let Some(u) = &m.base_url
            && !(u.starts_with("http://") || u.starts_with("https://"))
        {
            self.err(
                &path("base_url"),
                format!("`{u}` is not an http(s) URL"),
                "write the API root, like http://localhost:11434/v1",
            );
        }
        if let Some(t) = m.temperature
            && !(0.0..=2.0).contains(&t)
        {
            self.err(&path("temperature"), format!("{t} is out of range"), "use a value from 0 to 2");
        }
        if m.max_output_tokens == Some(0) {
            self.err(&path("max_output_tokens"), "must be at least 1", "the default is 4096");
        }
        if m.context_window.is_some_and(|w| w < 2048) {
            self.err(
                &path("context_window"),
                "must be at least 2048 tokens",
                "the model's context window in tokens, like 128000",
            );
        }
    }

    /// `model.api`, or the default for the model: the Responses API for OpenAI models served
    /// only there.
    fn api(
        &mut self,
        api: Option<raw::Api>,
        provider: Provider,
        name: &str,
        mode: Option<raw::ToolMode>,
        at: &str,
    ) -> raw::Api {
        let openai = matches!(provider, Provider::Openai | Provider::OpenaiCompatible | Provider::Azure);
        let Some(api) = api else {
            return if matches!(provider, Provider::Openai | Provider::Azure) && needs_responses(name) {
                raw::Api::Responses
            } else {
                raw::Api::Chat
            };
        };
        if api == raw::Api::Responses && !openai {
            let help = "the Responses API is OpenAI's (and Azure's and compatible servers'): remove `api`, or use `provider: openai`";
            self.err(&format!("{at}.api"), format!("`provider: {}` has no Responses API", provider.as_str()), help);
        } else if api == raw::Api::Responses && mode == Some(raw::ToolMode::Text) {
            self.err(
                &format!("{at}.api"),
                "`tool_mode: text` is for Chat Completions",
                "use `api: chat` for a model without tool calling",
            );
        }
        api
    }

    fn retry(&mut self, r: raw::RawRetry, at: &str) -> RetrySpec {
        let d = RetrySpec::default();
        let retry = RetrySpec {
            max_attempts: r.max_attempts.unwrap_or(d.max_attempts),
            initial_delay: r.initial_delay.map_or(d.initial_delay, |x| x.0),
            max_delay: r.max_delay.map_or(d.max_delay, |x| x.0),
        };
        if retry.max_attempts == 0 {
            self.err(&format!("{at}.retry.max_attempts"), "must be at least 1", "1 means no retries; the default is 5");
        }
        retry
    }
}

/// OpenAI models served only through the Responses API: the codex models and the `-pro` ones
/// (and computer use and deep research).
pub fn needs_responses(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    m.contains("codex")
        || m.ends_with("-pro")
        || m.contains("-pro-")
        || m.contains("computer-use")
        || m.contains("deep-research")
}

/// Context windows of known model families, in tokens; 32k for anything unknown.
pub fn default_context_window(model: &str) -> u64 {
    let m = model.to_ascii_lowercase();
    let table: &[(&str, u64)] = &[
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4o", 128_000),
        ("o3", 200_000),
        ("o4", 200_000),
        ("claude", 200_000),
        ("gemini", 1_000_000),
        ("qwen2.5-coder", 32_768),
        ("qwen3", 40_960),
        ("llama3", 8_192),
        ("deepseek", 64_000),
        ("mistral", 32_768),
    ];
    table.iter().find(|(p, _)| m.contains(p)).map_or(32_768, |(_, w)| *w)
}
