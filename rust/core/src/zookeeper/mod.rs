//! The ZooKeeper store: one session reused across calls, multi-reads, and atomic multi-writes.

pub(crate) mod clock;
pub mod layout;
pub(crate) mod outage;
pub mod security;
pub mod server_version;

use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};

use zookeeper_client as zk;

use crate::config::defaults::{
    DEFAULT_BASE_PATH, DEFAULT_SESSION_TIMEOUT, DEFAULT_ZOOKEEPER_TIMEOUT,
};
use crate::error::{is_connection_timeout, Error, Result};
use crate::names::check_base_path;
use crate::sasl::{SaslProviderHandle, ZkGssapi, GSSAPI};
use outage::Outage;
pub use security::{AclPolicy, ZkSecurity};
pub use server_version::ServerVersion;

/// ZooKeeper's default `jute.maxbuffer` (1 MiB less one byte) is the largest packet a server
/// reads. A multi's ops stay 1 KiB below it: the request's own header and end marker, and the
/// header and digest the server adds to the transaction it logs.
const MAX_REQUEST_BYTES: usize = 0xfffff - 1024;

/// Bytes of a multi's op besides its path and data, as jute encodes them: the op header (type,
/// done, error: 9), a 4-byte length before the path and before the data, 4 for the version.
const SET_DATA_OP_BYTES: usize = 9 + 4 + 4 + 4;
/// A create: the path, the data, the ACL list and the flags. The ACL list is counted as 256
/// bytes: `world:anyone` takes 27, a few `digest` or `sasl` entries fit.
const CREATE_OP_BYTES: usize = 9 + 4 + 4 + 256 + 4;
/// A check or a delete: the path and the version.
const PATH_VERSION_OP_BYTES: usize = 9 + 4 + 4;
/// A read of a multi-read: the path and the watch flag. Its answer (the data and a 68-byte
/// stat) may be larger than the request, and past 1 MB: the server sends it whole (the limit
/// is the reading client's, and this client has none).
const READ_OP_BYTES: usize = 9 + 4 + 1;

tokio::task_local! {
    /// When the ZooKeeper work of the current call must be over; see [`ZkStore::bounded`].
    static DEADLINE: Instant;
    /// Set in the background reconnect: its tries do not log each session they fail to open.
    static RECONNECTING: ();
}

/// Where and how to reach ZooKeeper.
#[derive(Debug, Clone)]
pub struct ZkConfig {
    /// `host1:2181,host2:2181` with an optional chroot: `host:2181/kafka`.
    pub connect: String,
    pub session_timeout: Duration,
    /// The bound on the ZooKeeper work of any one call (load, commit, an operator's command),
    /// opening the session included: one deadline for all its requests.
    pub request_timeout: Duration,
    /// Folder holding the groups, `/consumers` by default.
    pub base_path: String,
    /// How reads are sent: one multi-read (ZooKeeper 3.6 and later) or pipelined single reads.
    pub read_mode: ReadMode,
    /// Authentication and the ACL of created nodes.
    pub security: ZkSecurity,
    /// The servers' version (`zookeeper.server.version`); `None`: asked with `srvr` when a
    /// session is opened.
    pub server_version: Option<ServerVersion>,
}

impl ZkConfig {
    /// A configuration with the defaults: 30 s session, 10 s per call, `/consumers`, multi-read.
    pub fn new(connect: impl Into<String>) -> ZkConfig {
        ZkConfig {
            connect: connect.into(),
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            request_timeout: DEFAULT_ZOOKEEPER_TIMEOUT,
            base_path: DEFAULT_BASE_PATH.to_string(),
            read_mode: ReadMode::Multi,
            security: ZkSecurity::default(),
            server_version: None,
        }
    }

    /// Sets what the `zookeeper.*` properties say (security, `zookeeper.server.version`); other
    /// keys are not looked at. A bad value is an error naming its key.
    pub fn apply_properties<K, V>(
        &mut self,
        properties: impl IntoIterator<Item = (K, V)>,
    ) -> Result<()>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let properties: Vec<(K, V)> = properties.into_iter().collect();
        let mut server_version = None;
        for (key, value) in &properties {
            if key.as_ref().trim() == server_version::PROPERTY {
                server_version = Some(ServerVersion::from_property(value.as_ref())?);
            }
        }
        self.security = ZkSecurity::from_properties(properties)?;
        self.server_version = server_version;
        Ok(())
    }
}

/// How to read many znodes at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// One multi-read request when the servers run ZooKeeper 3.6 or later, else pipelined.
    Multi,
    /// All reads sent at once on the session, answered in order.
    Pipelined,
}

/// One operation of a multi. `Create` makes a persistent node with the configured ACL,
/// `CreateShared` one open to every identity, `CreateEphemeral` a node that lives as long as
/// the session; `SetData` and `Check` with a version fail unless the node has
/// that version (`Check` with -1 only asks that the node exists); `Delete` removes a node that
/// has no children, whatever its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOp {
    Create {
        path: String,
        data: Vec<u8>,
    },
    /// A folder of the base path (`/consumers`), shared by every group: open to all, as Kafka
    /// keeps `/consumers`, so that one group's `zookeeper.acl` shuts no other identity out of
    /// its own groups.
    CreateShared {
        path: String,
    },
    CreateEphemeral {
        path: String,
        data: Vec<u8>,
    },
    SetData {
        path: String,
        data: Vec<u8>,
        version: Option<i32>,
    },
    Check {
        path: String,
        version: i32,
    },
    Delete {
        path: String,
    },
}

impl WriteOp {
    /// Creates folder `path`: shared (open to all) when it is one of the base path's.
    pub(crate) fn create_dir(path: String, data: Vec<u8>, shared: bool) -> WriteOp {
        if shared {
            WriteOp::CreateShared { path }
        } else {
            WriteOp::Create { path, data }
        }
    }

    pub fn path(&self) -> &str {
        match self {
            WriteOp::Create { path, .. }
            | WriteOp::CreateShared { path }
            | WriteOp::CreateEphemeral { path, .. }
            | WriteOp::SetData { path, .. }
            | WriteOp::Check { path, .. }
            | WriteOp::Delete { path } => path,
        }
    }

    /// Its bytes in a multi request (jute encoding; the ACL list of a create at most).
    pub(crate) fn estimated_bytes(&self) -> usize {
        match self {
            WriteOp::Create { path, data } | WriteOp::CreateEphemeral { path, data } => {
                path.len() + data.len() + CREATE_OP_BYTES
            }
            WriteOp::CreateShared { path } => path.len() + CREATE_OP_BYTES,
            WriteOp::SetData { path, data, .. } => path.len() + data.len() + SET_DATA_OP_BYTES,
            WriteOp::Check { path, .. } | WriteOp::Delete { path } => {
                path.len() + PATH_VERSION_OP_BYTES
            }
        }
    }
}

/// A znode as read: its data and the parts of its stat offsetkeeper uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub data: Vec<u8>,
    /// Changes to the data since the node was created (0 for a new node).
    pub version: i32,
    /// Creation time, milliseconds since the epoch.
    pub ctime: i64,
    /// Time of the last change to the data, milliseconds since the epoch (the ZooKeeper
    /// leader's clock).
    pub mtime: i64,
    /// The session that owns an ephemeral node; 0 for a persistent one.
    pub ephemeral_owner: i64,
}

