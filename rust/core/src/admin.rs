//! Operator work on stored offsets, for the CLI: the groups and topics under the base path,
//! everything a group stored, the deletion of a topic's offsets, the brokers' offsets for a
//! timestamp, and Kafka's own group offsets (`__consumer_offsets`) for migrations.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::error::{Error, Result};
use crate::names::check_name;
use crate::runtime::runtime;
use crate::validate::{PartitionRange, Recreated, Stored};
use crate::zookeeper::layout::{parse_topic_identity, GroupLayout};
use crate::zookeeper::WriteOp;
use crate::{OffsetKeeper, TopicPartition};

/// A group that has an offsets folder under the base path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSummary {
    pub group: String,
    /// Topic folders under `<base>/<group>/offsets`.
    pub topics: usize,
}

/// One partition that is stored in ZooKeeper, exists on the brokers, or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Surveyed {
    pub partition: TopicPartition,
    /// [`Stored::Missing`] for a partition that exists but has no znode.
    pub stored: Stored,
    /// `None` for a stored partition the brokers no longer have.
    pub range: Option<PartitionRange>,
    /// Set for a partition of a topic re-created since its offsets were stored (the topic ID
    /// recorded beside them is not the brokers').
    pub recreated: Option<Recreated>,
}

impl OffsetKeeper {
    /// The groups under the base path that have an `offsets` folder, sorted by name, each with
    /// its number of topic folders.
    pub fn groups(&self) -> Result<Vec<GroupSummary>> {
        let base = self.store.config().base_path.as_str();
        self.store.block_on(async {
            let Some(mut groups) = self.store.children(base).await? else {
                return Ok(Vec::new());
            };
            groups.sort_unstable();
            let dirs: Vec<String> = groups
                .iter()
                .map(|group| {
                    GroupLayout {
                        base_path: base,
                        group,
                    }
                    .offsets_dir()
                })
                .collect();
            let topics =
                futures::future::try_join_all(dirs.iter().map(|dir| self.store.children(dir)))
                    .await?;
            Ok(groups
                .into_iter()
                .zip(topics)
                .filter_map(|(group, topics)| {
                    topics.map(|topics| GroupSummary {
                        group,
                        topics: topics.len(),
                    })
                })
                .collect())
        })
    }

    /// The topics a group has a folder for, sorted. Folders whose name is not a legal topic
    /// name (offsetkeeper never writes one) are left out with a WARN line.
    pub fn stored_topics(&self, group: &str) -> Result<Vec<String>> {
        check_name("group", group)?;
        let dir = self.layout(group).offsets_dir();
        let children = self.store.block_on(self.store.children(&dir))?;
        let mut topics: Vec<String> = children
            .unwrap_or_default()
            .into_iter()
            .filter(|topic| match check_name("topic", topic) {
                Ok(()) => true,
                Err(err) => {
                    log::warn!("{dir}: skipping a folder: {err}");
                    false
                }
            })
            .collect();
        topics.sort_unstable();
        Ok(topics)
    }

    /// Every offset a group stored for the topics, whether or not the partition still exists,
    /// in the order the topics are given then partition order. Children of a topic folder that
    /// are not partition numbers are left out with a WARN line.
    pub fn stored(&self, group: &str, topics: &[String]) -> Result<Vec<(TopicPartition, Stored)>> {
        let topics = checked_topics(group, topics)?;
        let layout = self.layout(group);
        let dirs: Vec<String> = topics.iter().map(|t| layout.topic_dir(t)).collect();
        self.store.block_on(async {
            let listed =
                futures::future::try_join_all(dirs.iter().map(|dir| self.store.children(dir)))
                    .await?;
            let mut partitions = Vec::new();
            for ((topic, dir), children) in topics.iter().zip(&dirs).zip(listed) {
                let mut ids = BTreeSet::new();
                for child in children.unwrap_or_default() {
                    match parse_partition(&child) {
                        Some(id) => {
                            ids.insert(id);
                        }
                        None => log::warn!("{dir}/{child}: not a partition number; skipped"),
                    }
                }
                let name: std::sync::Arc<str> = topic.as_str().into();
                partitions.extend(
                    ids.into_iter()
                        .map(|id| TopicPartition::new(name.clone(), id)),
                );
            }
            let paths: Vec<String> = partitions
                .iter()
                .map(|tp| layout.offset_path(&tp.topic, tp.partition))
                .collect();
            let values = self.store.read(&paths).await?;
            Ok(partitions
                .into_iter()
                .zip(values)
                .map(|(tp, raw)| (tp, raw.map_or(Stored::Missing, |raw| Stored::parse(&raw))))
                .collect())
        })
    }

