//! A fast hasher for the engine's own maps, keyed by topic-partitions and znode paths: per
//! load or commit they hash every partition two or three times, and with std's SipHash that
//! was the largest single cost of a warm load's CPU (perf, 1,000 partitions). The keys come
//! from the brokers and the job, not from an adversary, so SipHash's flood resistance buys
//! nothing here. The mixing step is FxHash's (rustc's).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_i32(&mut self, i: i32) {
        self.add(u64::from(i as u32));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        // Spread the last multiplication's high bits down too: hashbrown uses the top 7 bits
        // as a tag and the low bits as the bucket.
        self.hash ^ (self.hash >> 32)
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
pub type FastSet<K> = HashSet<K, BuildHasherDefault<FxHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TopicPartition;

    #[test]
    fn maps_keep_every_key_apart() {
        let mut map: FastMap<TopicPartition, i32> = FastMap::default();
        for topic in ["a", "bench-p1000-t0", "bench-p1000-t1", "bench-p1000-t10"] {
            for partition in 0..2_000 {
                map.insert(TopicPartition::new(topic, partition), partition);
            }
        }
        assert_eq!(map.len(), 8_000);
        assert_eq!(map[&TopicPartition::new("bench-p1000-t1", 1_999)], 1_999);
        let paths: FastSet<String> = (0..1_000).map(|i| format!("/c/g/offsets/t/{i}")).collect();
        assert_eq!(paths.len(), 1_000);
    }
}
