//! The brokers' view: which partitions exist and the [earliest, latest] of each.
//!
//! Metadata and ListOffsets go over offsetkeeper's own connections (`protocol`, `connection`):
//! one Metadata request for all the topics of a load, and one ListOffsets request per leader
//! for each side, both sides at once. librdkafka's `offsets_for_times`, used before, matches
//! answers to requests by linear search, O(n²) in the partitions of a call: at 1,000 partitions
//! it spent 6.7-12 ms, a third of it in `strcmp` (perf), where the requests themselves take
//! about 1 ms. The engine does not link librdkafka: only the CLI's `migrate`, which needs a
//! consumer group, does (`rust/cli/src/migrate.rs`).

pub mod connection;
pub mod params;
pub mod protocol;
mod scram;
pub mod security;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::fast_hash::{FastMap, FastSet};
use crate::validate::PartitionRange;
use crate::TopicPartition;
use connection::{CallError, Connection};
pub use params::KafkaSettings;
use protocol::{
    Metadata, API_LIST_OFFSETS, API_METADATA, EARLIEST, LATEST, LIST_OFFSETS_VERSIONS,
    METADATA_VERSIONS,
};
use security::KafkaSecurity;

/// Connections per broker: the earliest and the latest side of a load are asked at once, and
/// a broker answers one connection's requests one after the other.
const LANES: usize = 2;
const DEFAULT_PORT: u16 = 9092;
const DEFAULT_RETRY_BACKOFF: Duration = Duration::from_millis(100);

/// A metadata and ListOffsets client for one cluster. Connections open on first use and are
/// kept; one that fails is dropped and opened again by the next request.
pub struct Brokers {
    settings: KafkaSettings,
    timeout: Duration,
    bootstrap: Vec<String>,
    client_id: String,
    security: KafkaSecurity,
    read_committed: bool,
    retry_backoff: Duration,
    view: Mutex<ClusterView>,
    connections: Mutex<HashMap<String, Arc<Lanes>>>,
}

/// What the last Metadata answers said.
#[derive(Default)]
struct ClusterView {
    addresses: HashMap<i32, String>,
    leaders: FastMap<TopicPartition, i32>,
    /// The broker that answered the last Metadata request: asked first next time.
    metadata_broker: Option<String>,
}

struct Lanes([tokio::sync::Mutex<Option<Connection>>; LANES]);

/// A failed attempt worth repeating (leadership moving, a broker restarting), with its cause.
struct Retriable(String);

impl Brokers {
    /// Checks the settings; connects on first use. Every call is bounded by `timeout`.
    pub fn new(settings: KafkaSettings, timeout: Duration) -> Result<Brokers> {
        if timeout.is_zero() {
            return Err(Error::invalid(
                "Kafka request timeout is 0 ms; allowed: 1 ms or more",
            ));
        }
        let security = KafkaSecurity::from_settings(&settings)?;
        let read_committed = match settings.get("isolation.level") {
            None | Some("read_uncommitted") => false,
            Some("read_committed") => true,
            Some(other) => {
                return Err(Error::invalid(format!(
                    "isolation.level '{other}' is not one of read_uncommitted, read_committed"
                )))
            }
        };
        let retry_backoff = match settings.get("retry.backoff.ms") {
            None => DEFAULT_RETRY_BACKOFF,
            Some(ms) => ms.trim().parse().map(Duration::from_millis).map_err(|_| {
                Error::invalid(format!(
                    "retry.backoff.ms '{ms}' is not a number of milliseconds"
                ))
            })?,
        };
        Ok(Brokers {
            bootstrap: bootstrap_addresses(&settings.bootstrap)?,
            client_id: settings
                .get("client.id")
                .unwrap_or("offsetkeeper")
                .to_string(),
            security,
            read_committed,
            retry_backoff,
            settings,
            timeout,
            view: Mutex::new(ClusterView::default()),
            connections: Mutex::new(HashMap::new()),
        })
    }

