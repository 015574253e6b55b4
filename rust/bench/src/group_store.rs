//! KF, the protocol floor of the Kafka group store: the requests offsetkeeper's Kafka store
//! needs, sent straight from Rust with the engine's wire encoding and connection and nothing
//! around them (no membership, no validation, no JNI).
//!
//! A load is, at the same time, one Metadata request then one ListOffsets per leader and side
//! (as the ZooKeeper floor's), and one OffsetFetch of the group from its coordinator (found with
//! FindCoordinator on a cold load, kept on a warm one). A commit compares every entry of the
//! batch with what it last wrote to the group and sends the changed ones in one OffsetCommit, each
//! with offsetkeeper's metadata string (the topic's ID and the time: the bytes offsetkeeper sends),
//! as a simple commit (generation -1).

use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    ApiKey, FindCoordinatorRequest, GroupId, OffsetCommitRequest, OffsetFetchRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use offsetkeeper::kafka::connection::Connection;

use crate::{list_ranges, open, Batch, Kafka, Result, Written, MAX_PARTITION, NOTHING};

/// The versions the engine speaks (rust/core/src/kafka/group.rs).
const FIND_COORDINATOR_VERSIONS: RangeInclusive<i16> = 0..=3;
const OFFSET_FETCH_VERSIONS: RangeInclusive<i16> = 2..=7;
const OFFSET_COMMIT_VERSIONS: RangeInclusive<i16> = 2..=8;

/// The engine's bound on one OffsetCommit's offset records (rust/core/src/kafka/group.rs):
/// under `__consumer_offsets`' 1 MB record batch limit.
const OFFSET_COMMIT_RECORD_BYTES: usize = 900_000;
const OFFSET_RECORD_FIXED_BYTES: usize = 50;

/// One simple commit (generation -1) of `entries` (topic index, partition, offset), one topic
/// entry per run of the same topic.
fn commit_request(
    version: i16,
    group: &str,
    names: &[String],
    metadata: &[String],
    entries: &[(usize, i32, i64)],
) -> OffsetCommitRequest {
    let mut request = OffsetCommitRequest::default();
    request.group_id = GroupId(text(group));
    request.generation_id_or_member_epoch = -1;
    if version <= 4 {
        request.retention_time_ms = -1;
    }
    let mut last = usize::MAX;
    for &(index, partition, offset) in entries {
        if index != last {
            let mut topic = OffsetCommitRequestTopic::default();
            topic.name = TopicName(text(&names[index]));
            request.topics.push(topic);
            last = index;
        }
        let mut p = OffsetCommitRequestPartition::default();
        p.partition_index = partition;
        p.committed_offset = offset;
        p.committed_leader_epoch = -1;
        p.committed_metadata = Some(text(&metadata[index]));
        if let Some(topic) = request.topics.last_mut() {
            topic.partitions.push(p);
        }
    }
    request
}

/// Connections of the Kafka-store floor: metadata and leaders, and each group's coordinator.
pub(crate) struct GroupClients {
    kafka: Kafka,
    /// A second bootstrap connection for FindCoordinator, so that it runs beside Metadata.
    finder: Connection,
    /// Coordinator address by group, and one connection per coordinator.
    coordinator_of: HashMap<String, String>,
    coordinators: HashMap<String, Connection>,
    /// Topic IDs from the last Metadata answer, for the commits' metadata strings.
    topic_ids: HashMap<String, String>,
}

/// The Kafka-store floor's state: warm connections and what each commit group last got.
#[derive(Default)]
pub(crate) struct GroupFloor {
    warm: Option<GroupClients>,
    written: HashMap<String, Written>,
}

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

async fn connect(bootstrap: &str) -> Result<GroupClients> {
    let (metadata, finder) = tokio::try_join!(open(bootstrap), open(bootstrap))?;
    Ok(GroupClients {
        kafka: Kafka {
            metadata,
            leaders: HashMap::new(),
        },
        finder,
        coordinator_of: HashMap::new(),
        coordinators: HashMap::new(),
        topic_ids: HashMap::new(),
    })
}

