//! Values by topic, then by partition number. A batch's partitions come in runs of one topic,
//! so [`PartitionMap::get_each`] hashes and compares each run's topic name once, not once per
//! partition as a map keyed by `TopicPartition` does.

use rustc_hash::FxHashMap;

use crate::TopicPartition;

#[derive(Debug)]
pub(crate) struct PartitionMap<V> {
    topics: FxHashMap<String, FxHashMap<i32, V>>,
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
        self.topics.get(&*tp.topic)?.get(&tp.partition)
    }

    pub(crate) fn get_mut(&mut self, tp: &TopicPartition) -> Option<&mut V> {
        self.topics.get_mut(&*tp.topic)?.get_mut(&tp.partition)
    }

    /// The partitions of `topic`, created empty when missing (the name is copied only then).
    pub(crate) fn topic_mut(&mut self, topic: &str) -> &mut FxHashMap<i32, V> {
        if !self.topics.contains_key(topic) {
            self.topics.insert(topic.to_string(), FxHashMap::default());
        }
        // Just inserted when missing.
        self.topics.get_mut(topic).expect("present")
    }

    pub(crate) fn insert(&mut self, tp: &TopicPartition, value: V) -> Option<V> {
        self.topic_mut(&tp.topic).insert(tp.partition, value)
    }

    pub(crate) fn remove(&mut self, tp: &TopicPartition) -> Option<V> {
        self.topics.get_mut(&*tp.topic)?.remove(&tp.partition)
    }

    /// The value of each of `partitions`, in order; each run of one topic looks it up once.
    pub(crate) fn get_each<'a, 'p>(
        &'a self,
        partitions: impl IntoIterator<Item = &'p TopicPartition>,
    ) -> Vec<Option<&'a V>> {
        by_topic_runs(partitions, |topic| self.topics.get(topic))
            .map(|(of_topic, tp)| of_topic?.get(&tp.partition))
            .collect()
    }
}

impl<V: Default> PartitionMap<V> {
    pub(crate) fn entry_or_default(&mut self, tp: &TopicPartition) -> &mut V {
        self.topic_mut(&tp.topic).entry(tp.partition).or_default()
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
            Some((topic, found)) if topic == &*tp.topic => found,
            _ => {
                let found = lookup(&tp.topic);
                run = Some((&tp.topic, found));
                found
            }
        };
        (found, tp)
    })
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
}
