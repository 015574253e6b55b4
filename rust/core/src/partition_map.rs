//! Values by topic, then by partition number. A batch's partitions come in runs of one topic,
//! so [`PartitionMap::get_each`] hashes and compares each run's topic name once, not once per
//! partition as a map keyed by `TopicPartition` does.

use rustc_hash::FxHashMap;

use crate::TopicPartition;

#[derive(Debug)]
pub(crate) struct PartitionMap<V> {
    topics: FxHashMap<String, Slots<V>>,
}

impl<V> Default for PartitionMap<V> {
    fn default() -> Self {
        PartitionMap {
            topics: FxHashMap::default(),
        }
    }
}

impl<V> PartitionMap<V> {
    pub(crate) fn get(&self, tp: &TopicPartition) -> Option<&V> {
        self.topics.get(&*tp.topic)?.get(tp.partition)
    }

    pub(crate) fn get_mut(&mut self, tp: &TopicPartition) -> Option<&mut V> {
        self.topics.get_mut(&*tp.topic)?.get_mut(tp.partition)
    }

    /// The partitions of `topic`, for a run of them looked up once.
    pub(crate) fn topic(&self, topic: &str) -> Option<&Slots<V>> {
        self.topics.get(topic)
    }

    /// The partitions of `topic`, created empty when missing (the name is copied only then).
    pub(crate) fn topic_mut(&mut self, topic: &str) -> &mut Slots<V> {
        if !self.topics.contains_key(topic) {
            self.topics.insert(topic.to_string(), Slots::default());
        }
        // Just inserted when missing.
        self.topics.get_mut(topic).expect("present")
    }

    pub(crate) fn insert(&mut self, tp: &TopicPartition, value: V) -> Option<V> {
        self.topic_mut(&tp.topic).insert(tp.partition, value)
    }

    pub(crate) fn remove(&mut self, tp: &TopicPartition) -> Option<V> {
        self.topics.get_mut(&*tp.topic)?.remove(tp.partition)
    }

    /// The value of each of `partitions`, in order; each run of one topic looks it up once.
    pub(crate) fn get_each<'a, 'p>(
        &'a self,
        partitions: impl IntoIterator<Item = &'p TopicPartition>,
    ) -> Vec<Option<&'a V>> {
        by_topic_runs(partitions, |topic| self.topics.get(topic))
            .map(|(of_topic, tp)| of_topic?.get(tp.partition))
            .collect()
    }
}

impl<V> PartitionMap<V> {
    /// Every value with its partition; topics in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (TopicPartition, &V)> + '_ {
        self.topics.iter().flat_map(|(topic, slots)| {
            let name: std::sync::Arc<str> = std::sync::Arc::from(topic.as_str());
            slots.iter().map(move |(partition, value)| {
                (TopicPartition::new(name.clone(), partition), value)
            })
        })
    }
}

impl<V: Default> PartitionMap<V> {
    pub(crate) fn entry_or_default(&mut self, tp: &TopicPartition) -> &mut V {
        self.topic_mut(&tp.topic).entry_or_default(tp.partition)
    }
}

/// One topic's values by partition number. Kafka numbers a topic's partitions 0 to n-1: those
/// sit in a vector, read in order as a batch walks them (a hash map's scattered reads missed
/// the cache at 20,000 partitions). A number far past the others goes in a map, so that no
/// input makes the vector huge.
#[derive(Debug)]
pub(crate) struct Slots<V> {
    dense: Vec<Option<V>>,
    sparse: FxHashMap<i32, V>,
}

impl<V> Default for Slots<V> {
    fn default() -> Self {
        Slots {
            dense: Vec::new(),
            sparse: FxHashMap::default(),
        }
    }
}

/// Whether numbers up to `highest` go in a vector made for `count` of them: at most double,
/// plus 1,024, so that no input makes the vector huge.
pub(crate) fn fits_dense(highest: usize, count: usize) -> bool {
    highest <= 2 * count + 1024
}

impl<V> Slots<V> {
    #[inline]
    fn dense_index(&self, partition: i32) -> Option<usize> {
        usize::try_from(partition)
            .ok()
            .filter(|i| *i < self.dense.len())
    }

    #[inline]
    pub(crate) fn get(&self, partition: i32) -> Option<&V> {
        match self.dense_index(partition) {
            Some(i) => self.dense[i].as_ref(),
            None => self.sparse.get(&partition),
        }
    }

    pub(crate) fn get_mut(&mut self, partition: i32) -> Option<&mut V> {
        match self.dense_index(partition) {
            Some(i) => self.dense[i].as_mut(),
            None => self.sparse.get_mut(&partition),
        }
    }

