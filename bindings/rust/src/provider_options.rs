//! Typed options of the built-in providers. Each builds the JSON object its
//! C constructor takes (`af_provider_echo_new`, `af_provider_openai_new`,
//! `af_provider_replay_new`), so a misspelt option is a compile error
//! rather than an `InvalidArgument` at run time. libaf still checks every
//! value (ranges, required keys) when the provider is made.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, ErrorCode, Result};
use crate::provider::Provider;
use crate::value::Value;

/// The options every provider takes.
#[derive(Clone, Debug, Default)]
struct Common {
    name: Option<String>,
    max_in_flight: Option<u32>,
    requests_per_minute: Option<u64>,
    tokens_per_minute: Option<u64>,
    schema_retries: Option<u32>,
}

impl Common {
    fn entries(&self, out: &mut Vec<(&'static str, Value)>) {
        if let Some(name) = &self.name {
            out.push(("name", Value::from(name)));
        }
        if let Some(n) = self.max_in_flight {
            out.push(("max_in_flight", Value::from(n)));
        }
        if let Some(n) = self.requests_per_minute {
            out.push(("requests_per_minute", count(n)));
        }
        if let Some(n) = self.tokens_per_minute {
            out.push(("tokens_per_minute", count(n)));
        }
        if let Some(n) = self.schema_retries {
            out.push(("schema_retries", Value::from(n)));
        }
    }
}

/// Setters of the options every provider takes.
macro_rules! common_setters {
    ($t:ty) => {
        impl $t {
            /// The provider's name in profiles and error messages.
            pub fn name(mut self, name: impl Into<String>) -> Self {
                self.common.name = Some(name.into());
                self
            }

            /// At most `n` requests in flight, shared by every context the
            /// provider is routed in (0 = unlimited).
            pub fn max_in_flight(mut self, n: u32) -> Self {
                self.common.max_in_flight = Some(n);
                self
            }

            /// At most `n` requests start per minute (0 = unlimited); a
            /// request waits for the limit, never fails for it.
            pub fn requests_per_minute(mut self, n: u64) -> Self {
                self.common.requests_per_minute = Some(n);
                self
            }

            /// At most `n` tokens per minute, estimated from each request
            /// and corrected by the reply's usage (0 = unlimited); requests
            /// wait for it.
            pub fn tokens_per_minute(mut self, n: u64) -> Self {
                self.common.tokens_per_minute = Some(n);
                self
            }

            /// A schema call whose reply fails validation asks again up to
            /// `n` times, with the error as a correction turn (default 0).
            pub fn schema_retries(mut self, n: u32) -> Self {
                self.common.schema_retries = Some(n);
                self
            }
        }
    };
}

/// A count as libaf's int options take it (libaf refuses values beyond each
/// option's range).
fn count(n: u64) -> Value {
    Value::int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A duration as the whole milliseconds libaf's options take (libaf
/// refuses values beyond each option's range).
fn millis(d: Duration) -> Value {
    Value::int(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[derive(Clone, Copy, Debug)]
enum Latency {
    Fixed(Duration),
    Range {
        min: Duration,
        max: Duration,
        seed: u64,
    },
}

/// Options of the echo provider ([`Provider::echo_with`]): deterministic
/// and offline, it answers `"<model>|<content of the last message>"`.
///
/// ```
/// # use std::time::Duration;
/// let echo = libaf::EchoOptions::new().latency(Duration::from_millis(20)).max_in_flight(4);
/// assert_eq!(echo.to_json()?, r#"{"max_in_flight":4,"latency_ms":20}"#);
/// let provider = libaf::Provider::echo_with(&echo)?;
/// # Ok::<(), libaf::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct EchoOptions {
    common: Common,
    latency: Option<Latency>,
}

common_setters!(EchoOptions);

impl EchoOptions {
    /// The defaults: no latency, no limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every request takes `d` (whole milliseconds).
    pub fn latency(mut self, d: Duration) -> Self {
        self.latency = Some(Latency::Fixed(d));
        self
    }

    /// Each request takes a latency in `[min, max]` drawn from a hash of the
    /// request and `seed`, so runs are reproducible.
    pub fn latency_range(mut self, min: Duration, max: Duration, seed: u64) -> Self {
        self.latency = Some(Latency::Range { min, max, seed });
        self
    }

    /// The JSON object `af_provider_echo_new` takes.
    pub fn to_json(&self) -> Result<String> {
        self.to_value()?.to_json()
    }

    fn to_value(&self) -> Result<Value> {
        let mut e = Vec::new();
        self.common.entries(&mut e);
        match self.latency {
            Some(Latency::Fixed(d)) => e.push(("latency_ms", millis(d))),
            Some(Latency::Range { min, max, seed }) => {
                e.push(("latency_min_ms", millis(min)));
                e.push(("latency_max_ms", millis(max)));
                // libaf reads the seed as an int64 and uses its bits as a
                // uint64: the cast keeps every u64 seed.
                e.push(("seed", Value::int(seed as i64)));
            }
            None => {}
        }
        Value::dict(e)
    }
}

/// Options of the OpenAI provider ([`Provider::openai_with`]): any
/// OpenAI-compatible chat-completions endpoint.
///
/// ```
/// # use std::time::Duration;
/// let openai = libaf::OpenAiOptions::new("https://api.openai.com/v1")
///     .api_key_env("OPENAI_API_KEY")
///     .timeout(Duration::from_secs(30))
///     .extra(libaf::Value::dict([("temperature", 0)])?);
/// assert_eq!(
///     openai.to_json()?,
///     r#"{"base_url":"https://api.openai.com/v1","api_key_env":"OPENAI_API_KEY","timeout_ms":30000,"extra":{"temperature":0}}"#
/// );
/// # Ok::<(), libaf::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiOptions {
    common: Common,
    base_url: String,
    api_key_env: Option<String>,
    allow_insecure_http: Option<bool>,
    timeout: Option<Duration>,
    max_retries: Option<u32>,
    backoff: Option<Duration>,
    backoff_max: Option<Duration>,
    structured_output: Option<StructuredOutput>,
    extra: Option<Value>,
}

/// How an OpenAI-compatible endpoint takes structured output
/// ([`OpenAiOptions::structured_output`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StructuredOutput {
    /// `response_format {"type": "json_schema", ...}`: OpenAI, vLLM,
    /// llama.cpp's own server (the default).
    JsonSchema,
    /// `response_format {"type": "json_object", "schema": ...}`:
    /// llama-cpp-python's server and servers like it.
    JsonObject,
}

common_setters!(OpenAiOptions);

impl OpenAiOptions {
    /// Requests go to `base_url` + `/chat/completions` (e.g.
    /// `"https://api.openai.com/v1"`).
    pub fn new(base_url: impl Into<String>) -> Self {
        OpenAiOptions {
            common: Common::default(),
            base_url: base_url.into(),
            api_key_env: None,
            allow_insecure_http: None,
            timeout: None,
            max_retries: None,
            backoff: None,
            backoff_max: None,
            structured_output: None,
            extra: None,
        }
    }

