//! The one error type of the engine. Every message names the bad value and what is allowed;
//! none carries a configuration value that could be a secret.

use std::time::Duration;

/// Errors of the offsetkeeper engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A caller-supplied value is not allowed. Nothing was written.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A topic asked for does not exist on the brokers.
    #[error("unknown topic '{topic}': the brokers at {bootstrap} have no such topic")]
    UnknownTopic { topic: String, bootstrap: String },

    /// ZooKeeper refused or failed an operation.
    #[error("ZooKeeper {operation} failed at {path}: {source}")]
    ZooKeeper {
        operation: &'static str,
        path: String,
        #[source]
        source: zookeeper_client::Error,
    },

    /// A Kafka request failed.
    #[error("Kafka {operation} failed (bootstrap.servers={bootstrap}): {message}")]
    Kafka {
        operation: &'static str,
        bootstrap: String,
        message: String,
    },

    /// A server did not answer in time.
    #[error("{server} did not answer {operation} within {} ms", .after.as_millis())]
    Timeout {
        server: String,
        operation: &'static str,
        after: Duration,
    },

    /// A validation policy set to `fail` met a partition it covers.
    #[error("offset policy refused to start: {0}")]
    PolicyViolation(String),

    /// A bug in offsetkeeper; reported, never a crash.
    #[error("internal error: {0}")]
    Internal(String),
}

/// The engine's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(message.into())
    }
}
