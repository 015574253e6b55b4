//! The one error type of the engine. Every message names the bad value and what is allowed;
//! none carries a configuration value that could be a secret.

use std::time::Duration;

use crate::TopicPartition;

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
    #[error(
        "ZooKeeper {operation} failed at {path}: {source}{}",
        hint(source, detail)
    )]
    ZooKeeper {
        operation: &'static str,
        path: String,
        #[source]
        source: zookeeper_client::Error,
        /// What the client knows beyond `source`, e.g. why the SASL GSSAPI login failed;
        /// empty when nothing.
        detail: String,
    },

    /// The connect string names a chroot (`host:2181/kafka`) that does not exist on the servers.
    /// offsetkeeper does not create it: a mistyped chroot would silently start the job over.
    #[error(
        "ZooKeeper chroot '{chroot}' of connect string '{connect}' does not exist: create it \
         (zkCli.sh create {chroot} \"\", parents first) or remove it from the connect string"
    )]
    MissingChroot { chroot: String, connect: String },

    /// A Kafka request failed.
    #[error("Kafka {operation} failed (bootstrap.servers={bootstrap}): {message}")]
    Kafka {
        operation: &'static str,
        bootstrap: String,
        message: String,
    },

    /// A server did not answer in time.
    #[error("{server} did not answer {operation} within {} ms{detail}", .after.as_millis())]
    Timeout {
        server: String,
        operation: &'static str,
        after: Duration,
        /// What was tried and the last cause, when known (else empty).
        detail: String,
    },

    /// A Kerberos login (SASL GSSAPI, the host's) was still waiting for its KDC when the call's
    /// deadline came: the message names the login, the KDC and the deadline
    /// ([`crate::kerberos::login_unfinished`]). `zookeeper`: the login was ZooKeeper's (a commit
    /// defers over it as over an outage).
    #[error("{message}")]
    KerberosLogin { zookeeper: bool, message: String },

    /// A validation policy set to `fail` met a partition it covers.
    #[error("offset policy refused to start: {0}")]
    PolicyViolation(String),

    /// Fencing: another writer (a second job on the group, a zombie driver, an operator's
    /// reset) changed an offset since this keeper last saw it, or took over the group after this
    /// keeper's ZooKeeper session expired. The commit's multi was refused: nothing of it was
    /// written.
    #[error("commit conflict in group '{group}' at {partition}: {detail}")]
    CommitConflict {
        group: String,
        partition: TopicPartition,
        detail: String,
    },

    /// Another running instance owns partitions of the group (ephemeral nodes under
    /// `<base>/<group>/owners`), and it did not go within the configured wait.
    #[error(
        "group '{group}': {partition}{} is owned by another running instance, {owner}; waited {} ms for it to go. \
         Stop that job first; if it died, its session (its ZooKeeper session, or with the Kafka store its group member's) ends after its session timeout and its ownership with it",
        if *.others > 0 { format!(" (and {} more partition(s))", .others) } else { String::new() },
        .waited.as_millis()
    )]
    Owned {
        group: String,
        partition: TopicPartition,
        /// The owner: its consumer thread id, host, pid, since when, ZooKeeper session.
        owner: String,
        /// Further partitions of the load owned by others.
        others: usize,
        waited: Duration,
    },

    /// The group's offsets are in Kafka and it has live members of another kind (a consumer
    /// with its own assignor: a Spark job using `Subscribe`, a `KafkaConsumer`): offsetkeeper
    /// never commits over them. Nothing was written.
    #[error(
        "group '{group}' is in use: {detail}. offsetkeeper never commits over another consumer of the group: stop it, or give this job its own group.id"
    )]
    GroupInUse { group: String, detail: String },

    /// A bug in offsetkeeper; reported, never a crash.
    #[error("internal error: {0}")]
    Internal(String),
}

/// The detail in parentheses, else what to check when ZooKeeper refused the session's identity.
fn hint(source: &zookeeper_client::Error, detail: &str) -> String {
    if detail.is_empty() {
        auth_hint(source).to_string()
    } else {
        format!(" ({detail})")
    }
}

/// What to check when ZooKeeper refused the session's identity.
fn auth_hint(source: &zookeeper_client::Error) -> &'static str {
    match source {
        zookeeper_client::Error::NoAuth => {
            " (the node's ACL does not admit this session's identity; check zookeeper.auth and zookeeper.sasl.*)"
        }
        zookeeper_client::Error::AuthFailed => {
            " (ZooKeeper refused the credentials; check zookeeper.auth and zookeeper.sasl.username/password)"
        }
        _ => "",
    }
}

/// The engine's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(message.into())
    }

    /// Whether the error means ZooKeeper could not be reached or did not answer (a timeout, a
    /// lost connection, a session that expired or closed), as opposed to an answer that refused
    /// the request (a conflict, an ACL, bad input). What a commit may defer over.
    pub fn is_zookeeper_unreachable(&self) -> bool {
        use zookeeper_client::Error as Zk;
        match self {
            Error::Timeout { server, .. } => server.starts_with("ZooKeeper"),
            Error::KerberosLogin { zookeeper, .. } => *zookeeper,
            Error::ZooKeeper { source, .. } => matches!(
                source,
                Zk::Timeout
                    | Zk::ConnectionLoss
                    | Zk::SessionExpired
                    | Zk::ClientClosed
                    | Zk::NoHosts
                    | Zk::SessionMoved
                    // The client's own I/O and "no response from connection" errors.
                    | Zk::Custom(_)
            ),
            _ => false,
        }
    }
}

/// Whether the ZooKeeper client gave up waiting for its server: its request timeout, or its
/// connection-level "no response from connection in N ms" (which it reports as a custom error
/// and fails every request in flight with).
pub(crate) fn is_connection_timeout(error: &zookeeper_client::Error) -> bool {
    match error {
        zookeeper_client::Error::Timeout => true,
        zookeeper_client::Error::Custom(_) => {
            error.to_string().starts_with("no response from connection")
        }
        _ => false,
    }
}