    /// The environment variable holding the API key (read when the provider
    /// is made, never logged).
    pub fn api_key_env(mut self, var: impl Into<String>) -> Self {
        self.api_key_env = Some(var.into());
        self
    }

    /// Allows sending the key over plain `http://` to a host that is not
    /// loopback.
    pub fn allow_insecure_http(mut self, allow: bool) -> Self {
        self.allow_insecure_http = Some(allow);
        self
    }

    /// The limit of one attempt (default 60 s).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }

    /// Retries of 429, 5xx, connection failures and timeouts (default 3).
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = Some(n);
        self
    }

    /// The first delay between retries (default 500 ms), doubled each retry
    /// up to [`backoff_max`](Self::backoff_max) (default 20 s).
    pub fn backoff(mut self, d: Duration) -> Self {
        self.backoff = Some(d);
        self
    }

    /// The cap of the delay between retries (also of a Retry-After header).
    pub fn backoff_max(mut self, d: Duration) -> Self {
        self.backoff_max = Some(d);
        self
    }

    /// How the endpoint takes structured output (default
    /// [`StructuredOutput::JsonSchema`]).
    pub fn structured_output(mut self, dialect: StructuredOutput) -> Self {
        self.structured_output = Some(dialect);
        self
    }

    /// An object merged into every request body (`{"temperature": 0}`).
    pub fn extra(mut self, extra: Value) -> Self {
        self.extra = Some(extra);
        self
    }

    /// The JSON object `af_provider_openai_new` takes.
    pub fn to_json(&self) -> Result<String> {
        self.to_value()?.to_json()
    }

