//! Kafka consumer groups (`__consumer_offsets`) for `migrate`, through librdkafka. Only this
//! tool links librdkafka: the engine and the JNI library ask the brokers with the engine's own
//! connections, which need no consumer group.

use std::collections::HashMap;
use std::time::Duration;

use offsetkeeper::kafka::params::JAVA_ONLY_KEYS;
use offsetkeeper::names::check_name;
use offsetkeeper::{check_commit, KafkaSettings, TopicPartition};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::{Offset, TopicPartitionList};

use crate::Failure;

/// Why a consumer-group call failed. Secrets of the settings never appear in a message.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    /// Bad input (names, offsets), refused before anything is sent.
    #[error(transparent)]
    Invalid(#[from] offsetkeeper::Error),

    /// librdkafka refused the client settings.
    #[error("invalid argument: Kafka client settings were refused: {0}")]
    Settings(String),

    /// The brokers did not answer within the timeout.
    #[error("Kafka at {bootstrap} did not answer {operation} within {} ms", .after.as_millis())]
    Timeout {
        bootstrap: String,
        operation: &'static str,
        after: Duration,
    },

    /// The group has members: the brokers take commits from outside only for an empty group.
    #[error("Kafka {operation} failed (bootstrap.servers={bootstrap}): group '{group}' has {members} active member(s) (state {state}); stop its consumers first")]
    ActiveGroup {
        operation: &'static str,
        bootstrap: String,
        group: String,
        members: usize,
        state: String,
    },

    /// A broker or librdkafka reported an error.
    #[error("Kafka {operation} failed (bootstrap.servers={bootstrap}): {message}")]
    Kafka {
        operation: &'static str,
        bootstrap: String,
        message: String,
    },
}

impl From<GroupError> for Failure {
    fn from(err: GroupError) -> Failure {
        Failure::failed(err.to_string())
    }
}

/// Reads and commits the offsets of Kafka consumer groups, as a consumer outside the group
/// does: it never subscribes or joins. Every call is bounded by the timeout.
pub struct ConsumerGroups {
    settings: KafkaSettings,
    timeout: Duration,
}

impl ConsumerGroups {
    pub fn new(settings: KafkaSettings, timeout: Duration) -> ConsumerGroups {
        ConsumerGroups { settings, timeout }
    }

    /// The offsets the group committed for the partitions, in the order given; `None` where it
    /// committed none.
    pub fn committed(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<i64>)>, GroupError> {
        const OPERATION: &str = "fetch group offsets";
        check_name("group", group)?;
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        let consumer = self.consumer(group)?;
        let mut request = TopicPartitionList::with_capacity(partitions.len());
        for tp in partitions {
            request.add_partition(&tp.topic, tp.partition);
        }
        let reply = consumer
            .committed_offsets(request, self.timeout)
            .map_err(|err| self.error(OPERATION, None, err))?;
        let mut committed: HashMap<TopicPartition, Option<i64>> = HashMap::new();
        for element in reply.elements() {
            let tp = TopicPartition::new(element.topic(), element.partition());
            if let Err(err) = element.error() {
                return Err(self.error(OPERATION, Some(&tp), err));
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

    /// Commits offsets for the group. Refused while the group has an active member (checked
    /// first), and for the bad input [`offsetkeeper::OffsetKeeper::commit`] refuses.
    pub fn commit(&self, group: &str, offsets: &[(TopicPartition, i64)]) -> Result<(), GroupError> {
        const OPERATION: &str = "commit group offsets";
        check_commit(group, offsets)?;
        if offsets.is_empty() {
            return Ok(());
        }
        let consumer = self.consumer(group)?;
        let groups = consumer
            .fetch_group_list(Some(group), self.timeout)
            .map_err(|err| self.error("describe group", None, err))?;
        if let Some(info) = groups.groups().iter().find(|g| g.name() == group) {
            if !info.members().is_empty() {
                return Err(GroupError::ActiveGroup {
                    operation: OPERATION,
                    bootstrap: self.settings.bootstrap.clone(),
                    group: group.to_string(),
                    members: info.members().len(),
                    state: info.state().to_string(),
                });
            }
        }
        let mut request = TopicPartitionList::with_capacity(offsets.len());
        for (tp, offset) in offsets {
            request
                .add_partition_offset(&tp.topic, tp.partition, Offset::Offset(*offset))
                .map_err(|err| self.error(OPERATION, Some(tp), err))?;
        }
        consumer
            .commit(&request, CommitMode::Sync)
            .map_err(|err| self.error(OPERATION, None, err))
    }

    /// A consumer with the job's settings and `group.id`, which never subscribes. The keys only
    /// the Java client knows (offsetkeeper's own connections read them) are left out.
    fn consumer(&self, group: &str) -> Result<BaseConsumer, GroupError> {
        let mut config = ClientConfig::new();
        for (key, value) in &self.settings.settings {
            if !JAVA_ONLY_KEYS.contains(&key.as_str()) {
                config.set(key, value);
            }
        }
        config.set("group.id", group);
        config
            .create()
            .map_err(|err| GroupError::Settings(self.settings.redact(&err.to_string())))
    }

    fn error(
        &self,
        operation: &'static str,
        at: Option<&TopicPartition>,
        err: KafkaError,
    ) -> GroupError {
        if err.rdkafka_error_code() == Some(RDKafkaErrorCode::OperationTimedOut) {
            return GroupError::Timeout {
                bootstrap: self.settings.bootstrap.clone(),
                operation,
                after: self.timeout,
            };
        }
        let message = self.settings.redact(&err.to_string());
        GroupError::Kafka {
            operation,
            bootstrap: self.settings.bootstrap.clone(),
            message: match at {
                Some(tp) => format!("{tp}: {message}"),
                None => message,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups() -> ConsumerGroups {
        let settings = KafkaSettings::from_params([
            ("bootstrap.servers", "127.0.0.1:1"),
            ("sasl.password", "hunter2-secret"),
        ])
        .expect("settings");
        ConsumerGroups::new(settings, Duration::from_millis(200))
    }

    #[test]
    fn bad_input_is_refused_before_anything_is_sent() {
        let groups = groups();
        let tp = TopicPartition::new("orders", 0);
        let message = groups.commit("g", &[(tp.clone(), -1)]).unwrap_err();
        assert!(matches!(message, GroupError::Invalid(_)), "{message}");
        assert!(message.to_string().contains("offset -1"), "{message}");
        let message = groups.commit("g", &[(tp.clone(), 1), (tp.clone(), 2)]);
        assert!(message.unwrap_err().to_string().contains("twice"));
        let message = groups.committed("bad/group", &[tp]).unwrap_err();
        assert!(message.to_string().contains("bad/group"), "{message}");
        assert!(groups
            .committed("g", &[])
            .expect("nothing asked")
            .is_empty());
        assert!(groups.commit("g", &[]).is_ok());
    }

    #[test]
    fn refused_settings_are_an_error_without_secrets() {
        let settings = KafkaSettings::from_params([
            ("bootstrap.servers", "127.0.0.1:1"),
            ("security.protocol", "NOT-A-PROTOCOL"),
            ("sasl.password", "hunter2-secret"),
        ])
        .expect("settings");
        let groups = ConsumerGroups::new(settings, Duration::from_millis(200));
        let err = groups
            .committed("g", &[TopicPartition::new("orders", 0)])
            .unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, GroupError::Settings(_)), "{message}");
        assert!(!message.contains("hunter2-secret"), "{message}");
    }
}