impl Node {
    fn from_stat(data: Vec<u8>, stat: &zk::Stat) -> Node {
        Node {
            data,
            version: stat.version,
            ctime: stat.ctime,
            mtime: stat.mtime,
            ephemeral_owner: stat.ephemeral_owner,
        }
    }
}

/// One read of a multi-read (or of a pipelined read, before ZooKeeper 3.6).
enum Read<'a> {
    Data(&'a str),
    Children(&'a str),
}

impl Read<'_> {
    fn path(&self) -> &str {
        match self {
            Read::Data(path) | Read::Children(path) => path,
        }
    }

    /// The answer when the node is not there.
    fn absent(&self) -> Answer {
        match self {
            Read::Data(_) => Answer::Node(None),
            Read::Children(_) => Answer::Children(None),
        }
    }
}

enum Answer {
    Node(Option<Node>),
    Children(Option<Vec<String>>),
}

/// What one operation of a successful multi did: the new version of a node written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// A node created (version 0) or changed (its new version).
    Written { version: i32 },
    /// A check or a delete.
    Other,
}

/// A multi refused by one of its operations: nothing of it was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The index of the operation that failed.
    pub index: usize,
    pub error: zk::Error,
}

/// How the version a session speaks to was learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionSource {
    /// `zookeeper.server.version`.
    Configured,
    /// The lowest `srvr` answer of the servers.
    Srvr,
    /// No server told its version: the oldest protocol that the connection can meet.
    Assumed,
    /// No server told its version to this session, but one did to an earlier session of the
    /// keeper (servers restarting may not answer `srvr` yet): that version is kept.
    Kept,
}

/// The server version the current session's requests are chosen for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LearnedVersion {
    pub version: ServerVersion,
    pub source: VersionSource,
}

impl fmt::Display for LearnedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = match self.source {
            VersionSource::Configured => "from zookeeper.server.version",
            VersionSource::Srvr => "from srvr",
            VersionSource::Assumed => "assumed: unknown",
            VersionSource::Kept => "from srvr earlier: no server answered it now",
        };
        write!(f, "{} ({how})", self.version)
    }
}

/// A ZooKeeper session shared by every call; replaced transparently when it expires.
pub struct ZkStore {
    config: ZkConfig,
    /// The current session; locked only to look at it or replace it, never across a request.
    session: std::sync::Mutex<Option<zk::Client>>,
    /// Held while a session is opened: one at a time, and the calls that come meanwhile take
    /// the one opened.
    opening: tokio::sync::Mutex<()>,
    server_version: std::sync::Mutex<Option<LearnedVersion>>,
    /// The session timeout the servers granted the last session (they bound what is asked to
    /// their `minSessionTimeout`..`maxSessionTimeout`).
    negotiated: std::sync::Mutex<Option<Duration>>,
    /// The id of a session a request found lost and that was let go, until the next is opened:
    /// for the line that says what the call waits for.
    lost: std::sync::Mutex<Option<i64>>,
    outage: Outage,
    /// The provider's mechanism, when the security is GSSAPI.
    gssapi: Option<ZkGssapi>,
}

impl ZkStore {
    /// Checks the configuration; connects lazily, on first use. GSSAPI is refused
    /// ([`ZkStore::with_sasl_provider`] takes it).
    pub fn new(config: ZkConfig) -> Result<ZkStore> {
        ZkStore::with_sasl_provider(config, None)
    }

    /// [`ZkStore::new`], with the host's provider for `zookeeper.sasl.mechanism=GSSAPI`.
    pub fn with_sasl_provider(
        config: ZkConfig,
        provider: Option<&SaslProviderHandle>,
    ) -> Result<ZkStore> {
        if config.connect.trim().is_empty() {
            return Err(Error::invalid(
                "ZooKeeper connect string is empty; expected host:port[,host:port...][/chroot]",
            ));
        }
        check_base_path(&config.base_path)?;
        for (name, value) in [
            ("session timeout", config.session_timeout),
            ("request timeout", config.request_timeout),
        ] {
            if value.is_zero() {
                return Err(Error::invalid(format!(
                    "ZooKeeper {name} is 0 ms; allowed: 1 ms or more"
                )));
            }
        }
        let gssapi = match (config.security.gssapi, provider) {
            (false, _) => None,
            (true, Some(provider)) => Some(ZkGssapi::new(provider.clone())),
            (true, None) => return Err(security::gssapi_without_provider()),
        };
        Ok(ZkStore {
            config,
            session: std::sync::Mutex::new(None),
            opening: tokio::sync::Mutex::new(()),
            server_version: std::sync::Mutex::new(None),
            negotiated: std::sync::Mutex::new(None),
            lost: std::sync::Mutex::new(None),
            outage: Outage::new(),
            gssapi,
        })
    }

    pub fn config(&self) -> &ZkConfig {
        &self.config
    }

    /// The server version the last session opened chose its requests for; `None` before the
    /// first session.
    pub fn server_version(&self) -> Option<LearnedVersion> {
        *locked(&self.server_version)
    }

    /// The session timeout in force: as the servers granted it to the last session, else (no
    /// session yet) as configured.
    pub fn session_timeout(&self) -> Duration {
        locked(&self.negotiated).unwrap_or(self.config.session_timeout)
    }

    /// What this keeper knows of a ZooKeeper outage.
    pub(crate) fn outage(&self) -> &Outage {
        &self.outage
    }

