//! `load` and `commit`: the two operations a Spark job runs, on one ZooKeeper session and one
//! Kafka client.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::kafka::{Brokers, KafkaSettings};
use crate::names::{check_name, check_partition};
use crate::runtime::runtime;
use crate::validate::{validate, Action, Decision, OnMissing, PartitionRange, Policy, Stored};
use crate::zookeeper::layout::{encode_offset, GroupLayout};
use crate::zookeeper::{WriteOp, ZkConfig, ZkStore};
use crate::TopicPartition;

/// Everything an [`OffsetKeeper`] needs.
#[derive(Debug, Clone)]
pub struct KeeperConfig {
    pub zookeeper: ZkConfig,
    pub kafka: KafkaSettings,
    /// Bound on each Kafka request (metadata, list offsets).
    pub kafka_timeout: Duration,
    pub policy: Policy,
}

impl KeeperConfig {
    /// The defaults: the policy keeps data (earliest everywhere), except that a partition with no
    /// stored offset follows the job's `auto.offset.reset` when it set one.
    pub fn new(zookeeper: ZkConfig, kafka: KafkaSettings) -> KeeperConfig {
        let policy = Policy {
            on_missing: kafka.auto_offset_reset.unwrap_or(OnMissing::Earliest),
            ..Policy::default()
        };
        KeeperConfig {
            zookeeper,
            kafka,
            kafka_timeout: Duration::from_secs(10),
            policy,
        }
    }
}

/// What ZooKeeper and Kafka hold for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspected {
    pub partition: TopicPartition,
    pub stored: Stored,
    pub range: PartitionRange,
}

/// What load found and decided for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionReport {
    pub partition: TopicPartition,
    pub stored: Stored,
    pub range: PartitionRange,
    pub decision: Decision,
}

/// The result of a load: one entry for every partition that exists now, in topic order then
/// partition order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub partitions: Vec<PartitionReport>,
}

impl Loaded {
    /// The offsets to hand to Spark.
    pub fn offsets(&self) -> impl Iterator<Item = (&TopicPartition, i64)> {
        self.partitions
            .iter()
            .map(|report| (&report.partition, report.decision.offset))
    }

    /// The report as a plain-text table, one row per partition.
    pub fn table(&self) -> String {
        let header = [
            "TOPIC",
            "PARTITION",
            "STORED",
            "EARLIEST",
            "LATEST",
            "CHOSEN",
            "ACTION",
            "LOST",
        ]
        .map(String::from);
        let rows: Vec<[String; 8]> = self
            .partitions
            .iter()
            .map(|r| {
                [
                    r.partition.topic.clone(),
                    r.partition.partition.to_string(),
                    r.stored.to_string(),
                    r.range.earliest.to_string(),
                    r.range.latest.to_string(),
                    r.decision.offset.to_string(),
                    r.decision.action.name().to_string(),
                    r.decision.records_lost.to_string(),
                ]
            })
            .collect();
        let mut widths = header.clone().map(|h| h.len());
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.len());
            }
        }
        std::iter::once(&header)
            .chain(&rows)
            .map(|row| {
                let cells: Vec<String> = row
                    .iter()
                    .zip(widths)
                    .map(|(cell, width)| format!("{cell:<width$}"))
                    .collect();
                cells.join("  ").trim_end().to_string() + "\n"
            })
            .collect()
    }

    /// The partitions whose stored offset was not used as it was.
    pub fn corrections(&self) -> impl Iterator<Item = &PartitionReport> {
        self.partitions
            .iter()
            .filter(|report| report.decision.action != Action::Kept)
    }
}

/// What a commit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommitSummary {
    /// Znodes created or changed.
    pub written: usize,
    /// Offsets that already held the committed value.
    pub unchanged: usize,
    /// Multi requests sent: 1, or more for batches beyond one request's size.
    pub requests: usize,
}

/// Loads, validates and commits offsets for any number of groups and topics.
pub struct OffsetKeeper {
    pub(crate) store: ZkStore,
    /// `None` for a keeper opened for ZooKeeper-only work.
    brokers: Option<Brokers>,
    policy: Policy,
}

impl OffsetKeeper {
    /// Checks the configuration and prepares the clients; servers are contacted on first use.
    pub fn open(config: KeeperConfig) -> Result<OffsetKeeper> {
        Ok(OffsetKeeper {
            store: ZkStore::new(config.zookeeper)?,
            brokers: Some(Brokers::new(config.kafka, config.kafka_timeout)?),
            policy: config.policy,
        })
    }

