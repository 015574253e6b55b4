//! The brokers' view: which partitions exist and the [earliest, latest] of each, asked with a
//! consumer that never joins a group.

pub mod params;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::{Offset, TopicPartitionList};

use crate::error::{Error, Result};
use crate::names::check_name;
use crate::validate::PartitionRange;
use crate::TopicPartition;
pub use params::KafkaSettings;

/// Partitions per `offsets_for_times` call. librdkafka matches every answered partition to
/// the request by a linear search (`rd_kafka_topic_partition_list_update`), so one call costs
/// O(n²) in its partitions: 5,000 in one call took 110-170 ms, in calls of 250 about 40 ms
/// (one broker on loopback, both sides at once).
const PARTITIONS_PER_CALL: usize = 250;

/// Threads asking at once: per side (earliest, latest) for ListOffsets, and for Metadata.
const PARALLEL_CALLS: usize = 8;

/// A metadata and ListOffsets client for one cluster.
pub struct Brokers {
    consumer: BaseConsumer,
    settings: KafkaSettings,
    timeout: Duration,
}

impl Brokers {
    /// Creates the client; it connects on first use. Every call is bounded by `timeout`.
    pub fn new(settings: KafkaSettings, timeout: Duration) -> Result<Brokers> {
        if timeout.is_zero() {
            return Err(Error::invalid(
                "Kafka request timeout is 0 ms; allowed: 1 ms or more",
            ));
        }
        let consumer = create_consumer(&settings, None)?;
        Ok(Brokers {
            consumer,
            settings,
            timeout,
        })
    }

    pub fn settings(&self) -> &KafkaSettings {
        &self.settings
    }

    /// The partitions of each topic, from broker metadata, in the order asked. An unknown topic
    /// is an error naming it.
    pub fn partitions(&self, topics: &[String]) -> Result<Vec<TopicPartition>> {
        let known = self.topic_partitions(topics)?;
        let mut partitions = Vec::new();
        for topic in topics {
            let ids = known
                .get(topic.as_str())
                .cloned()
                .ok_or_else(|| Error::UnknownTopic {
                    topic: topic.clone(),
                    bootstrap: self.settings.bootstrap.clone(),
                })?;
            partitions.extend(
                ids.into_iter()
                    .map(|partition| TopicPartition::new(topic, partition)),
            );
        }
        Ok(partitions)
    }

    /// The sorted partition ids of those of the topics that exist; topics the brokers do not
    /// have are left out.
    pub fn topic_partitions(&self, topics: &[String]) -> Result<BTreeMap<String, Vec<i32>>> {
        // One Metadata request per topic, all at once: the whole cluster's metadata would make
        // librdkafka parse and sort every partition of every topic, on every load.
        let found = in_parallel(topics, |topic| {
            let metadata = self
                .consumer
                .fetch_metadata(Some(topic), self.timeout)
                .map_err(|err| self.error("metadata request", err))?;
            let mut found = Vec::new();
            for meta in metadata.topics() {
                if meta.name() != topic || meta.error().is_some() || meta.partitions().is_empty() {
                    continue;
                }
                let mut ids: Vec<i32> = meta.partitions().iter().map(|p| p.id()).collect();
                ids.sort_unstable();
                found.push((meta.name().to_string(), ids));
            }
            Ok(found)
        })?;
        Ok(found.into_iter().collect())
    }

    /// Every topic of the cluster except Kafka's internal ones (`__consumer_offsets`, ...),
    /// sorted.
    pub fn topics(&self) -> Result<Vec<String>> {
        let metadata = self
            .consumer
            .fetch_metadata(None, self.timeout)
            .map_err(|err| self.error("metadata request", err))?;
        let mut topics: Vec<String> = metadata
            .topics()
            .iter()
            .filter(|t| t.error().is_none() && !t.name().starts_with("__"))
            .map(|t| t.name().to_string())
            .collect();
        topics.sort_unstable();
        Ok(topics)
    }

