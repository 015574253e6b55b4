//! A batch of offsets to commit, in columns: each topic name once and, per entry, the index of
//! its name. A streaming batch names every partition of the job, most often unchanged; in this
//! form a partition that needs nothing costs no copy of its topic's name.
//!
//! A batch is kept topic by topic, each topic's partitions rising where they are numbered as
//! Kafka numbers them: the commit then looks each topic up once and reads what it knows of the
//! partitions in order. Batches often come otherwise: Spark's offset ranges and a `HashMap`
//! come in hash order, the topics taking turns.

use std::ops::Range;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{Error, Result};
use crate::names::{check_name, check_partition};
use crate::partition_map::{fits_dense, same_topic, PartitionMap};
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
        let (counts, grouped) = count_by_topic(&topic_index, names.len())?;
        let batch = CommitBatch {
            names,
            topic_index: topic_index.into_iter().map(|i| i as u32).collect(),
            partitions,
            offsets,
        };
        Ok(batch.in_order(&counts, grouped))
    }

    /// The batch of `(partition, offset)` pairs.
    pub fn from_pairs(pairs: &[(TopicPartition, i64)]) -> CommitBatch {
        let mut batch = CommitBatch::default();
        let mut index_of: FxHashMap<&str, u32> = FxHashMap::default();
        let mut counts: Vec<usize> = Vec::new();
        let mut grouped = true;
        // Pairs often come in runs of one topic: a run looks its topic up once.
        let mut run: Option<(&str, u32)> = None;
        for (tp, offset) in pairs {
            let index = match run {
                Some((topic, index)) if same_topic(topic, &tp.topic) => index,
                _ => {
                    let next = batch.names.len() as u32;
                    let index = *index_of.entry(&tp.topic).or_insert_with(|| {
                        batch.names.push(tp.topic.clone());
                        counts.push(0);
                        next
                    });
                    grouped &= counts[index as usize] == 0;
                    run = Some((&tp.topic, index));
                    index
                }
            };
            counts[index as usize] += 1;
            batch.topic_index.push(index);
            batch.partitions.push(tp.partition);
            batch.offsets.push(*offset);
        }
        batch.in_order(&counts, grouped)
    }

    /// The batch topic by topic, each topic's partitions rising where they are dense (Kafka's
    /// 0 to n-1), given each topic's count of entries and whether each topic is one run
    /// already. Each pass runs only when needed and costs one sweep. A negative or repeated
    /// partition leaves its topic's order as it was, for [`CommitBatch::check`] to name it.
    fn in_order(mut self, counts: &[usize], grouped: bool) -> CommitBatch {
        if !grouped {
            // Each entry placed after the entries of the topics before its own: a stable
            // counting sort.
            let mut next: Vec<usize> = counts
                .iter()
                .scan(0, |start, count| {
                    let at = *start;
                    *start += count;
                    Some(at)
                })
                .collect();
            let len = self.len();
            let (mut topic_index, mut partitions, mut offsets) =
                (vec![0; len], vec![0; len], vec![0; len]);
            for entry in 0..len {
                let index = self.topic_index[entry];
                let at = &mut next[index as usize];
                topic_index[*at] = index;
                partitions[*at] = self.partitions[entry];
                offsets[*at] = self.offsets[entry];
                *at += 1;
            }
            (self.topic_index, self.partitions, self.offsets) = (topic_index, partitions, offsets);
        }
        let runs: Vec<Range<usize>> = self.runs().map(|(_, run)| run).collect();
        for run in runs {
            sort_dense(&mut self.partitions[run.clone()], &mut self.offsets[run]);
        }
        self
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

/// The entries of each topic, counted by runs of one index (a count per entry would wait on
/// its own store, entry after entry), and whether each topic is a single run. Refuses an index
/// that names none of the `topics` names.
fn count_by_topic(topic_index: &[i32], topics: usize) -> Result<(Vec<usize>, bool)> {
    let mut counts = vec![0usize; topics];
    let mut grouped = true;
    let mut entry = 0;
    for run in topic_index.chunk_by(|a, b| a == b) {
        let Some(count) = usize::try_from(run[0]).ok().and_then(|i| counts.get_mut(i)) else {
            return Err(Error::invalid(format!(
                "topic index {} of entry {entry} is outside the {topics} topic name(s); allowed: 0 to {}",
                run[0],
                topics as i64 - 1
            )));
        };
        grouped &= *count == 0;
        *count += run.len();
        entry += run.len();
    }
    Ok((counts, grouped))
}

/// Sorts one topic's entries by partition when the numbers are dense ([`fits_dense`]), by
/// placing each at its number. Leaves them as they are when
/// they rise already, are sparse, or hold a negative or repeated partition.
fn sort_dense(partitions: &mut [i32], offsets: &mut [i64]) {
    if partitions.windows(2).all(|pair| pair[0] < pair[1]) {
        return;
    }
    let Some(max) = partitions.iter().try_fold(0usize, |max, &p| {
        usize::try_from(p).ok().map(|p| max.max(p))
    }) else {
        return;
    };
    if !fits_dense(max, partitions.len()) {
        return;
    }
    let mut slots: Vec<Option<i64>> = vec![None; max + 1];
    for (&partition, &offset) in partitions.iter().zip(offsets.iter()) {
        let slot = &mut slots[partition as usize];
        if slot.is_some() {
            return;
        }
        *slot = Some(offset);
    }
    let placed = slots
        .iter()
        .enumerate()
        .filter_map(|(partition, offset)| Some((partition as i32, (*offset)?)));
    for ((partition, offset), (p, o)) in partitions.iter_mut().zip(offsets.iter_mut()).zip(placed) {
        (*partition, *offset) = (p, o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, i32, i64)]) -> Vec<(TopicPartition, i64)> {
        list.iter()
            .map(|(topic, partition, offset)| (TopicPartition::new(*topic, *partition), *offset))
            .collect()
    }

    #[test]
    fn columns_are_checked_and_entries_kept_topic_by_topic_in_rising_order() {
        // Topics taking turns, partitions out of order: as a hash map gives them.
        let batch = CommitBatch::from_pairs(&pairs(&[
            ("a", 1, 6),
            ("b", 0, 7),
            ("a", 2, 8),
            ("a", 0, 5),
        ]));
        assert_eq!(batch.names.len(), 2);
        assert_eq!(
            batch.pairs(),
            pairs(&[("a", 0, 5), ("a", 1, 6), ("a", 2, 8), ("b", 0, 7)])
        );
        assert!(batch.check("g").is_ok());
        let runs: Vec<(String, Range<usize>)> =
            batch.runs().map(|(t, r)| (t.to_string(), r)).collect();
        assert_eq!(runs, vec![("a".into(), 0..3), ("b".into(), 3..4)]);
        // The same through the columns, with a name given twice: its runs stay apart.
        let names: Vec<Arc<str>> = vec![Arc::from("b"), Arc::from("a"), Arc::from("b")];
        let batch = CommitBatch::new(
            names,
            vec![1, 0, 2, 1],
            vec![3, 1, 0, 2],
            vec![30, 10, 0, 20],
        )
        .unwrap();
        assert_eq!(
            batch.pairs(),
            pairs(&[("b", 1, 10), ("a", 2, 20), ("a", 3, 30), ("b", 0, 0)])
        );
        assert!(batch.check("g").is_ok());

        // Sparse numbers keep their order; a repeated or negative one is left for check.
        let sparse = CommitBatch::from_pairs(&pairs(&[("a", 9_000, 1), ("a", 3, 2)]));
        assert_eq!(sparse.pairs(), pairs(&[("a", 9_000, 1), ("a", 3, 2)]));
        assert!(sparse.check("g").is_ok());
        let repeated = CommitBatch::from_pairs(&pairs(&[
            ("a", 1, 4),
            ("b", 0, 0),
            ("a", 0, 3),
            ("a", 1, 5),
        ]));
        let err = repeated.check("g").unwrap_err().to_string();
        assert!(
            err.contains("a-1 appears twice in one commit (offsets 4 and 5)"),
            "{err}"
        );
        let negative = CommitBatch::from_pairs(&pairs(&[("a", 1, 4), ("a", -2, 3)]));
        let err = negative.check("g").unwrap_err().to_string();
        assert!(err.contains("-2"), "{err}");

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