    pub fn settings(&self) -> &KafkaSettings {
        &self.settings
    }

    /// The partitions of each topic, from broker metadata, in the order asked. An unknown topic
    /// is an error naming it.
    pub async fn partitions(&self, topics: &[String]) -> Result<Vec<TopicPartition>> {
        let known = self.topic_partitions(topics).await?;
        let mut partitions = Vec::new();
        for topic in topics {
            let ids = known.get(topic).ok_or_else(|| Error::UnknownTopic {
                topic: topic.clone(),
                bootstrap: self.settings.bootstrap.clone(),
            })?;
            partitions.extend(ids.iter().map(|id| TopicPartition::new(topic, *id)));
        }
        Ok(partitions)
    }

    /// The sorted partition ids of those of the topics that exist, from one Metadata request;
    /// topics the brokers do not have are left out.
    pub async fn topic_partitions(&self, topics: &[String]) -> Result<BTreeMap<String, Vec<i32>>> {
        if topics.is_empty() {
            return Ok(BTreeMap::new());
        }
        self.bounded("metadata request", async {
            let retry = self.retry();
            loop {
                let metadata = self.metadata(Some(topics)).await?;
                let mut found = BTreeMap::new();
                let mut cause = None;
                for topic in metadata.topics {
                    match topic.error {
                        0 if !topic.partitions.is_empty() => {
                            let mut ids: Vec<i32> =
                                topic.partitions.iter().map(|p| p.partition).collect();
                            ids.sort_unstable();
                            found.insert(topic.name, ids);
                        }
                        0 | 3 => {}
                        code if protocol::is_retriable(code) => {
                            cause = Some(format!(
                                "topic {}: {}",
                                topic.name,
                                protocol::error_name(code)
                            ));
                        }
                        code => {
                            return Err(self.refused(
                                "metadata request",
                                &format!("topic {}", topic.name),
                                code,
                            ))
                        }
                    }
                }
                match cause {
                    None => return Ok(found),
                    Some(cause) => {
                        self.pause(&retry, "metadata request", Retriable(cause))
                            .await?
                    }
                }
            }
        })
        .await
    }

    /// Every topic of the cluster except Kafka's internal ones (`__consumer_offsets`, ...),
    /// sorted.
    pub async fn topics(&self) -> Result<Vec<String>> {
        let metadata = self
            .bounded("metadata request", self.metadata(None))
            .await?;
        let mut topics: Vec<String> = metadata
            .topics
            .into_iter()
            .filter(|t| t.error == 0 && !t.is_internal && !t.name.starts_with("__"))
            .map(|t| t.name)
            .collect();
        topics.sort_unstable();
        Ok(topics)
    }

    /// Earliest and latest offsets of the partitions: per side, one ListOffsets request per
    /// leader, both sides at once.
    pub async fn ranges(
        &self,
        partitions: &[TopicPartition],
    ) -> Result<FastMap<TopicPartition, PartitionRange>> {
        if partitions.is_empty() {
            return Ok(FastMap::default());
        }
        let (earliest, mut latest) = self
            .bounded("list offsets", async {
                futures::try_join!(
                    self.list_offsets(partitions, EARLIEST, 0),
                    self.list_offsets(partitions, LATEST, 1)
                )
            })
            .await?;
        earliest
            .into_iter()
            .map(|(tp, earliest)| {
                let latest = latest.remove(&tp).ok_or_else(|| {
                    Error::Internal(format!("no latest offset returned for {tp}"))
                })?;
                Ok((tp, PartitionRange { earliest, latest }))
            })
            .collect()
    }

