//! The cloud providers' own fields of a model block (Azure's deployment and `api-version`,
//! Bedrock's and Vertex AI's region, Vertex AI's project): which provider each belongs to, and
//! that each is a plain name, since it becomes part of a host name or a URL path.

use super::Checker;
use super::raw::Provider;

/// The cloud fields of one model block, as written.
pub(super) struct Cloud<'a> {
    pub deployment: Option<&'a str>,
    pub api_version: Option<&'a str>,
    pub region: Option<&'a str>,
    pub project: Option<&'a str>,
}

/// A region (`us-east-1`, `us-east5`, `global`): it becomes part of the API's host name.
pub fn is_region(s: &str) -> bool {
    (1..=32).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A Google Cloud project id (`my-project-123`, or a domain-scoped `example.com:my-project`).
pub fn is_project(s: &str) -> bool {
    (1..=100).contains(&s.len())
        && !s.contains("..")
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.' | b':'))
}

/// An Azure deployment name or API version: letters, digits, `-`, `_` and `.`.
pub fn is_azure_name(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A field: its key, its value, the providers it belongs to, its check, an example.
type Field<'a> = (&'a str, Option<&'a str>, &'a [Provider], fn(&str) -> bool, &'a str);

impl Checker<'_> {
    pub(super) fn cloud_fields(&mut self, c: &Cloud<'_>, provider: Provider, at: &str) {
        let fields: [Field<'_>; 4] = [
            ("deployment", c.deployment, &[Provider::Azure], is_azure_name, "the deployment's name, like gpt-4o-prod"),
            ("api_version", c.api_version, &[Provider::Azure], is_azure_name, "like 2025-04-01-preview"),
            ("region", c.region, &[Provider::Bedrock, Provider::Vertex], is_region, "like us-east-1 or us-east5"),
            ("project", c.project, &[Provider::Vertex], is_project, "the project id, like my-project-123"),
        ];
        for (key, value, providers, valid, example) in fields {
            let Some(v) = value else { continue };
            let path = format!("{at}.{key}");
            if !providers.contains(&provider) {
                let owners: Vec<&str> = providers.iter().map(|p| p.as_str()).collect();
                let help = format!("remove it, or set `provider:` to {}", owners.join(" or "));
                self.err(&path, format!("`{key}` does not apply to `provider: {}`", provider.as_str()), help);
            } else if !valid(v) {
                self.err(&path, format!("`{v}` is not a valid {key}"), example);
            }
        }
        if c.api_version.is_some() && c.deployment.is_none() && provider == Provider::Azure {
            let help = "the `/openai/v1/` form takes no `api-version`: remove it, or name the `deployment`";
            self.err(&format!("{at}.api_version"), "`api_version` belongs to the deployments form", help);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Diagnostic, SpecError, parse};
    use std::path::Path;

    fn spec(model: &str) -> String {
        format!("version: 1\nname: n\ntask: t\nmodel:\n{model}verify: []\n")
    }

    fn errors(model: &str) -> Vec<Diagnostic> {
        match parse(Path::new("job.yaml"), &spec(model)) {
            Ok(_) => vec![],
            Err(SpecError::Invalid(d)) => d,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_cloud_model_with_its_fields_and_a_fallback_is_valid() {
        let job = parse(
            Path::new("job.yaml"),
            &spec(concat!(
                "  provider: bedrock\n  name: us.anthropic.claude-sonnet-4-20250514-v1:0\n  region: us-east-1\n",
                "  fallback:\n    - { provider: vertex, name: claude-sonnet-4@20250514, project: my-proj, region: us-east5 }\n",
                "    - { provider: azure, deployment: gpt-4o-prod, api_version: 2025-04-01-preview, base_url: \"https://r.openai.azure.com\" }\n",
            )),
        )
        .unwrap();
        let names: Vec<&str> = job.model.chain().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4@20250514", "gpt-4o-prod"]);
        assert_eq!(job.model.fallback[1].api_key_env, "AZURE_OPENAI_API_KEY");
        assert_eq!(job.model.fallback[0].api_key_env, "", "Vertex takes no key");
    }

    #[test]
    fn fields_of_another_provider_and_bad_names_are_refused_where_they_are() {
        let e = errors("  provider: openai\n  name: gpt-4.1\n  region: us-east-1\n");
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!((e[0].path.as_str(), e[0].line), ("model.region", 7));
        assert!(e[0].help.as_deref().unwrap().contains("bedrock or vertex"), "{:?}", e[0].help);
        let e = errors("  provider: bedrock\n  name: m\n  region: us-east-1.evil.example\n");
        assert_eq!(e[0].path, "model.region");
        let e = errors("  provider: azure\n  name: gpt-4o\n  api_version: 2024-10-21\n");
        assert_eq!(e[0].path, "model.api_version", "{e:?}");
    }

    #[test]
    fn fallbacks_are_checked_at_their_own_positions() {
        let e = errors(concat!(
            "  provider: openai\n  name: gpt-4.1\n  fallback:\n",
            "    - provider: anthropic\n      name: claude\n      temperature: 9\n",
            "      fallback: [{ provider: openai, name: x }]\n",
        ));
        let paths: Vec<&str> = e.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["model.fallback[0].temperature", "model.fallback[0].fallback"], "{e:?}");
        assert_eq!(e[0].line, 10);
    }

    #[test]
    fn a_cost_budget_needs_every_models_prices() {
        let text = spec(concat!(
            "  provider: openai\n  name: gpt-4.1\n  pricing: { input: 2, output: 8 }\n",
            "  fallback: [{ provider: anthropic, name: claude }]\n",
        )) + "limits: { max_cost_usd: 5 }\n";
        let Err(SpecError::Invalid(e)) = parse(Path::new("job.yaml"), &text) else { panic!("accepted") };
        assert_eq!(e[0].path, "limits.max_cost_usd");
        assert!(e[0].help.as_deref().unwrap().contains("model.fallback[0].pricing"), "{:?}", e[0].help);
    }

    #[test]
    fn names_that_become_hosts_or_paths_are_plain() {
        for ok in ["us-east-1", "us-east5", "global", "eu-central-1"] {
            assert!(is_region(ok), "{ok}");
        }
        for bad in ["", "us-east-1.evil.com", "US-EAST-1", "a/b", "x@y", &"a".repeat(33)] {
            assert!(!is_region(bad), "{bad}");
        }
        assert!(is_project("my-project-123") && is_project("example.com:my-project"));
        assert!(!is_project("p/../../x") && !is_project("p?x=1") && !is_project(".."));
        assert!(is_azure_name("gpt-4o_prod.2") && is_azure_name("2025-04-01-preview"));
        assert!(!is_azure_name("a/b") && !is_azure_name("a?api-version=1") && !is_azure_name(""));
    }
}
