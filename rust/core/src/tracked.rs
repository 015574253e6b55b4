//! What a keeper knows of each group's znodes: the versions and values it last saw (for
//! fencing and monotonic commits), writes whose outcome is unknown, folders known to exist,
//! the topics' identity, and the offsets of commits deferred during a ZooKeeper outage.
//! Loads record what they read; commits plan against it and record what they wrote.

use std::collections::{BTreeSet, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::batch::CommitBatch;
use crate::partition_map::PartitionMap;
use crate::validate::Stored;
use crate::zookeeper::layout::{encode_topic_identity, parse_topic_identity, GroupLayout};
use crate::zookeeper::Node;
use crate::TopicPartition;
use rustc_hash::FxHashMap;

/// The trackers of every group, behind the lock that each commit holds throughout, so that
/// commits of one keeper never race each other.
#[derive(Debug, Default)]
pub(crate) struct Tracked {
    trackers: Mutex<Trackers>,
}

impl Tracked {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Trackers> {
        let mut trackers = self
            .trackers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        trackers.times_taken += 1;
        trackers
    }
}

/// What a keeper knows of each group's offset znodes.
#[derive(Debug, Default)]
pub(crate) struct Trackers {
    groups: FxHashMap<String, Tracker>,
    /// How many times the lock was taken: a load that reads without it sees by this whether
    /// anything (a commit) may have come in between.
    pub(crate) times_taken: u64,
}

impl Trackers {
    pub(crate) fn group(&mut self, group: &str) -> &mut Tracker {
        if !self.groups.contains_key(group) {
            self.groups.insert(group.to_string(), Tracker::default());
        }
        // Just inserted when missing; the lookup then never allocates the key.
        self.groups.get_mut(group).expect("present")
    }

    pub(crate) fn each_group(&mut self) -> impl Iterator<Item = (&String, &mut Tracker)> {
        self.groups.iter_mut()
    }
}

/// What a keeper knows of one group's offset znodes it read or wrote, by partition (no path is
/// built for a partition a commit leaves unchanged).
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    nodes: PartitionMap<Seen>,
    /// Writes whose outcome is unknown (the request failed on the way): the version each would
    /// have given and the value it wrote. The next commit of the partition reads its node to
    /// settle it. Rare, so kept apart: [`Seen`] stays small for the pass over every partition.
    pending: PartitionMap<(i32, i64)>,
    /// Persistent folders known to exist.
    dirs: HashSet<String>,
    /// Offsets of commits deferred because ZooKeeper could not be reached, not stored yet.
    deferred: FxHashMap<TopicPartition, i64>,
    /// Commits of the group failing for want of ZooKeeper, since the last one that went through.
    outage: Option<Outage>,
    /// When a commit of the group last went through.
    last_success: Option<Instant>,
    /// The identity of the topics this keeper loaded, by topic.
    topics: FxHashMap<String, TopicSeen>,
}

/// What a keeper knows of a topic's identity in one group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct TopicSeen {
    /// The brokers' topic ID at the last load; `None` from brokers before 2.8.
    current: Option<String>,
    /// The topic folder as last seen: `None` until read, `Some(None)` when it did not exist,
    /// else its version and the ID its data records.
    node: Option<Option<(i32, Option<String>)>>,
    /// Partitions whose nodes hold offsets of the old topic (it was re-created): the new ID is
    /// written once each of them has been written for the new topic, so that no old offset
    /// ever passes for one of the new topic.
    old: BTreeSet<i32>,
}

impl TopicSeen {
    /// The ID a commit should record, when the folder is known and records another (or none).
    fn to_write(&self) -> Option<&str> {
        let current = self.current.as_deref()?;
        match &self.node {
            Some(Some((_, stored))) if stored.as_deref() == Some(current) => None,
            Some(_) => Some(current),
            None => None,
        }
    }

    /// The brokers' ID is known but the folder is not: it must be read before a commit.
    fn folder_unknown(&self) -> bool {
        self.current.is_some() && self.node.is_none()
    }
}

/// A run of deferred commits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outage {
    /// The start of the first deferred commit: the stored offsets are behind since then.
    pub(crate) since: Instant,
    pub(crate) commits: usize,
}