    pub(crate) fn insert(&mut self, partition: i32, value: V) -> Option<V> {
        if let Some(i) = self.dense_index(partition) {
            return self.dense[i].replace(value);
        }
        match usize::try_from(partition) {
            Ok(i) if fits_dense(i, self.dense.len()) => {
                let old = self.sparse.remove(&partition);
                let from = self.dense.len();
                self.dense.resize_with(i + 1, || None);
                // Numbers the vector now covers leave the map.
                if !self.sparse.is_empty() {
                    for j in from..i {
                        if let Some(moved) =
                            i32::try_from(j).ok().and_then(|p| self.sparse.remove(&p))
                        {
                            self.dense[j] = Some(moved);
                        }
                    }
                }
                self.dense[i] = Some(value);
                old
            }
            _ => self.sparse.insert(partition, value),
        }
    }

    pub(crate) fn remove(&mut self, partition: i32) -> Option<V> {
        match self.dense_index(partition) {
            Some(i) => self.dense[i].take(),
            None => self.sparse.remove(&partition),
        }
    }

    /// Every value with its partition number.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (i32, &V)> + '_ {
        let dense = self
            .dense
            .iter()
            .enumerate()
            .filter_map(|(i, value)| Some((i32::try_from(i).ok()?, value.as_ref()?)));
        dense.chain(self.sparse.iter().map(|(p, v)| (*p, v)))
    }
}

impl<V: Default> Slots<V> {
    pub(crate) fn entry_or_default(&mut self, partition: i32) -> &mut V {
        if self.get(partition).is_none() {
            self.insert(partition, V::default());
        }
        // Just inserted when missing.
        self.get_mut(partition).expect("present")
    }
}

/// Each of `partitions` with what `lookup` finds for its topic, looked up once per run of one
/// topic's partitions.
pub(crate) fn by_topic_runs<'m, 'p, M: ?Sized + 'm>(
    partitions: impl IntoIterator<Item = &'p TopicPartition>,
    lookup: impl Fn(&str) -> Option<&'m M>,
) -> impl Iterator<Item = (Option<&'m M>, &'p TopicPartition)> {
    let mut run: Option<(&'p str, Option<&'m M>)> = None;
    partitions.into_iter().map(move |tp| {
        let found = match run {
            Some((topic, found)) if same_topic(topic, &tp.topic) => found,
            _ => {
                let found = lookup(&tp.topic);
                run = Some((&tp.topic, found));
                found
            }
        };
        (found, tp)
    })
}

/// Whether two names are equal; a run's partitions share one name, found equal without
/// comparing the bytes.
pub(crate) fn same_topic(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b) || a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_found_by_topic_and_partition_alone_or_by_runs() {
        let tp = |topic: &str, partition| TopicPartition::new(topic, partition);
        let mut map = PartitionMap::default();
        assert_eq!(map.insert(&tp("a", 0), 10), None);
        assert_eq!(map.insert(&tp("a", 0), 11), Some(10));
        map.insert(&tp("a", 2), 12);
        *map.entry_or_default(&tp("b", 1)) += 5;
        assert_eq!(map.get(&tp("a", 0)), Some(&11));
        assert_eq!(map.get(&tp("a", 1)), None);
        assert_eq!(map.get(&tp("c", 0)), None);
        let asked = [tp("a", 0), tp("a", 1), tp("b", 1), tp("a", 2), tp("c", 0)];
        assert_eq!(
            map.get_each(&asked),
            vec![Some(&11), None, Some(&5), Some(&12), None]
        );
        if let Some(value) = map.get_mut(&tp("b", 1)) {
            *value = 7;
        }
        assert_eq!(map.remove(&tp("b", 1)), Some(7));
        assert_eq!(map.remove(&tp("b", 1)), None);
        assert_eq!(map.get_each(&[tp("b", 1)]), vec![None]);
    }

    #[test]
    fn far_partition_numbers_use_no_large_vector_and_move_in_when_reached() {
        let mut slots = Slots::default();
        assert_eq!(slots.insert(i32::MAX, 1), None);
        assert_eq!(slots.insert(-3, 2), None);
        assert_eq!(slots.insert(5_000, 3), None);
        assert!(slots.dense.is_empty(), "{}", slots.dense.len());
        assert_eq!(slots.insert(0, 4), None);
        assert_eq!(slots.insert(1_000, 5), None);
        assert_eq!(slots.insert(3_000, 6), None);
        // 3,000 <= 2 * 1,001 + 1,024: in the vector; 5,000 is still past it, until the next.
        assert_eq!(slots.dense.len(), 3_001);
        assert_eq!(slots.insert(5_000, 7), Some(3));
        assert_eq!(slots.dense.len(), 5_001);
        assert!(!slots.sparse.contains_key(&5_000));
        assert_eq!(
            [i32::MAX, -3, 5_000, 0, 1_000, 3_000, 7].map(|p| slots.get(p).copied()),
            [Some(1), Some(2), Some(7), Some(4), Some(5), Some(6), None]
        );
        assert_eq!(slots.remove(1_000), Some(5));
        assert_eq!(slots.remove(1_000), None);
        *slots.entry_or_default(9_000) += 10;
        *slots.entry_or_default(9_000) += 1;
        assert_eq!(slots.get(9_000), Some(&11));
        assert!(same_topic("t", "t") && !same_topic("t", "u"));
    }
}