    fn current(&self) -> std::sync::MutexGuard<'_, Option<zk::Client>> {
        locked(&self.session)
    }

    /// The current session unless it ended (expired, closed).
    fn live(&self) -> Option<zk::Client> {
        self.current()
            .as_ref()
            .filter(|client| !client.state().is_terminated())
            .cloned()
    }

    /// Forgets the session `lost` if it is still the current one (not one opened since by
    /// another call), so that the next request opens a new one.
    fn discard(&self, lost: zk::SessionId) {
        let taken = {
            let mut current = self.current();
            match current.as_ref() {
                Some(client) if client.session_id() == lost => current.take(),
                _ => None,
            }
        };
        if taken.is_some() {
            *locked(&self.lost) = Some(lost.0);
        }
        drop(taken);
    }

    /// Reads many znodes; `None` where a node does not exist. Results follow `paths`' order.
    pub async fn read(&self, paths: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        Ok(self
            .read_nodes(paths)
            .await?
            .into_iter()
            .map(|node| node.map(|node| node.data))
            .collect())
    }

    /// Reads many znodes with their versions; `None` where a node does not exist. Results
    /// follow `paths`' order.
    pub async fn read_nodes(&self, paths: &[String]) -> Result<Vec<Option<Node>>> {
        Ok(self.read_nodes_and_children(paths, &[]).await?.0)
    }

    /// Reads many znodes and lists the children of many folders (`None` where a node or folder
    /// does not exist), in one multi-read where the server has them, so that a listing costs
    /// no request of its own. Results follow `paths`' and `dirs`' order.
    pub async fn read_nodes_and_children(
        &self,
        paths: &[String],
        dirs: &[String],
    ) -> Result<(Vec<Option<Node>>, Vec<Option<Vec<String>>>)> {
        let reads: Vec<Read<'_>> = paths
            .iter()
            .map(|path| Read::Data(path))
            .chain(dirs.iter().map(|dir| Read::Children(dir)))
            .collect();
        let mut nodes = Vec::with_capacity(paths.len());
        let mut listings = Vec::with_capacity(dirs.len());
        // Past one request's size the chunks go out together: a session answers in order, and
        // the server reads the next chunk while this client parses the last answer.
        let chunks = chunks_by_size(&reads, |read| read.path().len() + READ_OP_BYTES);
        let answers =
            futures::future::try_join_all(chunks.into_iter().map(|chunk| self.read_chunk(chunk)))
                .await?;
        for answer in answers.into_iter().flatten() {
            match answer {
                Answer::Node(node) => nodes.push(node),
                Answer::Children(children) => listings.push(children),
            }
        }
        Ok((nodes, listings))
    }

    async fn read_chunk(&self, reads: &[Read<'_>]) -> Result<Vec<Answer>> {
        // The session's version is known once it is open. A server before 3.6 closes the
        // connection on a multi-read, so it is never sent one.
        self.client().await?;
        let multi_read = self.config.read_mode == ReadMode::Multi
            && self
                .server_version()
                .is_some_and(|learned| learned.version.has_multi_read());
        if multi_read {
            self.multi_read(reads).await
        } else {
            self.pipelined_read(reads).await
        }
    }

    async fn multi_read(&self, reads: &[Read<'_>]) -> Result<Vec<Answer>> {
        let first = reads.first().map_or("/", Read::path);
        let results = self
            .call("multi-read", first, |client| async move {
                let mut reader = client.new_multi_reader();
                for read in reads {
                    match read {
                        Read::Data(path) => reader.add_get_data(path)?,
                        Read::Children(path) => reader.add_get_children(path)?,
                    }
                }
                reader.commit().await
            })
            .await?;
        results
            .into_iter()
            .zip(reads)
            .map(|(result, read)| match (result, read) {
                (zk::MultiReadResult::Data { data, stat }, Read::Data(_)) => {
                    Ok(Answer::Node(Some(Node::from_stat(data, &stat))))
                }
                (zk::MultiReadResult::Children { children }, Read::Children(_)) => {
                    Ok(Answer::Children(Some(children)))
                }
                (
                    zk::MultiReadResult::Error {
                        err: zk::Error::NoNode,
                    },
                    read,
                ) => Ok(read.absent()),
                (zk::MultiReadResult::Error { err }, read) => {
                    Err(zk_error("read", read.path(), err))
                }
                // An answer of another kind than asked: the server's, not a bug here.
                (other, read) => Err(zk_error(
                    "read",
                    read.path(),
                    zk::Error::UnexpectedError(format!("multi-read answered {other:?}")),
                )),
            })
            .collect()
    }

    async fn pipelined_read(&self, reads: &[Read<'_>]) -> Result<Vec<Answer>> {
        let first = reads.first().map_or("/", Read::path);
        self.call("pipelined read", first, |client| async move {
            let replies = futures::future::join_all(reads.iter().map(|read| {
                let client = &client;
                async move {
                    let answer = match read {
                        Read::Data(path) => client
                            .get_data(path)
                            .await
                            .map(|(data, stat)| Answer::Node(Some(Node::from_stat(data, &stat)))),
                        Read::Children(path) => client
                            .list_children(path)
                            .await
                            .map(|children| Answer::Children(Some(children))),
                    };
                    match answer {
                        Err(zk::Error::NoNode) => Ok(read.absent()),
                        other => other,
                    }
                }
            }))
            .await;
            replies.into_iter().collect()
        })
        .await
    }

    /// Applies the writes atomically: one multi, or several when one request would pass
    /// ZooKeeper's `jute.maxbuffer`. Returns the number of requests sent.
    pub async fn write(&self, ops: &[WriteOp]) -> Result<usize> {
        let chunks = request_chunks(ops);
        if chunks.len() > 1 {
            log::warn!(
                "committing {} znodes in {} multi requests: each is atomic, the batch as a whole is not",
                ops.len(),
                chunks.len()
            );
        }
        for chunk in &chunks {
            if let Err(refused) = self.multi(chunk).await? {
                let path = chunk.get(refused.index).map(WriteOp::path).unwrap_or("/");
                return Err(zk_error("multi-write", path, refused.error));
            }
        }
        Ok(chunks.len())
    }

    /// Sends the operations as one multi request, all or nothing; the caller keeps it within
    /// one request's size (see [`request_chunks`]). The outer error is a failed request
    /// (connection, timeout); the inner one names the operation ZooKeeper refused.
    pub async fn multi<W: Borrow<WriteOp> + Sync>(
        &self,
        ops: &[W],
    ) -> Result<std::result::Result<Vec<Applied>, Refused>> {
        let first = ops.first().map_or("/", |op| op.borrow().path());
        let outcome = self
            .call("multi-write", first, |client| async move {
                match Self::send_multi(&client, self.config.security.acls(), ops).await {
                    Ok(results) => Ok(Ok(results)),
                    Err(zk::MultiWriteError::OperationFailed { index, source }) => {
                        Ok(Err(Refused {
                            index,
                            error: source,
                        }))
                    }
                    // A lost session is retried on a new one by `call`: nothing was applied.
                    Err(zk::MultiWriteError::RequestFailed { source }) => Err(source),
                }
            })
            .await?;
        Ok(outcome.map(applied))
    }

    /// Sends several multis at once on one session, in the order given, and returns each one's
    /// outcome, also when an earlier one failed: ZooKeeper applies a session's requests in the
    /// order they were sent, so a later multi can check what an earlier one wrote. The outer
    /// error means nothing was sent (no session). When every request found the session lost,
    /// none was applied, and all are sent once more on a new session, by the same deadline.
    pub async fn multis_in_order<W: Borrow<WriteOp> + Sync>(
        &self,
        requests: &[Vec<W>],
    ) -> Result<Vec<Result<std::result::Result<Vec<Applied>, Refused>>>> {
        let first_path = |ops: &[W]| ops.first().map_or("/", |op| op.borrow().path()).to_string();
        let attempt = || async {
            let client = self.client().await?;
            let session = client.session_id();
            let acls = self.config.security.acls();
            let left = self.time_left();
            // Each request is sent when it is started, before any answer is awaited.
            let started: Vec<_> = requests
                .iter()
                .map(|ops| Self::start_multi(&client, acls, ops))
                .collect();
            let replies = futures::future::join_all(started.into_iter().map(|started| async {
                match started {
                    Ok(reply) => tokio::time::timeout(left, reply).await,
                    Err(not_sent) => Ok(Err(not_sent)),
                }
            }))
            .await;
            Ok::<_, Error>((session, replies))
        };
        let lost = |reply: &std::result::Result<std::result::Result<_, zk::MultiWriteError>, _>| {
            matches!(
                reply,
                Ok(Err(zk::MultiWriteError::RequestFailed {
                    source: zk::Error::SessionExpired | zk::Error::ClientClosed
                }))
            )
        };
        let (session, mut replies) = attempt().await?;
        if !replies.is_empty() && replies.iter().all(lost) {
            log::warn!("ZooKeeper session lost; opening a new session");
            self.discard(session);
            replies = attempt().await?.1;
        }
        Ok(replies
            .into_iter()
            .zip(requests)
            .map(|(reply, ops)| match reply {
                Ok(Ok(results)) => Ok(Ok(applied(results))),
                Ok(Err(zk::MultiWriteError::OperationFailed { index, source })) => {
                    Ok(Err(Refused {
                        index,
                        error: source,
                    }))
                }
                Ok(Err(zk::MultiWriteError::RequestFailed { source })) => {
                    Err(self.failed("multi-write", &first_path(ops), source))
                }
                Err(_elapsed) => Err(self.timeout("multi-write")),
            })
            .collect())
    }

    /// Sends the operations in as many multi requests as their size needs, in order, stopping
    /// at the first refused one; its index is into `ops`. Requests before it stay applied.
    pub async fn multi_chunked(&self, ops: &[WriteOp]) -> Result<std::result::Result<(), Refused>> {
        let mut offset = 0;
        for chunk in request_chunks(ops) {
            if let Err(refused) = self.multi(chunk).await? {
                return Ok(Err(Refused {
                    index: offset + refused.index,
                    error: refused.error,
                }));
            }
            offset += chunk.len();
        }
        Ok(Ok(()))
    }

    async fn send_multi<W: Borrow<WriteOp>>(
        client: &zk::Client,
        acls: zk::Acls<'_>,
        ops: &[W],
    ) -> std::result::Result<Vec<zk::MultiWriteResult>, zk::MultiWriteError> {
        Self::start_multi(client, acls, ops)?.await
    }

    /// Sends the multi now (not when the future is first polled), so that requests started one
    /// after the other reach the server in that order.
    fn start_multi<'c, W: Borrow<WriteOp>>(
        client: &'c zk::Client,
        acls: zk::Acls<'_>,
        ops: &[W],
    ) -> std::result::Result<
        impl Future<Output = std::result::Result<Vec<zk::MultiWriteResult>, zk::MultiWriteError>> + 'c,
        zk::MultiWriteError,
    > {
        let persistent = zk::CreateMode::Persistent.with_acls(acls);
        let ephemeral = zk::CreateMode::Ephemeral.with_acls(acls);
        let shared = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        let mut writer = client.new_multi_writer();
        for op in ops {
            let added = match op.borrow() {
                WriteOp::Create { path, data } => writer.add_create(path, data, &persistent),
                WriteOp::CreateShared { path } => writer.add_create(path, &[], &shared),
                WriteOp::CreateEphemeral { path, data } => {
                    writer.add_create(path, data, &ephemeral)
                }
                WriteOp::SetData {
                    path,
                    data,
                    version,
                } => writer.add_set_data(path, data, *version),
                WriteOp::Check { path, version } => writer.add_check_version(path, *version),
                WriteOp::Delete { path } => writer.add_delete(path, None),
            };
            added.map_err(|source| zk::MultiWriteError::RequestFailed { source })?;
        }
        Ok(writer.commit())
    }

    /// Applies the operations on the current session only, if it is still connected, each
    /// request within `timeout`; never opens a session. For releasing ephemeral nodes when
    /// closing: a session that is gone took them with it. The error says why some were not
    /// applied (the first reason met).
    pub async fn multi_on_live_session(
        &self,
        ops: &[WriteOp],
        timeout: Duration,
    ) -> std::result::Result<(), String> {
        let connected = self
            .current()
            .as_ref()
            .filter(|client| client.state() == zk::SessionState::SyncConnected)
            .cloned();
        let Some(client) = connected else {
            return Err("the keeper's ZooKeeper session is not connected".to_string());
        };
        let mut failed = None;
        for chunk in request_chunks(ops) {
            let reason = match tokio::time::timeout(
                timeout,
                Self::send_multi(&client, self.config.security.acls(), chunk),
            )
            .await
            {
                Ok(Ok(_)) => continue,
                Ok(Err(zk::MultiWriteError::OperationFailed { index, source })) => format!(
                    "ZooKeeper refused the operation on {}: {source}",
                    chunk.get(index).map_or("?", WriteOp::path)
                ),
                Ok(Err(refused)) => format!("ZooKeeper refused them: {refused}"),
                Err(_) => format!("ZooKeeper did not answer within {} ms", timeout.as_millis()),
            };
            failed.get_or_insert(reason);
        }
        failed.map_or(Ok(()), Err)
    }

    /// Sends the operations on the current session in the background, in as many multi
    /// requests as their size needs, each within the request timeout, stopping at the first
    /// refused one. Never opens a session: what it writes belongs to this one. Returns the
    /// session's id and the task (its error says what failed), or `None` when no session is
    /// open. Must be called on the engine's runtime.
    pub async fn spawn_multi_chunked(
        &self,
        ops: Vec<WriteOp>,
    ) -> Option<(
        i64,
        tokio::task::JoinHandle<std::result::Result<(), String>>,
    )> {
        let client = self.live()?;
        let session = client.session_id().0;
        let security = self.config.security.clone();
        let timeout = self.config.request_timeout;
        let task = tokio::spawn(async move {
            for chunk in request_chunks(&ops) {
                let sent = Self::send_multi(&client, security.acls(), chunk);
                match tokio::time::timeout(timeout, sent).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(zk::MultiWriteError::OperationFailed { index, source })) => {
                        let path = chunk.get(index).map_or("/", WriteOp::path);
                        return Err(format!("ZooKeeper refused {path}: {source}"));
                    }
                    Ok(Err(zk::MultiWriteError::RequestFailed { source })) => {
                        return Err(source.to_string())
                    }
                    Err(_) => return Err(format!("no answer within {} ms", timeout.as_millis())),
                }
            }
            Ok(())
        });
        Some((session, task))
    }

    /// Opens the session now if none is open, so that it is ready for the next call.
    pub async fn connect(&self) -> Result<()> {
        self.client().await.map(drop)
    }

    /// The id of the current session, if one is open.
    pub async fn session_id(&self) -> Option<i64> {
        self.live().map(|client| client.session_id().0)
    }

    /// The current session's id and password, if one is open.
    pub async fn session_info(&self) -> Option<zk::SessionInfo> {
        self.live().map(|client| client.session().clone())
    }

    /// Closes the session: its ephemeral nodes go at once. The next call opens a new one.
    pub async fn close_session(&self) {
        let taken = self.current().take();
        drop(taken);
    }

    /// Whether this store's session, when it knows its connection dropped, connects again
    /// within `bound`. True at once when it is connected, or has no session (a call opens one)
    /// or an ended one (a call opens a new one).
    pub(crate) async fn reconnects_within(&self, bound: Duration) -> bool {
        let Some(client) = self.live() else {
            return true;
        };
        let mut watcher = client.state_watcher();
        if watcher.state() != zk::SessionState::Disconnected {
            return true;
        }
        let connected =
            async { while watcher.changed().await == zk::SessionState::Disconnected {} };
        tokio::time::timeout(bound, connected).await.is_ok()
    }

    /// One request that ZooKeeper answers only with a working session (opened anew when the
    /// last one ended): the background reconnect's test that the outage is over.
    pub(crate) async fn probe(&self) -> Result<()> {
        self.call("probe", "/", |client| async move {
            client.check_stat("/").await.map(drop)
        })
        .await
    }

    /// [`ZkStore::probe`] for the background reconnect: its failed tries log at DEBUG only.
    pub(crate) async fn probe_quietly(&self) -> Result<()> {
        RECONNECTING
            .scope((), self.bounded(self.config.request_timeout, self.probe()))
            .await
    }

    /// Lists the children of a node; `None` if it does not exist.
    pub async fn children(&self, path: &str) -> Result<Option<Vec<String>>> {
        self.call("list children", path, |client| async move {
            match client.list_children(path).await {
                Ok(children) => Ok(Some(children)),
                Err(zk::Error::NoNode) => Ok(None),
                Err(err) => Err(err),
            }
        })
        .await
    }

    /// A refusal for want of permission (`NoAuth`) explained: the identities this session
    /// presents and the ACL of the node refused, so that a user sees which to change. Any other
    /// error is returned as it is. Bounded by the request timeout; digest hashes are not shown.
    pub async fn explain_refusal(&self, err: Error) -> Error {
        let Error::ZooKeeper {
            operation,
            path,
            source: zk::Error::NoAuth,
            detail,
        } = err
        else {
            return err;
        };
        let read = self.bounded(self.config.request_timeout, async {
            self.call("read ACL", &path, |client| {
                let path = path.clone();
                async move { client.get_acl(&path).await.map(|(acl, _)| acl) }
            })
            .await
        });
        let acl = match read.await {
            Ok(acl) => acl
                .iter()
                .map(|entry| {
                    let id = match entry.scheme() {
                        // user:base64(sha1(user:password)): the user only.
                        "digest" => format!("{}:…", entry.id().split(':').next().unwrap_or("")),
                        _ => entry.id().to_string(),
                    };
                    format!("{}:{id}:{}", entry.scheme(), entry.permission())
                })
                .collect::<Vec<_>>()
                .join(", "),
            // ZooKeeper 3.5+ lets a session read the ACL only with READ or ADMIN on the node.
            Err(_) => "not readable by this session either".to_string(),
        };
        let acl = if acl.starts_with("not readable") {
            acl
        } else {
            format!("[{acl}]")
        };
        let detail = format!(
            "the node's ACL does not admit this session's identity; the session is {}; the node's ACL is {acl}{}",
            self.config.security.identity_words(
                self.gssapi
                    .as_ref()
                    .and_then(ZkGssapi::principal)
                    .as_deref()
            ),
            if detail.is_empty() { String::new() } else { format!("; {detail}") }
        );
        Error::ZooKeeper {
            operation,
            path,
            source: zk::Error::NoAuth,
            detail,
        }
    }

    /// Runs `work`, the ZooKeeper part of one call, by one deadline `budget` from now (or an
    /// enclosing call's, when sooner): each request and opening a session get what is left of
    /// it, and never more than the request timeout. A session opened again after it expired,
    /// or a failed load giving up its ownership, cannot make the call last longer.
    pub async fn bounded<T>(
        &self,
        budget: Duration,
        work: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let mut deadline = Instant::now() + budget;
        if let Ok(outer) = DEADLINE.try_with(|outer| *outer) {
            deadline = deadline.min(outer);
        }
        DEADLINE.scope(deadline, work).await
    }

    /// Runs `work` on the engine's runtime by one deadline, the request timeout from now.
    pub(crate) fn block_on<T>(&self, work: impl Future<Output = Result<T>>) -> Result<T> {
        crate::runtime::runtime()?.block_on(self.bounded(self.config.request_timeout, work))
    }

    /// What is left of the current call's deadline, at most the request timeout (all of it
    /// outside [`ZkStore::bounded`]).
    pub(crate) fn time_left(&self) -> Duration {
        let timeout = self.config.request_timeout;
        DEADLINE
            .try_with(|deadline| deadline.saturating_duration_since(Instant::now()))
            .map_or(timeout, |left| left.min(timeout))
    }

    /// Runs one request by the call's deadline. An expired or closed session is replaced by a
    /// new one and the request is tried once more, by the same deadline.
    async fn call<'a, T, F, Fut>(&self, operation: &'static str, path: &str, run: F) -> Result<T>
    where
        F: Fn(zk::Client) -> Fut,
        Fut: Future<Output = std::result::Result<T, zk::Error>> + 'a,
    {
        let attempt = || async {
            let client = self.client().await?;
            let session = client.session_id();
            match tokio::time::timeout(self.time_left(), run(client)).await {
                Ok(result) => Ok((session, result)),
                Err(_) => Err(self.timeout(operation)),
            }
        };
        match attempt().await? {
            (lost, Err(err @ (zk::Error::SessionExpired | zk::Error::ClientClosed))) => {
                log::warn!("ZooKeeper session lost ({err}); opening a new session");
                self.discard(lost);
                attempt()
                    .await?
                    .1
                    .map_err(|err| self.failed(operation, path, err))
            }
            (_, result) => result.map_err(|err| self.failed(operation, path, err)),
        }
    }

    /// The live session, opening one if there is none or the last one ended. Asking the
    /// servers' version, the handshake and the chroot check share what is left of the call's
    /// deadline; `srvr` gets half of it at most, so that a silent server leaves time to try
    /// the others.
    async fn client(&self) -> Result<zk::Client> {
        if let Some(client) = self.live() {
            return Ok(client);
        }
        let budget = self.time_left();
        let deadline = Instant::now() + budget;
        // Bounded too: another call (the background reconnect) may be opening one.
        let Ok(_opening) = tokio::time::timeout(budget, self.opening.lock()).await else {
            return Err(self.timeout("connect"));
        };
        if let Some(client) = self.live() {
            return Ok(client);
        }
        let lost = locked(&self.lost).take();
        let ended = match self.current().as_ref() {
            Some(client) => Some((client.session_id().0, format!("{:?}", client.state()))),
            None => lost.map(|id| (id, "lost".to_string())),
        };
        let started = Instant::now();
        let left = deadline.saturating_duration_since(started);
        // Said once per call that waits for a new session; the background reconnect's tries
        // are its own wait (see `crate::reconnect`).
        let level = if RECONNECTING.try_with(|_| ()).is_ok() {
            log::Level::Debug
        } else {
            log::Level::Info
        };
        if let Some((id, state)) = &ended {
            log::log!(
                level,
                "ZooKeeper session 0x{id:x} ended ({state}); waiting up to {} ms for a new session at {}",
                left.as_millis(),
                self.config.connect
            );
        }
        match self.open(deadline).await {
            Ok(client) => {
                let waited = match ended {
                    Some(_) => format!(", opened after {} ms", started.elapsed().as_millis()),
                    None => String::new(),
                };
                log::info!(
                    "ZooKeeper session 0x{:x} at {}: server version {}, session timeout {} ms{waited}",
                    client.session_id().0,
                    self.config.connect,
                    self.server_version()
                        .map_or_else(|| "unknown".to_string(), |v| v.to_string()),
                    client.session_timeout().as_millis()
                );
                *self.current() = Some(client.clone());
                Ok(client)
            }
            Err(err) => {
                // Still a reconnect for the next call.
                if lost.is_some() {
                    *locked(&self.lost) = lost;
                }
                if ended.is_some() {
                    log::log!(
                        level,
                        "no new ZooKeeper session at {} after {} ms: {err}",
                        self.config.connect,
                        started.elapsed().as_millis()
                    );
                }
                Err(err)
            }
        }
    }

    /// Opens a session by `deadline`: the servers' version, the handshake, the chroot check.
    /// Records the version and the session timeout the servers granted.
    async fn open(&self, deadline: Instant) -> Result<zk::Client> {
        let budget = deadline.saturating_duration_since(Instant::now());
        let (learned, note) = self.learn_server_version(budget / 2).await?;
        let left = deadline.saturating_duration_since(Instant::now());
        let ServerVersion {
            major,
            minor,
            patch,
        } = learned.version;
        if let Some(gssapi) = &self.gssapi {
            gssapi.forget_failure();
        }
        let connector = self
            .config
            .security
            .apply(zk::Client::connector(), self.gssapi.as_ref())?
            .with_server_version(major, minor, patch)
            .with_session_timeout(self.config.session_timeout)
            // The session keeps it after the handshake (the outer timeout bounds this one).
            .with_connection_timeout(self.config.request_timeout);
        let secure = self.config.security.tls.is_some();
        let connect = self.config.connect.clone();
        // A task of its own: a SASL provider blocks inside the handshake (a KDC that does not
        // answer), and only a future that is not the one blocking can end the call on time.
        let connecting = tokio::spawn(async move {
            if secure {
                connector.secure_connect(&connect).await
            } else {
                connector.connect(&connect).await
            }
        });
        let abandon = connecting.abort_handle();
        let client = match tokio::time::timeout(left, connecting).await {
            Ok(Ok(Ok(client))) => client,
            Err(_) => {
                abandon.abort();
                let server = format!("ZooKeeper at {}", self.config.connect);
                let after = self.config.request_timeout;
                if let Some(message) = self
                    .gssapi
                    .as_ref()
                    .and_then(|gssapi| gssapi.unfinished_login(&server, after))
                {
                    return Err(Error::KerberosLogin {
                        zookeeper: true,
                        message,
                    });
                }
                return Err(self.timeout("connect"));
            }
            Ok(Ok(Err(err))) => return Err(self.failed("connect", &self.config.connect, err)),
            Ok(Err(panicked)) => {
                return Err(Error::Internal(format!(
                    "the ZooKeeper connect to {} failed: {panicked}",
                    self.config.connect
                )))
            }
        };
        self.check_chroot(&client, deadline).await?;
        // Said only now: when no server is reachable, the connect error says enough.
        if let Some((level, note)) = note {
            log::log!(level, "{note}");
        }
        *locked(&self.server_version) = Some(learned);
        *locked(&self.negotiated) = Some(client.session_timeout());
        Ok(client)
    }

    /// The version requests are chosen for: `zookeeper.server.version`, else the servers'
    /// lowest `srvr` answer, else the version an earlier session learned from `srvr`, else the
    /// oldest protocol the connection can meet; with what to log once the session is open when
    /// no server answered.
    async fn learn_server_version(
        &self,
        timeout: Duration,
    ) -> Result<(LearnedVersion, Option<(log::Level, String)>)> {
        if let Some(version) = self.config.server_version {
            let learned = LearnedVersion {
                version,
                source: VersionSource::Configured,
            };
            return Ok((learned, None));
        }
        let tls = match &self.config.security.tls {
            Some(tls) => Some(server_version::tls_connector(
                tls.ca.as_ref(),
                tls.identity.as_ref(),
            )?),
            None => None,
        };
        let detected = server_version::detect(&self.config.connect, timeout, tls.as_ref()).await?;
        let learned = chosen_version(self.server_version(), detected.lowest, tls.is_some());
        let why = || {
            let silent: Vec<String> = detected
                .silent
                .iter()
                .map(|(host, why)| format!("{host} {why}"))
                .collect();
            silent.join("; ")
        };
        let note = match learned.source {
            VersionSource::Configured | VersionSource::Srvr => None,
            VersionSource::Kept => Some((
                log::Level::Info,
                format!(
                    "no ZooKeeper server told its version to srvr ({}); keeping {}, which a server told an earlier session of this keeper (servers restarting answer srvr once they serve)",
                    why(),
                    learned.version
                ),
            )),
            VersionSource::Assumed => {
                let version = learned.version;
                let creates = if version < ServerVersion::new(3, 5, 0) {
                    "plain creates, "
                } else {
                    ""
                };
                Some((
                    log::Level::Warn,
                    format!(
                        "no ZooKeeper server told its version to srvr ({}); assuming {version}, which every server here parses ({creates}single reads). Fix: set {}=<version> or allow srvr on the servers (4lw.commands.whitelist=srvr)",
                        why(),
                        server_version::PROPERTY
                    ),
                ))
            }
        };
        Ok((learned, note))
    }

    fn timeout(&self, operation: &'static str) -> Error {
        // Over TLS, a certificate the truststore does not accept looks the same from here.
        let tls = if self.config.security.tls.is_some() {
            " over TLS (is its certificate signed by a CA in zookeeper.ssl.truststore.location?)"
        } else {
            ""
        };
        Error::Timeout {
            server: format!("ZooKeeper at {}{tls}", self.config.connect),
            operation,
            after: self.config.request_timeout,
            detail: String::new(),
        }
    }
}