/// One offset znode as this keeper last saw it. A commit reads one per partition of the batch,
/// 20,000 of them at that many partitions: in 24 bytes, not the 64 it took with `Option`s and
/// the pending write inside, those reads miss the cache less.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Seen {
    /// `None` when there was no node.
    pub(crate) version: Option<i32>,
    /// The stored offset; none when missing or not a usable offset.
    value: MaybeOffset,
    /// The highest offset this keeper committed: later commits never go below it.
    committed: MaybeOffset,
}

const _: () = assert!(std::mem::size_of::<Option<Seen>>() == 24);

impl Seen {
    pub(crate) fn of(node: Option<&Node>) -> Seen {
        Seen {
            version: node.map(|n| n.version),
            value: MaybeOffset::from(node.and_then(|n| match Stored::parse(&n.data) {
                Stored::Offset(offset) => Some(offset),
                _ => None,
            })),
            committed: MaybeOffset::NONE,
        }
    }

    /// Whether the node holds `offset` as this keeper committed it (a write pending aside).
    #[inline]
    fn is_settled_at(&self, offset: i64) -> bool {
        let offset = MaybeOffset::some(offset);
        self.version.is_some() && self.value == offset && self.committed == offset
    }

    /// Whether the node holds `offset`.
    #[inline]
    pub(crate) fn holds(&self, offset: i64) -> bool {
        self.value == MaybeOffset::some(offset)
    }

    /// Whether this keeper's floor for the partition is below `offset`.
    #[inline]
    pub(crate) fn floor_below(&self, offset: i64) -> bool {
        self.committed < MaybeOffset::some(offset)
    }

    /// The highest offset this keeper committed, if any.
    pub(crate) fn floor(&self) -> Option<i64> {
        self.committed.get()
    }

    /// The node as a message names it.
    pub(crate) fn describe(&self) -> String {
        describe(self.version, self.value)
    }
}

fn describe(version: Option<i32>, value: MaybeOffset) -> String {
    match (version, value.get()) {
        (None, _) => "no node".to_string(),
        (Some(v), Some(offset)) => format!("version {v} holding {offset}"),
        (Some(v), None) => format!("version {v} holding no usable offset"),
    }
}

/// An offset or none in 8 bytes, where `Option<i64>` takes 16: offsets are never negative, so
/// -1 stands for none (as in Kafka's OffsetFetch). Ordered as `Option<i64>` is, none first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct MaybeOffset(i64);

impl MaybeOffset {
    const NONE: MaybeOffset = MaybeOffset(-1);

    /// `offset`; none when it is negative (never, from a checked batch or a parsed node).
    fn some(offset: i64) -> MaybeOffset {
        MaybeOffset(offset.max(-1))
    }

    fn get(self) -> Option<i64> {
        (self.0 >= 0).then_some(self.0)
    }
}

impl Default for MaybeOffset {
    fn default() -> Self {
        MaybeOffset::NONE
    }
}

impl From<Option<i64>> for MaybeOffset {
    fn from(offset: Option<i64>) -> Self {
        offset.map_or(MaybeOffset::NONE, MaybeOffset::some)
    }
}

/// Whether a folder path of the group is a topic's folder (longer than the offsets folder).
fn is_topic_dir(layout: &GroupLayout<'_>, dir: &str) -> bool {
    dir.len() > layout.offsets_dir().len()
}

/// The last segment of a path: a topic folder's topic.
fn last_segment(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or_default()
}

/// What a load reads and records.
impl Tracker {
    /// What a load read. A node that changed since this keeper last saw it was written by
    /// someone else (a reset): the load takes it over, and commits may go below what this
    /// keeper committed before.
    pub(crate) fn observe(&mut self, partition: &TopicPartition, node: Option<&Node>) {
        // The job restarts from what the load returns: deferred offsets no longer apply.
        if self.deferred.remove(partition).is_some() {
            log::info!("{partition}: a load took over; the offset of a deferred commit is dropped");
        }
        self.adopt(partition, node);
    }

    /// What a load read of a topic: the brokers' ID, the topic folder, and the partitions that
    /// hold offsets of the old topic when it was re-created.
    pub(crate) fn observe_topic(
        &mut self,
        topic: &str,
        current: Option<String>,
        folder: Option<&Node>,
        old: BTreeSet<i32>,
    ) {
        let node = Some(folder.map(|n| (n.version, parse_topic_identity(&n.data))));
        self.topics
            .insert(topic.to_string(), TopicSeen { current, node, old });
    }

