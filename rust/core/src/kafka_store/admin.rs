//! The operator's calls on Kafka's group store (the CLI's `describe`, `lag`, `reset`,
//! `export`, `import`, `delete`): what the group committed, beside what the brokers have.

use std::collections::{BTreeSet, HashMap};

use super::metadata::CommitMetadata;
use super::KafkaStore;
use crate::admin::Surveyed;
use crate::error::{Error, Result};
use crate::kafka::group::FetchedOffset;
use crate::names::checked_topics;
use crate::runtime::runtime;
use crate::validate::{Recreated, Stored};
use crate::TopicPartition;

impl KafkaStore {
    /// The group's committed offsets of the topics, in the order the topics are given, then
    /// partition order.
    fn committed_of(
        fetched: Vec<FetchedOffset>,
        topics: &[String],
    ) -> Vec<(TopicPartition, i64, CommitMetadata)> {
        let mut by_topic: HashMap<String, Vec<(TopicPartition, i64, CommitMetadata)>> =
            HashMap::new();
        for f in fetched {
            let metadata = CommitMetadata::parse(&f.metadata);
            by_topic
                .entry(f.partition.topic.to_string())
                .or_default()
                .push((f.partition, f.offset, metadata));
        }
        let mut rows = Vec::new();
        for topic in topics {
            let mut partitions = by_topic.remove(topic).unwrap_or_default();
            partitions.sort_by_key(|(tp, _, _)| tp.partition);
            rows.extend(partitions);
        }
        rows
    }

    /// See [`crate::OffsetKeeper::stored`].
    pub(crate) fn stored(
        &self,
        group: &str,
        topics: &[String],
    ) -> Result<Vec<(TopicPartition, Stored)>> {
        let topics = checked_topics(group, topics)?;
        let fetched = runtime()?.block_on(self.brokers.fetch_offsets(group))?;
        Ok(Self::committed_of(fetched, &topics)
            .into_iter()
            .map(|(tp, offset, _)| (tp, Stored::Offset(offset)))
            .collect())
    }

    /// The topics the group committed offsets for, sorted.
    pub(crate) fn stored_topics(&self, group: &str) -> Result<Vec<String>> {
        let fetched = runtime()?.block_on(self.brokers.fetch_offsets(group))?;
        let topics: BTreeSet<String> = fetched
            .into_iter()
            .map(|f| f.partition.topic.to_string())
            .collect();
        Ok(topics.into_iter().collect())
    }

    /// The union of what the group committed for the topics and the partitions the brokers
    /// have, with ranges and each topic's re-creation as its recorded topic ID tells; see
    /// [`crate::OffsetKeeper::survey`]. The brokers' topic IDs become what this keeper's
    /// commits record.
    pub(crate) fn survey(&self, group: &str, topics: &[String]) -> Result<Vec<Surveyed>> {
        let topics = checked_topics(group, topics)?;
        let (known, fetched, ranges) = runtime()?.block_on(async {
            let (known, fetched) = futures::try_join!(
                self.brokers.described(&topics),
                self.brokers.fetch_offsets(group)
            )?;
            let partitions: Vec<TopicPartition> = known
                .iter()
                .flat_map(|(topic, (ids, _))| {
                    let name: std::sync::Arc<str> = topic.as_str().into();
                    ids.iter()
                        .map(move |id| TopicPartition::new(name.clone(), *id))
                })
                .collect();
            let ranges: HashMap<TopicPartition, crate::validate::PartitionRange> = partitions
                .iter()
                .cloned()
                .zip(self.brokers.ranges(&partitions).await?)
                .collect();
            Ok::<_, Error>((known, fetched, ranges))
        })?;
        let ids: HashMap<String, Option<String>> = known
            .into_iter()
            .map(|(topic, (_, id))| (topic, id))
            .collect();
        let committed = Self::committed_of(fetched, &topics);
        let mut recreated: HashMap<String, Recreated> = HashMap::new();
        for (tp, _, metadata) in &committed {
            let current = ids.get(&*tp.topic).cloned().flatten();
            if let Some(found) =
                Recreated::between(metadata.topic_id.as_deref(), current.as_deref())
            {
                recreated.entry(tp.topic.to_string()).or_insert(found);
            }
        }
        self.group(group).lock().topic_ids.extend(ids);
        let mut rows = Vec::new();
        for topic in &topics {
            let mut of_topic: Vec<Surveyed> = committed
                .iter()
                .filter(|(tp, _, _)| *tp.topic == **topic)
                .map(|(tp, offset, _)| Surveyed {
                    partition: tp.clone(),
                    stored: Stored::Offset(*offset),
                    range: ranges.get(tp).copied(),
                    recreated: recreated.get(topic).cloned(),
                })
                .collect();
            for (tp, range) in ranges.iter().filter(|(tp, _)| *tp.topic == **topic) {
                if !of_topic.iter().any(|s| s.partition == *tp) {
                    of_topic.push(Surveyed {
                        partition: tp.clone(),
                        stored: Stored::Missing,
                        range: Some(*range),
                        recreated: recreated.get(topic).cloned(),
                    });
                }
            }
            if of_topic.is_empty() {
                return Err(Error::UnknownTopic {
                    topic: topic.clone(),
                    bootstrap: self.brokers.settings().bootstrap.clone(),
                });
            }
            of_topic.sort_by_key(|s| s.partition.partition);
            rows.extend(of_topic);
        }
        Ok(rows)
    }

    /// The group's live members, described: a group with any is active.
    pub(crate) fn active_instances(&self, group: &str) -> Result<Vec<String>> {
        let view = runtime()?.block_on(self.brokers.describe_group(group))?;
        let mut members: Vec<String> = view.members.iter().map(|m| m.describe()).collect();
        members.sort();
        Ok(members)
    }

    /// Deletes the group's committed offsets of the partitions; the number deleted (those
    /// with nothing committed are skipped).
    pub(crate) fn delete_partitions(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<usize> {
        let topics: Vec<String> = partitions
            .iter()
            .map(|tp| tp.topic.to_string())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let stored: BTreeSet<TopicPartition> = self
            .stored(group, &topics)?
            .into_iter()
            .map(|(tp, _)| tp)
            .collect();
        let mut doomed: Vec<TopicPartition> = partitions
            .iter()
            .filter(|tp| stored.contains(*tp))
            .cloned()
            .collect();
        doomed.sort();
        doomed.dedup();
        if doomed.is_empty() {
            return Ok(0);
        }
        runtime()?.block_on(self.brokers.delete_offsets(group, &doomed))?;
        let owned = self.group(group);
        let mut state = owned.lock();
        for tp in &doomed {
            state.stored.remove(tp);
            state.floors.remove(tp);
            // This keeper's own deletion: not someone else's change when it joins again.
            state.seen.insert(tp, None);
        }
        Ok(doomed.len())
    }

    /// Deletes every committed offset of the topics; the number deleted.
    pub(crate) fn delete_topics(&self, group: &str, topics: &[String]) -> Result<usize> {
        let partitions: Vec<TopicPartition> = self
            .stored(group, topics)?
            .into_iter()
            .map(|(tp, _)| tp)
            .collect();
        self.delete_partitions(group, &partitions)
    }
}