impl ZkStore {
    /// Fails, naming the chroot, when the connect string has one that does not exist: every
    /// path would be missing under it, and writes would fail node by node. Checked once per
    /// session. Not created: a mistyped chroot would start the job over on an empty tree.
    async fn check_chroot(&self, client: &zk::Client, deadline: Instant) -> Result<()> {
        let chroot = client.path();
        if chroot == "/" {
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, client.check_stat("/")).await {
            Err(_) => Err(self.timeout("chroot check")),
            Ok(Err(err)) => Err(self.failed("chroot check", chroot, err)),
            Ok(Ok(Some(_))) => Ok(()),
            Ok(Ok(None)) => Err(Error::MissingChroot {
                chroot: chroot.to_string(),
                connect: self.config.connect.clone(),
            }),
        }
    }

    /// A failed call's error: a timeout, whichever layer of the client noticed it, names the
    /// servers and the operation, never a znode.
    fn failed(&self, operation: &'static str, path: &str, source: zk::Error) -> Error {
        if is_connection_timeout(&source) {
            return self.timeout(operation);
        }
        let detail = match (&source, &self.gssapi) {
            (zk::Error::AuthFailed, Some(gssapi)) => gssapi_detail(gssapi),
            (zk::Error::AuthFailed, None) if !self.config.security.sends_credentials() => {
                crate::kerberos::ZOOKEEPER_REQUIRES_SASL.to_string()
            }
            _ => String::new(),
        };
        Error::ZooKeeper {
            operation,
            path: path.to_string(),
            source,
            detail,
        }
    }
}