/// The group's coordinator connection: found (FindCoordinator) and opened unless known.
async fn coordinator<'a>(
    finder: &mut Connection,
    coordinator_of: &mut HashMap<String, String>,
    coordinators: &'a mut HashMap<String, Connection>,
    group: &str,
) -> Result<&'a mut Connection> {
    let address = match coordinator_of.get(group) {
        Some(address) => address.clone(),
        None => {
            let version = finder
                .version(
                    "FindCoordinator",
                    ApiKey::FindCoordinator as i16,
                    FIND_COORDINATOR_VERSIONS,
                )
                .map_err(|e| e.to_string())?;
            let mut request = FindCoordinatorRequest::default();
            request.key = text(group);
            let found = finder
                .call(version, &request)
                .await
                .map_err(|e| format!("find coordinator: {e}"))?;
            if found.error_code != 0 {
                return Err(format!("find coordinator: error {}", found.error_code));
            }
            let address = format!("{}:{}", found.host, found.port);
            coordinator_of.insert(group.to_string(), address.clone());
            address
        }
    };
    if !coordinators.contains_key(&address) {
        let connection = open(&address).await?;
        coordinators.insert(address.clone(), connection);
    }
    coordinators
        .get_mut(&address)
        .ok_or_else(|| "no coordinator connection".to_string())
}

/// One OffsetFetch of every topic the group committed; the number of offsets it holds.
async fn fetch(connection: &mut Connection, group: &str) -> Result<usize> {
    let version = connection
        .version(
            "OffsetFetch",
            ApiKey::OffsetFetch as i16,
            OFFSET_FETCH_VERSIONS,
        )
        .map_err(|e| e.to_string())?;
    let mut request = OffsetFetchRequest::default();
    request.group_id = GroupId(text(group));
    request.topics = None::<Vec<OffsetFetchRequestTopic>>;
    let answer = connection
        .call(version, &request)
        .await
        .map_err(|e| format!("offset fetch: {e}"))?;
    if answer.error_code != 0 {
        return Err(format!("offset fetch: error {}", answer.error_code));
    }
    Ok(answer
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .filter(|p| p.error_code == 0 && p.committed_offset >= 0)
        .count())
}

/// Metadata and ListOffsets beside FindCoordinator (when unknown) and OffsetFetch.
async fn load(clients: &mut GroupClients, group: &str, topics: &[String]) -> Result<usize> {
    let GroupClients {
        kafka,
        finder,
        coordinator_of,
        coordinators,
        topic_ids,
    } = clients;
    let fetched = async {
        let connection = coordinator(finder, coordinator_of, coordinators, group).await?;
        fetch(connection, group).await
    };
    let ((listed, ids), fetched) = tokio::try_join!(list_ranges(kafka, topics), fetched)?;
    if fetched == 0 {
        return Err(format!("group {group} holds no committed offsets"));
    }
    topic_ids.extend(ids);
    Ok(listed)
}

/// The warm clients, connected on first use (not timed).
fn warm<'a>(
    warm: &'a mut Option<GroupClients>,
    runtime: &tokio::runtime::Runtime,
    bootstrap: &str,
) -> Result<&'a mut GroupClients> {
    if warm.is_none() {
        *warm = Some(runtime.block_on(connect(bootstrap))?);
    }
    warm.as_mut().ok_or_else(|| "no warm clients".into())
}

impl GroupFloor {
    /// Cold: every connection, the coordinator's lookup included, made inside the timed region.
    pub(crate) fn load_cold(
        &self,
        runtime: &tokio::runtime::Runtime,
        bootstrap: &str,
        group: &str,
        topics: &[String],
    ) -> Result<(u128, usize)> {
        let start = Instant::now();
        let (count, clients) = runtime.block_on(async {
            let mut clients = connect(bootstrap).await?;
            let count = load(&mut clients, group, topics).await?;
            Ok::<_, String>((count, clients))
        })?;
        let elapsed = start.elapsed().as_nanos();
        drop(clients);
        Ok((elapsed, count))
    }

