//! The one configuration path: [`KeeperConfig::from_properties`] reads key/value pairs, as a
//! Java properties file or a Spark `kafkaParams` map holds them, for the Java builder (through
//! JNI), the CLI (its flags and `--command-config`) and Rust users alike. The defaults and
//! limits are defined in [`defaults`]; [`KeeperConfig::new`] applies them.
//!
//! Keys, three namespaces:
//! - `zookeeper.connect` (required) and the `zookeeper.*` security keys
//!   ([`ZkConfig::apply_properties`]); an unknown `zookeeper.*` key is refused;
//! - `offsetkeeper.*`, the keeper's own settings ([`KEYS`]); an unknown one is refused, so that
//!   a typo never silently leaves a default in place;
//! - every other key is a Kafka consumer setting, read as [`KafkaSettings::from_params`] reads a
//!   job's `kafkaParams`: the keys the engine uses are kept, the others (deserializers,
//!   `group.id`, ...) are ignored with a DEBUG line naming the key, as Kafka's consumer warns of
//!   and ignores configs it does not know.

pub mod defaults;

use std::time::Duration;

use crate::error::{Error, Result};
use crate::kafka::KafkaSettings;
use crate::names::check_base_path;
use crate::sasl::SaslProviderHandle;
use crate::validate::{OnAboveRange, OnBelowRange, OnMissing, OnRecreated, Policy};
use crate::zookeeper::ZkConfig;
pub use defaults::{DEFAULT_COMMIT_OUTAGE_TOLERANCE, DEFAULT_RECREATED_TIMESTAMP_TOLERANCE};
use defaults::{
    DEFAULT_KAFKA_SESSION_TIMEOUT, EXPIRY_SLACK, MAX_KAFKA_SESSION_TIMEOUT_MS, MAX_TIMEOUT_MS,
    MAX_WAIT, MIN_KAFKA_SESSION_TIMEOUT_MS,
};

/// The ZooKeeper connect string, `host:port[,host:port...][/chroot]` (Kafka's own key).
pub const ZOOKEEPER_CONNECT: &str = "zookeeper.connect";

/// The keeper's own keys, with what each allows; all optional.
pub const KEYS: &[(&str, &str)] = &[
    (
        "offsetkeeper.base.path",
        "an absolute ZooKeeper path (default /consumers)",
    ),
    (
        "offsetkeeper.session.timeout.ms",
        "1 to 2147483647 (default 30000)",
    ),
    (
        "offsetkeeper.zookeeper.timeout.ms",
        "1 to 2147483647 (default 10000)",
    ),
    (
        "offsetkeeper.kafka.timeout.ms",
        "1 to 2147483647 (default: default.api.timeout.ms, else 60000)",
    ),
    (
        "offsetkeeper.kafka.session.timeout.ms",
        "1000 to 3600000 (default 10000; the Kafka store's member session, which the brokers' group.min.session.timeout.ms and group.max.session.timeout.ms must allow)",
    ),
    (
        "offsetkeeper.on.missing",
        "earliest, latest, fail (default: auto.offset.reset, else earliest)",
    ),
    (
        "offsetkeeper.on.below.range",
        "earliest, fail (default earliest)",
    ),
    (
        "offsetkeeper.on.above.range",
        "earliest, latest, fail (default earliest)",
    ),
    (
        "offsetkeeper.on.recreated",
        "earliest, latest, fail (default earliest)",
    ),
    (
        "offsetkeeper.recreated.timestamp.tolerance.ms",
        "0 to 86400000, or off (default 300000)",
    ),
    ("offsetkeeper.fencing", "true, false (default true)"),
    (
        "offsetkeeper.monotonic.commits",
        "true, false (default true)",
    ),
    ("offsetkeeper.ownership", "true, false (default true)"),
    (
        "offsetkeeper.ownership.wait.ms",
        "0 to 86400000 (default: the session timeout plus 5000; with offsetkeeper.store=kafka, the member session plus 5000)",
    ),
    (
        "offsetkeeper.commit.outage.tolerance.ms",
        "0 to 86400000 (default 300000)",
    ),
    (
        "offsetkeeper.store",
        "zookeeper, kafka, zookeeper,kafka or kafka,zookeeper (default zookeeper; kafka needs no zookeeper.connect; two stores: the first authoritative, the second mirrored, during a move)",
    ),
];

/// [`MAX_WAIT`] in the milliseconds of the properties.
const MAX_WAIT_MS: u64 = MAX_WAIT.as_secs() * 1000;

/// Where a keeper keeps offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Store {
    /// `<base>/<group>/offsets/<topic>/<partition>` in ZooKeeper.
    #[default]
    ZooKeeper,
    /// Kafka's group store (`__consumer_offsets`), as Kafka's consumers keep theirs.
    Kafka,
}

impl Store {
    /// `offsetkeeper.store`: one store, or the authoritative store and its mirror during a move
    /// between them (`zookeeper,kafka`, `kafka,zookeeper`).
    pub fn parse(value: &str) -> Result<(Store, Option<Store>)> {
        match value.trim().to_ascii_lowercase().replace(' ', "").as_str() {
            "zookeeper" => Ok((Store::ZooKeeper, None)),
            "kafka" => Ok((Store::Kafka, None)),
            "zookeeper,kafka" => Ok((Store::ZooKeeper, Some(Store::Kafka))),
            "kafka,zookeeper" => Ok((Store::Kafka, Some(Store::ZooKeeper))),
            _ => Err(Error::invalid(format!(
                "offsetkeeper.store '{value}' is not allowed; allowed: zookeeper, kafka, zookeeper,kafka (ZooKeeper authoritative, Kafka mirrored), kafka,zookeeper (Kafka authoritative, ZooKeeper mirrored)"
            ))),
        }
    }

