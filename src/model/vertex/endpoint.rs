//! Where Vertex AI requests go: the region and project (from the spec, the environment, or the
//! credentials), the API root for the region (`global` has a host of its own), and the URLs of
//! Anthropic's `rawPredict`/`streamRawPredict` and of the OpenAI-compatible Chat Completions.

use crate::env::RunEnv;
use crate::error::{Code, HoneError};
use crate::spec::ModelSpec;
use crate::spec::cloud::{is_project, is_region};

/// The API root, project and region of every request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `https://{region}-aiplatform.googleapis.com`, or `model.base_url`.
    pub base: String,
    pub project: String,
    pub region: String,
}

impl Endpoint {
    fn location(&self) -> String {
        format!("{}/v1/projects/{}/locations/{}", self.base, self.project, self.region)
    }

    /// Anthropic's Messages API for `model`: `streamRawPredict` when streamed, else `rawPredict`.
    pub fn claude(&self, model: &str, stream: bool) -> String {
        let method = if stream { "streamRawPredict" } else { "rawPredict" };
        format!("{}/publishers/anthropic/models/{model}:{method}", self.location())
    }

    /// The OpenAI-compatible Chat Completions endpoint (every Gemini model, named in the body).
    pub fn openapi(&self) -> String {
        format!("{}/endpoints/openapi/chat/completions", self.location())
    }
}

/// The API root of `region`: the `global` region is served from `aiplatform.googleapis.com`.
pub fn default_base(region: &str) -> String {
    if region == "global" {
        "https://aiplatform.googleapis.com".to_string()
    } else {
        format!("https://{region}-aiplatform.googleapis.com")
    }
}

/// The first of `names` set in `env`, with the name it came from.
fn first_var<'a>(env: &'a RunEnv, names: &[&'static str]) -> Option<(&'static str, &'a str)> {
    names.iter().find_map(|n| env.var(n).map(|v| (*n, v.trim())))
}

/// The region: `model.region`, else `GOOGLE_CLOUD_LOCATION`, else `CLOUD_ML_REGION`.
pub fn region(m: &ModelSpec, env: &RunEnv) -> Result<String, HoneError> {
    if let Some(r) = &m.region {
        return Ok(r.clone());
    }
    match first_var(env, &["GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"]) {
        Some((_, v)) if is_region(v) => Ok(v.to_string()),
        Some((name, v)) => Err(HoneError::new(Code::Spec, format!("`{name}` (`{v}`) is not a Vertex AI region"))
            .hint("a region is lower-case letters, digits and `-`, like us-east5, europe-west1 or global")),
        None => Err(HoneError::new(Code::Spec, "`provider: vertex` needs a region, and none is set").hint(
            "set `model.region` in the spec (like us-east5 or global), or export GOOGLE_CLOUD_LOCATION (or CLOUD_ML_REGION)",
        )),
    }
}

/// The project: `model.project`, else `GOOGLE_CLOUD_PROJECT`, else `CLOUDSDK_CORE_PROJECT`, else
/// the one the credentials name (`project_id`, `quota_project_id`).
pub fn project(m: &ModelSpec, env: &RunEnv, from_credentials: Option<&str>) -> Result<String, HoneError> {
    if let Some(p) = &m.project {
        return Ok(p.clone());
    }
    let (name, value) = match first_var(env, &["GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT"]) {
        Some((name, v)) => (name, v),
        None => match from_credentials {
            Some(p) => ("the credentials file's `project_id`", p),
            None => {
                return Err(HoneError::new(
                    Code::Spec,
                    "`provider: vertex` needs a Google Cloud project, and none is set",
                )
                .hint("set `model.project` in the spec, or export GOOGLE_CLOUD_PROJECT"));
            }
        },
    };
    if is_project(value) {
        Ok(value.to_string())
    } else {
        Err(HoneError::new(Code::Spec, format!("{name} (`{value}`) is not a Google Cloud project id"))
            .hint("a project id is lower-case letters, digits and `-`, like my-project-123"))
    }
}