    /// Earliest and latest offsets of the partitions: one ListOffsets request per leader for
    /// each side and each [`PARTITIONS_PER_CALL`] partitions, all asked at once.
    pub fn ranges(
        &self,
        partitions: &[TopicPartition],
    ) -> Result<HashMap<TopicPartition, PartitionRange>> {
        if partitions.is_empty() {
            return Ok(HashMap::new());
        }
        let (earliest, latest) = std::thread::scope(|scope| {
            let earliest = scope.spawn(|| self.list_offsets(partitions, Offset::Beginning));
            let latest = self.list_offsets(partitions, Offset::End);
            let earliest = earliest.join().unwrap_or_else(|_| {
                Err(Error::Internal("earliest offsets thread panicked".into()))
            });
            (earliest, latest)
        });
        let (earliest, latest) = (earliest?, latest?);
        earliest
            .into_iter()
            .map(|(tp, earliest)| {
                let latest = *latest.get(&tp).ok_or_else(|| {
                    Error::Internal(format!("no latest offset returned for {tp}"))
                })?;
                Ok((tp, PartitionRange { earliest, latest }))
            })
            .collect()
    }

    /// For each partition, the earliest offset whose record timestamp is at or after
    /// `timestamp_ms` (milliseconds since the epoch), or `None` when no record is that recent.
    /// One ListOffsets request per leader and [`PARTITIONS_PER_CALL`] partitions.
    pub fn offsets_for_timestamp(
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
        let reply = self.list_offsets_raw(partitions, Offset::Offset(timestamp_ms))?;
        reply
            .into_iter()
            .map(|(tp, offset)| match offset {
                Offset::Offset(offset) if offset >= 0 => Ok((tp, Some(offset))),
                Offset::End => Ok((tp, None)),
                other => Err(Error::Kafka {
                    operation: "list offsets for a timestamp",
                    bootstrap: self.settings.bootstrap.clone(),
                    message: format!("{tp} answered no offset ({other:?})"),
                }),
            })
            .collect()
    }

    fn list_offsets(
        &self,
        partitions: &[TopicPartition],
        side: Offset,
    ) -> Result<HashMap<TopicPartition, i64>> {
        self.list_offsets_raw(partitions, side)?
            .into_iter()
            .map(|(tp, offset)| match offset {
                Offset::Offset(offset) if offset >= 0 => Ok((tp, offset)),
                other => Err(Error::Kafka {
                    operation: "list offsets",
                    bootstrap: self.settings.bootstrap.clone(),
                    message: format!("{tp} answered no offset ({other:?})"),
                }),
            })
            .collect()
    }

    /// `offsets_for_times` for the partitions, [`PARTITIONS_PER_CALL`] at a time, the calls
    /// made at once: `query` is `Beginning`, `End` or a timestamp. The answers come in no
    /// particular order.
    fn list_offsets_raw(
        &self,
        partitions: &[TopicPartition],
        query: Offset,
    ) -> Result<Vec<(TopicPartition, Offset)>> {
        let chunks: Vec<&[TopicPartition]> = partitions.chunks(PARTITIONS_PER_CALL).collect();
        in_parallel(&chunks, |chunk| self.offsets_for_times(chunk, query))
    }

    /// One `offsets_for_times` call: one ListOffsets request per leader.
    fn offsets_for_times(
        &self,
        partitions: &[TopicPartition],
        query: Offset,
    ) -> Result<Vec<(TopicPartition, Offset)>> {
        let mut request = TopicPartitionList::with_capacity(partitions.len());
        for tp in partitions {
            request
                .add_partition_offset(&tp.topic, tp.partition, query)
                .map_err(|err| self.error("list offsets", err))?;
        }
        let reply = self
            .consumer
            .offsets_for_times(request, self.timeout)
            .map_err(|err| self.error("list offsets", err))?;
        reply
            .elements()
            .iter()
            .map(|element| {
                let tp = TopicPartition::new(element.topic(), element.partition());
                match element.error() {
                    Err(err) => Err(self.error_at("list offsets", &tp, err)),
                    Ok(()) => Ok((tp, element.offset())),
                }
            })
            .collect()
    }

    /// The offsets a Kafka consumer group committed (`__consumer_offsets`) for the partitions;
    /// `None` where it committed none.
    pub fn group_offsets(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<i64>)>> {
        check_name("group", group)?;
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        let consumer = create_consumer(&self.settings, Some(group))?;
        let mut request = TopicPartitionList::with_capacity(partitions.len());
        for tp in partitions {
            request.add_partition(&tp.topic, tp.partition);
        }
        let reply = consumer
            .committed_offsets(request, self.timeout)
            .map_err(|err| self.error("fetch group offsets", err))?;
        let mut committed: HashMap<TopicPartition, Option<i64>> = HashMap::new();
        for element in reply.elements() {
            let tp = TopicPartition::new(element.topic(), element.partition());
            if let Err(err) = element.error() {
                return Err(self.error_at("fetch group offsets", &tp, err));
            }
            let offset = match element.offset() {
                Offset::Offset(offset) if offset >= 0 => Some(offset),
                _ => None,
            };
            committed.insert(tp, offset);
        }
        Ok(partitions
            .iter()
            .map(|tp| (tp.clone(), committed.get(tp).copied().flatten()))
            .collect())
    }