    /// The store's name in settings and messages.
    pub fn name(self) -> &'static str {
        match self {
            Store::ZooKeeper => "zookeeper",
            Store::Kafka => "kafka",
        }
    }
}

/// Everything an [`OffsetKeeper`](crate::OffsetKeeper) needs.
#[derive(Debug, Clone)]
pub struct KeeperConfig {
    /// Where offsets are kept; with [`Store::Kafka`] (and no mirror) `zookeeper` is not used.
    pub store: Store,
    /// The store mirroring `store` during a move between stores: every stored batch is written
    /// to it too, and loads compare it (crate::mirror). `None`: one store.
    pub mirror: Option<Store>,
    pub zookeeper: ZkConfig,
    pub kafka: KafkaSettings,
    /// Deadline of each Kafka operation of a load (Metadata, ListOffsets, their retries
    /// included). `None` (the default): the job's `default.api.timeout.ms` when its kafkaParams
    /// set it, else 60 s, Kafka's default, which outlasts the ~9 s Kafka takes to fence a
    /// dead broker and move its partitions' leadership. `Some` wins over the kafkaParams.
    pub kafka_timeout: Option<Duration>,
    pub policy: Policy,
    /// Fencing: every commit checks, in its multi, the znode versions this keeper last saw, so
    /// that a concurrent writer makes it fail with [`Error::CommitConflict`]. On by default.
    pub fencing: bool,
    /// Monotonic commits: an offset below what this keeper already committed for the partition
    /// is left out with a WARN. On by default.
    pub monotonic: bool,
    /// One active instance per group. On by default.
    pub ownership: Ownership,
    /// The Kafka store's member session, asked of the group coordinator as the JoinGroup's
    /// session and rebalance timeouts: a keeper that stops heartbeating (a dead driver, a JVM
    /// paused longer) leaves the group this long after its last heartbeat, and the default
    /// ownership wait of the Kafka store is this plus 5 s. The brokers refuse a value outside
    /// their `group.min.session.timeout.ms` and `group.max.session.timeout.ms`. 10 s by default
    /// ([`defaults::DEFAULT_KAFKA_SESSION_TIMEOUT`]).
    pub kafka_session_timeout: Duration,
    /// How long commits may fail because ZooKeeper cannot be reached (a timeout, a lost
    /// connection or session) before [`OffsetKeeper::commit`](crate::OffsetKeeper::commit)
    /// returns the error. Until then a failed commit returns `Ok` with
    /// [`CommitSummary::deferred`](crate::CommitSummary::deferred) set, its offsets kept to be
    /// written by the next commit. Zero: every such failure is returned at once. 5 minutes by
    /// default ([`DEFAULT_COMMIT_OUTAGE_TOLERANCE`]).
    pub commit_outage_tolerance: Duration,
    /// Re-created topics without a recorded topic ID: a stored offset is judged written for an
    /// older log when a record below it is timestamped more than this after the offset was
    /// committed (the producers' and brokers' clocks may run this far ahead of ZooKeeper's).
    /// `None`: not checked. 5 minutes by default ([`DEFAULT_RECREATED_TIMESTAMP_TOLERANCE`]).
    pub recreated_timestamp_tolerance: Option<Duration>,
    /// The host's SASL mechanism (the jar's JVM Kerberos login), which `sasl.mechanism=GSSAPI`
    /// and `zookeeper.sasl.mechanism=GSSAPI` need; `None` (the default): they are refused.
    /// Not a property: set by code ([`with_sasl_provider`](Self::with_sasl_provider)).
    pub sasl_provider: Option<SaslProviderHandle>,
}

/// Ownership of a group's partitions: a load registers the keeper under
/// `<base>/<group>/ids` and takes `<base>/<group>/owners/<topic>/<partition>`, ephemeral nodes
/// in the layout of Kafka's old consumer. A keeper that commits without having loaded the group
/// takes the partitions of its first commit the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ownership {
    pub enabled: bool,
    /// How long a load (or a first commit without a load) waits for another instance's
    /// ownership to go before failing with [`Error::Owned`]. An owner of this host whose
    /// process is gone is not waited for. `None`: this keeper's ZooKeeper session timeout (as
    /// the servers granted it, once a session is open) plus 5 s, the longest a crashed driver's
    /// session (with the same timeout) outlives it; with the Kafka store, its member session
    /// ([`KeeperConfig::kafka_session_timeout`]) plus 5 s.
    pub wait: Option<Duration>,
}

impl Ownership {
    /// How long a load (or a first commit without a load) waits for another owner to go,
    /// on a ZooKeeper session of `session_timeout`.
    pub(crate) fn wait_for(&self, session_timeout: Duration) -> Duration {
        self.wait.unwrap_or(session_timeout + EXPIRY_SLACK)
    }
}

impl Default for Ownership {
    fn default() -> Self {
        Ownership {
            enabled: true,
            wait: None,
        }
    }
}