    /// Marks the partitions of a topic found re-created by other means than its ID (see
    /// [`crate::recreated`]) as holding the old topic's offsets, as [`Tracker::observe_topic`]
    /// does for a changed ID: the brokers' ID is recorded once each has been written again.
    pub(crate) fn mark_old(&mut self, topic: &str, old: BTreeSet<i32>) {
        if let Some(seen) = self.topics.get_mut(topic) {
            seen.old = old;
        }
    }

    /// What was read once this keeper took ownership: as [`Tracker::observe`], but the offsets
    /// of deferred commits stay (the job goes on from them).
    pub(crate) fn adopt(&mut self, partition: &TopicPartition, node: Option<&Node>) {
        let now = Seen::of(node);
        let pending = self.pending.remove(partition);
        match self.nodes.get_mut(partition) {
            None => {
                self.nodes.insert(partition, now);
            }
            Some(seen) => {
                let ours = pending.is_some_and(|(version, value)| {
                    now.version == Some(version) && now.value == MaybeOffset::some(value)
                });
                let unchanged = seen.version == now.version && seen.value == now.value;
                let committed = if ours {
                    seen.committed.max(now.value)
                } else if unchanged {
                    seen.committed
                } else {
                    MaybeOffset::NONE
                };
                *seen = Seen { committed, ..now };
            }
        }
    }

    /// Forgets what this keeper committed for the partition: the load chose to start elsewhere.
    pub(crate) fn reset_floor(&mut self, partition: &TopicPartition) {
        if let Some(seen) = self.nodes.get_mut(partition) {
            seen.committed = MaybeOffset::NONE;
        }
    }
}

/// Commits deferred during a ZooKeeper outage.
impl Tracker {
    pub(crate) fn has_deferred(&self) -> bool {
        !self.deferred.is_empty()
    }

    pub(crate) fn deferred_count(&self) -> usize {
        self.deferred.len()
    }

    /// The offsets of deferred commits, to write them.
    pub(crate) fn deferred(&self) -> Vec<(TopicPartition, i64)> {
        self.deferred
            .iter()
            .map(|(partition, offset)| (partition.clone(), *offset))
            .collect()
    }

    /// The batch with the offsets of deferred commits it does not hold; for a partition in
    /// both, the batch's offset, or with `monotonic` the higher of the two.
    pub(crate) fn with_deferred(
        &self,
        offsets: &[(TopicPartition, i64)],
        monotonic: bool,
    ) -> Vec<(TopicPartition, i64)> {
        let mut merged = Vec::with_capacity(offsets.len() + self.deferred.len());
        let mut in_batch = HashSet::with_capacity(offsets.len());
        for (partition, offset) in offsets {
            in_batch.insert(partition);
            let offset = match self.deferred.get(partition) {
                Some(deferred) if monotonic && deferred > offset => *deferred,
                _ => *offset,
            };
            merged.push((partition.clone(), offset));
        }
        for (partition, offset) in &self.deferred {
            if !in_batch.contains(partition) {
                merged.push((partition.clone(), *offset));
            }
        }
        merged
    }

    pub(crate) fn drop_deferred(&mut self) {
        self.deferred.clear();
    }

    /// A commit could not reach ZooKeeper: its offsets (which hold the deferred ones it did not
    /// replace) wait for the next commit. The outage, counted from its first commit's start.
    pub(crate) fn defer<'a>(
        &mut self,
        offsets: impl Iterator<Item = (&'a TopicPartition, i64)>,
        started: Instant,
    ) -> Outage {
        self.deferred = offsets
            .map(|(partition, offset)| (partition.clone(), offset))
            .collect();
        let outage = self.outage.get_or_insert(Outage {
            since: started,
            commits: 0,
        });
        outage.commits += 1;
        *outage
    }

    /// How long the stored offsets have been behind; zero when no commit is deferred.
    pub(crate) fn behind(&self) -> Duration {
        self.outage
            .map_or(Duration::ZERO, |outage| outage.since.elapsed())
    }

    /// When a commit of the group last went through, if ever.
    pub(crate) fn last_success(&self) -> Option<Instant> {
        self.last_success
    }

    /// A commit of the group went through: nothing is deferred any more.
    pub(crate) fn went_through(&mut self, group: &str) {
        self.deferred.clear();
        if let Some(outage) = self.outage.take() {
            log::info!(
                "group {group}: ZooKeeper answers again; the newest offsets are stored, after {} deferred commit(s) over {} ms",
                outage.commits,
                outage.since.elapsed().as_millis()
            );
        }
        self.last_success = Some(Instant::now());
    }
}

