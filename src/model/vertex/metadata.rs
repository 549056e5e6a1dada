//! The metadata server of Google Cloud machines (Compute Engine, GKE, Cloud Run): the attached
//! service account's token, asked for with `Metadata-Flavor: Google`. Plain http by design (it is
//! link-local, on the machine's own network); `GCE_METADATA_HOST` names another host, as in
//! Google's own libraries (the tests point it at a stand-in).

use super::token::{self, Context, SCOPE};
use crate::env::RunEnv;
use crate::model::ModelError;
use crate::model::auth::{Expiring, Source};
use futures_util::future::BoxFuture;
use std::time::SystemTime;

/// The metadata server's name on Google Cloud.
pub const DEFAULT_HOST: &str = "metadata.google.internal";

/// The host (with its port, if any) of the metadata server `env` points at.
pub fn host(env: &RunEnv) -> String {
    env.var("GCE_METADATA_HOST").map_or_else(|| DEFAULT_HOST.to_string(), |h| h.trim().to_string())
}

/// Whether this looks like a Google Cloud machine, where ADC falls back to the metadata server:
/// `GCE_METADATA_HOST` is set; or, unless `NO_GCE_CHECK` is `true`, a serverless platform's
/// variables are (Cloud Run services and jobs, Cloud Functions), or the machine's DMI data
/// (`dmi`, read from `/sys/class/dmi/id`) names Google, as on Compute Engine and GKE nodes.
pub fn available(env: &RunEnv, dmi: impl FnOnce() -> Option<String>) -> bool {
    if env.var("GCE_METADATA_HOST").is_some() {
        return true;
    }
    if env.var("NO_GCE_CHECK").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return false;
    }
    if ["K_SERVICE", "CLOUD_RUN_JOB", "FUNCTION_TARGET"].iter().any(|v| env.var(v).is_some()) {
        return true;
    }
    dmi().is_some_and(|d| d.contains("Google"))
}

/// The machine's DMI product name and BIOS vendor, when the kernel shows them.
pub fn machine_dmi() -> Option<String> {
    let read = |f: &str| std::fs::read_to_string(format!("/sys/class/dmi/id/{f}")).ok();
    let both: Vec<String> = ["product_name", "bios_vendor"].iter().filter_map(|f| read(f)).collect();
    (!both.is_empty()).then(|| both.join(" "))
}

/// The token of the machine's default service account.
pub struct MetadataToken {
    http: reqwest::Client,
    url: String,
    ctx: Context,
}

impl MetadataToken {
    pub fn new(http: reqwest::Client, host: &str) -> Self {
        let url = format!("http://{host}/computeMetadata/v1/instance/service-accounts/default/token");
        let ctx = Context {
            kind: "metadata server",
            origin: format!("http://{host}"),
            check: "that the machine has a service account attached with the cloud-platform scope (on GKE: Workload Identity for the pod's Kubernetes service account)",
        };
        MetadataToken { http, url, ctx }
    }

    async fn ask(&self) -> Result<Expiring<String>, ModelError> {
        let now = SystemTime::now();
        let rb = self.http.get(&self.url).query(&[("scopes", SCOPE)]).header("Metadata-Flavor", "Google");
        let v = token::send(&self.ctx, &self.url, rb).await?;
        token::access_token(&self.ctx, &self.url, &v, "access_token", now)
    }
}

impl Source<String> for MetadataToken {
    fn fetch(&self) -> BoxFuture<'_, Result<Expiring<String>, ModelError>> {
        Box::pin(self.ask())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn env(vars: &[(&str, &str)]) -> RunEnv {
        RunEnv::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>())
    }

    #[test]
    fn only_where_google_cloud_is_likely() {
        let gce = || Some("Google Compute Engine Google".to_string());
        let laptop = || Some("ThinkPad X1 LENOVO".to_string());
        assert!(available(&env(&[("GCE_METADATA_HOST", "127.0.0.1:9")]), laptop));
        assert!(available(&env(&[]), gce));
        assert!(available(&env(&[("K_SERVICE", "svc")]), || None));
        assert!(!available(&env(&[]), laptop));
        assert!(!available(&env(&[]), || None));
        assert!(!available(&env(&[("NO_GCE_CHECK", "True")]), gce), "Google's libraries' own switch");
        assert!(available(&env(&[("NO_GCE_CHECK", "True"), ("GCE_METADATA_HOST", "h:1")]), gce));
        assert_eq!(host(&env(&[])), "metadata.google.internal");
        assert_eq!(host(&env(&[("GCE_METADATA_HOST", "127.0.0.1:8080")])), "127.0.0.1:8080");
        let m = MetadataToken::new(reqwest::Client::new(), "127.0.0.1:8080");
        assert_eq!(m.url, "http://127.0.0.1:8080/computeMetadata/v1/instance/service-accounts/default/token");
    }
}