    /// For each partition, the earliest offset whose record timestamp is at or after
    /// `timestamp_ms` (milliseconds since the epoch), or `None` when no record is that recent.
    /// One ListOffsets request per leader.
    pub async fn offsets_for_timestamp(
        &self,
        partitions: &[TopicPartition],
        timestamp_ms: i64,
    ) -> Result<HashMap<TopicPartition, Option<i64>>> {
        if timestamp_ms < 0 {
            return Err(Error::invalid(format!(
                "timestamp {timestamp_ms} ms is before 1970; allowed: 0 or more"
            )));
        }
        if partitions.is_empty() {
            return Ok(HashMap::new());
        }
        let found = self
            .bounded(
                "list offsets for a timestamp",
                self.list_offsets(partitions, timestamp_ms, 0),
            )
            .await?;
        Ok(found
            .into_iter()
            .map(|(tp, offset)| (tp, (offset >= 0).then_some(offset)))
            .collect())
    }

    /// ListOffsets at `timestamp` for every partition, asking each partition's leader; sent
    /// again after fresh metadata for partitions whose leadership moved, until the deadline.
    async fn list_offsets(
        &self,
        partitions: &[TopicPartition],
        timestamp: i64,
        lane: usize,
    ) -> Result<FastMap<TopicPartition, i64>> {
        const OPERATION: &str = "list offsets";
        let retry = self.retry();
        let mut answers = FastMap::default();
        answers.reserve(partitions.len());
        let mut pending: Vec<&TopicPartition> = partitions.iter().collect();
        loop {
            let mut by_leader: HashMap<String, Vec<&TopicPartition>> = HashMap::new();
            let mut again = Vec::new();
            let mut cause = None;
            {
                let view = self.view();
                for tp in pending {
                    match view.leader_address(tp) {
                        Some(address) => by_leader.entry(address.to_string()).or_default().push(tp),
                        None => {
                            cause = Some(format!("{tp} has no leader"));
                            again.push(tp);
                        }
                    }
                }
            }
            let calls = by_leader.iter().map(|(address, tps)| async move {
                let mut topics: Vec<(&str, Vec<i32>)> = Vec::new();
                for tp in tps {
                    match topics.last_mut() {
                        Some((topic, ids)) if *topic == tp.topic => ids.push(tp.partition),
                        _ => topics.push((&tp.topic, vec![tp.partition])),
                    }
                }
                let read_committed = self.read_committed;
                self.call(
                    address,
                    lane,
                    "ListOffsets",
                    API_LIST_OFFSETS,
                    LIST_OFFSETS_VERSIONS,
                    |version| {
                        protocol::list_offsets_request(version, read_committed, &topics, timestamp)
                    },
                )
                .await
            });
            let answered = futures::future::join_all(calls).await;
            for ((address, tps), answer) in by_leader.iter().zip(answered) {
                let listed = match answer {
                    Ok((version, body)) => {
                        protocol::parse_list_offsets(version, &body).map_err(|err| {
                            self.failed(OPERATION, &format!("broker {address}: {err}"))
                        })?
                    }
                    Err(err @ (CallError::Unsupported { .. } | CallError::Authentication(_))) => {
                        return Err(self.failed(OPERATION, &format!("broker {address}: {err}")))
                    }
                    Err(err) => {
                        cause = Some(format!("broker {address}: {err}"));
                        again.extend(tps);
                        continue;
                    }
                };
                let asked: FastSet<&TopicPartition> = tps.iter().copied().collect();
                let before = answers.len();
                for entry in listed {
                    let tp = TopicPartition::new(entry.topic, entry.partition);
                    if !asked.contains(&tp) {
                        continue;
                    }
                    match entry.error {
                        0 => {
                            answers.insert(tp, entry.offset);
                        }
                        code if protocol::is_retriable(code) => {
                            cause = Some(format!("{tp}: {}", protocol::error_name(code)));
                        }
                        code => return Err(self.refused(OPERATION, &tp.to_string(), code)),
                    }
                }
                if answers.len() - before < tps.len() {
                    again.extend(tps.iter().filter(|tp| !answers.contains_key(**tp)));
                }
            }
            if again.is_empty() {
                return Ok(answers);
            }
            let cause = cause.unwrap_or_else(|| format!("{} went unanswered", again[0]));
            self.pause(&retry, OPERATION, Retriable(cause)).await?;
            let topics: Vec<String> = again
                .iter()
                .map(|tp| tp.topic.clone())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let metadata = self.metadata(Some(&topics)).await?;
            if let Some(gone) = metadata.topics.iter().find(|t| t.error == 3) {
                return Err(Error::UnknownTopic {
                    topic: gone.name.clone(),
                    bootstrap: self.settings.bootstrap.clone(),
                });
            }
            pending = again;
        }
    }