impl KeeperConfig {
    /// The defaults: the policy keeps data (earliest everywhere), except that a partition with no
    /// stored offset follows the job's `auto.offset.reset` when it set one; fencing, monotonic
    /// commits and ownership on.
    pub fn new(zookeeper: ZkConfig, kafka: KafkaSettings) -> KeeperConfig {
        let policy = Policy {
            on_missing: kafka.auto_offset_reset.unwrap_or(OnMissing::Earliest),
            ..Policy::default()
        };
        KeeperConfig {
            store: Store::ZooKeeper,
            mirror: None,
            zookeeper,
            kafka,
            kafka_timeout: None,
            policy,
            fencing: true,
            monotonic: true,
            ownership: Ownership::default(),
            kafka_session_timeout: DEFAULT_KAFKA_SESSION_TIMEOUT,
            commit_outage_tolerance: DEFAULT_COMMIT_OUTAGE_TOLERANCE,
            recreated_timestamp_tolerance: Some(DEFAULT_RECREATED_TIMESTAMP_TOLERANCE),
            sasl_provider: None,
        }
    }

    /// The configuration with `provider` for the GSSAPI settings.
    pub fn with_sasl_provider(self, provider: SaslProviderHandle) -> KeeperConfig {
        KeeperConfig {
            sasl_provider: Some(provider),
            ..self
        }
    }

    /// Refuses an ownership wait or a commit outage tolerance beyond [`MAX_WAIT`] (the
    /// properties reader refuses them too, naming its key).
    pub(crate) fn check_limits(&self) -> Result<()> {
        let too_long = |what: &str, duration: Duration| {
            Error::invalid(format!(
                "{what} of {} ms is too long; allowed: 0 ms to 24 h",
                duration.as_millis()
            ))
        };
        if self.commit_outage_tolerance > MAX_WAIT {
            return Err(too_long(
                "commit outage tolerance",
                self.commit_outage_tolerance,
            ));
        }
        let session = self.kafka_session_timeout.as_millis();
        if !(u128::from(MIN_KAFKA_SESSION_TIMEOUT_MS)..=u128::from(MAX_KAFKA_SESSION_TIMEOUT_MS))
            .contains(&session)
        {
            return Err(Error::invalid(format!(
                "a Kafka member session of {session} ms is not allowed; allowed: {MIN_KAFKA_SESSION_TIMEOUT_MS} ms to {MAX_KAFKA_SESSION_TIMEOUT_MS} ms (offsetkeeper.kafka.session.timeout.ms)"
            )));
        }
        match self.ownership.wait {
            Some(wait) if wait > MAX_WAIT => Err(too_long("ownership wait", wait)),
            _ => Ok(()),
        }
    }
}

/// Whether a key is one of the keeper's own or ZooKeeper's, not a Kafka consumer setting.
pub fn is_keeper_key(key: &str) -> bool {
    let key = key.trim();
    key.starts_with("offsetkeeper.") || key.starts_with("zookeeper.")
}

impl KeeperConfig {
    /// Reads a configuration from key/value pairs (see the module's documentation for the
    /// keys). A later pair wins over an earlier one with the same key (as in a Java properties
    /// file), except that `zookeeper.auth` may be repeated. A bad value is an
    /// [`Error::InvalidArgument`] naming its key and what is allowed, never a secret value.
    ///
    /// ```
    /// use offsetkeeper::{KeeperConfig, OnMissing};
    ///
    /// let config = KeeperConfig::from_properties([
    ///     ("zookeeper.connect", "zk1:2181,zk2:2181/kafka"),
    ///     ("bootstrap.servers", "broker:9092"),
    ///     ("offsetkeeper.on.missing", "latest"),
    ///     ("offsetkeeper.ownership.wait.ms", "0"),
    /// ])?;
    /// assert_eq!(config.policy.on_missing, OnMissing::Latest);
    /// assert!(config.fencing); // a default
    /// # Ok::<(), offsetkeeper::Error>(())
    /// ```
    pub fn from_properties<K, V>(
        properties: impl IntoIterator<Item = (K, V)>,
    ) -> Result<KeeperConfig>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let parsed = Parsed::read(properties)?;
        let kafka = KafkaSettings::from_params(parsed.kafka.iter().map(|(k, v)| (k, v)))?;
        parsed.apply(kafka)
    }

    /// [`from_properties`](Self::from_properties) of the keeper's settings followed by a job's
    /// `kafkaParams`, whose `zookeeper.*` and `offsetkeeper.*` keys are not read (an old
    /// consumer's `zookeeper.connect` there is the job's business): how the Java builder's
    /// configuration arrives. Kafka keys in `settings` win over the same keys in the
    /// `kafkaParams`.
    pub fn from_settings_and_kafka_params<K, V, L, W>(
        settings: impl IntoIterator<Item = (K, V)>,
        kafka_params: impl IntoIterator<Item = (L, W)>,
    ) -> Result<KeeperConfig>
    where
        K: AsRef<str>,
        V: AsRef<str>,
        L: AsRef<str>,
        W: AsRef<str>,
    {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for (key, value) in kafka_params {
            let key = key.as_ref();
            if is_keeper_key(key) {
                log::debug!("kafkaParams: '{key}' is not read from kafkaParams; dropped");
            } else {
                pairs.push((key.to_string(), value.as_ref().to_string()));
            }
        }
        pairs.extend(
            settings
                .into_iter()
                .map(|(k, v)| (k.as_ref().to_string(), v.as_ref().to_string())),
        );
        KeeperConfig::from_properties(pairs)
    }

    /// The ZooKeeper part of [`from_properties`](Self::from_properties) alone, checked the
    /// same way, for work that needs no broker (the CLI's `list-groups`, `export`, ...): the
    /// Kafka keys are not read.
    pub fn zookeeper_from_properties<K, V>(
        properties: impl IntoIterator<Item = (K, V)>,
    ) -> Result<ZkConfig>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        Parsed::read(properties)?.zookeeper()
    }
}

