//! What is wrong with a Google credentials file (`CredFileError`), or with the key in it. Its
//! text is a sentence to follow the file's name (`GOOGLE_APPLICATION_CREDENTIALS=… is not
//! JSON (…)`); its code is `E_SPEC`: the file is configuration hone is given.

use crate::error::Code;

/// A credentials file hone cannot use, and why.
#[derive(Debug, thiserror::Error)]
pub enum CredFileError {
    #[error("is not JSON ({0})")]
    NotJson(serde_json::Error),
    #[error("has no `type` (service_account, authorized_user or external_account)")]
    NoType,
    /// Of a known `type`, without what that type needs.
    #[error("is not a usable `{kind}` credentials file ({why})")]
    Unusable { kind: &'static str, why: serde_json::Error },
    #[error(
        "has `type: {0}`, which hone does not read (it reads service_account, authorized_user and external_account)"
    )]
    UnknownType(String),
    #[error(
        "has `{key}` `{url}`, which is not an https URL (credentials travel to it; plain http is only for this machine)"
    )]
    NotHttps { key: &'static str, url: String },
    #[error(
        "has a `credential_source.executable`: hone never runs a program named by configuration; \
         write the subject token to a file (`credential_source.file`) or serve it from a URL instead"
    )]
    Executable,
    #[error(
        "has a `credential_source.environment_id` (AWS or Azure instance credentials), \
         which hone does not read; use a `file` or `url` credential source"
    )]
    EnvironmentId,
    #[error("has `credential_source.headers` that is not a mapping")]
    HeadersNotMap,
    #[error("has a header `{0}` whose value is not a string")]
    HeaderNotText(String),
    #[error("has a header `{0}` that is not a valid HTTP header")]
    BadHeader(String),
    #[error("has a `credential_source` with neither `file` nor `url`")]
    NoSource,
    #[error("has `credential_source.format.type: json` without `subject_token_field_name`")]
    NoTokenField,
    #[error("has `credential_source.format.type: {0}` (text or json)")]
    UnknownFormat(String),
    /// A service account's key that cannot sign.
    #[error("has a `private_key` that {0}")]
    Key(#[from] crate::jwt::KeyError),
}

impl CredFileError {
    /// The file is configuration hone is given.
    pub const fn code(&self) -> Code {
        Code::Spec
    }
}