    /// One Metadata request, to the broker that answered last, else to each bootstrap and known
    /// broker in turn. The answer updates the brokers' addresses and the partitions' leaders.
    async fn metadata(&self, topics: Option<&[String]>) -> Result<Metadata> {
        let candidates: Vec<String> = {
            let view = self.view();
            let mut candidates: Vec<String> = view.metadata_broker.iter().cloned().collect();
            candidates.extend(self.bootstrap.iter().cloned());
            candidates.extend(view.addresses.values().cloned());
            let mut seen = HashSet::new();
            candidates.retain(|address| seen.insert(address.clone()));
            candidates
        };
        let retry = self.retry();
        loop {
            let mut failures = Vec::new();
            for address in &candidates {
                let answer = self
                    .call(
                        address,
                        0,
                        "Metadata",
                        API_METADATA,
                        METADATA_VERSIONS,
                        |version| protocol::metadata_request(version, topics),
                    )
                    .await;
                match answer {
                    Ok((version, body)) => {
                        let metadata = protocol::parse_metadata(version, &body).map_err(|err| {
                            self.failed("metadata request", &format!("broker {address}: {err}"))
                        })?;
                        self.view().learn(address, &metadata);
                        return Ok(metadata);
                    }
                    Err(err @ (CallError::Unsupported { .. } | CallError::Authentication(_))) => {
                        return Err(
                            self.failed("metadata request", &format!("broker {address}: {err}"))
                        )
                    }
                    Err(err) => failures.push(format!("{address}: {err}")),
                }
            }
            let cause = format!("no broker answered ({})", failures.join("; "));
            self.pause(&retry, "metadata request", Retriable(cause))
                .await?;
        }
    }

    /// One request on `lane` of the broker at `address`, with the highest version both speak;
    /// `body` encodes it for that version. A kept connection that fails is replaced and the
    /// request sent once more on a new one.
    async fn call(
        &self,
        address: &str,
        lane: usize,
        api: &'static str,
        api_key: i16,
        versions: std::ops::RangeInclusive<i16>,
        body: impl Fn(i16) -> protocol::Writer,
    ) -> std::result::Result<(i16, Vec<u8>), CallError> {
        let lanes = self.lanes(address);
        let mut slot = lanes.0[lane % LANES].lock().await;
        let mut reused = slot.is_some();
        loop {
            let connection = match slot.as_mut() {
                Some(connection) => connection,
                None => {
                    slot.insert(Connection::open(address, &self.client_id, &self.security).await?)
                }
            };
            let version = connection.version(api, api_key, versions.clone())?;
            match connection.call(api_key, version, &body(version).buf).await {
                Ok(answer) => return Ok((version, answer)),
                Err(err) => {
                    *slot = None;
                    if !(reused && matches!(err, CallError::Io(_))) {
                        return Err(err);
                    }
                    reused = false;
                }
            }
        }
    }

    fn lanes(&self, address: &str) -> Arc<Lanes> {
        let mut connections = self
            .connections
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        connections
            .entry(address.to_string())
            .or_insert_with(|| {
                Arc::new(Lanes(std::array::from_fn(|_| {
                    tokio::sync::Mutex::new(None)
                })))
            })
            .clone()
    }

    fn view(&self) -> MutexGuard<'_, ClusterView> {
        self.view
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn retry(&self) -> Instant {
        Instant::now() + self.timeout
    }