/// The pairs sorted by namespace, the keeper's own values checked.
#[derive(Default)]
struct Parsed {
    store: Option<(Store, Option<Store>)>,
    connect: Option<String>,
    zookeeper: Vec<(String, String)>,
    kafka: Vec<(String, String)>,
    base_path: Option<String>,
    session_timeout: Option<Duration>,
    zookeeper_timeout: Option<Duration>,
    kafka_timeout: Option<Duration>,
    kafka_session_timeout: Option<Duration>,
    on_missing: Option<OnMissing>,
    on_below_range: Option<OnBelowRange>,
    on_above_range: Option<OnAboveRange>,
    on_recreated: Option<OnRecreated>,
    fencing: Option<bool>,
    monotonic: Option<bool>,
    ownership: Option<bool>,
    ownership_wait: Option<Duration>,
    commit_outage_tolerance: Option<Duration>,
    /// `Some(None)`: off.
    recreated_timestamp_tolerance: Option<Option<Duration>>,
}

impl Parsed {
    fn read<K, V>(properties: impl IntoIterator<Item = (K, V)>) -> Result<Parsed>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut parsed = Parsed::default();
        for (key, value) in properties {
            let (key, value) = (key.as_ref().trim(), value.as_ref());
            match key {
                ZOOKEEPER_CONNECT => parsed.connect = Some(value.trim().to_string()),
                "offsetkeeper.store" => parsed.store = Some(Store::parse(value)?),
                "offsetkeeper.base.path" => {
                    let path = value.trim();
                    check_base_path(path).map_err(|err| named(key, err))?;
                    parsed.base_path = Some(path.to_string());
                }
                "offsetkeeper.session.timeout.ms" => {
                    parsed.session_timeout = Some(millis(key, value, 1, MAX_TIMEOUT_MS)?)
                }
                "offsetkeeper.zookeeper.timeout.ms" => {
                    parsed.zookeeper_timeout = Some(millis(key, value, 1, MAX_TIMEOUT_MS)?)
                }
                "offsetkeeper.kafka.timeout.ms" => {
                    parsed.kafka_timeout = Some(millis(key, value, 1, MAX_TIMEOUT_MS)?)
                }
                "offsetkeeper.kafka.session.timeout.ms" => {
                    parsed.kafka_session_timeout = Some(
                        millis(
                            key,
                            value,
                            MIN_KAFKA_SESSION_TIMEOUT_MS,
                            MAX_KAFKA_SESSION_TIMEOUT_MS,
                        )
                        .map_err(|_| {
                            Error::invalid(format!(
                                "{key} '{value}' is not allowed; allowed: whole milliseconds from {MIN_KAFKA_SESSION_TIMEOUT_MS} to {MAX_KAFKA_SESSION_TIMEOUT_MS}, within the brokers' group.min.session.timeout.ms and group.max.session.timeout.ms (6000 and 1800000 by default)"
                            ))
                        })?,
                    )
                }
                "offsetkeeper.on.missing" => {
                    parsed.on_missing = Some(OnMissing::parse(value).map_err(|e| named(key, e))?)
                }
                "offsetkeeper.on.below.range" => {
                    parsed.on_below_range =
                        Some(OnBelowRange::parse(value).map_err(|e| named(key, e))?)
                }
                "offsetkeeper.on.above.range" => {
                    parsed.on_above_range =
                        Some(OnAboveRange::parse(value).map_err(|e| named(key, e))?)
                }
                "offsetkeeper.on.recreated" => {
                    parsed.on_recreated =
                        Some(OnRecreated::parse(value).map_err(|e| named(key, e))?)
                }
                "offsetkeeper.fencing" => parsed.fencing = Some(boolean(key, value)?),
                "offsetkeeper.monotonic.commits" => parsed.monotonic = Some(boolean(key, value)?),
                "offsetkeeper.ownership" => parsed.ownership = Some(boolean(key, value)?),
                "offsetkeeper.ownership.wait.ms" => {
                    parsed.ownership_wait = Some(millis(key, value, 0, MAX_WAIT_MS)?)
                }
                "offsetkeeper.commit.outage.tolerance.ms" => {
                    parsed.commit_outage_tolerance = Some(millis(key, value, 0, MAX_WAIT_MS)?)
                }
                "offsetkeeper.recreated.timestamp.tolerance.ms" => {
                    parsed.recreated_timestamp_tolerance = Some(match value.trim() {
                        "off" => None,
                        _ => Some(millis(key, value, 0, MAX_WAIT_MS).map_err(|_| {
                            Error::invalid(format!(
                                "{key} '{value}' is not allowed; allowed: whole milliseconds from 0 to {MAX_WAIT_MS}, or off"
                            ))
                        })?),
                    })
                }
                other if other.starts_with("offsetkeeper.") => {
                    let allowed: Vec<&str> = KEYS.iter().map(|(key, _)| *key).collect();
                    return Err(Error::invalid(format!(
                        "'{other}' is not an offsetkeeper setting; allowed: {}",
                        allowed.join(", ")
                    )));
                }
                other if other.starts_with("zookeeper.") => parsed
                    .zookeeper
                    .push((other.to_string(), value.to_string())),
                other => parsed.kafka.push((other.to_string(), value.to_string())),
            }
        }
        Ok(parsed)
    }

    fn zookeeper(&self) -> Result<ZkConfig> {
        let connect = self
            .connect
            .clone()
            .filter(|connect| !connect.is_empty())
            .ok_or_else(|| {
                Error::invalid(
                    "zookeeper.connect is not set; expected host:port[,host:port...][/chroot] (or offsetkeeper.store=kafka, which needs no ZooKeeper)",
                )
            })?;
        let mut zookeeper = ZkConfig::new(connect);
        zookeeper.apply_properties(self.zookeeper.iter().map(|(k, v)| (k, v)))?;
        if let Some(path) = &self.base_path {
            zookeeper.base_path = path.clone();
        }
        if let Some(timeout) = self.session_timeout {
            zookeeper.session_timeout = timeout;
        }
        if let Some(timeout) = self.zookeeper_timeout {
            zookeeper.request_timeout = timeout;
        }
        Ok(zookeeper)
    }

    fn apply(self, kafka: KafkaSettings) -> Result<KeeperConfig> {
        let (store, mirror) = self.store.unwrap_or_default();
        let zookeeper = match (store, mirror, &self.connect) {
            // The Kafka store needs no ZooKeeper; its settings are kept unused.
            (Store::Kafka, None, None) => ZkConfig::new(String::new()),
            _ => self.zookeeper()?,
        };
        let mut config = KeeperConfig::new(zookeeper, kafka);
        config.store = store;
        config.mirror = mirror;
        config.kafka_timeout = self.kafka_timeout;
        config.kafka_session_timeout = self
            .kafka_session_timeout
            .unwrap_or(config.kafka_session_timeout);
        if let Some(on_missing) = self.on_missing {
            config.policy.on_missing = on_missing;
        }
        if let Some(on_below_range) = self.on_below_range {
            config.policy.on_below_range = on_below_range;
        }
        if let Some(on_above_range) = self.on_above_range {
            config.policy.on_above_range = on_above_range;
        }
        if let Some(on_recreated) = self.on_recreated {
            config.policy.on_recreated = on_recreated;
        }
        config.fencing = self.fencing.unwrap_or(config.fencing);
        config.monotonic = self.monotonic.unwrap_or(config.monotonic);
        config.ownership.enabled = self.ownership.unwrap_or(config.ownership.enabled);
        config.ownership.wait = self.ownership_wait.or(config.ownership.wait);
        config.commit_outage_tolerance = self
            .commit_outage_tolerance
            .unwrap_or(config.commit_outage_tolerance);
        config.recreated_timestamp_tolerance = self
            .recreated_timestamp_tolerance
            .unwrap_or(config.recreated_timestamp_tolerance);
        Ok(config)
    }
}

