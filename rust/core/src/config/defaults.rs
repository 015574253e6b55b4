//! Every default and limit of the configuration, in one place. A leaf: the clients read their
//! defaults from here, and the configuration reader checks against the same limits.

use std::time::Duration;

/// The base path, as Kafka's old consumer used it.
pub const DEFAULT_BASE_PATH: &str = "/consumers";

/// The ZooKeeper session timeout.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(30);

/// The Kafka store's member session (`offsetkeeper.kafka.session.timeout.ms`): a keeper that
/// stops heartbeating (a dead driver, a paused JVM) leaves the group this long after its last
/// heartbeat. Within the brokers' default limits (`group.min.session.timeout.ms` 6000,
/// `group.max.session.timeout.ms` 1800000 on Kafka 3.9).
pub const DEFAULT_KAFKA_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// The shortest and longest member session the keeper asks for, in milliseconds; the broker
/// refuses a value outside its own limits when the keeper joins.
pub const MIN_KAFKA_SESSION_TIMEOUT_MS: u64 = 1000;
pub const MAX_KAFKA_SESSION_TIMEOUT_MS: u64 = 3_600_000;

/// The deadline of one ZooKeeper call.
pub const DEFAULT_ZOOKEEPER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long commits may fail for want of ZooKeeper, by default, before `commit` fails: long
/// enough for a rolling restart of a 3-node ensemble (each node restarted and caught up in turn,
/// with up to a few elections of some seconds each), and short enough that a job whose
/// ZooKeeper is gone for good stops while little has to be reprocessed.
pub const DEFAULT_COMMIT_OUTAGE_TOLERANCE: Duration = Duration::from_secs(300);

/// How far past a stored offset's commit time a record below it may be timestamped before the
/// topic is judged re-created (when no topic ID is stored): well beyond the skew of clocks kept
/// by NTP, and short enough that a topic re-created and refilled past the stored offset a few
/// minutes after the job's last commit is caught.
pub const DEFAULT_RECREATED_TIMESTAMP_TOLERANCE: Duration = Duration::from_secs(300);

/// Added to the session timeout (ZooKeeper's, or the Kafka store's member session) for the
/// default ownership wait: ZooKeeper expires sessions on its tick, up to one tick (2 s by
/// default) after their timeout, and Kafka's coordinator a moment after theirs.
pub const EXPIRY_SLACK: Duration = Duration::from_secs(5);

/// The longest ownership wait and commit outage tolerance.
pub const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// The longest timeout in milliseconds: Kafka's and the keeper's timeouts are Java ints.
pub const MAX_TIMEOUT_MS: u64 = i32::MAX as u64;

/// A broker's port when the bootstrap address names none.
pub const DEFAULT_KAFKA_PORT: u16 = 9092;

/// Kafka's `retry.backoff.ms`.
pub const DEFAULT_RETRY_BACKOFF: Duration = Duration::from_millis(100);

/// Kafka's `default.api.timeout.ms`: the deadline of one operation (a load's Metadata and
/// ListOffsets, retries included) unless the job sets its own. Long enough to outlast the
/// fencing of a dead broker (`broker.session.timeout.ms`, 9 s), after which its partitions get
/// new leaders.
pub const DEFAULT_API_TIMEOUT: Duration = Duration::from_secs(60);

/// Kafka's `request.timeout.ms`: one request on one connection; past it the connection is
/// dropped and the request asked again, after fresh metadata.
pub const DEFAULT_KAFKA_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Kafka's `socket.connection.setup.timeout.ms`: one connection's TCP connect, TLS handshake,
/// ApiVersions and SASL login.
pub const DEFAULT_SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a commit during a known ZooKeeper outage (an earlier commit was deferred, the
/// engine reconnects in the background) waits for the reconnect before it is deferred too: a
/// batch is held one ZooKeeper timeout at the outage's start, then at most this.
pub const OUTAGE_PROBE: Duration = Duration::from_millis(250);

/// The background reconnect's first pause between tries during an outage; it doubles up to
/// [`RECONNECT_BACKOFF_MAX`], so ZooKeeper's return is noticed within about that.
pub const RECONNECT_BACKOFF_MIN: Duration = Duration::from_millis(100);

/// The background reconnect's longest pause between tries.
pub const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(1);
