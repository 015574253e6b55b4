//! offsetkeeper: Spark Streaming's Kafka offsets in ZooKeeper, loaded, validated against the
//! brokers' current range, and committed atomically.
//!
//! The engine has no JNI in it; the JNI bridge, the CLI and the tests all drive [`OffsetKeeper`].

mod admin;
mod batch;
mod commit;
pub mod config;
mod context;
pub mod error;
pub mod kafka;
mod kafka_store;
mod keeper;
pub mod kerberos;
mod lag;
mod load;
mod mirror;
pub mod names;
mod ownership;
mod partition_map;
#[cfg(test)]
mod properties;
mod reconnect;
mod recreated;
mod runtime;
pub mod sasl;
pub mod tls;
mod tracked;
pub mod validate;
pub mod zookeeper;

use std::fmt;
use std::sync::Arc;

pub use admin::{GroupSummary, Surveyed};
pub use batch::CommitBatch;
pub use commit::{check_commit, CommitSummary};
pub use config::{KeeperConfig, Ownership, Store, DEFAULT_COMMIT_OUTAGE_TOLERANCE};
pub use error::{Error, Result};
pub use kafka::KafkaSettings;
pub use keeper::OffsetKeeper;
pub use lag::lag;
pub use load::{decide, Inspected, Loaded, MirrorDifference, PartitionReport, StalePartition};
pub use mirror::MirrorStatus;
pub use validate::{
    validate, validate_recreated, Action, Decision, OnAboveRange, OnBelowRange, OnMissing,
    OnRecreated, PartitionRange, Policy, Recreated, Refusal, Stored,
};
pub use zookeeper::{ReadMode, ZkConfig};

/// A topic's partition. The topic name is shared: a batch of thousands of one topic's
/// partitions holds its name once, and copying a partition allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: Arc<str>,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<Arc<str>>, partition: i32) -> TopicPartition {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}
