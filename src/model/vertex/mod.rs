//! Google Vertex AI (`provider: vertex`): Anthropic's Claude models through `rawPredict` /
//! `streamRawPredict`, and Gemini through Vertex's OpenAI-compatible Chat Completions endpoint,
//! both with a Google access token from Application Default Credentials, fetched again before it
//! expires and registered with the redactor.

mod adc;
mod claude;
mod credfile;
mod credfile_error;
mod endpoint;
mod errors;
mod external;
mod gemini;
mod gemini_calls;
mod grants;
mod jwt;
mod metadata;
mod token;

use super::auth::Auth;
use super::{ChatRequest, Model, ModelError};
use crate::env::RunEnv;
use crate::error::{Code, HoneError};
use crate::protocol::Reply;
use crate::redact::Redactor;
use crate::spec::ModelSpec;
use std::path::Path;

use endpoint::Endpoint;

/// A model on Vertex AI.
pub enum Vertex {
    Claude(claude::Claude),
    Gemini(Box<gemini::Gemini>),
}

impl Vertex {
    pub async fn complete(&self, req: &ChatRequest) -> Result<Reply, ModelError> {
        match self {
            Vertex::Claude(c) => c.complete(req).await,
            Vertex::Gemini(g) => g.complete(req).await,
        }
    }
}

/// Which API a model name is served through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Claude,
    Gemini,
}

fn family(name: &str) -> Option<Family> {
    let n = name.to_ascii_lowercase();
    if n.starts_with("claude") {
        Some(Family::Claude)
    } else if n.starts_with("gemini") || n.starts_with("google/") {
        Some(Family::Gemini)
    } else {
        None
    }
}

/// The client for the model block `m`: its family from the name, the credentials ADC finds (none
/// inside the work tree `repo`), and the region and project. Errors are input problems (exit 2).
/// Also the credentials files it reads (hidden from every command).
pub fn client(
    m: &ModelSpec,
    env: &RunEnv,
    redactor: &Redactor,
    repo: Option<&Path>,
) -> Result<(Model, Vec<std::path::PathBuf>), HoneError> {
    let Some(fam) = family(&m.name) else {
        return Err(HoneError::new(
            Code::Spec,
            format!(
                "`model.name` `{}` is neither a Claude nor a Gemini model, the two families hone calls on Vertex AI",
                m.name
            ),
        )
        .hint("name a Claude model (like claude-sonnet-4-5@20250929) or a Gemini model (like gemini-2.5-pro)"));
    };
    let bare = m.name.strip_prefix("google/").unwrap_or(&m.name);
    if !endpoint::is_model_id(bare) {
        return Err(HoneError::new(Code::Spec, format!("`model.name` `{}` is not a Vertex AI model id", m.name))
            .hint("a model id is letters, digits, `-`, `.`, `_` and `@`, like claude-sonnet-4-5@20250929"));
    }
    let region = endpoint::region(m, env)?;
    // Google's endpoints and its token services: https, so the system's roots.
    let http = super::http::client("https://")?;
    let found = adc::find(env, &adc::Context { http: &http, redactor, repo })?;
    let project = endpoint::project(m, env, found.project.as_deref())?;
    let at = Endpoint { base: endpoint::base(m, &region)?, project, region };
    tracing::debug!("Vertex AI: {} credentials, project {}, region {}", found.kind, at.project, at.region);
    let auth = Auth::Token(found.token);
    let model = Model::Vertex(match fam {
        Family::Claude => Vertex::Claude(claude::Claude {
            http,
            url: at.claude(&m.name, m.stream),
            auth,
            temperature: m.temperature,
            max_output_tokens: m.max_output_tokens,
            stream: m.stream,
            request_timeout: m.request_timeout,
            idle_timeout: m.idle_timeout,
        }),
        Family::Gemini => Vertex::Gemini(Box::new(gemini::Gemini {
            chat: super::openai::OpenAi {
                http,
                url: at.openapi(),
                auth,
                model: gemini::wire_model(&m.name),
                temperature: m.temperature,
                max_output_tokens: m.max_output_tokens,
                stream: m.stream,
                use_max_completion_tokens: false,
                request_timeout: m.request_timeout,
                idle_timeout: m.idle_timeout,
                text_tools: m.tool_mode == crate::spec::ToolMode::Text,
                calls: std::sync::atomic::AtomicU32::new(0),
                prompt_cache_key: None,
            },
            answers: std::sync::atomic::AtomicU32::new(0),
        })),
    });
    Ok((model, found.files))
}

/// A `provider: vertex` model block named `name`, for tests.
#[cfg(test)]
pub(crate) fn test_spec(name: &str) -> ModelSpec {
    let yaml = format!("version: 1\nname: t\ntask: t\nmodel:\n  provider: vertex\n  name: \"{name}\"\n");
    match crate::spec::parse(Path::new("job.yaml"), &yaml) {
        Ok(job) => job.model,
        Err(e) => panic!("{e:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_by_name() {
        assert_eq!(family("claude-sonnet-4-5@20250929"), Some(Family::Claude));
        assert_eq!(family("gemini-2.5-pro"), Some(Family::Gemini));
        assert_eq!(family("google/gemini-2.5-flash"), Some(Family::Gemini));
        assert_eq!(family("llama-3"), None);
    }

    #[test]
    fn names_that_are_not_vertex_models_are_intake_errors() {
        let env = RunEnv::from_vars([("GOOGLE_CLOUD_LOCATION".to_string(), "us-east5".to_string())].into());
        for name in ["gpt-4.1", "claude-x/../../v1/other", "gemini?alt=1"] {
            let Err(e) = client(&test_spec(name), &env, &Redactor::default(), None) else { panic!("{name}") };
            assert_eq!(e.code, Code::Spec, "{name}");
        }
    }
}
