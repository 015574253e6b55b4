//! A batch of offsets to commit, in columns: each topic name once and, per entry, the index of
//! its name. A streaming batch names every partition of the job, most often unchanged; in this
//! form a partition that needs nothing costs no copy of its topic's name.

use std::ops::Range;
use std::sync::Arc;

use rustc_hash::FxHashSet;

use crate::error::{Error, Result};
use crate::names::{check_name, check_partition};
use crate::partition_map::PartitionMap;
use crate::TopicPartition;

/// Offsets to commit: entry `i` is partition `partitions[i]` of topic
/// `names[topic_index[i]]`, at the next offset to read `offsets[i]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitBatch {
    names: Vec<Arc<str>>,
    topic_index: Vec<u32>,
    partitions: Vec<i32>,
    offsets: Vec<i64>,
}

impl CommitBatch {
    /// The columns as they cross JNI; refuses columns of different lengths and an index that
    /// names no topic.
    pub fn new(
        names: Vec<Arc<str>>,
        topic_index: Vec<i32>,
        partitions: Vec<i32>,
        offsets: Vec<i64>,
    ) -> Result<CommitBatch> {
        if topic_index.len() != partitions.len() || partitions.len() != offsets.len() {
            return Err(Error::invalid(format!(
                "batch columns differ in length (topic indexes {}, partitions {}, offsets {}); they must be equal",
                topic_index.len(),
                partitions.len(),
                offsets.len()
            )));
        }
        // One branch-free pass over the whole column (a batch names every partition of the
        // job); the entry to name in the error is looked for only when there is one.
        let count = names.len();
        let in_range = |i: i32| usize::try_from(i).is_ok_and(|i| i < count);
        if !topic_index.iter().fold(true, |all, &i| all & in_range(i)) {
            let (entry, i) = topic_index
                .iter()
                .enumerate()
                .find(|(_, &i)| !in_range(i))
                .map(|(entry, &i)| (entry, i))
                .unwrap_or_default();
            return Err(Error::invalid(format!(
                "topic index {i} of entry {entry} is outside the {count} topic name(s); allowed: 0 to {}",
                count as i64 - 1
            )));
        }
        let topic_index = topic_index.into_iter().map(|i| i as u32).collect();
        Ok(CommitBatch {
            names,
            topic_index,
            partitions,
            offsets,
        })
    }

    /// The batch of `(partition, offset)` pairs, in their order.
    pub fn from_pairs(pairs: &[(TopicPartition, i64)]) -> CommitBatch {
        let mut batch = CommitBatch::default();
        for (tp, offset) in pairs {
            // Pairs come in runs of one topic: a name is added once per run.
            let same = batch
                .names
                .last()
                .is_some_and(|last| Arc::ptr_eq(last, &tp.topic) || **last == *tp.topic);
            if !same {
                batch.names.push(tp.topic.clone());
            }
            batch.topic_index.push(batch.names.len() as u32 - 1);
            batch.partitions.push(tp.partition);
            batch.offsets.push(*offset);
        }
        batch
    }

    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// Each run of entries with one topic index: its topic and the entries' positions.
    pub(crate) fn runs(&self) -> impl Iterator<Item = (&Arc<str>, Range<usize>)> + '_ {
        let mut start = 0;
        self.topic_index.chunk_by(|a, b| a == b).map(move |run| {
            let range = start..start + run.len();
            start = range.end;
            (&self.names[run[0] as usize], range)
        })
    }

    pub(crate) fn partition(&self, entry: usize) -> i32 {
        self.partitions[entry]
    }

    pub(crate) fn offset(&self, entry: usize) -> i64 {
        self.offsets[entry]
    }

    /// Entry `entry` as a pair (its topic's name shared, not copied).
    pub(crate) fn pair(&self, entry: usize) -> (TopicPartition, i64) {
        let topic = self.names[self.topic_index[entry] as usize].clone();
        (
            TopicPartition {
                topic,
                partition: self.partitions[entry],
            },
            self.offsets[entry],
        )
    }

    pub(crate) fn pairs(&self) -> Vec<(TopicPartition, i64)> {
        (0..self.len()).map(|entry| self.pair(entry)).collect()
    }

    /// Refuses, before any I/O, a bad group or topic name, a negative partition or offset, and
    /// a partition named twice.
    pub fn check(&self, group: &str) -> Result<()> {
        check_name("group", group)?;
        // One name check per run. A batch whose runs each rise and name distinct topics (as
        // Spark's and the Java API's do) has no repeat: the map that finds one is built only
        // for other batches.
        let mut topics: FxHashSet<&str> = FxHashSet::default();
        let mut may_repeat = false;
        for (topic, run) in self.runs() {
            check_name("topic", topic)?;
            may_repeat |= !topics.insert(topic);
            let (partitions, offsets) = (&self.partitions[run.clone()], &self.offsets[run]);
            // Branch-free passes first; the entry to name is looked for only on a failure.
            let valid = partitions.iter().fold(true, |all, &p| all & (p >= 0))
                & offsets.iter().fold(true, |all, &o| all & (o >= 0));
            if !valid {
                for (&partition, &offset) in partitions.iter().zip(offsets) {
                    check_partition(topic, partition)?;
                    if offset < 0 {
                        return Err(Error::invalid(format!(
                            "offset {offset} for {topic}-{partition} is negative; allowed: 0 or more"
                        )));
                    }
                }
            }
            may_repeat |= !partitions
                .windows(2)
                .fold(true, |rising, pair| rising & (pair[0] < pair[1]));
        }
        if may_repeat {
            let mut seen: PartitionMap<i64> = PartitionMap::default();
            for (topic, run) in self.runs() {
                let of_topic = seen.topic_mut(topic);
                for entry in run {
                    let (partition, offset) = (self.partitions[entry], self.offsets[entry]);
                    if let Some(first) = of_topic.insert(partition, offset) {
                        return Err(Error::invalid(format!(
                            "{topic}-{partition} appears twice in one commit (offsets {first} and {offset}); allowed: once per partition"
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_checked_and_pairs_round_trip() {
        let pairs = vec![
            (TopicPartition::new("a", 0), 5),
            (TopicPartition::new("a", 1), 6),
            (TopicPartition::new("b", 0), 7),
            (TopicPartition::new("a", 2), 8),
        ];
        let batch = CommitBatch::from_pairs(&pairs);
        assert_eq!(batch.names.len(), 3);
        assert_eq!(batch.pairs(), pairs);
        assert!(batch.check("g").is_ok());
        let runs: Vec<(String, Range<usize>)> =
            batch.runs().map(|(t, r)| (t.to_string(), r)).collect();
        assert_eq!(
            runs,
            vec![("a".into(), 0..2), ("b".into(), 2..3), ("a".into(), 3..4)]
        );

        let names: Vec<Arc<str>> = vec![Arc::from("t")];
        for (index, needle) in [
            (
                vec![1],
                "topic index 1 of entry 0 is outside the 1 topic name(s); allowed: 0 to 0",
            ),
            (vec![-1], "topic index -1 of entry 0"),
            (vec![i32::MAX], "topic index 2147483647 of entry 0"),
            (vec![0, 0], "batch columns differ in length"),
        ] {
            let err = CommitBatch::new(names.clone(), index, vec![0], vec![1]).unwrap_err();
            assert!(err.to_string().contains(needle), "{needle}: {err}");
        }
    }
}