/// What a commit plans with.
impl Tracker {
    /// What was last seen of each partition, in the order given.
    pub(crate) fn seen_each<'p>(
        &self,
        partitions: impl ExactSizeIterator<Item = &'p TopicPartition>,
    ) -> Vec<Option<&Seen>> {
        self.nodes.get_each(partitions)
    }

    /// Whether nothing is deferred, no outage runs and the group's folders are known: what
    /// lets a commit leave out partitions stored as given.
    pub(crate) fn is_quiet(&self, layout: &GroupLayout<'_>) -> bool {
        self.deferred.is_empty()
            && self.outage.is_none()
            && layout
                .group_dirs()
                .iter()
                .all(|dir| self.dirs.contains(dir))
    }

    /// The batch without the partitions known to be stored exactly as given (and fenced
    /// since), and how many it left out: where folders and topic identities are known and no
    /// write of the partition is pending.
    pub(crate) fn unsettled(
        &self,
        layout: &GroupLayout<'_>,
        batch: &CommitBatch,
    ) -> (Vec<(TopicPartition, i64)>, usize) {
        let mut rest = Vec::new();
        let mut settled = 0;
        for (topic, run) in batch.runs() {
            let plain = self.dirs.contains(&layout.topic_dir(topic))
                && self.topics.get(&**topic).is_none_or(|seen| {
                    seen.old.is_empty() && seen.to_write().is_none() && !seen.folder_unknown()
                });
            let nodes = self.nodes.topic(topic).filter(|_| plain);
            let pending = self.pending.topic(topic);
            for entry in run {
                let (partition, offset) = (batch.partition(entry), batch.offset(entry));
                let stored = nodes
                    .and_then(|nodes| nodes.get(partition))
                    .is_some_and(|seen| seen.is_settled_at(offset))
                    && pending.is_none_or(|pending| pending.get(partition).is_none());
                if stored {
                    settled += 1;
                } else {
                    rest.push(batch.pair(entry));
                }
            }
        }
        (rest, settled)
    }

    pub(crate) fn knows_dir(&self, dir: &str) -> bool {
        self.dirs.contains(dir)
    }

    /// Whether the topic's folder must be read (again) for its identity.
    pub(crate) fn topic_folder_unknown(&self, topic: &str) -> bool {
        self.topics
            .get(topic)
            .is_some_and(TopicSeen::folder_unknown)
    }

    /// Whether the partition's node must be read before a write: never seen, or (fencing off)
    /// always, or a write of it is pending.
    pub(crate) fn must_read(
        &self,
        seen: Option<&Seen>,
        partition: &TopicPartition,
        fencing: bool,
    ) -> bool {
        !fencing || seen.is_none() || self.pending.get(partition).is_some()
    }

    /// A folder of the group as read: known to exist, and a topic folder's identity recorded
    /// when it was not known (a folder already seen keeps the version seen, for fencing).
    pub(crate) fn read_dir(&mut self, layout: &GroupLayout<'_>, dir: &str, node: Option<&Node>) {
        if node.is_some() {
            self.dirs.insert(dir.to_string());
        }
        if is_topic_dir(layout, dir) {
            match self.topics.get_mut(last_segment(dir)) {
                Some(seen) if matches!(seen.node, None | Some(None)) => {
                    seen.node = Some(node.map(|n| (n.version, parse_topic_identity(&n.data))));
                }
                _ => {}
            }
        }
    }

    /// A partition's node as a commit read it. A write whose outcome was unknown is settled:
    /// applied, not applied, or (an error naming what was expected and found) overtaken by
    /// another writer.
    pub(crate) fn read_leaf(
        &mut self,
        partition: &TopicPartition,
        node: Option<&Node>,
        fencing: bool,
    ) -> std::result::Result<(), String> {
        let now = Seen::of(node);
        let Some(seen) = self.nodes.get_mut(partition) else {
            self.nodes.insert(partition, now);
            return Ok(());
        };
        if !fencing {
            *seen = Seen {
                committed: seen.committed,
                ..now
            };
            return Ok(());
        }
        let Some(&(version, value)) = self.pending.get(partition) else {
            return Ok(());
        };
        let value = MaybeOffset::some(value);
        if now.version == seen.version && now.value == seen.value {
            self.pending.remove(partition);
        } else if now.version == Some(version) && now.value == value {
            seen.version = Some(version);
            seen.value = value;
            seen.committed = seen.committed.max(value);
            self.pending.remove(partition);
        } else {
            return Err(format!(
                "the node is now neither as it was ({}) nor as that commit would have left it ({}) but {}",
                seen.describe(),
                describe(Some(version), value),
                now.describe()
            ));
        }
        Ok(())
    }

    /// Whether any of the topics has partitions that still hold the old topic's offsets.
    pub(crate) fn holds_old_offsets<'t>(&self, mut topics: impl Iterator<Item = &'t str>) -> bool {
        topics.any(|topic| self.topics.get(topic).is_some_and(|s| !s.old.is_empty()))
    }

    /// Whether any topic's ID is still to be recorded: once recorded, an ID costs a commit
    /// nothing more than this look.
    pub(crate) fn any_identity_to_write(&self) -> bool {
        self.topics.values().any(|s| s.to_write().is_some())
    }

    /// The topic's ID to record, encoded, when its folder records another and the batch
    /// overwrites every partition holding an old offset (`in_batch`: `None` when none does).
    pub(crate) fn identity_to_write(
        &self,
        topic: &str,
        in_batch: Option<&HashSet<(&str, i32)>>,
    ) -> Option<Vec<u8>> {
        let seen = self.topics.get(topic)?;
        let id = seen.to_write()?;
        let covered = match in_batch {
            Some(in_batch) => seen.old.iter().all(|p| in_batch.contains(&(topic, *p))),
            None => true,
        };
        covered.then(|| encode_topic_identity(id))
    }

    /// The version of the topic's folder as last seen, when it exists.
    pub(crate) fn folder_version(&self, topic: &str) -> Option<i32> {
        match self.topics.get(topic).map(|s| &s.node) {
            Some(Some(Some((version, _)))) => Some(*version),
            _ => None,
        }
    }

    /// What was last seen of the partition (nothing: the default).
    pub(crate) fn seen(&self, partition: &TopicPartition) -> Seen {
        self.nodes.get(partition).copied().unwrap_or_default()
    }
}