    /// The union of what a group stored for the topics and the partitions the brokers have,
    /// with each existing partition's range and whether its topic was re-created: the view of
    /// `describe` and `reset`. What it read of the topics' identity becomes what this keeper
    /// last saw, so that a reset's commit records the brokers' topic ID once it has written
    /// every stored partition of a re-created topic. A topic that is neither stored nor on the
    /// brokers is an [`Error::UnknownTopic`].
    pub fn survey(&self, group: &str, topics: &[String]) -> Result<Vec<Surveyed>> {
        let topics = checked_topics(group, topics)?;
        let brokers = self.brokers()?;
        let layout = self.layout(group);
        let folders: Vec<String> = topics.iter().map(|t| layout.topic_dir(t)).collect();
        let (stored, existing) = std::thread::scope(|scope| {
            let existing = scope.spawn(|| {
                runtime()?.block_on(async {
                    let known = brokers.described(&topics).await?;
                    let partitions: Vec<TopicPartition> = known
                        .iter()
                        .flat_map(|(topic, (ids, _))| {
                            let name: std::sync::Arc<str> = topic.as_str().into();
                            ids.iter()
                                .map(move |id| TopicPartition::new(name.clone(), *id))
                        })
                        .collect();
                    let ranges: HashMap<TopicPartition, PartitionRange> = partitions
                        .iter()
                        .cloned()
                        .zip(brokers.ranges(&partitions).await?)
                        .collect();
                    let ids: HashMap<String, Option<String>> = known
                        .into_iter()
                        .map(|(topic, (_, id))| (topic, id))
                        .collect();
                    Ok::<_, Error>((ranges, ids))
                })
            });
            let stored = self.stored(group, &topics).and_then(|stored| {
                let folders = self.store.block_on(self.store.read_nodes(&folders))?;
                Ok((stored, folders))
            });
            let existing = existing
                .join()
                .unwrap_or_else(|_| Err(Error::Internal("metadata thread panicked".into())));
            (stored, existing)
        });
        let ((stored, folders), (mut ranges, ids)) = (stored?, existing?);
        let mut recreated: HashMap<&str, Recreated> = HashMap::new();
        {
            let mut trackers = self.tracker();
            let tracker = trackers.group(group);
            for (topic, folder) in topics.iter().zip(&folders) {
                let current = ids.get(topic).cloned().flatten();
                let stored_id = folder.as_ref().and_then(|f| parse_topic_identity(&f.data));
                let Some(found) = Recreated::between(stored_id.as_deref(), current.as_deref())
                else {
                    tracker.observe_topic(topic, current, folder.as_ref(), BTreeSet::new());
                    continue;
                };
                let old: BTreeSet<i32> = stored
                    .iter()
                    .filter(|(tp, value)| {
                        *tp.topic == **topic && *value != Stored::Missing && ranges.contains_key(tp)
                    })
                    .map(|(tp, _)| tp.partition)
                    .collect();
                tracker.observe_topic(topic, current, folder.as_ref(), old);
                recreated.insert(topic.as_str(), found);
            }
        }
        let mut by_topic: HashMap<String, Vec<Surveyed>> = HashMap::new();
        let mut seen = HashSet::new();
        for (partition, stored) in stored {
            seen.insert(partition.clone());
            let range = ranges.remove(&partition);
            by_topic
                .entry(partition.topic.to_string())
                .or_default()
                .push(Surveyed {
                    recreated: recreated.get(&*partition.topic).cloned(),
                    partition,
                    stored,
                    range,
                });
        }
        for (partition, range) in ranges {
            if !seen.contains(&partition) {
                by_topic
                    .entry(partition.topic.to_string())
                    .or_default()
                    .push(Surveyed {
                        recreated: recreated.get(&*partition.topic).cloned(),
                        partition,
                        stored: Stored::Missing,
                        range: Some(range),
                    });
            }
        }
        let mut rows = Vec::new();
        for topic in &topics {
            let mut partitions = by_topic.remove(topic).ok_or_else(|| Error::UnknownTopic {
                topic: topic.clone(),
                bootstrap: brokers.settings().bootstrap.clone(),
            })?;
            partitions.sort_by_key(|row| row.partition.partition);
            rows.extend(partitions);
        }
        Ok(rows)
    }

    /// Deletes the topics' folders and every offset in them, all in one multi. Returns the
    /// number of offset nodes deleted; topics the group has no folder for are skipped.
    pub fn delete_topics(&self, group: &str, topics: &[String]) -> Result<usize> {
        let topics = checked_topics(group, topics)?;
        let layout = self.layout(group);
        let dirs: Vec<String> = topics.iter().map(|t| layout.topic_dir(t)).collect();
        self.store.block_on(async {
            let listed =
                futures::future::try_join_all(dirs.iter().map(|dir| self.store.children(dir)))
                    .await?;
            let mut ops = Vec::new();
            let mut deleted = 0;
            for (dir, children) in dirs.iter().zip(listed) {
                let Some(children) = children else { continue };
                deleted += children.len();
                ops.extend(children.iter().map(|child| WriteOp::Delete {
                    path: format!("{dir}/{child}"),
                }));
                ops.push(WriteOp::Delete { path: dir.clone() });
            }
            if !ops.is_empty() {
                self.store.write(&ops).await?;
            }
            Ok(deleted)
        })
    }