    /// Commits offsets for a Kafka consumer group, as a consumer outside the group does. The
    /// brokers accept it only while the group has no active member, so that is checked first.
    pub fn commit_group_offsets(
        &self,
        group: &str,
        offsets: &[(TopicPartition, i64)],
    ) -> Result<()> {
        check_name("group", group)?;
        if offsets.is_empty() {
            return Ok(());
        }
        let consumer = create_consumer(&self.settings, Some(group))?;
        let groups = consumer
            .fetch_group_list(Some(group), self.timeout)
            .map_err(|err| self.error("describe group", err))?;
        if let Some(info) = groups.groups().iter().find(|g| g.name() == group) {
            if !info.members().is_empty() {
                return Err(Error::Kafka {
                    operation: "commit group offsets",
                    bootstrap: self.settings.bootstrap.clone(),
                    message: format!(
                        "group '{group}' has {} active member(s) (state {}); stop its consumers first",
                        info.members().len(),
                        info.state()
                    ),
                });
            }
        }
        let mut request = TopicPartitionList::with_capacity(offsets.len());
        for (tp, offset) in offsets {
            request
                .add_partition_offset(&tp.topic, tp.partition, Offset::Offset(*offset))
                .map_err(|err| self.error("commit group offsets", err))?;
        }
        consumer
            .commit(&request, CommitMode::Sync)
            .map_err(|err| self.error("commit group offsets", err))
    }

    fn error(&self, operation: &'static str, err: KafkaError) -> Error {
        if err.rdkafka_error_code() == Some(RDKafkaErrorCode::OperationTimedOut) {
            return Error::Timeout {
                server: format!("Kafka at {}", self.settings.bootstrap),
                operation,
                after: self.timeout,
            };
        }
        Error::Kafka {
            operation,
            bootstrap: self.settings.bootstrap.clone(),
            message: self.settings.redact(&err.to_string()),
        }
    }

    fn error_at(&self, operation: &'static str, tp: &TopicPartition, err: KafkaError) -> Error {
        match self.error(operation, err) {
            Error::Kafka {
                operation,
                bootstrap,
                message,
            } => Error::Kafka {
                operation,
                bootstrap,
                message: format!("{tp}: {message}"),
            },
            other => other,
        }
    }
}

/// `call` for every item, from up to [`PARALLEL_CALLS`] threads (none for a single item); the
/// answers concatenated, in no particular order. The first error wins.
fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    call: impl Fn(&T) -> Result<Vec<R>> + Sync,
) -> Result<Vec<R>> {
    if items.len() <= 1 {
        return items.first().map_or(Ok(Vec::new()), &call);
    }
    let threads = items.len().min(PARALLEL_CALLS);
    let call = &call;
    let answers: Vec<Result<Vec<R>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|first| {
                scope.spawn(move || {
                    let mut answers = Vec::new();
                    for item in items.iter().skip(first).step_by(threads) {
                        answers.extend(call(item)?);
                    }
                    Ok(answers)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(Error::Internal("a Kafka request thread panicked".into()))
                })
            })
            .collect()
    });
    let mut all = Vec::new();
    for answer in answers {
        all.extend(answer?);
    }
    Ok(all)
}

/// A consumer with the user's settings that never subscribes; with `group`, it can read and
/// commit that group's offsets.
fn create_consumer(settings: &KafkaSettings, group: Option<&str>) -> Result<BaseConsumer> {
    let mut config = ClientConfig::new();
    for (key, value) in &settings.settings {
        config.set(key, value);
    }
    if let Some(group) = group {
        config.set("group.id", group);
    }
    config.create().map_err(|err| {
        Error::invalid(format!(
            "Kafka client settings were refused: {}",
            settings.redact(&err.to_string())
        ))
    })
}
