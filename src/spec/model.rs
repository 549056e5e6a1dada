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
        let m = raw.unwrap_or_default();
        self.check_ranges(&m);
        let provider = m.provider.unwrap_or(Provider::Openai);
        if m.provider.is_none() && self.map.has("model") && !self.removed.contains("model.provider") {
            self.missing("model.provider", "set `provider:` to openai, anthropic, openai-compatible or script");
        }
        let name = match (m.name, provider) {
            (Some(n), _) if !n.trim().is_empty() => n,
            (_, Provider::Script) => "script".into(),
            (_, _) => {
                if self.map.has("model") && !self.removed.contains("model.name") {
                    self.missing("model.name", "set `name:` to the model id, for example gpt-4.1 or qwen2.5-coder");
                }
                String::new()
            }
        };
        let script = m.script.as_deref().map(|s| resolve(dir, s));
        if provider == Provider::Script && script.is_none() && self.map.has("model") {
            self.missing(
                "model.script",
                "`provider: script` replays turns from a file: set `script: path/to/script.yaml`",
            );
        }
        if provider != Provider::Script && script.is_some() {
            self.err(
                "model.script",
                "`script` only applies to `provider: script`",
                "remove it, or set `provider: script`",
            );
        }
        let default_key = if provider == Provider::Anthropic { "ANTHROPIC_API_KEY" } else { "OPENAI_API_KEY" };
        let api_key_env = m.api_key_env.unwrap_or_else(|| default_key.into());
        if api_key_env.is_empty() || !api_key_env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            self.err(
                "model.api_key_env",
                format!("`{api_key_env}` is not an environment variable name"),
                "name the variable that holds the key (e.g. OPENAI_API_KEY), never the key itself",
            );
        }
        let api = self.api(m.api, provider, &name, m.tool_mode);
        // Reasoning counts against the output limit of the Responses API's models: OpenAI
        // advises room for about 25,000 tokens of it.
        let max_output_tokens = m.max_output_tokens.unwrap_or(if api == raw::Api::Responses { 32_768 } else { 4096 });
        let retry = self.retry(m.retry.unwrap_or_default());
        let context_window = m.context_window.unwrap_or_else(|| default_context_window(&name));
        let pricing = self.pricing(m.pricing);
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
        }
    }

    /// The values that must be in range: the endpoint URL, temperature, output tokens and
    /// context window.
    fn check_ranges(&mut self, m: &raw::RawModel) {
        if let Some(u) = &m.base_url
            && !(u.starts_with("http://") || u.starts_with("https://"))
        {
            self.err(
                "model.base_url",
                format!("`{u}` is not an http(s) URL"),
                "write the API root, like http://localhost:11434/v1",
            );
        }
        if let Some(t) = m.temperature
            && !(0.0..=2.0).contains(&t)
        {
            self.err("model.temperature", format!("{t} is out of range"), "use a value from 0 to 2");
        }
        if m.max_output_tokens == Some(0) {
            self.err("model.max_output_tokens", "must be at least 1", "the default is 4096");
        }
        if m.context_window.is_some_and(|w| w < 2048) {
            self.err(
                "model.context_window",
                "must be at least 2048 tokens",
                "the model's context window in tokens, like 128000",
            );
        }
    }

    /// `model.api`, or the default for the model: the Responses API for OpenAI models served
    /// only there.
    fn api(&mut self, api: Option<raw::Api>, provider: Provider, name: &str, mode: Option<raw::ToolMode>) -> raw::Api {
        let openai = matches!(provider, Provider::Openai | Provider::OpenaiCompatible);
        let Some(api) = api else {
            return if provider == Provider::Openai && needs_responses(name) {
                raw::Api::Responses
            } else {
                raw::Api::Chat
            };
        };
        if api == raw::Api::Responses && !openai {
            let help =
                "the Responses API is OpenAI's (and compatible servers'): remove `api`, or use `provider: openai`";
            self.err("model.api", format!("`provider: {}` has no Responses API", provider.as_str()), help);
        } else if api == raw::Api::Responses && mode == Some(raw::ToolMode::Text) {
            self.err(
                "model.api",
                "`tool_mode: text` is for Chat Completions",
                "use `api: chat` for a model without tool calling",
            );
        }
        api
    }

    fn retry(&mut self, r: raw::RawRetry) -> RetrySpec {
        let d = RetrySpec::default();
        let retry = RetrySpec {
            max_attempts: r.max_attempts.unwrap_or(d.max_attempts),
            initial_delay: r.initial_delay.map_or(d.initial_delay, |x| x.0),
            max_delay: r.max_delay.map_or(d.max_delay, |x| x.0),
        };
        if retry.max_attempts == 0 {
            self.err("model.retry.max_attempts", "must be at least 1", "1 means no retries; the default is 5");
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