/// The API root: `model.base_url` (without a trailing `/` or `/v1`), else the region's. Plain
/// `http://` only to a loopback address: the access token goes with every request.
pub fn base(m: &ModelSpec, region: &str) -> Result<String, HoneError> {
    let Some(url) = &m.base_url else {
        return Ok(default_base(region));
    };
    let trimmed = url.trim_end_matches('/');
    let trimmed = trimmed.strip_suffix("/v1").unwrap_or(trimmed);
    if !super::token::https_or_loopback(trimmed) {
        return Err(HoneError::new(Code::Spec, format!("`model.base_url` `{url}` is not an https URL"))
            .hint("the Google access token goes with every request: use https (plain http is only for a server on this machine)"));
    }
    Ok(trimmed.to_string())
}

/// A model id that can stand in a URL path (`claude-sonnet-4-5@20250929`, `gemini-2.5-pro`).
pub fn is_model_id(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'@'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(vars: &[(&str, &str)]) -> RunEnv {
        RunEnv::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>())
    }

    fn spec() -> ModelSpec {
        super::super::test_spec("claude-sonnet-4-5@20250929")
    }

    #[test]
    fn urls_for_a_region_and_for_global() {
        let e = Endpoint { base: default_base("us-east5"), project: "my-proj".into(), region: "us-east5".into() };
        assert_eq!(
            e.claude("claude-sonnet-4-5@20250929", true),
            "https://us-east5-aiplatform.googleapis.com/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
        );
        assert!(e.claude("claude-x", false).ends_with("/models/claude-x:rawPredict"));
        let g = Endpoint { base: default_base("global"), project: "p".into(), region: "global".into() };
        assert_eq!(
            g.openapi(),
            "https://aiplatform.googleapis.com/v1/projects/p/locations/global/endpoints/openapi/chat/completions"
        );
    }

    #[test]
    fn region_and_project_in_order_spec_then_environment_then_credentials() {
        let mut m = spec();
        assert!(region(&m, &env(&[])).unwrap_err().render().contains("GOOGLE_CLOUD_LOCATION"));
        assert_eq!(region(&m, &env(&[("CLOUD_ML_REGION", "us-east5")])).unwrap(), "us-east5");
        let both = env(&[("GOOGLE_CLOUD_LOCATION", "europe-west1"), ("CLOUD_ML_REGION", "us-east5")]);
        assert_eq!(region(&m, &both).unwrap(), "europe-west1");
        assert!(region(&m, &env(&[("GOOGLE_CLOUD_LOCATION", "Evil.com/x")])).is_err());
        m.region = Some("global".into());
        assert_eq!(region(&m, &both).unwrap(), "global");

        assert!(project(&m, &env(&[]), None).unwrap_err().render().contains("GOOGLE_CLOUD_PROJECT"));
        assert_eq!(project(&m, &env(&[]), Some("from-file")).unwrap(), "from-file");
        let e = env(&[("CLOUDSDK_CORE_PROJECT", "gcloud-proj")]);
        assert_eq!(project(&m, &e, Some("from-file")).unwrap(), "gcloud-proj");
        let e = env(&[("CLOUDSDK_CORE_PROJECT", "gcloud-proj"), ("GOOGLE_CLOUD_PROJECT", "env-proj")]);
        assert_eq!(project(&m, &e, None).unwrap(), "env-proj");
        assert!(project(&m, &env(&[("GOOGLE_CLOUD_PROJECT", "a/../b")]), None).is_err());
        m.project = Some("spec-proj".into());
        assert_eq!(project(&m, &e, None).unwrap(), "spec-proj");
    }

    #[test]
    fn base_url_override_is_https_or_loopback() {
        let mut m = spec();
        assert_eq!(base(&m, "us-east5").unwrap(), "https://us-east5-aiplatform.googleapis.com");
        m.base_url = Some("http://127.0.0.1:4000/v1/".into());
        assert_eq!(base(&m, "us-east5").unwrap(), "http://127.0.0.1:4000");
        m.base_url = Some("https://vertex.internal.example".into());
        assert_eq!(base(&m, "us-east5").unwrap(), "https://vertex.internal.example");
        m.base_url = Some("http://vertex.internal.example".into());
        assert!(base(&m, "us-east5").is_err(), "the token would travel in clear text");
        assert!(is_model_id("claude-opus-4-1@20250805") && is_model_id("gemini-2.5-pro"));
        assert!(!is_model_id("../x") && !is_model_id("a?b") && !is_model_id(""));
    }
}