    fn to_value(&self) -> Result<Value> {
        let mut e = Vec::new();
        self.common.entries(&mut e);
        e.push(("base_url", Value::from(&self.base_url)));
        if let Some(var) = &self.api_key_env {
            e.push(("api_key_env", Value::from(var)));
        }
        if let Some(allow) = self.allow_insecure_http {
            e.push(("allow_insecure_http", Value::from(allow)));
        }
        if let Some(d) = self.timeout {
            e.push(("timeout_ms", millis(d)));
        }
        if let Some(n) = self.max_retries {
            e.push(("max_retries", Value::from(n)));
        }
        if let Some(d) = self.backoff {
            e.push(("backoff_ms", millis(d)));
        }
        if let Some(d) = self.backoff_max {
            e.push(("backoff_max_ms", millis(d)));
        }
        if let Some(dialect) = self.structured_output {
            let name = match dialect {
                StructuredOutput::JsonSchema => "json_schema",
                StructuredOutput::JsonObject => "json_object",
            };
            e.push(("structured_output", Value::from(name)));
        }
        if let Some(extra) = &self.extra {
            e.push(("extra", extra.clone()));
        }
        Value::dict(e)
    }
}

/// The provider a recording replay provider forwards requests to.
#[derive(Clone, Debug)]
pub enum Upstream {
    Echo(EchoOptions),
    OpenAi(OpenAiOptions),
}

impl From<EchoOptions> for Upstream {
    fn from(o: EchoOptions) -> Upstream {
        Upstream::Echo(o)
    }
}

impl From<OpenAiOptions> for Upstream {
    fn from(o: OpenAiOptions) -> Upstream {
        Upstream::OpenAi(o)
    }
}

impl Upstream {
    /// The provider spec: `{"type": "echo", ...options}`.
    fn to_value(&self) -> Result<Value> {
        let (kind, options) = match self {
            Upstream::Echo(o) => ("echo", o.to_value()?),
            Upstream::OpenAi(o) => ("openai", o.to_value()?),
        };
        let mut spec = vec![("type".to_owned(), Value::from(kind))];
        for (key, value) in options.iter_entries()? {
            spec.push((key.to_owned(), value));
        }
        Value::dict(spec)
    }
}

/// Options of the replay provider ([`Provider::replay_with`]): answers from
/// a JSON Lines file of recorded requests, or records into it.
///
/// ```
/// let record = libaf::ReplayOptions::new("calls.jsonl").record(libaf::EchoOptions::new());
/// assert_eq!(
///     record.to_json()?,
///     r#"{"path":"calls.jsonl","mode":"record","upstream":{"type":"echo"}}"#
/// );
/// # Ok::<(), libaf::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    common: Common,
    path: PathBuf,
    upstream: Option<Upstream>,
}

common_setters!(ReplayOptions);

impl ReplayOptions {
    /// Replays the requests recorded in `path` (a request that was not
    /// recorded is `NotFound`).
    pub fn new(path: impl AsRef<Path>) -> Self {
        ReplayOptions {
            common: Common::default(),
            path: path.as_ref().to_owned(),
            upstream: None,
        }
    }

    /// Records instead: each request goes to `upstream` and its answer is
    /// appended to the file.
    pub fn record(mut self, upstream: impl Into<Upstream>) -> Self {
        self.upstream = Some(upstream.into());
        self
    }

    /// The JSON object `af_provider_replay_new` takes. `InvalidArgument` if
    /// the path is not UTF-8.
    pub fn to_json(&self) -> Result<String> {
        let path = self.path.to_str().ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidArgument,
                format!("replay path {:?} is not UTF-8", self.path),
            )
        })?;
        let mut e = Vec::new();
        self.common.entries(&mut e);
        e.push(("path", Value::from(path)));
        if let Some(upstream) = &self.upstream {
            e.push(("mode", Value::from("record")));
            e.push(("upstream", upstream.to_value()?));
        }
        Value::dict(e)?.to_json()
    }
}

impl Provider {
    /// The echo provider with typed options ([`Provider::echo`] takes JSON).
    pub fn echo_with(options: &EchoOptions) -> Result<Provider> {
        Provider::echo(&options.to_json()?)
    }

    /// The OpenAI provider with typed options ([`Provider::openai`] takes
    /// JSON).
    pub fn openai_with(options: &OpenAiOptions) -> Result<Provider> {
        Provider::openai(&options.to_json()?)
    }

    /// The replay provider with typed options ([`Provider::replay`] takes
    /// JSON).
    pub fn replay_with(options: &ReplayOptions) -> Result<Provider> {
        Provider::replay(&options.to_json()?)
    }
}
