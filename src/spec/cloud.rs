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
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.' | b':'))
}

/// An Azure deployment name or API version: letters, digits, `-`, `_` and `.`.
pub fn is_azure_name(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl Checker<'_> {
    pub(super) fn cloud_fields(&mut self, c: &Cloud<'_>, provider: Provider, at: &str) {
        let fields: [(&str, Option<&str>, &[Provider], fn(&str) -> bool, &str); 4] = [
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

    #[test]
    fn names_that_become_hosts_or_paths_are_plain() {
        for ok in ["us-east-1", "us-east5", "global", "eu-central-1"] {
            assert!(is_region(ok), "{ok}");
        }
        for bad in ["", "us-east-1.evil.com", "US-EAST-1", "a/b", "x@y", &"a".repeat(33)] {
            assert!(!is_region(bad), "{bad}");
        }
        assert!(is_project("my-project-123") && is_project("example.com:my-project"));
        assert!(!is_project("p/../../x") && !is_project("p?x=1"));
        assert!(is_azure_name("gpt-4o_prod.2") && is_azure_name("2025-04-01-preview"));
        assert!(!is_azure_name("a/b") && !is_azure_name("a?api-version=1") && !is_azure_name(""));
    }
}
