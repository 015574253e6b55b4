#[allow(unused_imports)]
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

#[cfg(feature = "sasl-gssapi")]
mod gssapi;
#[cfg(feature = "sasl-gssapi")]
pub use gssapi::*;

#[cfg(feature = "sasl-digest-md5")]
mod digest_md5;
#[cfg(feature = "sasl-digest-md5")]
pub use digest_md5::*;

#[cfg(feature = "sasl-digest-md5")]
mod mechanisms {
    mod digest_md5;
}

use rsasl::prelude::*;
use tracing::warn;

use crate::error::Error;

pub(crate) type Result<T, E = crate::error::Error> = std::result::Result<T, E>;

pub(crate) trait SaslInitiator {
    fn new_session(&self, hostname: &str) -> Result<SaslSession>;
}

/// Client side SASL options.
#[derive(Clone, Debug)]
pub struct SaslOptions(SaslInnerOptions);

#[derive(Clone, Debug)]
enum SaslInnerOptions {
    #[cfg(feature = "sasl-gssapi")]
    Gssapi(GssapiSaslOptions),
    #[cfg(feature = "sasl-digest-md5")]
    DigestMd5(DigestMd5SaslOptions),
    External(ExternalSasl),
}

/// A SASL mechanism implemented outside this crate, for example GSSAPI through a host
/// application's own Kerberos login. See [SaslOptions::external].
pub trait ExternalSaslMechanism: Send + Sync {
    /// The mechanism's name, for logs.
    fn name(&self) -> &str;

    /// Begins one exchange, once per connection attempt, with the server at `host` as the
    /// connect string names it. Called on the session's task, as are the exchange's methods:
    /// one that blocks (asking a KDC) moves off the async worker itself.
    fn start(&self, host: &str) -> std::result::Result<Box<dyn ExternalSaslExchange>, Error>;
}

/// One exchange of an [ExternalSaslMechanism]. The client speaks first.
pub trait ExternalSaslExchange: Send {
    /// The client's first message.
    fn initial(&mut self) -> std::result::Result<Vec<u8>, Error>;

    /// The answer to a server challenge; `None` when the client has nothing more to send.
    fn step(&mut self, challenge: &[u8]) -> std::result::Result<Option<Vec<u8>>, Error>;
}

#[derive(Clone)]
struct ExternalSasl(Arc<dyn ExternalSaslMechanism>);

impl fmt::Debug for ExternalSasl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ExternalSasl({})", self.0.name())
    }
}

/// Any failure of an external mechanism fails authentication: [Error::AuthFailed] ends the
/// session instead of retrying until the session timeout.
fn auth_failed(name: &str, host: &str, err: Error) -> Error {
    warn!("SASL {name} with {host} failed: {err}");
    Error::AuthFailed
}

impl SaslInitiator for ExternalSasl {
    fn new_session(&self, hostname: &str) -> Result<SaslSession> {
        let name = self.0.name();
        let mut exchange = self.0.start(hostname).map_err(|err| auth_failed(name, hostname, err))?;
        let output = exchange.initial().map_err(|err| auth_failed(name, hostname, err))?;
        let inner = SessionKind::External { exchange, name: name.to_string(), host: hostname.to_string() };
        Ok(SaslSession { output, inner, finished: false })
    }
}

impl SaslOptions {
    /// Constructs a default [GssapiSaslOptions] for further customization.
    ///
    /// Make sure localhost is granted by Kerberos KDC, unlike Java counterpart this library
    /// provides no mean to grant ticket from KDC but simply utilizes whatever the ticket cache
    /// have.
    #[cfg(feature = "sasl-gssapi")]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "sasl", feature = "sasl-gssapi"))))]
    pub fn gssapi() -> GssapiSaslOptions {
        GssapiSaslOptions::new()
    }

    /// Options for a mechanism implemented outside this crate. Every error of the mechanism
    /// ends the session with [Error::AuthFailed].
    pub fn external(mechanism: Arc<dyn ExternalSaslMechanism>) -> Self {
        Self(SaslInnerOptions::External(ExternalSasl(mechanism)))
    }

    /// Construct a [DigestMd5SaslOptions] for further customization.
    #[cfg(feature = "sasl-digest-md5")]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "sasl", feature = "sasl-digest-md5"))))]
    pub fn digest_md5(
        username: impl Into<Cow<'static, str>>,
        password: impl Into<Cow<'static, str>>,
    ) -> DigestMd5SaslOptions {
        DigestMd5SaslOptions::new(username, password)
    }
}

impl SaslInitiator for SaslOptions {
    fn new_session(&self, hostname: &str) -> Result<SaslSession> {
        match &self.0 {
            #[cfg(feature = "sasl-digest-md5")]
            SaslInnerOptions::DigestMd5(options) => options.new_session(hostname),
            #[cfg(feature = "sasl-gssapi")]
            SaslInnerOptions::Gssapi(options) => options.new_session(hostname),
            SaslInnerOptions::External(options) => options.new_session(hostname),
        }
    }
}

pub struct SaslSession {
    output: Vec<u8>,
    inner: SessionKind,
    finished: bool,
}

enum SessionKind {
    Rsasl(Session),
    External { exchange: Box<dyn ExternalSaslExchange>, name: String, host: String },
}

impl SaslSession {
    fn new(session: Session) -> Result<Self> {
        let first = session.are_we_first();
        let mut session = Self { inner: SessionKind::Rsasl(session), output: Default::default(), finished: false };
        if first {
            session.step(Default::default())?;
        }
        Ok(session)
    }

    pub fn name(&self) -> &str {
        match &self.inner {
            SessionKind::Rsasl(session) => session.get_mechname().as_str(),
            SessionKind::External { name, .. } => name,
        }
    }

    pub fn initial(&self) -> &[u8] {
        &self.output
    }

    pub fn step(&mut self, challenge: &[u8]) -> Result<Option<&[u8]>> {
        if self.finished {
            return Err(Error::UnexpectedError(format!("SASL {} session already finished", self.name())));
        }
        self.output.clear();
        let session = match &mut self.inner {
            SessionKind::Rsasl(session) => session,
            SessionKind::External { exchange, name, host } => {
                return match exchange.step(challenge).map_err(|err| auth_failed(name, host, err))? {
                    Some(output) => {
                        self.output = output;
                        Ok(Some(&self.output))
                    },
                    None => {
                        self.finished = true;
                        Ok(None)
                    },
                };
            },
        };
        match session.step(Some(challenge), &mut self.output).map_err(Error::other)? {
            State::Running => Ok(Some(&self.output)),
            State::Finished(MessageSent::Yes) => {
                self.finished = true;
                Ok(Some(&self.output))
            },
            State::Finished(MessageSent::No) => {
                self.finished = true;
                Ok(None)
            },
        }
    }
}
