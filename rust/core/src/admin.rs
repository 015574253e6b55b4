//! Operator work on stored offsets, for the CLI: the groups and topics under the base path,
//! everything a group stored, the deletion of a topic's offsets, the brokers' offsets for a
//! timestamp, and Kafka's own group offsets (`__consumer_offsets`) for migrations.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::context::Context;
use crate::error::{Error, Result};
use crate::kafka::Brokers;
use crate::names::check_name;
use crate::names::checked_topics;
use crate::recreated::{recreated_by_record_time, Unidentified};
use crate::runtime::runtime;
use crate::validate::{PartitionRange, Recreated, Stored};
use crate::zookeeper::layout::parse_partition;
use crate::zookeeper::layout::{parse_topic_identity, GroupLayout};
use crate::zookeeper::WriteOp;
use crate::TopicPartition;

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

/// The groups under the base path that have an `offsets` folder, sorted by name, each with
/// its number of topic folders.
pub(crate) fn groups(cx: &Context) -> Result<Vec<GroupSummary>> {
    let base = cx.store.config().base_path.as_str();
    cx.store.block_on(async {
        let Some(mut groups) = cx.store.children(base).await? else {
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
        let topics = list_children(cx, &dirs).await?;
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

/// The children of each folder, `None` for one that does not exist.
async fn list_children(cx: &Context, dirs: &[String]) -> Result<Vec<Option<Vec<String>>>> {
    futures::future::try_join_all(dirs.iter().map(|dir| cx.store.children(dir))).await
}

/// The topics, checked with the group and each kept once, and the group's folder of each.
fn topic_dirs(cx: &Context, group: &str, topics: &[String]) -> Result<(Vec<String>, Vec<String>)> {
    let topics = checked_topics(group, topics)?;
    let layout = cx.layout(group);
    let dirs = topics.iter().map(|t| layout.topic_dir(t)).collect();
    Ok((topics, dirs))
}

/// The topics a group has a folder for, sorted. Folders whose name is not a legal topic
/// name (offsetkeeper never writes one) are left out with a WARN line.
pub(crate) fn stored_topics(cx: &Context, group: &str) -> Result<Vec<String>> {
    check_name("group", group)?;
    let dir = cx.layout(group).offsets_dir();
    let children = cx.store.block_on(cx.store.children(&dir))?;
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
pub(crate) fn stored(
    cx: &Context,
    group: &str,
    topics: &[String],
) -> Result<Vec<(TopicPartition, Stored)>> {
    Ok(stored_with_times(cx, group, topics)?
        .into_iter()
        .map(|(tp, stored, _)| (tp, stored))
        .collect())
}

/// [`stored`], each with the time its node was last written (ms since the epoch).
fn stored_with_times(cx: &Context, group: &str, topics: &[String]) -> Result<Vec<StoredAt>> {
    let (topics, dirs) = topic_dirs(cx, group, topics)?;
    let layout = cx.layout(group);
    cx.store.block_on(async {
        let listed = list_children(cx, &dirs).await?;
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
        let nodes = cx.store.read_nodes(&paths).await?;
        Ok(partitions
            .into_iter()
            .zip(nodes)
            .map(|(tp, node)| match node {
                Some(node) => (tp, Stored::parse(&node.data), node.mtime),
                None => (tp, Stored::Missing, 0),
            })
            .collect())
    })
}

/// The union of what a group stored for the topics and the partitions the brokers have,
/// with each existing partition's range and whether its topic was re-created: the view of
/// `describe` and `reset`. What it read of the topics' identity becomes what this keeper
/// last saw, so that a reset's commit records the brokers' topic ID once it has written
/// every stored partition of a re-created topic. A topic that is neither stored nor on the
/// brokers is an [`Error::UnknownTopic`].
pub(crate) fn survey(cx: &Context, group: &str, topics: &[String]) -> Result<Vec<Surveyed>> {
    let topics = checked_topics(group, topics)?;
    let brokers = cx.brokers()?;
    let layout = cx.layout(group);
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
        let stored = stored_with_times(cx, group, &topics).and_then(|stored| {
            let folders = cx.store.block_on(cx.store.read_nodes(&folders))?;
            Ok((stored, folders))
        });
        let existing = existing
            .join()
            .unwrap_or_else(|_| Err(Error::Internal("metadata thread panicked".into())));
        (stored, existing)
    });
    let ((stored, folders), (mut ranges, ids)) = (stored?, existing?);
    let mut recreated: HashMap<&str, Recreated> = HashMap::new();
    let mut unidentified: HashSet<&str> = HashSet::new();
    {
        let mut trackers = cx.tracked.lock();
        let tracker = trackers.group(group);
        for (topic, folder) in topics.iter().zip(&folders) {
            let current = ids.get(topic).cloned().flatten();
            let stored_id = folder.as_ref().and_then(|f| parse_topic_identity(&f.data));
            if stored_id.is_none() || current.is_none() {
                unidentified.insert(topic.as_str());
            }
            let Some(found) = Recreated::between(stored_id.as_deref(), current.as_deref()) else {
                tracker.observe_topic(topic, current, folder.as_ref(), BTreeSet::new());
                continue;
            };
            let old = old_partitions(&stored, &ranges, topic);
            tracker.observe_topic(topic, current, folder.as_ref(), old);
            recreated.insert(topic.as_str(), found);
        }
    }
    for (topic, evidence) in recreated_by_time(cx, group, &stored, &ranges, &unidentified)? {
        if let Some(name) = topics.iter().find(|t| **t == topic) {
            recreated.insert(name.as_str(), evidence);
        }
    }
    let mut by_topic: HashMap<String, Vec<Surveyed>> = HashMap::new();
    let mut add = |partition: TopicPartition, stored, range| {
        by_topic
            .entry(partition.topic.to_string())
            .or_default()
            .push(Surveyed {
                recreated: recreated.get(&*partition.topic).cloned(),
                partition,
                stored,
                range,
            });
    };
    let mut seen = HashSet::new();
    for (partition, stored, _) in stored {
        seen.insert(partition.clone());
        let range = ranges.remove(&partition);
        add(partition, stored, range);
    }
    for (partition, range) in ranges {
        if !seen.contains(&partition) {
            add(partition, Stored::Missing, Some(range));
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

/// What a survey read of one stored partition: its value and when its node was last written.
type StoredAt = (TopicPartition, Stored, i64);

/// The partitions of `topic` that hold an offset and still exist: those of a re-created topic
/// hold the old topic's offsets.
fn old_partitions(
    stored: &[StoredAt],
    ranges: &HashMap<TopicPartition, PartitionRange>,
    topic: &str,
) -> BTreeSet<i32> {
    stored
        .iter()
        .filter(|(tp, value, _)| {
            *tp.topic == *topic && *value != Stored::Missing && ranges.contains_key(tp)
        })
        .map(|(tp, _, _)| tp.partition)
        .collect()
}

/// The `unidentified` topics (their IDs tell nothing) re-created after their offsets were
/// committed, judged by their records' timestamps as a load does; what they hold is marked
/// old for the tracker.
fn recreated_by_time(
    cx: &Context,
    group: &str,
    stored: &[StoredAt],
    ranges: &HashMap<TopicPartition, PartitionRange>,
    unidentified: &HashSet<&str>,
) -> Result<HashMap<String, Recreated>> {
    let Some(tolerance) = cx.recreated_timestamp_tolerance else {
        return Ok(HashMap::new());
    };
    let judged: Vec<Unidentified> = stored
        .iter()
        .filter(|(tp, _, _)| unidentified.contains(&*tp.topic))
        .filter_map(|(tp, value, committed_at_ms)| {
            ranges.get(tp).map(|range| Unidentified {
                partition: tp,
                stored: value,
                range: *range,
                committed_at_ms: *committed_at_ms,
            })
        })
        .collect();
    let found = runtime()?.block_on(recreated_by_record_time(
        cx.brokers()?,
        group,
        &judged,
        tolerance,
        None,
    ))?;
    let mut trackers = cx.tracked.lock();
    let tracker = trackers.group(group);
    for topic in found.keys() {
        tracker.mark_old(topic, old_partitions(stored, ranges, topic));
    }
    Ok(found)
}

/// Deletes the topics' folders and every offset in them, all in one multi. Returns the
/// number of offset nodes deleted; topics the group has no folder for are skipped.
pub(crate) fn delete_topics(cx: &Context, group: &str, topics: &[String]) -> Result<usize> {
    let (_, dirs) = topic_dirs(cx, group, topics)?;
    cx.store.block_on(async {
        let listed = list_children(cx, &dirs).await?;
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
            cx.store.write(&ops).await?;
        }
        Ok(deleted)
    })
}

/// Deletes the offsets stored for the partitions, in one multi; the topic folders stay.
/// Returns the number of nodes deleted; partitions with nothing stored are skipped.
pub(crate) fn delete_partitions(
    cx: &Context,
    group: &str,
    partitions: &[TopicPartition],
) -> Result<usize> {
    check_name("group", group)?;
    for tp in partitions {
        check_name("topic", &tp.topic)?;
        crate::names::check_partition(&tp.topic, tp.partition)?;
    }
    let layout = cx.layout(group);
    let paths: Vec<String> = partitions
        .iter()
        .map(|tp| layout.offset_path(&tp.topic, tp.partition))
        .collect();
    cx.store.block_on(async {
        let nodes = cx.store.read_nodes(&paths).await?;
        let ops: Vec<WriteOp> = paths
            .into_iter()
            .zip(nodes)
            .filter(|(_, node)| node.is_some())
            .map(|(path, _)| WriteOp::Delete { path })
            .collect();
        if !ops.is_empty() {
            cx.store.write(&ops).await?;
        }
        Ok(ops.len())
    })
}

/// The instances registered in the group (`<base>/<group>/ids`, ephemeral nodes of running
/// keepers that own partitions), sorted: a group with any is active.
pub(crate) fn active_instances(cx: &Context, group: &str) -> Result<Vec<String>> {
    check_name("group", group)?;
    let dir = cx.layout(group).ids_dir();
    let mut ids = cx
        .store
        .block_on(cx.store.children(&dir))?
        .unwrap_or_default();
    ids.sort_unstable();
    Ok(ids)
}

/// The partitions of the topics, from broker metadata, in the order asked. An unknown topic
/// is an error naming it.
pub(crate) fn partitions(brokers: &Brokers, topics: &[String]) -> Result<Vec<TopicPartition>> {
    for topic in topics {
        check_name("topic", topic)?;
    }
    runtime()?.block_on(brokers.partitions(topics))
}

/// Every topic of the cluster but Kafka's internal ones, sorted.
pub(crate) fn kafka_topics(brokers: &Brokers) -> Result<Vec<String>> {
    runtime()?.block_on(brokers.topics())
}

/// For each partition, the first offset whose record timestamp is at or after
/// `timestamp_ms` (milliseconds since the epoch); `None` when no record is that recent.
pub(crate) fn offsets_for_timestamp(
    brokers: &Brokers,
    partitions: &[TopicPartition],
    timestamp_ms: i64,
) -> Result<HashMap<TopicPartition, Option<i64>>> {
    runtime()?.block_on(brokers.offsets_for_timestamp(partitions, timestamp_ms))
}