/// A sub-parser's refusal, prefixed with the key it came from.
fn named(key: &str, err: Error) -> Error {
    match err {
        Error::InvalidArgument(message) => Error::invalid(format!("{key}: {message}")),
        other => other,
    }
}

fn millis(key: &str, value: &str, min: u64, max: u64) -> Result<Duration> {
    match value.trim().parse::<u64>() {
        Ok(ms) if (min..=max).contains(&ms) => Ok(Duration::from_millis(ms)),
        _ => Err(Error::invalid(format!(
            "{key} '{value}' is not allowed; allowed: whole milliseconds from {min} to {max}"
        ))),
    }
}

fn boolean(key: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Error::invalid(format!(
            "{key} '{value}' is not allowed; allowed: true, false"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::Policy;

    const BASE: [(&str, &str); 2] = [
        ("zookeeper.connect", "zk:2181/kafka"),
        ("bootstrap.servers", "b:9092"),
    ];

    fn with(extra: &[(&str, &str)]) -> Result<KeeperConfig> {
        KeeperConfig::from_properties(BASE.iter().chain(extra).copied())
    }

    fn refusal(extra: &[(&str, &str)]) -> String {
        with(extra).unwrap_err().to_string()
    }

    /// docs/configuration.md shows [`KEYS`] as rendered here, so that the page cannot go
    /// stale (`OFFSETKEEPER_UPDATE_DOCS=1 cargo test -p offsetkeeper the_docs` rewrites it),
    /// and every `offsetkeeper.*` or `zookeeper.*` key that a page names exists.
    #[test]
    fn the_docs_show_the_keys_that_exist() {
        const BEGIN: &str =
            "<!-- keeper-keys:begin: generated from rust/core/src/config.rs KEYS -->";
        const END: &str = "<!-- keeper-keys:end -->";
        // Named in the docs, and not keys: logger names, JVM system properties, server settings.
        const NOT_KEYS: [&str; 6] = [
            "offsetkeeper.keeper",
            "offsetkeeper.load",
            "offsetkeeper.spark.progress",
            "offsetkeeper.native.library",
            "zookeeper.commitLogCount",
            "zookeeper.kerberos.minReLoginTimeMs",
        ];
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let configuration = root.join("docs/configuration.md");
        let mut table = String::from("| key | allowed (default) |\n|---|---|\n");
        for (key, allowed) in KEYS {
            table.push_str(&format!("| `{key}` | {allowed} |\n"));
        }
        let text = std::fs::read_to_string(&configuration).expect("docs/configuration.md");
        let (Some(begin), Some(end)) = (text.find(BEGIN), text.find(END)) else {
            panic!("docs/configuration.md has no {BEGIN} ... {END} region");
        };
        let wanted = format!("{}{BEGIN}\n{table}{}", &text[..begin], &text[end..]);
        if std::env::var_os("OFFSETKEEPER_UPDATE_DOCS").is_some() {
            std::fs::write(&configuration, &wanted).expect("docs/configuration.md is writable");
        } else {
            assert!(
                text == wanted,
                "docs/configuration.md's keys table differs from KEYS; run OFFSETKEEPER_UPDATE_DOCS=1 cargo test -p offsetkeeper the_docs"
            );
        }

        let known: Vec<&str> = KEYS
            .iter()
            .map(|(key, _)| *key)
            .chain(crate::zookeeper::security::KEYS.split(", "))
            .chain([ZOOKEEPER_CONNECT])
            .chain(NOT_KEYS)
            .collect();
        let mut pages = vec![root.join("README.md"), root.join("CONTRIBUTING.md")];
        for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
            let path = entry.expect("a docs/ entry").path();
            if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
        let mut unknown = Vec::new();
        for page in pages {
            let text = std::fs::read_to_string(&page).expect("a docs page");
            for (i, _) in text.match_indices('`') {
                let rest = &text[i + 1..];
                if !(rest.starts_with("offsetkeeper.") || rest.starts_with("zookeeper.")) {
                    continue;
                }
                let name: &str = rest
                    .split(|c: char| {
                        !(c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-')
                    })
                    .next()
                    .unwrap_or_default();
                // `offsetkeeper.*`, `zookeeper.ssl.*`: a family, not a key.
                let family = rest[name.len()..].starts_with('*') || name.ends_with('.');
                if !family && !known.contains(&name) {
                    unknown.push(format!("{}: {name}", page.display()));
                }
            }
        }
        assert!(
            unknown.is_empty(),
            "keys the docs name that do not exist: {unknown:?}"
        );
    }

    #[test]
    fn the_keys_table_shows_the_defaults_and_limits() {
        use defaults::*;
        let shown = |key: &str| KEYS.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        let ms = |d: Duration| d.as_millis().to_string();
        let expected = [
            ("offsetkeeper.base.path", DEFAULT_BASE_PATH.to_string()),
            (
                "offsetkeeper.session.timeout.ms",
                format!("{MAX_TIMEOUT_MS} (default {})", ms(DEFAULT_SESSION_TIMEOUT)),
            ),
            (
                "offsetkeeper.zookeeper.timeout.ms",
                format!(
                    "{MAX_TIMEOUT_MS} (default {})",
                    ms(DEFAULT_ZOOKEEPER_TIMEOUT)
                ),
            ),
            (
                "offsetkeeper.kafka.timeout.ms",
                format!("else {})", ms(DEFAULT_API_TIMEOUT)),
            ),
            (
                "offsetkeeper.kafka.session.timeout.ms",
                format!(
                    "{MIN_KAFKA_SESSION_TIMEOUT_MS} to {MAX_KAFKA_SESSION_TIMEOUT_MS} (default {};",
                    ms(DEFAULT_KAFKA_SESSION_TIMEOUT)
                ),
            ),
            (
                "offsetkeeper.ownership.wait.ms",
                format!(
                    "0 to {MAX_WAIT_MS} (default: the session timeout plus {}; with offsetkeeper.store=kafka, the member session plus {})",
                    ms(EXPIRY_SLACK),
                    ms(EXPIRY_SLACK)
                ),
            ),
            (
                "offsetkeeper.commit.outage.tolerance.ms",
                format!(
                    "0 to {MAX_WAIT_MS} (default {})",
                    ms(DEFAULT_COMMIT_OUTAGE_TOLERANCE)
                ),
            ),
            (
                "offsetkeeper.recreated.timestamp.tolerance.ms",
                format!(
                    "0 to {MAX_WAIT_MS}, or off (default {})",
                    ms(DEFAULT_RECREATED_TIMESTAMP_TOLERANCE)
                ),
            ),
        ];
        for (key, text) in expected {
            let shown = shown(key).unwrap_or_default();
            assert!(shown.contains(&text), "{key}: '{shown}' lacks '{text}'");
        }
    }

    #[test]
    fn defaults_are_those_of_new() {
        let config = with(&[]).unwrap();
        let new = KeeperConfig::new(
            ZkConfig::new("zk:2181/kafka"),
            KafkaSettings::from_params(BASE[1..].iter().copied()).unwrap(),
        );
        assert_eq!(format!("{config:?}"), format!("{new:?}"));
        assert_eq!(config.policy, Policy::default());
        assert_eq!(config.zookeeper.session_timeout, Duration::from_secs(30));
        assert_eq!(config.zookeeper.request_timeout, Duration::from_secs(10));
        assert_eq!(config.zookeeper.base_path, "/consumers");
        assert_eq!(config.kafka_timeout, None);
        assert_eq!(config.kafka_session_timeout, Duration::from_secs(10));
        assert!(config.fencing && config.monotonic && config.ownership.enabled);
        assert_eq!(config.ownership.wait, None);
        assert_eq!(
            config.commit_outage_tolerance,
            DEFAULT_COMMIT_OUTAGE_TOLERANCE
        );
        assert_eq!(
            config.recreated_timestamp_tolerance,
            Some(DEFAULT_RECREATED_TIMESTAMP_TOLERANCE)
        );
    }

    #[test]
    fn every_key_is_read() {
        let config = with(&[
            ("offsetkeeper.base.path", "/jobs"),
            ("offsetkeeper.session.timeout.ms", "12000"),
            ("offsetkeeper.zookeeper.timeout.ms", "3000"),
            ("offsetkeeper.kafka.timeout.ms", "4000"),
            ("offsetkeeper.kafka.session.timeout.ms", " 45000 "),
            ("offsetkeeper.on.missing", "latest"),
            ("offsetkeeper.on.below.range", "FAIL"),
            ("offsetkeeper.on.above.range", " latest "),
            ("offsetkeeper.on.recreated", "fail"),
            ("offsetkeeper.fencing", "false"),
            ("offsetkeeper.monotonic.commits", "False"),
            ("offsetkeeper.ownership", "false"),
            ("offsetkeeper.ownership.wait.ms", "0"),
            ("offsetkeeper.commit.outage.tolerance.ms", "0"),
            ("offsetkeeper.recreated.timestamp.tolerance.ms", "60000"),
            ("zookeeper.server.version", "3.4.14"),
            ("client.id", "job-1"),
        ])
        .unwrap();
        assert_eq!(config.zookeeper.connect, "zk:2181/kafka");
        assert_eq!(config.zookeeper.base_path, "/jobs");
        assert_eq!(config.zookeeper.session_timeout, Duration::from_secs(12));
        assert_eq!(config.zookeeper.request_timeout, Duration::from_secs(3));
        assert!(config.zookeeper.server_version.is_some());
        assert_eq!(config.kafka_timeout, Some(Duration::from_secs(4)));
        assert_eq!(config.kafka_session_timeout, Duration::from_secs(45));
        assert_eq!(
            config.policy,
            Policy {
                on_missing: OnMissing::Latest,
                on_below_range: OnBelowRange::Fail,
                on_above_range: OnAboveRange::Latest,
                on_recreated: OnRecreated::Fail,
            }
        );
        assert!(!config.fencing && !config.monotonic && !config.ownership.enabled);
        assert_eq!(config.ownership.wait, Some(Duration::ZERO));
        assert_eq!(config.commit_outage_tolerance, Duration::ZERO);
        assert_eq!(
            config.recreated_timestamp_tolerance,
            Some(Duration::from_secs(60))
        );
        assert_eq!(config.kafka.get("client.id"), Some("job-1"));
        let off = with(&[("offsetkeeper.recreated.timestamp.tolerance.ms", "off")]).unwrap();
        assert_eq!(off.recreated_timestamp_tolerance, None);
    }

    #[test]
    fn the_kafka_member_session_sets_the_default_ownership_wait_and_its_limits_hold() {
        let config = with(&[
            ("offsetkeeper.store", "kafka"),
            ("offsetkeeper.kafka.session.timeout.ms", "6000"),
        ])
        .unwrap();
        assert_eq!(config.kafka_session_timeout, Duration::from_secs(6));
        assert_eq!(
            config.ownership.wait_for(config.kafka_session_timeout),
            Duration::from_secs(11)
        );
        // The limits, at their edges; a Rust config set out of them is refused by check_limits.
        for (value, ok) in [("1000", true), ("3600000", true), ("999", false)] {
            let read = with(&[("offsetkeeper.kafka.session.timeout.ms", value)]);
            assert_eq!(read.is_ok(), ok, "{value}");
        }
        let mut config = with(&[]).unwrap();
        assert!(config.check_limits().is_ok());
        config.kafka_session_timeout = Duration::from_millis(500);
        let message = config.check_limits().unwrap_err().to_string();
        assert!(
            message.contains("a Kafka member session of 500 ms is not allowed; allowed: 1000 ms to 3600000 ms (offsetkeeper.kafka.session.timeout.ms)"),
            "{message}"
        );
    }

    #[test]
    fn auto_offset_reset_is_the_default_and_the_explicit_policy_wins() {
        let config = with(&[("auto.offset.reset", "latest")]).unwrap();
        assert_eq!(config.policy.on_missing, OnMissing::Latest);
        let config = with(&[
            ("offsetkeeper.on.missing", "fail"),
            ("auto.offset.reset", "latest"),
        ])
        .unwrap();
        assert_eq!(config.policy.on_missing, OnMissing::Fail);
    }

    #[test]
    fn a_later_pair_wins() {
        let config = with(&[
            ("offsetkeeper.zookeeper.timeout.ms", "1000"),
            ("offsetkeeper.zookeeper.timeout.ms", "2000"),
            ("zookeeper.connect", "other:2181"),
        ])
        .unwrap();
        assert_eq!(config.zookeeper.request_timeout, Duration::from_secs(2));
        assert_eq!(config.zookeeper.connect, "other:2181");
    }

    #[test]
    fn bad_values_name_the_key_and_what_is_allowed() {
        for (pair, needles) in [
            (
                ("offsetkeeper.session.timeout.ms", "0"),
                &[
                    "offsetkeeper.session.timeout.ms '0'",
                    "from 1 to 2147483647",
                ][..],
            ),
            (
                ("offsetkeeper.zookeeper.timeout.ms", "2147483648"),
                &["'2147483648'", "from 1 to 2147483647"],
            ),
            (
                ("offsetkeeper.kafka.timeout.ms", "10s"),
                &["offsetkeeper.kafka.timeout.ms '10s'"],
            ),
            (
                ("offsetkeeper.kafka.session.timeout.ms", "10s"),
                &[
                    "offsetkeeper.kafka.session.timeout.ms '10s' is not allowed",
                    "whole milliseconds from 1000 to 3600000",
                    "group.min.session.timeout.ms and group.max.session.timeout.ms",
                ][..],
            ),
            (
                ("offsetkeeper.kafka.session.timeout.ms", "999"),
                &[
                    "offsetkeeper.kafka.session.timeout.ms '999'",
                    "from 1000 to 3600000",
                ],
            ),
            (
                ("offsetkeeper.kafka.session.timeout.ms", "3600001"),
                &["'3600001'", "from 1000 to 3600000"],
            ),
            (
                ("offsetkeeper.kafka.session.timeout.ms", "-10000"),
                &["'-10000'", "from 1000 to 3600000"],
            ),
            (
                ("offsetkeeper.ownership.wait.ms", "-7"),
                &["offsetkeeper.ownership.wait.ms '-7'", "from 0 to 86400000"],
            ),
            (
                ("offsetkeeper.commit.outage.tolerance.ms", "86400001"),
                &["'86400001'", "from 0 to 86400000"],
            ),
            (
                ("offsetkeeper.recreated.timestamp.tolerance.ms", "5min"),
                &[
                    "offsetkeeper.recreated.timestamp.tolerance.ms '5min'",
                    "from 0 to 86400000, or off",
                ],
            ),
            (
                ("offsetkeeper.on.missing", "sometimes"),
                &[
                    "offsetkeeper.on.missing: on_missing 'sometimes' is not allowed",
                    "earliest, latest, fail",
                ],
            ),
            (
                ("offsetkeeper.on.below.range", "latest"),
                &["offsetkeeper.on.below.range", "allowed: earliest, fail"],
            ),
            (
                ("offsetkeeper.fencing", "yes"),
                &["offsetkeeper.fencing 'yes'", "allowed: true, false"],
            ),
            (
                ("offsetkeeper.base.path", "consumers"),
                &["offsetkeeper.base.path", "base path 'consumers'"],
            ),
            (
                ("offsetkeeper.fencin", "true"),
                &[
                    "'offsetkeeper.fencin' is not an offsetkeeper setting",
                    "offsetkeeper.fencing",
                ],
            ),
            (
                ("zookeeper.ssl.truststore.locaton", "/x"),
                &["zookeeper.ssl.truststore.locaton"],
            ),
            (
                ("auto.offset.reset", "oldest"),
                &["auto.offset.reset 'oldest'", "earliest"],
            ),
        ] {
            let message = refusal(&[pair]);
            assert!(message.starts_with("invalid argument: "), "{message}");
            for needle in needles {
                assert!(
                    message.contains(needle),
                    "{pair:?}: {needle} not in {message}"
                );
            }
        }
        let message = KeeperConfig::from_properties([("bootstrap.servers", "b:1")])
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("zookeeper.connect is not set"),
            "{message}"
        );
        let message = KeeperConfig::from_properties([("zookeeper.connect", "z:1")])
            .unwrap_err()
            .to_string();
        assert!(message.contains("bootstrap.servers"), "{message}");
    }

    #[test]
    fn secrets_are_never_echoed_nor_shown() {
        let secret = "Hunter2-Secret";
        let message = refusal(&[
            ("zookeeper.auth", "digest:alice:Hunter2-Secret"),
            ("zookeeper.sasl.password", secret),
        ]);
        assert!(!message.contains(secret), "{message}");
        let config = with(&[
            ("zookeeper.auth", "digest:alice:Hunter2-Secret"),
            ("sasl.password", secret),
            ("ssl.key.password", secret),
        ])
        .unwrap();
        let shown = format!("{config:?}");
        assert!(!shown.contains(secret), "{shown}");
        assert!(crate::kafka::params::is_secret_key("zookeeper.auth"));
    }

    #[test]
    fn unknown_kafka_keys_are_ignored_and_kafka_params_do_not_set_the_keeper() {
        let config = with(&[
            (
                "key.deserializer",
                "org.apache.kafka.common.serialization.StringDeserializer",
            ),
            ("group.id", "job"),
            ("no.such.kafka.setting", "1"),
        ])
        .unwrap();
        assert_eq!(config.kafka.get("group.id"), None);
        assert_eq!(config.kafka.get("no.such.kafka.setting"), None);
        // An old consumer's keys in a job's kafkaParams are not the keeper's.
        let config = KeeperConfig::from_settings_and_kafka_params(
            [
                ("zookeeper.connect", "zk:2181"),
                ("offsetkeeper.on.missing", "latest"),
            ],
            [
                ("bootstrap.servers", "b:9092"),
                ("zookeeper.connect", "old:2181"),
                ("zookeeper.connection.timeout.ms", "6000"),
                ("offsetkeeper.on.missing", "fail"),
            ],
        )
        .unwrap();
        assert_eq!(config.zookeeper.connect, "zk:2181");
        assert_eq!(config.policy.on_missing, OnMissing::Latest);
    }

    #[test]
    fn a_bad_security_protocol_in_kafka_params_is_refused_as_the_builder_checks() {
        // The Java builder's build() checks through this call (NativeBridge.checkConfig).
        let err = KeeperConfig::from_settings_and_kafka_params(
            [("zookeeper.connect", "zk:2181")],
            [
                ("bootstrap.servers", "b:9092"),
                ("security.protocol", "SASL_PLAIN"),
            ],
        )
        .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert!(
            err.to_string().contains(
                "security.protocol 'SASL_PLAIN' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
            ),
            "{err}"
        );
    }

    #[test]
    fn the_zookeeper_part_needs_no_broker() {
        let zookeeper = KeeperConfig::zookeeper_from_properties([
            ("zookeeper.connect", "zk:2181"),
            ("offsetkeeper.base.path", "/jobs"),
            ("auto.offset.reset", "whatever"),
        ])
        .unwrap();
        assert_eq!(zookeeper.base_path, "/jobs");
        assert!(KeeperConfig::zookeeper_from_properties([
            ("zookeeper.connect", "zk:2181"),
            ("zookeeper.acl", "creator"),
        ])
        .is_err());
    }
}
