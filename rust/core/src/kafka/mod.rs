//! The brokers' view: which partitions exist and the [earliest, latest] of each.
//!
//! Metadata and ListOffsets go over offsetkeeper's own connections (`connection`, with the
//! `kafka-protocol` crate's codecs in `protocol`):
//! one Metadata request for all the topics of a load, and one ListOffsets request per leader
//! for each side, both sides at once. librdkafka's `offsets_for_times`, used before, matches
//! answers to requests by linear search, O(n²) in the partitions of a call: at 1,000 partitions
//! it spent 6.7-12 ms, a third of it in `strcmp` (perf), where the requests themselves take
//! about 1 ms. The engine does not link librdkafka (its TLS is rustls): only the CLI's `migrate`,
//! which needs a consumer group, does, with OpenSSL (`rust/cli/src/migrate.rs`).

pub mod connection;
pub mod group;
pub mod params;
pub mod protocol;
mod scram;
pub mod security;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::sasl::{LoginWatch, SaslProviderHandle, SaslService};
use crate::validate::PartitionRange;
use crate::TopicPartition;
use connection::{CallError, Connection};
use kafka_protocol::messages::ListOffsetsResponse;
use kafka_protocol::protocol::Request;
pub use params::KafkaSettings;
use protocol::{
    Metadata, API_LIST_OFFSETS, API_METADATA, EARLIEST, LATEST, LIST_OFFSETS_VERSIONS,
    METADATA_VERSIONS,
};
use rustc_hash::FxHashMap;
use security::KafkaSecurity;

/// Connections per broker: a broker answers one connection's requests one after the other, and
/// the earliest side, the latest side and the metadata of a load are asked at once.
const LANES: usize = 6;
const LANE_EARLIEST: usize = 0;
const LANE_LATEST: usize = 1;
const LANE_METADATA: usize = 2;
/// The group coordinator's offset requests (OffsetFetch, OffsetCommit).
const LANE_GROUP: usize = 3;
/// The group coordinator's short membership requests (FindCoordinator, DescribeGroups,
/// Heartbeat, LeaveGroup).
const LANE_MEMBERSHIP: usize = 4;
/// JoinGroup and SyncGroup, which wait for a rebalance: never in front of a commit or a
/// heartbeat.
const LANE_JOIN: usize = 5;
pub use crate::config::defaults::DEFAULT_API_TIMEOUT;
use crate::config::defaults::{
    DEFAULT_KAFKA_PORT, DEFAULT_KAFKA_REQUEST_TIMEOUT, DEFAULT_RETRY_BACKOFF,
    DEFAULT_SETUP_TIMEOUT, MAX_TIMEOUT_MS,
};

/// A metadata and ListOffsets client for one cluster. Connections open on first use and are
/// kept; one that fails is dropped and opened again by the next request.
pub struct Brokers {
    settings: KafkaSettings,
    /// The deadline of one operation, retries included.
    timeout: Duration,
    request_timeout: Duration,
    setup_timeout: Duration,
    bootstrap: Vec<String>,
    client_id: String,
    security: KafkaSecurity,
    read_committed: bool,
    retry_backoff: Duration,
    view: Mutex<ClusterView>,
    connections: Mutex<HashMap<String, Arc<Lanes>>>,
    /// The topics `partitions_and_ids` was last asked for, and the partitions it found.
    last_found: Mutex<Option<(Vec<String>, Vec<TopicPartition>)>>,
    /// Each group's coordinator address, as FindCoordinator last found it.
    coordinators: Mutex<HashMap<String, String>>,
}

/// What the last Metadata answers said.
#[derive(Default)]
struct ClusterView {
    addresses: HashMap<i32, String>,
    /// Each topic's leader ids by partition number (-1: none known).
    leaders: FxHashMap<String, Vec<i32>>,
    /// The broker that answered the last Metadata request: asked first next time.
    metadata_broker: Option<String>,
}

struct Lanes([tokio::sync::Mutex<Option<Connection>>; LANES]);

/// Whether ListOffsets asks again after a retriable failure.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Retry {
    UntilDeadline,
    Never,
}

/// A failed attempt worth repeating (leadership moving, a broker restarting), with its cause.
struct Retriable(String);

/// The operation ListOffsets failures name.
const LIST_OFFSETS: &str = "list offsets";

/// One round of ListOffsets: each leader's address with its partitions' indices, in order;
/// the indices to ask again, and why.
#[derive(Default)]
struct Round {
    by_leader: Vec<(String, Vec<usize>)>,
    again: Vec<usize>,
    cause: Option<String>,
}

/// One operation's deadline and what it met on the way, for the message when it gives up.
struct Attempt {
    deadline: Instant,
    /// Brokers asked, in order, each once.
    tried: Mutex<Vec<String>>,
    last_cause: Mutex<Option<String>>,
    /// Since when it waits for the brokers to answer again (a leader election, a broker
    /// restarting): from its first pause.
    waiting_since: Mutex<Option<Instant>>,
    /// The bound of each request, when not the client's `request.timeout.ms` (a JoinGroup
    /// waits for the rebalance at the broker).
    request_timeout: Option<Duration>,
}