/// What a commit records of its outcome.
impl Tracker {
    /// The node holds `offset` already, as this keeper committed it: the floor rises to it.
    pub(crate) fn raise_floor(&mut self, partition: &TopicPartition, offset: i64) {
        if let Some(seen) = self.nodes.get_mut(partition) {
            seen.committed = MaybeOffset::some(offset);
        }
    }

    /// A write of `offset` failed on the way: the next commit reads the node to settle it.
    pub(crate) fn write_unknown(&mut self, partition: &TopicPartition, offset: i64) {
        if let Some(seen) = self.nodes.get(partition) {
            let version = seen.version.map_or(0, |v| v.wrapping_add(1));
            self.pending.insert(partition, (version, offset));
        }
    }

    /// The topic's folder is not known as seen any more (it is read again); the version it
    /// was seen at, if known.
    pub(crate) fn forget_folder(&mut self, topic: &str) -> Option<i32> {
        let seen = self.topics.get_mut(topic)?;
        let before = seen.node.clone().flatten().map(|(version, _)| version);
        seen.node = None;
        before
    }

    /// A folder this commit created, with the topic ID a topic folder's data records.
    pub(crate) fn created_dir(&mut self, layout: &GroupLayout<'_>, path: &str, data: &[u8]) {
        self.dirs.insert(path.to_string());
        if !is_topic_dir(layout, path) {
            return;
        }
        if let Some(seen) = self.topics.get_mut(last_segment(path)) {
            let id = parse_topic_identity(data);
            if id.is_some() {
                seen.old.clear();
            }
            seen.node = Some(Some((0, id)));
        }
    }

    /// A folder this commit wrote only as the one that made it.
    pub(crate) fn known_dir(&mut self, path: &str) {
        self.dirs.insert(path.to_string());
    }

    /// The topic ID this commit wrote into the topic's folder, at `version`.
    pub(crate) fn wrote_identity(&mut self, topic: &str, version: i32, data: &[u8]) {
        if let Some(seen) = self.topics.get_mut(topic) {
            seen.node = Some(Some((version, parse_topic_identity(data))));
            seen.old.clear();
        }
    }

    /// This commit stored `offset` for the partition: written at `version`, or (`None`)
    /// found there already.
    pub(crate) fn wrote_leaf(
        &mut self,
        partition: &TopicPartition,
        offset: i64,
        version: Option<i32>,
    ) {
        let seen = self.nodes.entry_or_default(partition);
        if let Some(version) = version {
            seen.version = Some(version);
            seen.value = MaybeOffset::some(offset);
        }
        seen.committed = seen.committed.max(MaybeOffset::some(offset));
    }