/// The version a new session's requests are chosen for when none is configured: the servers'
/// lowest `srvr` answer; else, when an earlier session of the keeper learned one from `srvr`,
/// that one (servers starting after an outage serve sessions before they answer `srvr`: no
/// reason to speak 3.4's protocol for the rest of the keeper's life); else the oldest version
/// the connection can meet (a server speaking TLS is at least 3.5.1, the first with TLS).
fn chosen_version(
    earlier: Option<LearnedVersion>,
    answered: Option<ServerVersion>,
    tls: bool,
) -> LearnedVersion {
    if let Some(version) = answered {
        return LearnedVersion {
            version,
            source: VersionSource::Srvr,
        };
    }
    match earlier {
        Some(LearnedVersion {
            version,
            source: VersionSource::Srvr | VersionSource::Kept,
        }) => LearnedVersion {
            version,
            source: VersionSource::Kept,
        },
        _ => LearnedVersion {
            version: if tls {
                ServerVersion::FIRST_WITH_TLS
            } else {
                ServerVersion::CONSERVATIVE
            },
            source: VersionSource::Assumed,
        },
    }
}

/// A lock of the store's state; one poisoned by a panic elsewhere still holds a whole value.
fn locked<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What each operation of an applied multi did.
fn applied(results: Vec<zk::MultiWriteResult>) -> Vec<Applied> {
    results
        .into_iter()
        .map(|result| match result {
            zk::MultiWriteResult::Create { .. } => Applied::Written { version: 0 },
            zk::MultiWriteResult::SetData { stat } => Applied::Written {
                version: stat.version,
            },
            _ => Applied::Other,
        })
        .collect()
}

