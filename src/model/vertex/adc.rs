//! Application Default Credentials, in Google's order: the file `GOOGLE_APPLICATION_CREDENTIALS`
//! names, then gcloud's well-known file (`application_default_credentials.json` in
//! `$CLOUDSDK_CONFIG`, else `~/.config/gcloud`), then the metadata server of a Google Cloud
//! machine. The repository is hostile input and the model's commands can read and write its work
//! tree, so a credentials file there is refused, unless it is the regular file the environment
//! names (`env::CREDENTIAL_FILES`: google-github-actions/auth's `gha-creds-*.json` in the
//! checkout), which the jail and the tools hide.

use super::credfile::{self, Credentials, Subject};
use super::external::ExternalGrant;
use super::grants::{RefreshGrant, ServiceAccountGrant};
use super::metadata::{self, MetadataToken};
use crate::env::RunEnv;
use crate::error::{Code, HoneError};
use crate::model::auth::Refreshing;
use crate::redact::Redactor;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A credentials file is a few KiB; anything larger is not one.
const MAX_FILE: u64 = 64 * 1024;

/// The credentials found: their token, kept fresh, and what they say of themselves.
pub struct Found {
    pub token: Arc<Refreshing<String>>,
    /// `service_account`, `authorized_user`, `external_account` or `metadata server`.
    pub kind: &'static str,
    /// The project the credentials file names, if any.
    pub project: Option<String>,
    /// The files read: the credentials file, and an external account's subject token file.
    pub files: Vec<PathBuf>,
}

/// What `find` needs besides the environment.
pub struct Context<'a> {
    pub http: &'a reqwest::Client,
    pub redactor: &'a Redactor,
    /// The repository's work tree, where no credentials file may be.
    pub repo: Option<&'a Path>,
}

/// The credentials ADC finds in `env`, on this machine.
pub fn find(env: &RunEnv, cx: &Context<'_>) -> Result<Found, HoneError> {
    find_with(env, cx, metadata::machine_dmi)
}

/// `find`, with the machine's DMI data from `dmi` (tests fake it).
fn find_with(env: &RunEnv, cx: &Context<'_>, dmi: impl FnOnce() -> Option<String>) -> Result<Found, HoneError> {
    if let Some(p) = env.var("GOOGLE_APPLICATION_CREDENTIALS") {
        let path = PathBuf::from(p.trim());
        let origin = format!("the file GOOGLE_APPLICATION_CREDENTIALS names, {}", path.display());
        return from_file(&path, origin, cx, Hidden::Yes);
    }
    let well_known = well_known(env);
    if let Some(path) = well_known.as_ref().filter(|p| std::fs::symlink_metadata(p).is_ok()) {
        let origin = format!("gcloud's application default credentials, {}", path.display());
        return from_file(path, origin, cx, Hidden::No);
    }
    if metadata::available(env, dmi) {
        let host = metadata::host(env);
        if !host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']')) {
            return Err(HoneError::new(
                Code::Spec,
                format!("GCE_METADATA_HOST `{host}` is not a host name or address"),
            )
            .hint("set it to the metadata server's host[:port], like 169.254.169.254"));
        }
        let source = MetadataToken::new(cx.http.clone(), &host);
        let token = Arc::new(Refreshing::new(source, cx.redactor.clone()));
        return Ok(Found { token, kind: "metadata server", project: None, files: Vec::new() });
    }
    let gcloud = well_known.map_or_else(|| "no gcloud credentials".to_string(), |p| format!("no {}", p.display()));
    Err(HoneError::new(
        Code::Spec,
        format!(
            "`provider: vertex` found no Google credentials: GOOGLE_APPLICATION_CREDENTIALS is not set, there is {gcloud}, and this is not a Google Cloud machine"
        ),
    )
    .hint(
        "set GOOGLE_APPLICATION_CREDENTIALS to a service account key or a workload identity federation file (in GitHub Actions, google-github-actions/auth sets it), run `gcloud auth application-default login`, or run on Google Cloud (GCE_METADATA_HOST names a metadata server)",
    ))
}