    /// Deletes the offsets stored for the partitions, in one multi; the topic folders stay.
    /// Returns the number of nodes deleted; partitions with nothing stored are skipped.
    pub fn delete_partitions(&self, group: &str, partitions: &[TopicPartition]) -> Result<usize> {
        check_name("group", group)?;
        for tp in partitions {
            check_name("topic", &tp.topic)?;
            crate::names::check_partition(&tp.topic, tp.partition)?;
        }
        let layout = self.layout(group);
        let paths: Vec<String> = partitions
            .iter()
            .map(|tp| layout.offset_path(&tp.topic, tp.partition))
            .collect();
        self.store.block_on(async {
            let nodes = self.store.read_nodes(&paths).await?;
            let ops: Vec<WriteOp> = paths
                .into_iter()
                .zip(nodes)
                .filter(|(_, node)| node.is_some())
                .map(|(path, _)| WriteOp::Delete { path })
                .collect();
            if !ops.is_empty() {
                self.store.write(&ops).await?;
            }
            Ok(ops.len())
        })
    }

    /// The instances registered in the group (`<base>/<group>/ids`, ephemeral nodes of running
    /// keepers that own partitions), sorted: a group with any is active.
    pub fn active_instances(&self, group: &str) -> Result<Vec<String>> {
        check_name("group", group)?;
        let dir = self.layout(group).ids_dir();
        let mut ids = self
            .store
            .block_on(self.store.children(&dir))?
            .unwrap_or_default();
        ids.sort_unstable();
        Ok(ids)
    }

    /// The partitions of the topics, from broker metadata, in the order asked. An unknown topic
    /// is an error naming it.
    pub fn partitions(&self, topics: &[String]) -> Result<Vec<TopicPartition>> {
        for topic in topics {
            check_name("topic", topic)?;
        }
        runtime()?.block_on(self.brokers()?.partitions(topics))
    }

    /// Every topic of the cluster but Kafka's internal ones, sorted.
    pub fn kafka_topics(&self) -> Result<Vec<String>> {
        runtime()?.block_on(self.brokers()?.topics())
    }

    /// For each partition, the first offset whose record timestamp is at or after
    /// `timestamp_ms` (milliseconds since the epoch); `None` when no record is that recent.
    pub fn offsets_for_timestamp(
        &self,
        partitions: &[TopicPartition],
        timestamp_ms: i64,
    ) -> Result<HashMap<TopicPartition, Option<i64>>> {
        runtime()?.block_on(
            self.brokers()?
                .offsets_for_timestamp(partitions, timestamp_ms),
        )
    }

    fn layout<'a>(&'a self, group: &'a str) -> GroupLayout<'a> {
        GroupLayout {
            base_path: &self.store.config().base_path,
            group,
        }
    }
}

/// Checks the group and topic names and drops repeated topics, keeping the first.
fn checked_topics(group: &str, topics: &[String]) -> Result<Vec<String>> {
    check_name("group", group)?;
    if topics.is_empty() {
        return Err(Error::invalid(
            "topic list is empty; give at least one topic",
        ));
    }
    let mut unique = HashSet::new();
    let mut checked = Vec::with_capacity(topics.len());
    for topic in topics {
        check_name("topic", topic)?;
        if unique.insert(topic.as_str()) {
            checked.push(topic.clone());
        }
    }
    Ok(checked)
}

/// A partition znode's name: decimal digits only, within `i32`.
pub(crate) fn parse_partition(name: &str) -> Option<i32> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_names_are_plain_numbers() {
        assert_eq!(parse_partition("0"), Some(0));
        assert_eq!(parse_partition("17"), Some(17));
        for bad in ["", "-1", "+1", "1a", "x", "99999999999", " 1"] {
            assert_eq!(parse_partition(bad), None, "{bad}");
        }
    }

    #[test]
    fn topics_are_checked_and_deduplicated_in_order() {
        let topics = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            checked_topics("g", &topics(&["b", "a", "b"])).unwrap(),
            topics(&["b", "a"])
        );
        assert!(checked_topics("g", &[]).is_err());
        let message = checked_topics("g", &topics(&["ok", "no/pe"]))
            .unwrap_err()
            .to_string();
        assert!(message.contains("'no/pe'"), "{message}");
        assert!(checked_topics("a b", &topics(&["t"])).is_err());
    }
}