    /// Waits out the retry backoff, or gives up with the cause when the deadline would pass.
    async fn pause(
        &self,
        deadline: &Instant,
        operation: &'static str,
        cause: Retriable,
    ) -> Result<()> {
        if Instant::now() + self.retry_backoff >= *deadline {
            return Err(self.failed(
                operation,
                &format!("gave up after {} ms: {}", self.timeout.as_millis(), cause.0),
            ));
        }
        log::debug!("Kafka {operation}: {}; asking again", cause.0);
        tokio::time::sleep(self.retry_backoff).await;
        Ok(())
    }

    /// `work` bounded by the request timeout.
    async fn bounded<T>(
        &self,
        operation: &'static str,
        work: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        tokio::time::timeout(self.timeout, work)
            .await
            .unwrap_or_else(|_| {
                Err(Error::Timeout {
                    server: format!("Kafka at {}", self.settings.bootstrap),
                    operation,
                    after: self.timeout,
                })
            })
    }

    fn failed(&self, operation: &'static str, message: &str) -> Error {
        Error::Kafka {
            operation,
            bootstrap: self.settings.bootstrap.clone(),
            message: self.settings.redact(message),
        }
    }

    fn refused(&self, operation: &'static str, what: &str, code: i16) -> Error {
        self.failed(
            operation,
            &format!("{what}: {} (error {code})", protocol::error_name(code)),
        )
    }
}

impl ClusterView {
    fn learn(&mut self, answered_by: &str, metadata: &Metadata) {
        self.metadata_broker = Some(answered_by.to_string());
        for broker in &metadata.brokers {
            self.addresses
                .insert(broker.node_id, address(&broker.host, broker.port));
        }
        for topic in &metadata.topics {
            for partition in &topic.partitions {
                let tp = TopicPartition::new(&topic.name, partition.partition);
                if partition.leader >= 0 {
                    self.leaders.insert(tp, partition.leader);
                } else {
                    self.leaders.remove(&tp);
                }
            }
        }
    }

    fn leader_address(&self, tp: &TopicPartition) -> Option<&str> {
        let leader = self.leaders.get(tp)?;
        self.addresses.get(leader).map(String::as_str)
    }
}

fn address(host: &str, port: i32) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `bootstrap.servers` as connectable addresses; a missing port means 9092, as for Kafka's
/// clients.
fn bootstrap_addresses(bootstrap: &str) -> Result<Vec<String>> {
    let mut addresses = Vec::new();
    for entry in bootstrap
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
    {
        let entry = entry.rsplit("://").next().unwrap_or(entry);
        let (host, port) = match entry.rsplit_once(':') {
            Some((host, port)) if !host.contains(':') || host.starts_with('[') => {
                (host, Some(port))
            }
            _ => (entry, None),
        };
        let port = match port {
            None => DEFAULT_PORT,
            Some(port) => port.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
                Error::invalid(format!(
                    "bootstrap.servers entry '{entry}' has port '{port}'; allowed: host:port with a port of 1-65535"
                ))
            })?,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(Error::invalid(format!(
                "bootstrap.servers entry '{entry}' has no host; expected host:port"
            )));
        }
        addresses.push(address(host, i32::from(port)));
    }
    if addresses.is_empty() {
        return Err(Error::invalid(format!(
            "bootstrap.servers '{bootstrap}' names no broker; expected host:port[,host:port...]"
        )));
    }
    Ok(addresses)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_servers_become_addresses() {
        assert_eq!(
            bootstrap_addresses(" b1:9093, b2 ,PLAINTEXT://b3:1,[::1]:7").unwrap(),
            ["b1:9093", "b2:9092", "b3:1", "[::1]:7"]
        );
        for bad in ["b1:x", "b1:0", "b1:70000", ":9092", " , "] {
            let err = bootstrap_addresses(bad).unwrap_err().to_string();
            assert!(err.contains("bootstrap.servers"), "{bad}: {err}");
        }
    }
}