/// Why a GSSAPI session failed authentication: the provider's reason, else the server's refusal.
fn gssapi_detail(gssapi: &ZkGssapi) -> String {
    match gssapi.last_failure() {
        Some(failure) => format!("SASL {GSSAPI} login failed: {failure}"),
        None => format!(
            "ZooKeeper refused the SASL {GSSAPI} login; check the Kerberos login and zookeeper.server.principal"
        ),
    }
}

fn zk_error(operation: &'static str, path: &str, source: zk::Error) -> Error {
    Error::ZooKeeper {
        operation,
        path: path.to_string(),
        source,
        detail: String::new(),
    }
}

/// Splits operations into consecutive runs that each fit one multi request.
pub fn request_chunks(ops: &[WriteOp]) -> Vec<&[WriteOp]> {
    chunks_by_size(ops, WriteOp::estimated_bytes)
}

/// Splits items into consecutive runs whose estimated size stays under one request's limit.
pub(crate) fn chunks_by_size<T>(items: &[T], size_of: impl Fn(&T) -> usize) -> Vec<&[T]> {
    chunks_beside(items, size_of, 0, 0)
}

/// [`chunks_by_size`] for runs that go with other operations: `first` bytes of them in the
/// first request, `each` in every request.
pub(crate) fn chunks_beside<T>(
    items: &[T],
    size_of: impl Fn(&T) -> usize,
    first: usize,
    each: usize,
) -> Vec<&[T]> {
    let mut chunks = Vec::new();
    let (mut start, mut bytes) = (0, first + each);
    for (index, item) in items.iter().enumerate() {
        let size = size_of(item);
        if bytes + size > MAX_REQUEST_BYTES && index > start {
            chunks.push(&items[start..index]);
            (start, bytes) = (index, each);
        }
        bytes += size;
    }
    if start < items.len() {
        chunks.push(&items[start..]);
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_batches_are_one_chunk() {
        let items = vec![100usize; 1000];
        assert_eq!(chunks_by_size(&items, |s| *s).len(), 1);
        assert!(chunks_by_size(&Vec::<usize>::new(), |s| *s).is_empty());
    }

    #[test]
    fn large_batches_split_under_the_limit_and_keep_order() {
        let items: Vec<usize> = (0..30_000).collect();
        let chunks = chunks_by_size(&items, |_| 100);
        assert_eq!(chunks.len(), 3);
        assert!(chunks.iter().all(|c| c.len() * 100 <= MAX_REQUEST_BYTES));
        let rejoined: Vec<usize> = chunks.concat();
        assert_eq!(rejoined, items);
    }

    #[test]
    fn operations_beside_the_runs_count_against_their_requests() {
        let items = vec![1000usize; 2 * (MAX_REQUEST_BYTES / 1000)];
        let free = chunks_by_size(&items, |s| *s);
        let beside = chunks_beside(&items, |s| *s, 50_000, 20_000);
        assert_eq!((free.len(), beside.len()), (2, 3));
        assert!(beside[0].len() * 1000 + 70_000 <= MAX_REQUEST_BYTES);
        assert!(beside[1].len() * 1000 + 20_000 <= MAX_REQUEST_BYTES);
        assert_eq!(beside.concat(), items);
    }

    #[test]
    fn set_data_is_counted_as_jute_encodes_it() {
        // header 9, path length 4 + 27, data length 4 + 7, version 4
        let op = WriteOp::SetData {
            path: "/consumers/g/offsets/t/123".to_string() + "4",
            data: b"1000000".to_vec(),
            version: Some(3),
        };
        assert_eq!(op.estimated_bytes(), 9 + 4 + 27 + 4 + 7 + 4);
    }

    #[test]
    fn a_version_learned_once_is_kept_while_no_server_answers_srvr() {
        let v384 = ServerVersion::new(3, 8, 4);
        let v390 = ServerVersion::new(3, 9, 0);
        let learned = |version, source| LearnedVersion { version, source };
        // A first session: what the servers answer, else the oldest protocol.
        assert_eq!(
            chosen_version(None, Some(v384), false),
            learned(v384, VersionSource::Srvr)
        );
        assert_eq!(
            chosen_version(None, None, false),
            learned(ServerVersion::CONSERVATIVE, VersionSource::Assumed)
        );
        assert_eq!(
            chosen_version(None, None, true),
            learned(ServerVersion::FIRST_WITH_TLS, VersionSource::Assumed)
        );
        // A reconnect no server answered srvr for keeps what an earlier one learned, however
        // many reconnects follow.
        let kept = chosen_version(Some(learned(v384, VersionSource::Srvr)), None, false);
        assert_eq!(kept, learned(v384, VersionSource::Kept));
        assert_eq!(
            chosen_version(Some(kept), None, false),
            learned(v384, VersionSource::Kept)
        );
        // An answer is taken again: a rolling upgrade (or downgrade) is seen.
        assert_eq!(
            chosen_version(Some(kept), Some(v390), false),
            learned(v390, VersionSource::Srvr)
        );
        assert_eq!(
            chosen_version(Some(learned(v390, VersionSource::Srvr)), Some(v384), false),
            learned(v384, VersionSource::Srvr)
        );
        // Nothing learned before: still assumed.
        assert_eq!(
            chosen_version(
                Some(learned(ServerVersion::CONSERVATIVE, VersionSource::Assumed)),
                None,
                false
            ),
            learned(ServerVersion::CONSERVATIVE, VersionSource::Assumed)
        );
        assert_eq!(
            learned(v384, VersionSource::Kept).to_string(),
            "3.8.4 (from srvr earlier: no server answered it now)"
        );
    }

    #[test]
    fn an_oversized_item_still_gets_its_own_chunk() {
        let items = vec![10, MAX_REQUEST_BYTES * 2, 10];
        assert_eq!(chunks_by_size(&items, |s| *s).len(), 3);
    }

    mod gssapi {
        use super::*;
        use crate::sasl::fake::{FakeProvider, Script};
        use crate::sasl::SaslService;
        use std::io::{Read as _, Write as _};

        /// The server's answer to one SASL request: a token (`None`: the null token that ends
        /// the exchange), or AuthFailed.
        type Answer = Result<Option<&'static [u8]>, ()>;

        /// The server's SASL rounds: the client token expected, the answer.
        type Rounds = Vec<(&'static [u8], Answer)>;

        const AUTH_FAILED: i32 = -115;

        fn frame(socket: &mut std::net::TcpStream) -> Option<Vec<u8>> {
            let mut size = [0; 4];
            socket.read_exact(&mut size).ok()?;
            let mut body = vec![0; usize::try_from(i32::from_be_bytes(size)).ok()?];
            socket.read_exact(&mut body).ok()?;
            Some(body)
        }

        fn send(socket: &mut std::net::TcpStream, body: &[u8]) {
            let size = i32::try_from(body.len()).unwrap().to_be_bytes();
            // The client may have hung up already (after a refusal).
            let _ = socket.write_all(&[&size[..], body].concat());
        }

        fn buffer(bytes: Option<&[u8]>) -> Vec<u8> {
            match bytes {
                None => (-1i32).to_be_bytes().to_vec(),
                Some(bytes) => {
                    let mut out = i32::try_from(bytes.len()).unwrap().to_be_bytes().to_vec();
                    out.extend_from_slice(bytes);
                    out
                }
            }
        }

        /// A ZooKeeper server for one connection: it accepts the session, answers SASL
        /// requests `(expected client token, answer)` and pings, until the client closes the
        /// session or hangs up.
        fn server(rounds: Rounds) -> (String, std::thread::JoinHandle<()>) {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let address = listener.local_addr().unwrap().to_string();
            let thread = std::thread::spawn(move || {
                let (mut socket, _) = listener.accept().unwrap();
                let mut rounds = rounds.into_iter();
                // A provider failing at once leaves the connection before anything is sent.
                if frame(&mut socket).is_none() {
                    return;
                }
                // protocol version, timeout, session id, password, read-only
                let mut connected = [0i32.to_be_bytes(), 30_000i32.to_be_bytes()].concat();
                connected.extend_from_slice(&0x5e55i64.to_be_bytes());
                connected.extend(buffer(Some(&[7; 16])));
                connected.push(0);
                send(&mut socket, &connected);
                while let Some(request) = frame(&mut socket) {
                    let xid = i32::from_be_bytes(request[..4].try_into().unwrap());
                    let op = i32::from_be_bytes(request[4..8].try_into().unwrap());
                    let reply = |err: i32| {
                        let mut header = xid.to_be_bytes().to_vec();
                        header.extend_from_slice(&0i64.to_be_bytes());
                        header.extend_from_slice(&err.to_be_bytes());
                        header
                    };
                    match op {
                        102 => {
                            let (expected, answer) = rounds.next().expect("a scripted round");
                            assert_eq!(&request[8..], buffer(Some(expected)));
                            match answer {
                                Ok(token) => send(&mut socket, &[reply(0), buffer(token)].concat()),
                                Err(()) => send(&mut socket, &reply(AUTH_FAILED)),
                            }
                        }
                        // A ping; closing the session when the client is dropped.
                        11 => send(&mut socket, &reply(0)),
                        -11 => {
                            send(&mut socket, &reply(0));
                            break;
                        }
                        other => panic!("unexpected opcode {other}"),
                    }
                }
                assert!(rounds.next().is_none(), "rounds left");
            });
            (address, thread)
        }

        /// A provider that blocks past the deadline (a KDC that does not answer) does not
        /// hold the connect: it times out on time.
        #[test]
        fn a_stalled_login_ends_at_the_deadline() {
            // A server that reads whatever comes until the client hangs up.
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let address = listener.local_addr().unwrap().to_string();
            let server = std::thread::spawn(move || {
                let (mut socket, _) = listener.accept().unwrap();
                let _ = std::io::copy(&mut socket, &mut std::io::sink());
            });
            let (handle, _) =
                FakeProvider::stalling(Script::new(Ok(b"ap-req"), &[]), Duration::from_secs(4));
            let mut config = config(&address);
            config.request_timeout = Duration::from_secs(1);
            let store = ZkStore::with_sasl_provider(config, Some(&handle)).unwrap();
            let started = Instant::now();
            let err = store.block_on(store.connect()).unwrap_err();
            assert!(started.elapsed() < Duration::from_millis(2500), "{err}");
            // The login, not ZooKeeper, is what the deadline waited for; a commit defers over it.
            assert!(
                err.to_string().starts_with(&format!(
                    "The Kerberos login for ZooKeeper at {address} did not finish within 1000 ms: no answer from the KDC"
                )),
                "{err:?}"
            );
            assert!(err.is_zookeeper_unreachable(), "{err:?}");
            drop(store);
            server.join().unwrap();
        }

        fn config(connect: &str) -> ZkConfig {
            let mut config = ZkConfig::new(connect);
            config.security =
                ZkSecurity::from_properties([("zookeeper.sasl.mechanism", "GSSAPI")]).unwrap();
            // No srvr: the fake server speaks only the session protocol.
            config.server_version = Some(ServerVersion::new(3, 8, 4));
            config.request_timeout = Duration::from_secs(5);
            config
        }

        #[test]
        fn gssapi_needs_a_provider() {
            let err = ZkStore::new(config("zk:2181"))
                .err()
                .expect("refused")
                .to_string();
            assert!(
                err.contains("zookeeper.sasl.mechanism 'GSSAPI' is not supported; allowed: DIGEST-MD5; GSSAPI (Kerberos) works in the jar, through the JVM's Kerberos login"),
                "{err}"
            );
            let (provider, _) = FakeProvider::handle(Script::new(Ok(b""), &[]));
            assert!(ZkStore::with_sasl_provider(config("zk:2181"), Some(&provider)).is_ok());
            // A provider without GSSAPI settings is not used.
            assert!(ZkStore::with_sasl_provider(ZkConfig::new("zk:2181"), Some(&provider)).is_ok());
        }

        /// The session is opened through the provider: its token, the server's challenge, its
        /// answer, the server's null token; with the connect string's host.
        #[test]
        fn a_session_logs_in_through_the_provider() {
            let (address, server) =
                server(vec![(b"ap-req", Ok(Some(b"offer"))), (b"layer", Ok(None))]);
            let (handle, provider) =
                FakeProvider::handle(Script::new(Ok(b"ap-req"), &[(b"offer", Ok(b"layer"))]));
            let store = ZkStore::with_sasl_provider(config(&address), Some(&handle)).unwrap();
            store.block_on(store.connect()).unwrap();
            assert_eq!(
                provider.started(),
                [(SaslService::ZooKeeper, "127.0.0.1".to_string())]
            );
            drop(store);
            server.join().unwrap();
        }

        /// A failure of the provider, or the server's refusal, ends the connect at once (no
        /// retries until the timeout) with the reason.
        #[test]
        fn a_failed_login_is_a_zookeeper_error_with_the_reason() {
            let cases: [(Script, Rounds, &str); 3] = [
                (
                    Script::new(Err("Server not found in Kerberos database (7)"), &[]),
                    vec![],
                    "(SASL GSSAPI login failed: Server not found in Kerberos database (7))",
                ),
                (
                    Script::new(
                        Ok(b"ap-req"),
                        &[(b"offer", Err("Clock skew too great (37)"))],
                    ),
                    vec![(b"ap-req", Ok(Some(b"offer")))],
                    "(SASL GSSAPI login failed: Clock skew too great (37))",
                ),
                (
                    Script::new(Ok(b"ap-req"), &[]),
                    vec![(b"ap-req", Err(()))],
                    "ZooKeeper refused the SASL GSSAPI login",
                ),
            ];
            for (script, rounds, needle) in cases {
                let (address, server) = server(rounds);
                let (handle, _) = FakeProvider::handle(script);
                let store = ZkStore::with_sasl_provider(config(&address), Some(&handle)).unwrap();
                let started = Instant::now();
                let err = store.block_on(store.connect()).unwrap_err();
                assert!(started.elapsed() < Duration::from_secs(4), "{err}");
                assert!(
                    matches!(
                        &err,
                        Error::ZooKeeper {
                            source: zk::Error::AuthFailed,
                            ..
                        }
                    ),
                    "{err:?}"
                );
                let message = err.to_string();
                assert!(
                    message.starts_with(&format!(
                        "ZooKeeper connect failed at {address}: authentication failed"
                    )),
                    "{message}"
                );
                assert!(message.contains(needle), "{message}");
                drop(store);
                server.join().unwrap();
            }
        }
    }

    #[test]
    fn config_is_checked() {
        assert!(ZkStore::new(ZkConfig::new("  ")).is_err());
        let mut config = ZkConfig::new("127.0.0.1:2181");
        config.base_path = "consumers".into();
        let message = ZkStore::new(config).err().map(|e| e.to_string());
        assert!(message.unwrap_or_default().contains("'consumers'"));
        let mut config = ZkConfig::new("127.0.0.1:2181");
        config.request_timeout = Duration::ZERO;
        assert!(ZkStore::new(config).is_err());
    }
}