impl Attempt {
    fn new(timeout: Duration) -> Attempt {
        Attempt {
            deadline: Instant::now() + timeout,
            tried: Mutex::new(Vec::new()),
            last_cause: Mutex::new(None),
            waiting_since: Mutex::new(None),
            request_timeout: None,
        }
    }

    /// An attempt whose requests are each bounded by `request_timeout` (and what is left).
    fn with_request_timeout(timeout: Duration, request_timeout: Duration) -> Attempt {
        Attempt {
            request_timeout: Some(request_timeout),
            ..Attempt::new(timeout)
        }
    }

    /// Marks the start of its wait; true the first time.
    fn starts_waiting(&self) -> bool {
        let mut since = lock(&self.waiting_since);
        let first = since.is_none();
        since.get_or_insert_with(Instant::now);
        first
    }

    /// How long it waited, if it did.
    fn waited(&self) -> Option<Duration> {
        lock(&self.waiting_since).map(|since| since.elapsed())
    }

    fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    fn asked(&self, address: &str) {
        let mut tried = lock(&self.tried);
        if !tried.iter().any(|a| a == address) {
            tried.push(address.to_string());
        }
    }

    fn failed(&self, cause: &str) {
        *lock(&self.last_cause) = Some(cause.to_string());
    }

    /// "brokers tried: a, b; last cause: ..." for the message at the deadline.
    fn summary(&self) -> String {
        let tried = lock(&self.tried);
        let tried = if tried.is_empty() {
            "none".to_string()
        } else {
            tried.join(", ")
        };
        let cause = lock(&self.last_cause)
            .clone()
            .unwrap_or_else(|| "none".to_string());
        format!("brokers tried: {tried}; last cause: {cause}")
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A timeout setting of the job's kafkaParams in milliseconds, or `default` when unset.
fn timeout_setting(settings: &KafkaSettings, key: &str, default: Duration) -> Result<Duration> {
    match settings.get(key) {
        None => Ok(default),
        Some(value) => value
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|ms| (1..=MAX_TIMEOUT_MS).contains(ms))
            .map(Duration::from_millis)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{key} '{value}' is not allowed; allowed: a whole number of milliseconds from 1 to {MAX_TIMEOUT_MS}"
                ))
            }),
    }
}

impl Brokers {
    /// Checks the settings; connects on first use. Each operation (Metadata, ListOffsets, with
    /// their retries) is bounded by `timeout` when given, else by the job's
    /// `default.api.timeout.ms`, else by 60 s as in Kafka's clients; each request on one
    /// connection by `request.timeout.ms` (30 s), each connection set-up by
    /// `socket.connection.setup.timeout.ms` (10 s), and both by what is left of the deadline.
    /// `sasl.mechanism=GSSAPI` is refused ([`Brokers::with_sasl_provider`] takes it).
    pub fn new(settings: KafkaSettings, timeout: Option<Duration>) -> Result<Brokers> {
        Brokers::with_sasl_provider(settings, timeout, None)
    }

