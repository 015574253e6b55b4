//! The brokers' view: which partitions exist and the [earliest, latest] of each, asked with a
//! consumer that never joins a group.

pub mod params;

use std::collections::HashMap;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::{Offset, TopicPartitionList};

use crate::error::{Error, Result};
use crate::validate::PartitionRange;
use crate::TopicPartition;
pub use params::KafkaSettings;

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
        let mut config = ClientConfig::new();
        for (key, value) in &settings.settings {
            config.set(key, value);
        }
        let consumer: BaseConsumer = config.create().map_err(|err| {
            Error::invalid(format!(
                "Kafka client settings were refused: {}",
                settings.redact(&err.to_string())
            ))
        })?;
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
        // One request either way: a single topic's metadata, or the whole cluster's for several.
        let only = match topics {
            [topic] => Some(topic.as_str()),
            _ => None,
        };
        let metadata = self
            .consumer
            .fetch_metadata(only, self.timeout)
            .map_err(|err| self.error("metadata request", err))?;
        let known: HashMap<&str, _> = metadata.topics().iter().map(|t| (t.name(), t)).collect();
        let mut partitions = Vec::new();
        for topic in topics {
            let found = known
                .get(topic.as_str())
                .filter(|meta| meta.error().is_none() && !meta.partitions().is_empty())
                .ok_or_else(|| Error::UnknownTopic {
                    topic: topic.clone(),
                    bootstrap: self.settings.bootstrap.clone(),
                })?;
            let mut ids: Vec<i32> = found.partitions().iter().map(|p| p.id()).collect();
            ids.sort_unstable();
            partitions.extend(
                ids.into_iter()
                    .map(|partition| TopicPartition::new(topic, partition)),
            );
        }
        Ok(partitions)
    }

    /// Earliest and latest offsets of the partitions: one ListOffsets request per leader for
    /// each side, both sides asked at once.
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

    fn list_offsets(
        &self,
        partitions: &[TopicPartition],
        side: Offset,
    ) -> Result<HashMap<TopicPartition, i64>> {
        let mut request = TopicPartitionList::with_capacity(partitions.len());
        for tp in partitions {
            request
                .add_partition_offset(&tp.topic, tp.partition, side)
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
                if let Err(err) = element.error() {
                    return Err(self.error_at("list offsets", &tp, err));
                }
                match element.offset() {
                    Offset::Offset(offset) if offset >= 0 => Ok((tp, offset)),
                    other => Err(Error::Kafka {
                        operation: "list offsets",
                        bootstrap: self.settings.bootstrap.clone(),
                        message: format!("{tp} answered no offset ({other:?})"),
                    }),
                }
            })
            .collect()
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
