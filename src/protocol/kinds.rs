//! The kinds of model failures and of the faults hone absorbs, with stable names.

use serde::Serialize;

/// Why a model request failed. Each kind has a stable name, used in reports and events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ModelErrorKind {
    RateLimited,
    ServerError,
    Overloaded,
    Timeout,
    Connection,
    StreamCut,
    IdleTimeout,
    EmptyAnswer,
    ContextLength,
    Auth,
    NotFound,
    BadRequest,
    /// The provider's content filter refused the prompt or the answer (Azure OpenAI): never
    /// retried, never a reason to fall back.
    ContentFilter,
    ScriptExhausted,
    Cancelled,
}

impl ModelErrorKind {
    pub const ALL: [ModelErrorKind; 15] = [
        Self::RateLimited,
        Self::ServerError,
        Self::Overloaded,
        Self::Timeout,
        Self::Connection,
        Self::StreamCut,
        Self::IdleTimeout,
        Self::EmptyAnswer,
        Self::ContextLength,
        Self::Auth,
        Self::NotFound,
        Self::BadRequest,
        Self::ContentFilter,
        Self::ScriptExhausted,
        Self::Cancelled,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "rate_limited",
            Self::ServerError => "server_error",
            Self::Overloaded => "overloaded",
            Self::Timeout => "timeout",
            Self::Connection => "connection",
            Self::StreamCut => "stream_cut",
            Self::IdleTimeout => "idle_timeout",
            Self::EmptyAnswer => "empty_answer",
            Self::ContextLength => "context_length",
            Self::Auth => "auth",
            Self::NotFound => "not_found",
            Self::BadRequest => "bad_request",
            Self::ContentFilter => "content_filter",
            Self::ScriptExhausted => "script_exhausted",
            Self::Cancelled => "cancelled",
        }
    }
}

/// How a fault was absorbed: retried as it was, handled by changing course (an error result,
/// a compaction, a rollback, a note to the model), or the end of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultClass {
    Retryable,
    Recoverable,
    Permanent,
}

impl FaultClass {
    pub const ALL: [FaultClass; 3] = [Self::Retryable, Self::Recoverable, Self::Permanent];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Retryable => "retryable",
            Self::Recoverable => "recoverable",
            Self::Permanent => "permanent",
        }
    }
}

/// A fault hone absorbed during a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// A model request that failed and was retried.
    Model(ModelErrorKind),
    /// Tool arguments that were not JSON or did not match the schema.
    InvalidToolCall,
    /// A degenerate answer, dropped and asked for again.
    Repetition,
    /// The same call with the same result three times: the model was warned.
    LoopWarning,
    /// The same call with the same result five times: the run ended.
    Loop,
    /// The provider said the context was too long: the history was compacted.
    ContextLength,
    /// A step made the checks worse and was rolled back.
    Rollback,
}

impl FaultKind {
    /// Every kind, hone's own before the model's: where two share a name (`context_length`),
    /// reading the name back gives hone's.
    pub fn all() -> impl Iterator<Item = FaultKind> {
        [Self::InvalidToolCall, Self::Repetition, Self::LoopWarning, Self::Loop, Self::ContextLength, Self::Rollback]
            .into_iter()
            .chain(ModelErrorKind::ALL.into_iter().map(Self::Model))
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Model(k) => k.as_str(),
            Self::InvalidToolCall => "invalid_tool_call",
            Self::Repetition => "repetition",
            Self::LoopWarning => "loop_warning",
            Self::Loop => "loop",
            Self::ContextLength => "context_length",
            Self::Rollback => "rollback",
        }
    }

    pub const fn class(self) -> FaultClass {
        match self {
            Self::Model(_) => FaultClass::Retryable,
            Self::Loop => FaultClass::Permanent,
            _ => FaultClass::Recoverable,
        }
    }
}

macro_rules! serialize_as_str {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    )*};
}
serialize_as_str!(ModelErrorKind, FaultClass, FaultKind);

/// Read back from the stable name (`report.json` is read again by `--continue`, fleets and
/// replay); the schema lists every name.
macro_rules! named {
    ($($t:ty => $all:expr),*) => {$(
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = String::deserialize(d)?;
                $all.into_iter().find(|k| k.as_str() == name).ok_or_else(|| {
                    serde::de::Error::custom(format!("unknown {} `{name}`", stringify!($t)))
                })
            }
        }

        impl schemars::JsonSchema for $t {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($t).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let mut names: Vec<&str> = $all.into_iter().map(|k| k.as_str()).collect();
                names.sort_unstable();
                names.dedup();
                schemars::json_schema!({ "type": "string", "enum": names })
            }
        }
    )*};
}
named!(ModelErrorKind => ModelErrorKind::ALL, FaultClass => FaultClass::ALL, FaultKind => FaultKind::all());

macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
display_as_str!(ModelErrorKind, FaultClass, FaultKind);