    /// [`Brokers::new`], with the host's provider for `sasl.mechanism=GSSAPI`.
    pub fn with_sasl_provider(
        settings: KafkaSettings,
        timeout: Option<Duration>,
        provider: Option<&SaslProviderHandle>,
    ) -> Result<Brokers> {
        let timeout = match timeout {
            Some(timeout) if timeout.is_zero() => {
                return Err(Error::invalid(
                    "Kafka timeout is 0 ms; allowed: 1 ms or more",
                ))
            }
            Some(timeout) => timeout,
            None => timeout_setting(&settings, "default.api.timeout.ms", DEFAULT_API_TIMEOUT)?,
        };
        let request_timeout = timeout_setting(
            &settings,
            "request.timeout.ms",
            DEFAULT_KAFKA_REQUEST_TIMEOUT,
        )?;
        let setup_timeout = timeout_setting(
            &settings,
            "socket.connection.setup.timeout.ms",
            DEFAULT_SETUP_TIMEOUT,
        )?;
        let security = KafkaSecurity::from_settings_and_provider(&settings, provider)?;
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
            request_timeout,
            setup_timeout,
            view: Mutex::new(ClusterView::default()),
            connections: Mutex::new(HashMap::new()),
            last_found: Mutex::new(None),
            coordinators: Mutex::new(HashMap::new()),
        })
    }

    pub fn settings(&self) -> &KafkaSettings {
        &self.settings
    }

    /// The deadline of one operation.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The partitions of each topic, from broker metadata, in the order asked. An unknown topic
    /// is an error naming it.
    pub async fn partitions(&self, topics: &[String]) -> Result<Vec<TopicPartition>> {
        Ok(self.partitions_and_ids(topics).await?.0)
    }

    /// The partitions of each topic in the order asked, and each topic's ID (`None` from
    /// brokers before 2.8). An unknown topic is an error naming it.
    pub async fn partitions_and_ids(
        &self,
        topics: &[String],
    ) -> Result<(Vec<TopicPartition>, HashMap<String, Option<String>>)> {
        let mut known = self.described(topics).await?;
        let mut partitions = Vec::new();
        let mut ids = HashMap::with_capacity(topics.len());
        for topic in topics {
            let (numbers, id) = known.remove(topic).ok_or_else(|| Error::UnknownTopic {
                topic: topic.clone(),
                bootstrap: self.settings.bootstrap.clone(),
            })?;
            let name: std::sync::Arc<str> = topic.as_str().into();
            partitions.extend(
                numbers
                    .iter()
                    .map(|n| TopicPartition::new(name.clone(), *n)),
            );
            ids.insert(topic.clone(), id);
        }
        *lock(&self.last_found) = Some((topics.to_vec(), partitions.clone()));
        Ok((partitions, ids))
    }

    /// The partitions `partitions_and_ids` found the last time it was asked for exactly these
    /// topics, if it was: what a load can ask the ranges of before the metadata is in.
    pub fn partitions_found_before(&self, topics: &[String]) -> Option<Vec<TopicPartition>> {
        match &*lock(&self.last_found) {
            Some((asked, found)) if asked.as_slice() == topics => Some(found.clone()),
            _ => None,
        }
    }

    /// The sorted partition ids of those of the topics that exist, from one Metadata request;
    /// topics the brokers do not have are left out.
    pub async fn topic_partitions(&self, topics: &[String]) -> Result<BTreeMap<String, Vec<i32>>> {
        Ok(self
            .described(topics)
            .await?
            .into_iter()
            .map(|(topic, (partitions, _))| (topic, partitions))
            .collect())
    }

    /// The sorted partition ids and the topic ID of those of the topics that exist, from one
    /// Metadata request; topics the brokers do not have are left out.
    pub async fn described(
        &self,
        topics: &[String],
    ) -> Result<BTreeMap<String, (Vec<i32>, Option<String>)>> {
        if topics.is_empty() {
            return Ok(BTreeMap::new());
        }
        let attempt = Attempt::new(self.timeout);
        self.bounded("metadata request", &attempt, async {
            loop {
                let metadata = self.metadata(&attempt, Some(topics)).await?;
                let mut found = BTreeMap::new();
                let mut cause = None;
                for topic in metadata.topics {
                    match topic.error {
                        0 if !topic.partitions.is_empty() => {
                            let mut ids: Vec<i32> =
                                topic.partitions.iter().map(|p| p.partition).collect();
                            ids.sort_unstable();
                            found.insert(topic.name, (ids, topic.topic_id));
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
                        self.pause(&attempt, "metadata request", Retriable(cause))
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
        let attempt = Attempt::new(self.timeout);
        let metadata = self
            .bounded("metadata request", &attempt, self.metadata(&attempt, None))
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
    pub async fn ranges(&self, partitions: &[TopicPartition]) -> Result<Vec<PartitionRange>> {
        self.ranges_with(partitions, Retry::UntilDeadline).await
    }

    /// `ranges` on the leaders known now, in one try: `None` when any partition has no known
    /// leader or any request fails (the caller asks `ranges` after fresh metadata). For a load
    /// that asks before its metadata is in.
    pub async fn ranges_on_known_leaders(
        &self,
        partitions: &[TopicPartition],
    ) -> Option<Vec<PartitionRange>> {
        self.ranges_with(partitions, Retry::Never)
            .await
            .map_err(|err| log::debug!("ranges asked ahead of metadata: {err}; asking again"))
            .ok()
    }

    async fn ranges_with(
        &self,
        partitions: &[TopicPartition],
        retry: Retry,
    ) -> Result<Vec<PartitionRange>> {
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        let attempt = Attempt::new(self.timeout);
        let (earliest, latest) = self
            .bounded("list offsets", &attempt, async {
                futures::try_join!(
                    self.list_offsets(
                        &attempt,
                        partitions,
                        At::Every(EARLIEST),
                        LANE_EARLIEST,
                        retry
                    ),
                    self.list_offsets(&attempt, partitions, At::Every(LATEST), LANE_LATEST, retry)
                )
            })
            .await?;
        Ok(earliest
            .into_iter()
            .zip(latest)
            .map(|(earliest, latest)| PartitionRange { earliest, latest })
            .collect())
    }

    /// For each partition, the earliest offset whose record timestamp is at or after
    /// `timestamp_ms` (milliseconds since the epoch), or `None` when no record is that recent
    /// (or the log's records carry no timestamps). One ListOffsets request per leader.
    pub async fn offsets_for_timestamp(
        &self,
        partitions: &[TopicPartition],
        timestamp_ms: i64,
    ) -> Result<HashMap<TopicPartition, Option<i64>>> {
        let asked: Vec<i64> = vec![timestamp_ms; partitions.len()];
        let found = self.offsets_at_times(partitions, &asked).await?;
        Ok(partitions.iter().cloned().zip(found).collect())
    }

    /// For each partition, the earliest offset whose record timestamp is at or after its own
    /// time in `timestamps_ms` (milliseconds since the epoch, in `partitions`' order), or
    /// `None` when no record is that recent (or the log's records carry no timestamps). One
    /// ListOffsets request per leader.
    pub async fn offsets_at_times(
        &self,
        partitions: &[TopicPartition],
        timestamps_ms: &[i64],
    ) -> Result<Vec<Option<i64>>> {
        if let Some(before) = timestamps_ms.iter().find(|t| **t < 0) {
            return Err(Error::invalid(format!(
                "timestamp {before} ms is before 1970; allowed: 0 or more"
            )));
        }
        if timestamps_ms.len() != partitions.len() {
            return Err(Error::Internal(format!(
                "{} timestamps for {} partitions",
                timestamps_ms.len(),
                partitions.len()
            )));
        }
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        let attempt = Attempt::new(self.timeout);
        let found = self
            .bounded(
                "list offsets for a timestamp",
                &attempt,
                self.list_offsets(
                    &attempt,
                    partitions,
                    At::Each(timestamps_ms),
                    LANE_EARLIEST,
                    Retry::UntilDeadline,
                ),
            )
            .await?;
        Ok(found
            .into_iter()
            .map(|offset| (offset >= 0).then_some(offset))
            .collect())
    }

    /// ListOffsets at each partition's time in `at`, asking each partition's leader; with
    /// `Retry::UntilDeadline` sent again after fresh metadata for partitions whose leadership
    /// moved. The offsets follow `partitions`' order.
    async fn list_offsets(
        &self,
        attempt: &Attempt,
        partitions: &[TopicPartition],
        at: At<'_>,
        lane: usize,
        retry: Retry,
    ) -> Result<Vec<i64>> {
        let mut answers: Vec<Option<i64>> = vec![None; partitions.len()];
        // Indices into `partitions` still to answer, in order.
        let mut pending: Vec<usize> = (0..partitions.len()).collect();
        loop {
            let mut round = self.by_leader(partitions, &pending);
            let answered = self
                .ask_leaders(attempt, partitions, &round.by_leader, at, lane)
                .await;
            self.take_offsets(partitions, answered, &mut round, &mut answers)?;
            let Round {
                mut again, cause, ..
            } = round;
            if again.is_empty() {
                return answers
                    .into_iter()
                    .zip(partitions)
                    .map(|(answer, tp)| {
                        answer
                            .ok_or_else(|| Error::Internal(format!("no offset returned for {tp}")))
                    })
                    .collect();
            }
            again.sort_unstable();
            again.dedup();
            let cause =
                cause.unwrap_or_else(|| format!("{} went unanswered", partitions[again[0]]));
            if retry == Retry::Never {
                return Err(self.failed(LIST_OFFSETS, &cause));
            }
            self.pause(attempt, LIST_OFFSETS, Retriable(cause)).await?;
            self.refresh_leaders(attempt, partitions, &again).await?;
            pending = again;
        }
    }

    /// The pending partitions by leader, in order; those without a known leader are to be
    /// asked again.
    fn by_leader(&self, partitions: &[TopicPartition], pending: &[usize]) -> Round {
        let mut round = Round::default();
        let view = self.view();
        let leaders = view.leaders_of(pending.iter().map(|i| &partitions[*i]));
        let mut slot_of: FxHashMap<i32, usize> = FxHashMap::default();
        for (index, leader) in pending.iter().copied().zip(leaders) {
            let address = leader.and_then(|id| view.addresses.get(&id).map(|a| (id, a)));
            match address {
                Some((id, address)) => {
                    let slot = *slot_of.entry(id).or_insert_with(|| {
                        round.by_leader.push((address.clone(), Vec::new()));
                        round.by_leader.len() - 1
                    });
                    round.by_leader[slot].1.push(index);
                }
                None => {
                    round.cause = Some(format!("{} has no leader", partitions[index]));
                    round.again.push(index);
                }
            }
        }
        round
    }

    /// One ListOffsets request to each leader for its partitions, all at once.
    async fn ask_leaders(
        &self,
        attempt: &Attempt,
        partitions: &[TopicPartition],
        by_leader: &[(String, Vec<usize>)],
        at: At<'_>,
        lane: usize,
    ) -> Vec<std::result::Result<ListOffsetsResponse, CallError>> {
        let calls = by_leader.iter().map(|(address, indices)| async move {
            let topics = request_topics(partitions, indices, at);
            let read_committed = self.read_committed;
            let timeout_ms = i32::try_from(self.request_timeout.as_millis()).unwrap_or(i32::MAX);
            self.call(
                attempt,
                address,
                lane,
                "ListOffsets",
                API_LIST_OFFSETS,
                LIST_OFFSETS_VERSIONS,
                |version| {
                    protocol::list_offsets_request(version, read_committed, &topics, timeout_ms)
                },
            )
            .await
        });
        futures::future::join_all(calls).await
    }

    /// Takes in the leaders' answers: each offset found, and the partitions to ask again (a
    /// broker that failed, a retriable error) with the cause. A refusal that no retry mends
    /// is the error.
    fn take_offsets(
        &self,
        partitions: &[TopicPartition],
        answered: Vec<std::result::Result<ListOffsetsResponse, CallError>>,
        round: &mut Round,
        answers: &mut [Option<i64>],
    ) -> Result<()> {
        for ((address, indices), answer) in round.by_leader.iter().zip(answered) {
            let listed = match answer {
                Ok(answer) => protocol::parse_list_offsets(answer),
                Err(
                    err @ (CallError::Unsupported { .. }
                    | CallError::Authentication(_)
                    | CallError::Malformed(_)),
                ) => return Err(self.failed(LIST_OFFSETS, &format!("broker {address}: {err}"))),
                Err(err) => {
                    round.cause = Some(format!("broker {address}: {err}"));
                    round.again.extend(indices);
                    continue;
                }
            };
            let index_of = AnswerIndex::new(partitions, indices);
            for (topic, position, entry) in listed.iter().enumerate().flat_map(|(t, topic)| {
                topic
                    .partitions
                    .iter()
                    .enumerate()
                    .map(move |(p, entry)| (topic, (t, p), entry))
            }) {
                // An answer for a partition not asked of this broker is ignored.
                let Some(index) = index_of.find(&topic.name, entry.partition, position) else {
                    continue;
                };
                match entry.error {
                    0 => answers[index] = Some(entry.offset),
                    // A log in a format without timestamps (before 0.10): no record has one.
                    protocol::UNSUPPORTED_FOR_MESSAGE_FORMAT => answers[index] = Some(-1),
                    code if protocol::is_retriable(code) => {
                        round.cause = Some(format!(
                            "{}: {}",
                            partitions[index],
                            protocol::error_name(code)
                        ));
                    }
                    code => {
                        return Err(self.refused(
                            LIST_OFFSETS,
                            &partitions[index].to_string(),
                            code,
                        ))
                    }
                }
            }
            round
                .again
                .extend(indices.iter().filter(|i| answers[**i].is_none()));
        }
        Ok(())
    }

    /// Fresh metadata for the topics of the partitions to ask again; a topic gone is an
    /// [`Error::UnknownTopic`].
    async fn refresh_leaders(
        &self,
        attempt: &Attempt,
        partitions: &[TopicPartition],
        again: &[usize],
    ) -> Result<()> {
        let topics: Vec<String> = again
            .iter()
            .map(|i| partitions[*i].topic.to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let metadata = self.metadata(attempt, Some(&topics)).await?;
        if let Some(gone) = metadata.topics.iter().find(|t| t.error == 3) {
            return Err(Error::UnknownTopic {
                topic: gone.name.clone(),
                bootstrap: self.settings.bootstrap.clone(),
            });
        }
        Ok(())
    }

    /// One Metadata request, to the broker that answered last, else to each bootstrap and known
    /// broker in turn. The answer updates the brokers' addresses and the partitions' leaders.
    async fn metadata(&self, attempt: &Attempt, topics: Option<&[String]>) -> Result<Metadata> {
        let candidates = self.metadata_candidates();
        loop {
            let mut failures = Vec::new();
            for address in &candidates {
                let answer = self
                    .call(
                        attempt,
                        address,
                        LANE_METADATA,
                        "Metadata",
                        API_METADATA,
                        METADATA_VERSIONS,
                        |version| protocol::metadata_request(version, topics),
                    )
                    .await;
                match answer {
                    Ok(answer) => {
                        let metadata = protocol::parse_metadata(answer);
                        self.view().learn(address, &metadata);
                        return Ok(metadata);
                    }
                    Err(
                        err @ (CallError::Unsupported { .. }
                        | CallError::Authentication(_)
                        | CallError::Malformed(_)),
                    ) => {
                        return Err(
                            self.failed("metadata request", &format!("broker {address}: {err}"))
                        )
                    }
                    Err(err) => failures.push(format!("{address}: {err}")),
                }
            }
            let cause = format!("no broker answered ({})", failures.join("; "));
            self.pause(attempt, "metadata request", Retriable(cause))
                .await?;
        }
    }

    /// One request on `lane` of the broker at `address`, with the highest version both speak;
    /// `request` fills it for that version. A kept connection that fails is replaced and the
    /// request sent once more on a new one. The connection set-up and the request are each
    /// bounded by their timeout and by what is left of the deadline, so that a dead or hung
    /// broker costs one bounded try and the caller can ask fresh metadata for another leader.
    #[allow(clippy::too_many_arguments)]
    async fn call<R: Request>(
        &self,
        attempt: &Attempt,
        address: &str,
        lane: usize,
        api: &'static str,
        api_key: i16,
        versions: std::ops::RangeInclusive<i16>,
        request: impl Fn(i16) -> R,
    ) -> std::result::Result<R::Response, CallError> {
        attempt.asked(address);
        // An async block, so that each `return` in it ends the request, not the call.
        let result = async {
            let lanes = self.lanes(address);
            let mut slot = lanes.0[lane % LANES].lock().await;
            let mut reused = slot.is_some();
            loop {
                // Out of its slot while a request is on the way, and back only with the answer
                // read: a call dropped half-way (its load failed on the ZooKeeper side first)
                // closes the connection, never leaving an answer behind for the next request.
                let mut connection = match slot.take() {
                    Some(connection) => connection,
                    None => {
                        let limit = self.setup_timeout.min(attempt.remaining());
                        let watch = LoginWatch::default();
                        let open = Connection::open_watched(
                            address,
                            &self.client_id,
                            &self.security,
                            &watch,
                        );
                        tokio::time::timeout(limit, open)
                            .await
                            .map_err(|_| self.setup_timed_out(address, limit, &watch))??
                    }
                };
                let version = match connection.version(api, api_key, versions.clone()) {
                    Ok(version) => version,
                    Err(err) => {
                        *slot = Some(connection);
                        return Err(err);
                    }
                };
                let limit = attempt
                    .request_timeout
                    .unwrap_or(self.request_timeout)
                    .min(attempt.remaining());
                let message = request(version);
                let answer = tokio::time::timeout(limit, connection.call(version, &message))
                    .await
                    .unwrap_or_else(|_| Err(timed_out(api, limit)));
                match answer {
                    Ok(answer) => {
                        *slot = Some(connection);
                        return Ok(answer);
                    }
                    Err(err) => {
                        // A timed-out connection may still get the old answer: never reused.
                        drop(connection);
                        let timed_out = matches!(&err, CallError::Io(io) if io.kind() == std::io::ErrorKind::TimedOut);
                        if !(reused && !timed_out && matches!(err, CallError::Io(_))) {
                            return Err(err);
                        }
                        reused = false;
                    }
                }
            }
        }
        .await;
        if let Err(err) = &result {
            attempt.failed(&format!("broker {address}: {err}"));
        }
        result
    }

    /// The brokers to ask for metadata, in turn: the one that answered last, the bootstrap
    /// servers, then every broker known.
    fn metadata_candidates(&self) -> Vec<String> {
        let view = self.view();
        let mut candidates: Vec<String> = view.metadata_broker.iter().cloned().collect();
        candidates.extend(self.bootstrap.iter().cloned());
        candidates.extend(view.addresses.values().cloned());
        let mut seen = HashSet::new();
        candidates.retain(|address| seen.insert(address.clone()));
        candidates
    }

    fn lanes(&self, address: &str) -> Arc<Lanes> {
        let mut connections = lock(&self.connections);
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
        lock(&self.view)
    }

    /// Waits out the retry backoff, or gives up with the cause when the deadline would pass.
    async fn pause(
        &self,
        attempt: &Attempt,
        operation: &'static str,
        cause: Retriable,
    ) -> Result<()> {
        attempt.failed(&cause.0);
        if Instant::now() + self.retry_backoff >= attempt.deadline {
            return Err(self.failed(
                operation,
                &format!(
                    "gave up after {} ms; {}",
                    self.timeout.as_millis(),
                    attempt.summary()
                ),
            ));
        }
        if attempt.starts_waiting() {
            // Once per operation; its end is said by `bounded`.
            log::info!(
                "Kafka {operation}: {}; asking again every {} ms until the brokers answer (a leader election or a broker restart), for at most {} ms",
                self.settings.redact(&cause.0),
                self.retry_backoff.as_millis(),
                attempt.remaining().as_millis()
            );
        } else {
            log::debug!("Kafka {operation}: {}; asking again", cause.0);
        }
        tokio::time::sleep(self.retry_backoff).await;
        Ok(())
    }

    /// `work` bounded by the operation's deadline (a backstop: its requests are bounded by
    /// what is left of it and give up on their own).
    async fn bounded<T>(
        &self,
        operation: &'static str,
        attempt: &Attempt,
        work: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let result = tokio::time::timeout_at(attempt.deadline.into(), work)
            .await
            .unwrap_or_else(|_| {
                Err(Error::Timeout {
                    server: format!("Kafka at {}", self.settings.bootstrap),
                    operation,
                    after: self.timeout,
                    detail: format!(" ({})", self.settings.redact(&attempt.summary())),
                })
            });
        if let Some(waited) = attempt.waited() {
            let outcome = match &result {
                Ok(_) => "the brokers answered",
                Err(_) => "gave up",
            };
            log::info!(
                "Kafka {operation}: {outcome} after waiting {} ms",
                waited.as_millis()
            );
        }
        result
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
            let leaders = self.leaders.entry(topic.name.clone()).or_default();
            for partition in &topic.partitions {
                // Kafka numbers a topic's partitions 0..n-1 and lists each one. A number beyond
                // that is malformed; taken as is, one short answer naming partition 2^31-1 would
                // allocate gigabytes here.
                let Some(number) = usize::try_from(partition.partition)
                    .ok()
                    .filter(|number| *number < topic.partitions.len())
                else {
                    continue;
                };
                if leaders.len() <= number {
                    leaders.resize(number + 1, -1);
                }
                leaders[number] = partition.leader.max(-1);
            }
        }
    }

    /// The leader of each partition (`None`: none known), looking each topic up once per run of
    /// its partitions.
    fn leaders_of<'p>(
        &self,
        partitions: impl Iterator<Item = &'p TopicPartition>,
    ) -> Vec<Option<i32>> {
        crate::partition_map::by_topic_runs(partitions, |topic| self.leaders.get(topic))
            .map(|(leaders, tp)| {
                let number = usize::try_from(tp.partition).ok()?;
                leaders?.get(number).copied().filter(|id| *id >= 0)
            })
            .collect()
    }
}

/// The time a ListOffsets request asks each partition for: one for all (such as [`EARLIEST`]),
/// or each partition's own, by its index.
#[derive(Debug, Clone, Copy)]
enum At<'a> {
    Every(i64),
    Each(&'a [i64]),
}

impl At<'_> {
    fn of(self, index: usize) -> i64 {
        match self {
            At::Every(timestamp) => timestamp,
            At::Each(timestamps) => timestamps[index],
        }
    }
}

/// The topics, partition numbers and times of a request for the partitions at `indices` (in
/// order; a topic's partitions are next to each other).
fn request_topics<'p>(
    partitions: &'p [TopicPartition],
    indices: &[usize],
    at: At<'_>,
) -> Vec<(&'p str, Vec<(i32, i64)>)> {
    let mut topics: Vec<(&str, Vec<(i32, i64)>)> = Vec::new();
    for index in indices {
        let tp = &partitions[*index];
        let asked = (tp.partition, at.of(*index));
        match topics.last_mut() {
            Some((topic, numbers)) if *topic == &*tp.topic => numbers.push(asked),
            _ => topics.push((&tp.topic, vec![asked])),
        }
    }
    topics
}

/// Finds which asked partition an answer's entry is. Brokers answer in the order asked, so an
/// entry is first looked for at its own position; a map of every asked partition is built
/// only for an answer in another order.
struct AnswerIndex<'p> {
    /// Per request topic: its name and the indices into `partitions` of its partitions.
    asked: Vec<(&'p str, Vec<usize>)>,
    partitions: &'p [TopicPartition],
    by_name: std::cell::OnceCell<FxHashMap<(&'p str, i32), usize>>,
}

impl<'p> AnswerIndex<'p> {
    fn new(partitions: &'p [TopicPartition], indices: &[usize]) -> AnswerIndex<'p> {
        let mut asked: Vec<(&str, Vec<usize>)> = Vec::new();
        for index in indices {
            let tp = &partitions[*index];
            match asked.last_mut() {
                Some((topic, of_topic)) if *topic == &*tp.topic => of_topic.push(*index),
                _ => asked.push((&tp.topic, vec![*index])),
            }
        }
        AnswerIndex {
            asked,
            partitions,
            by_name: std::cell::OnceCell::new(),
        }
    }

    /// The index of `topic`'s `partition`, answered at `position` (topic, partition) of the
    /// answer; `None` when it was not asked.
    fn find(&self, topic: &str, partition: i32, (t, p): (usize, usize)) -> Option<usize> {
        let in_place = self
            .asked
            .get(t)
            .filter(|(name, _)| *name == topic)
            .and_then(|(_, of_topic)| of_topic.get(p))
            .filter(|index| self.partitions[**index].partition == partition);
        if let Some(index) = in_place {
            return Some(*index);
        }
        self.by_name
            .get_or_init(|| {
                self.asked
                    .iter()
                    .flat_map(|(name, of_topic)| {
                        of_topic
                            .iter()
                            .map(move |i| ((*name, self.partitions[*i].partition), *i))
                    })
                    .collect()
            })
            .get(&(topic, partition))
            .copied()
    }
}

impl Brokers {
    /// A connection's setup that did not end by `limit`: a Kerberos login still waiting for
    /// its KDC says so (and is not asked again: the KDC, not the broker, is what failed), else
    /// a timeout of the connect.
    fn setup_timed_out(&self, address: &str, limit: Duration, watch: &LoginWatch) -> CallError {
        match &self.security.gssapi {
            Some(provider) if watch.waiting() => {
                let facts = provider.0.login_facts(SaslService::Kafka);
                CallError::Authentication(crate::kerberos::login_unfinished(
                    facts.as_ref(),
                    &format!("broker {address}"),
                    limit,
                ))
            }
            _ => timed_out("connecting", limit),
        }
    }
}

fn timed_out(what: &str, after: Duration) -> CallError {
    CallError::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("{what} timed out after {} ms", after.as_millis()),
    ))
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
            None => DEFAULT_KAFKA_PORT,
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
    fn a_metadata_answer_naming_a_partition_beyond_its_topics_count_allocates_nothing_for_it() {
        let partition = |partition, leader| protocol::PartitionMetadata {
            error: 0,
            partition,
            leader,
        };
        let metadata = protocol::Metadata {
            brokers: Vec::new(),
            topics: vec![protocol::TopicMetadata {
                error: 0,
                name: "t".to_string(),
                topic_id: None,
                is_internal: false,
                partitions: vec![partition(1, 7), partition(i32::MAX, 8), partition(0, 6)],
            }],
        };
        let mut view = ClusterView::default();
        view.learn("b:9092", &metadata);
        assert_eq!(view.leaders["t"], vec![6, 7]);
    }

    fn settings(params: &[(&str, &str)]) -> KafkaSettings {
        KafkaSettings::from_params(params.iter().copied()).unwrap()
    }

    #[test]
    fn the_deadline_is_the_explicit_one_else_default_api_timeout_else_60_s() {
        let bootstrap = ("bootstrap.servers", "127.0.0.1:9");
        let plain = settings(&[bootstrap]);
        let tuned = settings(&[bootstrap, ("default.api.timeout.ms", " 5000 ")]);
        assert_eq!(
            Brokers::new(plain, None).unwrap().timeout(),
            DEFAULT_API_TIMEOUT
        );
        assert_eq!(
            Brokers::new(tuned.clone(), None).unwrap().timeout(),
            Duration::from_secs(5)
        );
        let explicit = Some(Duration::from_millis(700));
        assert_eq!(
            Brokers::new(tuned, explicit).unwrap().timeout(),
            Duration::from_millis(700)
        );
        assert!(Brokers::new(settings(&[bootstrap]), Some(Duration::ZERO)).is_err());
        for key in [
            "default.api.timeout.ms",
            "request.timeout.ms",
            "socket.connection.setup.timeout.ms",
        ] {
            for bad in ["0", "-5", "1.5", "ten", "2147483648"] {
                let err = Brokers::new(settings(&[bootstrap, (key, bad)]), None)
                    .err()
                    .unwrap()
                    .to_string();
                assert!(
                    err.contains(&format!("{key} '{bad}'")) && err.contains("2147483647"),
                    "{err}"
                );
            }
        }
    }

    /// A broker that accepts connections and never answers (a hung process), and a port where
    /// nothing listens (a killed one): each costs a bounded try, and the error at the deadline
    /// names the brokers tried and the last cause.
    #[test]
    fn dead_and_hung_brokers_fail_within_the_deadline_naming_them() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let hung = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let hung_address = hung.local_addr().unwrap().to_string();
            let accepted = tokio::spawn(async move {
                let mut kept = Vec::new();
                while let Ok((socket, _)) = hung.accept().await {
                    kept.push(socket);
                }
            });
            let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let dead_address = dead.local_addr().unwrap().to_string();
            drop(dead);
            let brokers = Brokers::new(
                settings(&[
                    (
                        "bootstrap.servers",
                        &format!("{hung_address},{dead_address}"),
                    ),
                    ("socket.connection.setup.timeout.ms", "300"),
                ]),
                Some(Duration::from_millis(1500)),
            )
            .unwrap();
            let started = Instant::now();
            let err = brokers
                .partitions(&["t".to_string()])
                .await
                .unwrap_err()
                .to_string();
            let took = started.elapsed();
            accepted.abort();
            assert!(took < Duration::from_millis(2500), "took {took:?}: {err}");
            assert!(
                err.contains(&hung_address) && err.contains(&dead_address),
                "{err}"
            );
            // The hung broker's try ends at the set-up timeout (or what is left of the deadline),
            // not at the deadline.
            assert!(err.contains("last cause: broker 127.0.0.1:"), "{err}");
        });
    }

    #[test]
    fn answers_are_matched_to_what_was_asked_in_any_order() {
        let partitions: Vec<TopicPartition> = [("a", 0), ("a", 1), ("b", 7), ("a", 2)]
            .iter()
            .map(|(t, p)| TopicPartition::new(*t, *p))
            .collect();
        // Asked of this broker: a-0, a-1 and b-7 (indices 0, 1, 2), not a-2.
        let asked = [0, 1, 2];
        assert_eq!(
            request_topics(&partitions, &asked, At::Every(EARLIEST)),
            vec![
                ("a", vec![(0, EARLIEST), (1, EARLIEST)]),
                ("b", vec![(7, EARLIEST)])
            ]
        );
        // Each partition's own time, by its index.
        let times = [100, 101, 107, 102];
        assert_eq!(
            request_topics(&partitions, &asked, At::Each(&times)),
            vec![("a", vec![(0, 100), (1, 101)]), ("b", vec![(7, 107)])]
        );
        let index = AnswerIndex::new(&partitions, &asked);
        // In the order asked.
        assert_eq!(index.find("a", 1, (0, 1)), Some(1));
        assert_eq!(index.find("b", 7, (1, 0)), Some(2));
        // Elsewhere in the answer.
        assert_eq!(index.find("b", 7, (0, 0)), Some(2));
        assert_eq!(index.find("a", 0, (1, 3)), Some(0));
        // Not asked of this broker, or not asked at all.
        assert_eq!(index.find("a", 2, (0, 2)), None);
        assert_eq!(index.find("c", 0, (2, 0)), None);
    }

    #[test]
    fn leaders_are_known_per_partition_number() {
        let mut view = ClusterView::default();
        view.leaders.insert("a".into(), vec![1, -1, 2]);
        let asked: Vec<TopicPartition> = [("a", 0), ("a", 1), ("a", 2), ("a", 3), ("b", 0)]
            .iter()
            .map(|(t, p)| TopicPartition::new(*t, *p))
            .collect();
        assert_eq!(
            view.leaders_of(asked.iter()),
            vec![Some(1), None, Some(2), None, None]
        );
    }

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