    /// Partitions of a re-created topic committed for the new topic (written, or holding the
    /// committed value already) hold no old offset now.
    pub(crate) fn forget_old<'a>(&mut self, partitions: impl Iterator<Item = &'a TopicPartition>) {
        for partition in partitions {
            if let Some(seen) = self.topics.get_mut(&*partition.topic) {
                seen.old.remove(&partition.partition);
            }
        }
    }

    /// Folders may have come or gone: every one is looked at again.
    pub(crate) fn forget_dirs(&mut self) {
        self.dirs.clear();
    }

    /// The partition's node is read again before it is next written.
    pub(crate) fn forget_node(&mut self, partition: &TopicPartition) {
        self.nodes.remove(partition);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(version: i32, data: &str) -> Node {
        Node {
            data: data.as_bytes().to_vec(),
            version,
            ctime: 0,
            mtime: 0,
            ephemeral_owner: 0,
        }
    }

    #[test]
    fn a_load_keeps_the_floor_only_while_the_node_is_as_this_keeper_left_it() {
        let mut tracker = Tracker::default();
        let (p, gone) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
        let seen = |tracker: &Tracker, p| *tracker.nodes.get(p).unwrap();
        tracker.observe(&p, Some(&node(3, "100")));
        tracker.nodes.get_mut(&p).unwrap().committed = MaybeOffset::some(100);
        tracker.observe(&p, Some(&node(3, "100")));
        assert_eq!(seen(&tracker, &p).committed.get(), Some(100));
        // Someone else wrote: the load takes the node over and drops the floor.
        tracker.observe(&p, Some(&node(4, "20")));
        assert_eq!(seen(&tracker, &p).committed.get(), None);
        assert_eq!(seen(&tracker, &p).version, Some(4));
        assert_eq!(seen(&tracker, &p).value.get(), Some(20));
        // A write of this keeper whose outcome was unknown turns out applied.
        tracker.pending.insert(&p, (5, 30));
        tracker.observe(&p, Some(&node(5, "30")));
        assert_eq!(seen(&tracker, &p).committed.get(), Some(30));
        assert_eq!(tracker.pending.get(&p), None);
        // One that turns out overtaken by another writer: no floor, nothing pending.
        tracker.pending.insert(&p, (6, 40));
        tracker.observe(&p, Some(&node(6, "35")));
        assert_eq!(seen(&tracker, &p).committed.get(), None);
        assert_eq!(tracker.pending.get(&p), None);
        tracker.nodes.get_mut(&p).unwrap().committed = MaybeOffset::some(35);
        tracker.reset_floor(&p);
        assert_eq!(seen(&tracker, &p).committed.get(), None);
        tracker.observe(&gone, None);
        assert_eq!(tracker.nodes.get(&gone), Some(&Seen::default()));
    }

    #[test]
    fn an_absent_offset_orders_first_as_an_option_does() {
        let offsets = [None, Some(0), Some(7), Some(i64::MAX)];
        for a in offsets {
            assert_eq!(MaybeOffset::from(a).get(), a);
            for b in offsets {
                let (x, y) = (MaybeOffset::from(a), MaybeOffset::from(b));
                assert_eq!(x.cmp(&y), a.cmp(&b), "{a:?} {b:?}");
                assert_eq!(x.max(y).get(), a.max(b));
            }
        }
        assert_eq!(MaybeOffset::some(-5), MaybeOffset::NONE);
        let settled = Seen {
            version: Some(0),
            value: MaybeOffset::some(9),
            committed: MaybeOffset::some(9),
        };
        assert!(settled.is_settled_at(9) && !settled.is_settled_at(8));
        assert!(!Seen {
            version: None,
            ..settled
        }
        .is_settled_at(9));
        assert!(!Seen {
            committed: MaybeOffset::NONE,
            ..settled
        }
        .is_settled_at(9));
    }

    #[test]
    fn seen_values_are_described_for_messages() {
        assert_eq!(describe(None, MaybeOffset::NONE), "no node");
        assert_eq!(
            describe(Some(2), MaybeOffset::some(7)),
            "version 2 holding 7"
        );
        assert!(describe(Some(0), MaybeOffset::NONE).contains("no usable offset"));
        assert_eq!(Seen::of(Some(&node(1, "x"))).value, MaybeOffset::NONE);
    }
}