/// gcloud's well-known file: in `$CLOUDSDK_CONFIG`, else `~/.config/gcloud`.
fn well_known(env: &RunEnv) -> Option<PathBuf> {
    let dir = match env.var("CLOUDSDK_CONFIG") {
        Some(d) => PathBuf::from(d.trim()),
        None => env.home()?.join(".config/gcloud"),
    };
    Some(dir.join("application_default_credentials.json"))
}

/// Whether the jail and the tools hide a file from the model's commands: those the environment
/// names (`env::CREDENTIAL_FILES`) they do.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hidden {
    Yes,
    No,
}

/// The credentials in the file at `path` (`origin` says where it was named, for messages).
fn from_file(path: &Path, origin: String, cx: &Context<'_>, hidden: Hidden) -> Result<Found, HoneError> {
    let fail = |code: Code, why: String| {
        HoneError::new(code, format!("{origin} {why}"))
            .hint("point GOOGLE_APPLICATION_CREDENTIALS at the JSON file Google issued (a service account key, or a workload identity federation configuration)")
    };
    refuse_inside(path, cx.repo, &origin, hidden)?;
    let bytes = read_small(path).map_err(|e| fail(Code::Spec, format!("cannot be read: {e}")))?;
    let creds = credfile::parse(&bytes).map_err(|e| fail(e.code(), e.to_string()))?;
    for s in credfile::secrets(&creds) {
        cx.redactor.add(&s);
    }
    let (kind, project) = (creds.kind(), creds.project().map(str::to_string));
    let mut files = vec![path.to_path_buf()];
    let token = match creds {
        Credentials::ServiceAccount(sa) => {
            let grant = ServiceAccountGrant::new(cx.http.clone(), &sa, origin.clone())
                .map_err(|e| fail(e.code(), e.to_string()))?;
            Arc::new(Refreshing::new(grant, cx.redactor.clone()))
        }
        Credentials::AuthorizedUser(u) => {
            Arc::new(Refreshing::new(RefreshGrant::new(cx.http.clone(), &u, origin), cx.redactor.clone()))
        }
        Credentials::External(account, subject) => {
            if let Subject::File { path: token_file, .. } = &subject {
                let what =
                    format!("the subject token file {} (`credential_source.file` of {origin})", token_file.display());
                refuse_inside(token_file, cx.repo, &what, Hidden::No)?;
                files.push(token_file.clone());
            }
            let grant = ExternalGrant::new(cx.http.clone(), account, subject, cx.redactor.clone(), origin);
            Arc::new(Refreshing::new(grant, cx.redactor.clone()))
        }
    };
    Ok(Found { token, kind, project, files })
}

/// Refuse `path` when it lies in the work tree `repo`, as written or once its links are
/// resolved (a link the repository commits could point anywhere, or be pointed at); a file the
/// jail hides is let through when it is a regular file itself, not a link.
fn refuse_inside(path: &Path, repo: Option<&Path>, what: &str, hidden: Hidden) -> Result<(), HoneError> {
    let Some(repo) = repo else {
        return Ok(());
    };
    let roots = [crate::safe_fs::lexical(repo), crate::safe_fs::absolute(repo)];
    let spellings = [crate::safe_fs::lexical(path), crate::safe_fs::absolute(path)];
    if !spellings.iter().any(|p| roots.iter().any(|r| p.starts_with(r))) {
        return Ok(());
    }
    if hidden == Hidden::Yes && std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file()) {
        return Ok(());
    }
    let why = match hidden {
        Hidden::Yes => "through a link, which the repository could point anywhere",
        Hidden::No => "where the model's commands could read and change it",
    };
    Err(HoneError::new(
        Code::Spec,
        format!("{what} is inside the repository's work tree ({}), {why}", repo.display()),
    )
    .hint("keep Google credentials outside the work tree, or name the file itself (not a link to it) in GOOGLE_APPLICATION_CREDENTIALS, which hone hides from the model's commands and tools"))
}

/// Read the small regular file at `path` (at most 64 KiB), never waiting on a FIFO or device.
pub fn read_small(path: &Path) -> std::io::Result<Vec<u8>> {
    crate::safe_fs::read_small(path, MAX_FILE)
}

#[cfg(test)]
#[path = "adc_tests.rs"]
mod tests;