    /// A keeper for the operations that touch ZooKeeper only: listing groups, reading,
    /// committing, exporting and deleting stored offsets. Operations that ask the brokers fail
    /// with [`Error::InvalidArgument`].
    pub fn open_zookeeper_only(zookeeper: ZkConfig) -> Result<OffsetKeeper> {
        Ok(OffsetKeeper {
            store: ZkStore::new(zookeeper)?,
            brokers: None,
            policy: Policy::default(),
        })
    }

    /// The Kafka client, or an error when this keeper was opened without Kafka.
    pub(crate) fn brokers(&self) -> Result<&Brokers> {
        self.brokers.as_ref().ok_or_else(|| {
            Error::invalid(
                "this operation reads the Kafka brokers, but no bootstrap.servers was given",
            )
        })
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// What ZooKeeper holds and what Kafka has, for every partition of the topics that exists
    /// now, in topic order then partition order. No validation: the raw view for lag and for
    /// operators.
    pub fn inspect(&self, group: &str, topics: &[String]) -> Result<Vec<Inspected>> {
        check_name("group", group)?;
        if topics.is_empty() {
            return Err(Error::invalid(
                "topic list is empty; give at least one topic",
            ));
        }
        for topic in topics {
            check_name("topic", topic)?;
        }
        let mut unique = HashSet::new();
        let topics: Vec<String> = topics
            .iter()
            .filter(|t| unique.insert(*t))
            .cloned()
            .collect();

        let brokers = self.brokers()?;
        let partitions = brokers.partitions(&topics)?;
        let layout = GroupLayout {
            base_path: &self.store.config().base_path,
            group,
        };
        let paths: Vec<String> = partitions
            .iter()
            .map(|tp| layout.offset_path(&tp.topic, tp.partition))
            .collect();
        // ZooKeeper and Kafka are asked at the same time.
        let (stored, ranges) = std::thread::scope(|scope| {
            let ranges = scope.spawn(|| brokers.ranges(&partitions));
            let stored = runtime().and_then(|rt| rt.block_on(self.store.read(&paths)));
            let ranges = ranges
                .join()
                .unwrap_or_else(|_| Err(Error::Internal("offset range thread panicked".into())));
            (stored, ranges)
        });
        let (stored, mut ranges) = (stored?, ranges?);
        partitions
            .into_iter()
            .zip(stored)
            .map(|(partition, raw)| {
                let range = ranges.remove(&partition).ok_or_else(|| {
                    Error::Internal(format!("no offset range returned for {partition}"))
                })?;
                Ok(Inspected {
                    stored: raw.map_or(Stored::Missing, |bytes| Stored::parse(&bytes)),
                    partition,
                    range,
                })
            })
            .collect()
    }

    /// Discovers the topics' partitions, reads their stored offsets and ranges, and validates
    /// each. Partitions that no longer exist are not returned; a `fail` policy that applies makes
    /// the whole load an error listing every refused partition.
    pub fn load(&self, group: &str, topics: &[String]) -> Result<Loaded> {
        let inspected = self.inspect(group, topics)?;
        let mut reports = Vec::with_capacity(inspected.len());
        let mut refusals = Vec::new();
        for Inspected {
            partition,
            stored,
            range,
        } in inspected
        {
            match validate(&stored, range, &self.policy) {
                Ok(decision) => reports.push(PartitionReport {
                    partition,
                    stored,
                    range,
                    decision,
                }),
                Err(refusal) => refusals.push(format!("{partition}: {refusal}")),
            }
        }
        if !refusals.is_empty() {
            for refusal in &refusals {
                log::warn!("group {group}: {refusal}");
            }
            return Err(Error::PolicyViolation(format!(
                "group {group}, {} partition(s): {}",
                refusals.len(),
                refusals.join("; ")
            )));
        }
        let loaded = Loaded {
            partitions: reports,
        };
        for report in loaded.corrections() {
            log::warn!(
                "group {group}: {} stored {} with range [{}, {}]; starting at {} ({}, {} records lost)",
                report.partition,
                report.stored,
                report.range.earliest,
                report.range.latest,
                report.decision.offset,
                report.decision.action.name(),
                report.decision.records_lost
            );
        }
        Ok(loaded)
    }

    /// Stores each partition's next offset to read (Spark's `untilOffset`) in one atomic multi,
    /// creating missing nodes and skipping unchanged ones. Bad input is refused before anything
    /// is written.
    pub fn commit(&self, group: &str, offsets: &[(TopicPartition, i64)]) -> Result<CommitSummary> {
        check_commit(group, offsets)?;
        if offsets.is_empty() {
            return Ok(CommitSummary::default());
        }
        let runtime = runtime()?;
        match runtime.block_on(self.commit_once(group, offsets)) {
            // Another writer created one of the nodes between our read and write: read again.
            Err(Error::ZooKeeper {
                source: zookeeper_client::Error::NodeExists,
                ..
            }) => runtime.block_on(self.commit_once(group, offsets)),
            result => result,
        }
    }

    async fn commit_once(
        &self,
        group: &str,
        offsets: &[(TopicPartition, i64)],
    ) -> Result<CommitSummary> {
        let layout = GroupLayout {
            base_path: &self.store.config().base_path,
            group,
        };
        let mut dirs = layout.group_dirs();
        let mut seen_topics = HashSet::new();
        for (tp, _) in offsets {
            if seen_topics.insert(tp.topic.as_str()) {
                dirs.push(layout.topic_dir(&tp.topic));
            }
        }
        let leaves: Vec<String> = offsets
            .iter()
            .map(|(tp, _)| layout.offset_path(&tp.topic, tp.partition))
            .collect();
        let paths: Vec<String> = dirs.iter().chain(&leaves).cloned().collect();
        let current = self.store.read(&paths).await?;
        let (dirs_now, leaves_now) = current.split_at(dirs.len());

        let mut ops: Vec<WriteOp> = dirs
            .iter()
            .zip(dirs_now)
            .filter(|(_, now)| now.is_none())
            .map(|(path, _)| WriteOp::Create {
                path: path.clone(),
                data: Vec::new(),
            })
            .collect();
        let mut summary = CommitSummary::default();
        for ((path, now), (_, offset)) in leaves.into_iter().zip(leaves_now).zip(offsets) {
            let data = encode_offset(*offset);
            match now {
                None => ops.push(WriteOp::Create { path, data }),
                Some(value) if Stored::parse(value) == Stored::Offset(*offset) => {
                    summary.unchanged += 1;
                    continue;
                }
                Some(_) => ops.push(WriteOp::SetData { path, data }),
            }
            summary.written += 1;
        }
        summary.requests = self.store.write(&ops).await?;
        Ok(summary)
    }
}

/// Refuses illegal names, negative partitions or offsets and duplicate partitions.
pub(crate) fn check_commit(group: &str, offsets: &[(TopicPartition, i64)]) -> Result<()> {
    check_name("group", group)?;
    let mut seen: HashMap<&TopicPartition, i64> = HashMap::with_capacity(offsets.len());
    for (tp, offset) in offsets {
        check_name("topic", &tp.topic)?;
        check_partition(&tp.topic, tp.partition)?;
        if *offset < 0 {
            return Err(Error::invalid(format!(
                "offset {offset} for {tp} is negative; allowed: 0 or more"
            )));
        }
        if let Some(first) = seen.insert(tp, *offset) {
            return Err(Error::invalid(format!(
                "{tp} appears twice in one commit (offsets {first} and {offset}); allowed: once per partition"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition::new(topic, partition)
    }

    #[test]
    fn commit_input_is_checked_before_any_io() {
        assert!(check_commit("g", &[(tp("t", 0), 5), (tp("t", 1), 0)]).is_ok());
        type Case = (&'static str, Vec<(TopicPartition, i64)>, &'static str);
        let cases: Vec<Case> = vec![
            ("", vec![], "group name ''"),
            ("a/b", vec![], "'/'"),
            ("g", vec![(tp("../x", 0), 1)], "topic name '../x'"),
            ("g", vec![(tp("t", -2), 1)], "partition -2"),
            ("g", vec![(tp("t", 0), -1)], "offset -1"),
            (
                "g",
                vec![(tp("t", 0), 1), (tp("t", 0), 2)],
                "t-0 appears twice",
            ),
        ];
        for (group, offsets, needle) in cases {
            let message = check_commit(group, &offsets).unwrap_err().to_string();
            assert!(message.contains(needle), "{needle}: {message}");
        }
    }
}