    pub(crate) fn load_warm(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        bootstrap: &str,
        group: &str,
        topics: &[String],
    ) -> Result<(u128, usize)> {
        let clients = warm(&mut self.warm, runtime, bootstrap)?;
        if !clients.coordinator_of.contains_key(group) {
            runtime.block_on(load(clients, group, topics))?;
        }
        let start = Instant::now();
        let count = runtime.block_on(load(clients, group, topics))?;
        Ok((start.elapsed().as_nanos(), count))
    }

    /// A job's commit with the least work: the changed entries (compared with what this program
    /// last wrote to the group) in one OffsetCommit. Comparing, the request and its answer are
    /// timed; the coordinator is looked up before the clock starts.
    pub(crate) fn commit(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        bootstrap: &str,
        group: &str,
        batch: &Batch,
    ) -> Result<(u128, usize)> {
        let clients = warm(&mut self.warm, runtime, bootstrap)?;
        let GroupClients {
            finder,
            coordinator_of,
            coordinators,
            topic_ids,
            ..
        } = clients;
        let connection =
            runtime.block_on(coordinator(finder, coordinator_of, coordinators, group))?;
        let version = connection
            .version(
                "OffsetCommit",
                ApiKey::OffsetCommit as i16,
                OFFSET_COMMIT_VERSIONS,
            )
            .map_err(|e| e.to_string())?;
        let start = Instant::now();
        let written = self.written.entry(group.to_string()).or_default();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        // Each entry compared with what was last written; the changed ones, in batch order.
        let mut columns: Vec<Vec<i64>> = batch
            .names
            .iter()
            .map(|name| written.remove(name).unwrap_or_default())
            .collect();
        let mut changed = Vec::new();
        for &(index, partition, offset) in &batch.entries {
            let slot = usize::try_from(partition)
                .ok()
                .filter(|&slot| slot < MAX_PARTITION)
                .ok_or_else(|| format!("partition {partition} is outside 0..{MAX_PARTITION}"))?;
            let column = columns.get_mut(index).ok_or("topic index out of range")?;
            if slot >= column.len() {
                column.resize(slot + 1, NOTHING);
            }
            if column[slot] != offset {
                column[slot] = offset;
                changed.push((index, partition, offset));
            }
        }
        for (name, column) in batch.names.iter().zip(columns) {
            written.insert(name.clone(), column);
        }
        let metadata: Vec<String> = batch
            .names
            .iter()
            .map(|name| match topic_ids.get(name) {
                Some(id) => {
                    format!("{{\"offsetkeeper\":1,\"topic_id\":\"{id}\",\"committed_at\":{now}}}")
                }
                None => format!("{{\"offsetkeeper\":1,\"committed_at\":{now}}}"),
            })
            .collect();
        // As many OffsetCommit requests as the coordinator's record batch limit asks for (the
        // engine's bound), one after the other.
        let mut refused = Ok(None);
        let mut rest = &changed[..];
        while !rest.is_empty() && matches!(refused, Ok(None)) {
            let mut bytes = 0;
            let len = rest
                .iter()
                .take_while(|(index, _, _)| {
                    bytes += OFFSET_RECORD_FIXED_BYTES
                        + group.len()
                        + batch.names[*index].len()
                        + metadata[*index].len();
                    bytes <= OFFSET_COMMIT_RECORD_BYTES
                })
                .count()
                .max(1);
            let (part, tail) = rest.split_at(len);
            rest = tail;
            let request = commit_request(version, group, &batch.names, &metadata, part);
            refused = runtime
                .block_on(connection.call(version, &request))
                .map_err(|e| format!("offset commit: {e}"))
                .map(|a| {
                    a.topics
                        .iter()
                        .flat_map(|t| &t.partitions)
                        .find(|p| p.error_code != 0)
                        .map(|p| p.error_code)
                });
        }
        let changed = changed.len();
        let elapsed = start.elapsed().as_nanos();
        match refused {
            Ok(None) => Ok((elapsed, changed)),
            Ok(Some(code)) => {
                self.written.remove(group);
                Err(format!("offset commit: error {code}"))
            }
            Err(e) => {
                // Not known what the group holds now: the next batch writes every entry.
                self.written.remove(group);
                Err(e)
            }
        }
    }
}
