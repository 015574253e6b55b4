//! `commit`: one ZooKeeper multi per batch that holds its checks and its writes.
//!
//! - Fencing: each write carries the znode version this keeper last saw (from its load or its
//!   last commit). A node changed by anyone else makes ZooKeeper refuse the whole multi:
//!   [`Error::CommitConflict`], nothing written. Unchanged offsets are not sent at all, so a
//!   batch where 1 of 1,000 partitions moved is one write.
//! - Ownership: a keeper that never loaded the group (deserialized from a Spark checkpoint)
//!   first takes ownership of the batch's partitions, as a load would. When this keeper
//!   registered in the group, the multi also checks that its `ids` node still exists. It goes when the session expires; the keeper then takes ownership
//!   again, unless another instance has it, which is a conflict.
//! - Monotonic: an offset below what this keeper already committed for the partition is left
//!   out with a WARN (batches can finish out of order with `spark.streaming.concurrentJobs`).
//! - Outages: a commit that cannot reach ZooKeeper (timeout, lost connection or session) is
//!   deferred rather than failed, for up to the keeper's commit outage tolerance: its offsets
//!   are kept per partition (the newest, or with monotonic commits the highest) and go in the
//!   multi of the next commit, as Kafka's own `commitAsync` treats a failed commit as
//!   superseded by the next one. Nothing is retried in the background; `close` tries once.
//!   Conflicts, lost ownership and bad input fail at once as ever. Deferred offsets live in
//!   memory only: after a crash the job restarts from what was stored (at-least-once).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use zookeeper_client as zk;

use crate::batch::CommitBatch;
use crate::error::{Error, Result};
use crate::keeper::{CommitSummary, OffsetKeeper};
use crate::partition_map::{same_topic, PartitionMap};
use crate::runtime::runtime;
use crate::validate::Stored;
use crate::zookeeper::layout::{
    encode_offset, encode_topic_identity, parse_topic_identity, GroupLayout,
};
use crate::zookeeper::{chunks_beside, Applied, Node, WriteOp};
use crate::TopicPartition;
use rustc_hash::{FxHashMap, FxHashSet};

/// The operation an [`Error::Timeout`] names when commits failed for longer than the tolerance.
const OUTAGE_OPERATION: &str = "commits, failing for longer than the commit outage tolerance (the newest offsets are still pending; the next commit tries them again): none went through";

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
pub(crate) struct TopicSeen {
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
}

/// A run of deferred commits.
#[derive(Debug, Clone, Copy)]
struct Outage {
    /// The start of the first deferred commit: the stored offsets are behind since then.
    since: Instant,
    commits: usize,
}

/// One offset znode as this keeper last saw it. A commit reads one per partition of the batch,
/// 20,000 of them at that many partitions: in 24 bytes, not the 64 it took with `Option`s and
/// the pending write inside, those reads miss the cache less.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Seen {
    /// `None` when there was no node.
    version: Option<i32>,
    /// The stored offset; none when missing or not a usable offset.
    value: MaybeOffset,
    /// The highest offset this keeper committed: later commits never go below it.
    committed: MaybeOffset,
}

const _: () = assert!(std::mem::size_of::<Option<Seen>>() == 24);

impl Seen {
    fn of(node: Option<&Node>) -> Seen {
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

    fn describe(version: Option<i32>, value: MaybeOffset) -> String {
        match (version, value.get()) {
            (None, _) => "no node".to_string(),
            (Some(v), Some(offset)) => format!("version {v} holding {offset}"),
            (Some(v), None) => format!("version {v} holding no usable offset"),
        }
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

impl Tracker {
    /// A commit of the group went through: nothing is deferred any more.
    fn went_through(&mut self, group: &str) {
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

    /// What was read once this keeper took ownership: as [`Tracker::observe`], but the offsets
    /// of deferred commits stay (the job goes on from them).
    fn adopt(&mut self, partition: &TopicPartition, node: Option<&Node>) {
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

    /// The batch with the offsets of deferred commits it does not hold; for a partition in
    /// both, the batch's offset, or with `monotonic` the higher of the two.
    fn with_deferred(
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

    /// Partitions of a re-created topic committed for the new topic (written, or holding the
    /// committed value already) hold no old offset now.
    fn forget_old(&mut self, entries: &[Entry<'_>]) {
        for entry in entries {
            if let Some(seen) = self.topics.get_mut(&*entry.partition.topic) {
                seen.old.remove(&entry.partition.partition);
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

/// One partition of a batch.
struct Entry<'a> {
    partition: &'a TopicPartition,
    offset: i64,
}

impl Entry<'_> {
    fn path(&self, layout: &GroupLayout<'_>) -> String {
        layout.offset_path(&self.partition.topic, self.partition.partition)
    }
}

/// What an operation of the multi is for.
#[derive(Debug, Clone, Copy)]
enum Role {
    Dir,
    OwnerCheck,
    Leaf(usize),
    /// The topic ID written into a topic folder; the index of an entry of that topic.
    Identity(usize),
    /// The check that the request before this one was applied: of the entry it wrote.
    Chain(usize),
}

/// Why one attempt did not commit.
enum Failed {
    /// Worth another attempt (a folder appeared, ownership was taken again).
    Again(Error),
    Final(Error),
}

impl OffsetKeeper {
    /// Stores each partition's next offset to read (Spark's `untilOffset`) in one atomic multi,
    /// creating missing nodes and skipping unchanged ones. Bad input is refused before anything
    /// is written. With fencing on, the multi fails as a whole with
    /// [`Error::CommitConflict`] when another writer changed any of the partitions since this
    /// keeper last saw them. Offsets below what this keeper already committed are skipped with a
    /// WARN (monotonic commits). A keeper that did not load the group (one deserialized from a
    /// Spark checkpoint) first takes ownership of the batch's partitions, waiting as a load does
    /// and failing with [`Error::Owned`] (nothing written) when another instance keeps them.
    ///
    /// When ZooKeeper cannot be reached ([`Error::is_zookeeper_unreachable`]) the commit is
    /// deferred: it returns `Ok` with [`CommitSummary::deferred`] set and a WARN saying how far
    /// behind the stored offsets are, and the next commit writes its offsets with its own in one
    /// multi. Once commits have failed for the keeper's commit outage tolerance (counted from
    /// the start of the first deferred one) it returns [`Error::Timeout`] with that duration; a
    /// tolerance of zero returns every such error at once. Either way a commit ends within the
    /// ZooKeeper request timeout, opening a session again included.
    pub fn commit(&self, group: &str, offsets: &[(TopicPartition, i64)]) -> Result<CommitSummary> {
        self.commit_batch(group, &CommitBatch::from_pairs(offsets))
    }

    /// [`OffsetKeeper::commit`] of a batch in columns (as it crosses JNI).
    pub fn commit_batch(&self, group: &str, batch: &CommitBatch) -> Result<CommitSummary> {
        batch.check(group)?;
        if batch.is_empty() {
            return Ok(CommitSummary::default());
        }
        let started = Instant::now();
        let runtime = runtime()?;
        let mut trackers = self.tracker();
        let tracker = trackers.group(group);
        let layout = GroupLayout {
            base_path: &self.store.config().base_path,
            group,
        };
        // Offsets of commits deferred during a ZooKeeper outage go in this batch's multi.
        let mut settled = 0;
        let offsets: Vec<(TopicPartition, i64)> = if !tracker.deferred.is_empty() {
            tracker.with_deferred(&batch.pairs(), self.monotonic)
        } else if let Some((rest, stored)) = self.unsettled(tracker, &layout, batch) {
            settled = stored;
            rest
        } else {
            batch.pairs()
        };
        if offsets.is_empty() {
            // Every partition is stored as given: what the full path does for such a batch.
            tracker.went_through(group);
            return Ok(CommitSummary {
                unchanged: settled,
                ..CommitSummary::default()
            });
        }
        let mut entries = Vec::with_capacity(offsets.len());
        let mut skipped = Vec::new();
        let floors: Vec<Option<i64>> = if self.monotonic {
            let seen = tracker.nodes.get_each(offsets.iter().map(|(tp, _)| tp));
            seen.into_iter()
                .map(|seen| seen.and_then(|seen| seen.committed.get()))
                .collect()
        } else {
            vec![None; offsets.len()]
        };
        for ((partition, offset), floor) in offsets.iter().zip(floors) {
            match floor {
                Some(floor) if *offset < floor => {
                    skipped.push((partition, *offset, floor));
                }
                _ => entries.push(Entry {
                    partition,
                    offset: *offset,
                }),
            }
        }
        if !skipped.is_empty() {
            let mut shown = String::new();
            for (partition, offset, floor) in skipped.iter().take(10) {
                let _ = write!(shown, " {partition} {offset} < {floor};");
            }
            let more = skipped.len().saturating_sub(10);
            log::warn!(
                "group {group}: {} offset(s) left out, below what this keeper already committed (batches finishing out of order?):{shown}{} nothing written for them",
                skipped.len(),
                if more > 0 { format!(" and {more} more;") } else { String::new() }
            );
        }
        let mut summary = CommitSummary {
            skipped: skipped.len(),
            ..CommitSummary::default()
        };
        if entries.is_empty() {
            // Every deferred offset was below the floor too.
            tracker.deferred.clear();
            return Ok(summary);
        }
        // One deadline: the request timeout, plus the wait for another owner to go when this
        // keeper must take ownership first (as a load's).
        let mut budget = self.store.config().request_timeout;
        if self.must_settle_ownership(group) {
            budget += self.ownership_wait();
        }
        let written = self
            .store
            .bounded(budget, self.write_entries(tracker, &layout, &entries));
        match runtime.block_on(written) {
            Ok(done) => {
                summary.written = done.written;
                summary.unchanged = settled + done.unchanged;
                summary.requests = done.requests;
                tracker.went_through(group);
                Ok(summary)
            }
            Err(err) => self.deferred_or(err, group, tracker, &entries, started, summary),
        }
    }

    /// The batch without the partitions this keeper knows are stored exactly as given (its
    /// load read them, or its commits wrote them, fenced since), and how many it left out;
    /// `None` when it may not leave any out. A streaming batch names every partition and
    /// often few moved: the others then cost one lookup each, no path and no pass of the full
    /// commit. Only where that full commit would do nothing for them either: fenced (without
    /// fencing every node is read again), nothing deferred, ownership settled, folders and
    /// topic identities known, and no write of the partition pending.
    fn unsettled(
        &self,
        tracker: &Tracker,
        layout: &GroupLayout<'_>,
        batch: &CommitBatch,
    ) -> Option<(Vec<(TopicPartition, i64)>, usize)> {
        let group = layout.group;
        let eligible = self.fencing
            && tracker.deferred.is_empty()
            && tracker.outage.is_none()
            && (!self.ownership.enabled
                || (self.owners.is_registered(group) && !self.owners.is_following(group)))
            && layout
                .group_dirs()
                .iter()
                .all(|dir| tracker.dirs.contains(dir));
        if !eligible {
            return None;
        }
        let mut rest = Vec::new();
        let mut settled = 0;
        for (topic, run) in batch.runs() {
            let plain = tracker.dirs.contains(&layout.topic_dir(topic))
                && tracker.topics.get(&**topic).is_none_or(|seen| {
                    seen.old.is_empty()
                        && seen.to_write().is_none()
                        && !(seen.current.is_some() && seen.node.is_none())
                });
            let nodes = tracker.nodes.topic(topic).filter(|_| plain);
            let pending = tracker.pending.topic(topic);
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
        Some((rest, settled))
    }

    /// Whether a commit in the group may first have to take ownership (and so gets the
    /// ownership wait): a keeper that did not load it, or whose load's owner nodes are still
    /// to be confirmed.
    fn must_settle_ownership(&self, group: &str) -> bool {
        self.ownership.enabled
            && (!self.owners.is_registered(group) || self.owners.is_following(group))
    }

    /// Commits the entries, trying again when a folder appeared, ownership was taken again or
    /// (fencing off) a node changed between the read and the write, until the call's deadline.
    async fn write_entries(
        &self,
        tracker: &mut Tracker,
        layout: &GroupLayout<'_>,
        entries: &[Entry<'_>],
    ) -> Result<CommitSummary> {
        let group = layout.group;
        if self.ownership.enabled && !self.owners.is_registered(group) {
            self.take_ownership(tracker, layout, entries).await?;
        } else if self.ownership.enabled && self.owners.is_following(group) {
            // The load's owner nodes were sent in the background: no write before they are
            // known to be in place, or taken with the wait of a load when they are not.
            let owned = self.owners.owned_in(group);
            let wait = self.ownership_wait();
            self.owners
                .acquire(&self.store, group, &owned, wait)
                .await?;
        }
        let mut attempt = 1;
        loop {
            match self.commit_once(tracker, layout, entries).await {
                Ok(done) => return Ok(done),
                Err(Failed::Again(err)) if !self.store.time_left().is_zero() => {
                    log::debug!("group {group}: commit attempt {attempt} did not go through ({err}); trying again");
                    attempt += 1;
                }
                Err(Failed::Again(err) | Failed::Final(err)) => return Err(err),
            }
        }
    }

    /// A keeper committing to a group it did not load (one deserialized from a Spark
    /// checkpoint, whose job recovered without loading) takes ownership of the batch's
    /// partitions first, with the wait and refusal of a load, then reads their nodes again, so
    /// that it fences on what is stored once it owns them.
    async fn take_ownership(
        &self,
        tracker: &mut Tracker,
        layout: &GroupLayout<'_>,
        entries: &[Entry<'_>],
    ) -> Result<()> {
        let group = layout.group;
        let partitions: Vec<TopicPartition> = entries
            .iter()
            .map(|entry| entry.partition.clone())
            .collect();
        let wait = self.ownership_wait();
        if let Err(err) = self
            .owners
            .acquire(&self.store, group, &partitions, wait)
            .await
        {
            if !err.is_zookeeper_unreachable() {
                // Nothing of a refused acquisition stays behind.
                self.owners.release_since(&self.store, group, &[]).await;
            }
            return Err(err);
        }
        if self.fencing {
            let paths: Vec<String> = entries.iter().map(|entry| entry.path(layout)).collect();
            let nodes = self.store.read_nodes(&paths).await?;
            for (entry, node) in entries.iter().zip(&nodes) {
                tracker.adopt(entry.partition, node.as_ref());
            }
        }
        // The owner nodes go in before this commit's multi, on the same session.
        self.owners
            .acquire(&self.store, group, &partitions, wait)
            .await?;
        log::info!(
            "group {group}: this keeper commits without having loaded the group (deserialized from a checkpoint?); it took ownership of the {} partition(s) of its first commit",
            partitions.len()
        );
        Ok(())
    }

    /// A commit that failed: deferred when ZooKeeper could not be reached and the outage is
    /// within the tolerance, the error otherwise.
    fn deferred_or(
        &self,
        err: Error,
        group: &str,
        tracker: &mut Tracker,
        entries: &[Entry<'_>],
        started: Instant,
        summary: CommitSummary,
    ) -> Result<CommitSummary> {
        let tolerance = self.commit_outage_tolerance;
        if tolerance.is_zero() || !err.is_zookeeper_unreachable() {
            if !tracker.deferred.is_empty() {
                log::warn!(
                    "group {group}: the offsets of {} partition(s) from earlier deferred commits were not written either",
                    tracker.deferred.len()
                );
            }
            return Err(err);
        }
        // Newest wins: this batch already holds the deferred offsets it did not replace.
        tracker.deferred = entries
            .iter()
            .map(|entry| (entry.partition.clone(), entry.offset))
            .collect();
        let outage = tracker.outage.get_or_insert(Outage {
            since: started,
            commits: 0,
        });
        outage.commits += 1;
        let behind = outage.since.elapsed();
        let commits = outage.commits;
        let pending = tracker.deferred.len();
        let last = match tracker.last_success {
            Some(at) => format!("{} ms ago", at.elapsed().as_millis()),
            None => "never, for this keeper".to_string(),
        };
        if behind >= tolerance {
            log::error!(
                "group {group}: commits failed for {} ms ({commits} in a row), longer than the commit outage tolerance of {} ms: failing this one ({err}); {pending} partition(s) have offsets not stored yet, the last successful commit was {last}",
                behind.as_millis(),
                tolerance.as_millis()
            );
            let server = match err {
                Error::Timeout { server, .. } => server,
                _ => format!("ZooKeeper at {}", self.store.config().connect),
            };
            return Err(Error::Timeout {
                server,
                operation: OUTAGE_OPERATION,
                after: behind,
                detail: String::new(),
            });
        }
        log::warn!(
            "group {group}: commit deferred, ZooKeeper cannot be reached ({err}); the stored offsets of {pending} partition(s) have been behind for {} ms (the last successful commit was {last}); the next commit writes the newest offsets; commits fail after {} ms of this ({} ms left)",
            behind.as_millis(),
            tolerance.as_millis(),
            tolerance.saturating_sub(behind).as_millis()
        );
        Ok(CommitSummary {
            deferred: true,
            pending,
            behind,
            ..summary
        })
    }

    /// Writes the offsets of deferred commits, one try per group, by `deadline`: for closing.
    /// What it cannot write is named in a WARN; the job restarts from what was stored.
    pub(crate) fn flush_deferred(&self, deadline: Instant) {
        let Ok(runtime) = runtime() else { return };
        let mut trackers = self.tracker();
        for (group, tracker) in trackers.groups.iter_mut() {
            if tracker.deferred.is_empty() {
                continue;
            }
            let offsets: Vec<(TopicPartition, i64)> = tracker
                .deferred
                .iter()
                .map(|(partition, offset)| (partition.clone(), *offset))
                .collect();
            let entries: Vec<Entry<'_>> = offsets
                .iter()
                .map(|(partition, offset)| Entry {
                    partition,
                    offset: *offset,
                })
                .collect();
            let layout = GroupLayout {
                base_path: &self.store.config().base_path,
                group,
            };
            let left = deadline.saturating_duration_since(Instant::now());
            // The timer is made inside the runtime.
            let outcome = runtime.block_on(async {
                let written = self
                    .store
                    .bounded(left, self.write_entries(tracker, &layout, &entries));
                tokio::time::timeout(left, written).await
            });
            let reason = match outcome {
                Ok(Ok(_)) => {
                    log::info!(
                        "group {group}: closing wrote the offsets of deferred commits ({} partition(s))",
                        entries.len()
                    );
                    tracker.went_through(group);
                    continue;
                }
                Ok(Err(err)) => err.to_string(),
                Err(_) => format!("ZooKeeper did not answer within {} ms", left.as_millis()),
            };
            let behind = tracker
                .outage
                .map_or(Duration::ZERO, |outage| outage.since.elapsed());
            log::warn!(
                "group {group}: closing could not write the offsets of deferred commits for {} partition(s) ({reason}); the stored offsets are {} ms behind, and a restarted job starts from them (at-least-once)",
                entries.len(),
                behind.as_millis()
            );
        }
    }

    async fn commit_once(
        &self,
        tracker: &mut Tracker,
        layout: &GroupLayout<'_>,
        entries: &[Entry<'_>],
    ) -> std::result::Result<CommitSummary, Failed> {
        let group = layout.group;
        // Folders not known to exist, and nodes whose version is not known (or, without
        // fencing, every node: the write must not rely on what was seen before).
        let mut dirs: Vec<String> = layout.group_dirs();
        let mut topics: FxHashSet<&str> = FxHashSet::default();
        // Topic folders, with their topic, whose identity must be read (again).
        let mut topic_dirs: HashMap<String, &str> = HashMap::new();
        let mut last_topic = None;
        for entry in entries {
            let topic = entry.partition.topic.as_ref();
            // A batch's partitions come in runs of one topic: one set lookup per run.
            if last_topic.is_some_and(|last| same_topic(last, topic)) {
                continue;
            }
            last_topic = Some(topic);
            if topics.insert(topic) {
                let dir = layout.topic_dir(topic);
                if tracker
                    .topics
                    .get(topic)
                    .is_some_and(|seen| seen.current.is_some() && seen.node.is_none())
                {
                    topic_dirs.insert(dir.clone(), topic);
                }
                dirs.push(dir);
            }
        }
        dirs.retain(|dir| !tracker.dirs.contains(dir) || topic_dirs.contains_key(dir));
        let unknown: Vec<usize> = tracker
            .nodes
            .get_each(entries.iter().map(|entry| entry.partition))
            .into_iter()
            .enumerate()
            .filter(|(i, seen)| {
                !self.fencing
                    || seen.is_none()
                    || tracker.pending.get(entries[*i].partition).is_some()
            })
            .map(|(i, _)| i)
            .collect();
        let mut missing_dirs = Vec::new();
        if !dirs.is_empty() || !unknown.is_empty() {
            let paths: Vec<String> = dirs
                .iter()
                .cloned()
                .chain(unknown.iter().map(|i| entries[*i].path(layout)))
                .collect();
            let nodes = self.store.read_nodes(&paths).await.map_err(Failed::Final)?;
            let (dir_nodes, leaf_nodes) = nodes.split_at(dirs.len());
            for (dir, node) in dirs.iter().zip(dir_nodes) {
                if node.is_some() {
                    tracker.dirs.insert(dir.clone());
                } else {
                    missing_dirs.push(dir.clone());
                }
                let topic = dir.rsplit('/').next().unwrap_or_default();
                if dir.len() > layout.offsets_dir().len() {
                    // A folder already seen keeps the version seen, for fencing.
                    match tracker.topics.get_mut(topic) {
                        Some(seen) if matches!(seen.node, None | Some(None)) => {
                            seen.node = Some(
                                node.as_ref()
                                    .map(|n| (n.version, parse_topic_identity(&n.data))),
                            );
                        }
                        _ => {}
                    }
                }
            }
            for (i, node) in unknown.iter().zip(leaf_nodes) {
                let entry = &entries[*i];
                let now = Seen::of(node.as_ref());
                match tracker.nodes.get_mut(entry.partition) {
                    None => {
                        tracker.nodes.insert(entry.partition, now);
                    }
                    Some(seen) if !self.fencing => {
                        *seen = Seen {
                            committed: seen.committed,
                            ..now
                        };
                    }
                    Some(seen) => {
                        // Settle a write whose outcome was unknown: applied, not applied, or
                        // overtaken by another writer.
                        let Some(&(version, value)) = tracker.pending.get(entry.partition) else {
                            continue;
                        };
                        let value = MaybeOffset::some(value);
                        if now.version == seen.version && now.value == seen.value {
                            tracker.pending.remove(entry.partition);
                        } else if now.version == Some(version) && now.value == value {
                            seen.version = Some(version);
                            seen.value = value;
                            seen.committed = seen.committed.max(value);
                            tracker.pending.remove(entry.partition);
                        } else {
                            let detail = format!(
                                "a commit of this keeper failed on the way with its outcome unknown, and the node is now neither as it was ({}) nor as that commit would have left it ({}) but {}: another writer (a second job on this group, a zombie driver, or an operator's reset) changed it. Nothing of this commit was written. Load again to take the stored offsets over, or turn fencing off",
                                Seen::describe(seen.version, seen.value),
                                Seen::describe(Some(version), value),
                                Seen::describe(now.version, now.value)
                            );
                            return Err(Failed::Final(Error::CommitConflict {
                                group: group.to_string(),
                                partition: entry.partition.clone(),
                                detail,
                            }));
                        }
                    }
                }
            }
        }

        // The topic IDs to record: of topics whose old offsets this batch overwrites all.
        let in_batch: Option<HashSet<(&str, i32)>> = topics
            .iter()
            .any(|topic| {
                tracker
                    .topics
                    .get(*topic)
                    .is_some_and(|s| !s.old.is_empty())
            })
            .then(|| {
                entries
                    .iter()
                    .map(|e| (e.partition.topic.as_ref(), e.partition.partition))
                    .collect()
            });
        let identity_of = |topic: &str| -> Option<Vec<u8>> {
            let seen = tracker.topics.get(topic)?;
            let id = seen.to_write()?;
            let covered = match &in_batch {
                Some(in_batch) => seen.old.iter().all(|p| in_batch.contains(&(topic, *p))),
                None => true,
            };
            covered.then(|| encode_topic_identity(id))
        };
        // The operations: folders to create (a topic's with its ID), the ownership check, then
        // one per partition, then the topic IDs of folders that exist.
        let offsets_dir_len = layout.offsets_dir().len();
        let mut head: Vec<(WriteOp, Role)> = missing_dirs
            .iter()
            .map(|dir| {
                let data = if dir.len() > offsets_dir_len {
                    identity_of(dir.rsplit('/').next().unwrap_or_default()).unwrap_or_default()
                } else {
                    Vec::new()
                };
                (
                    WriteOp::Create {
                        path: dir.clone(),
                        data,
                    },
                    Role::Dir,
                )
            })
            .collect();
        let mut identities: Vec<(WriteOp, Role)> = Vec::new();
        let mut first_of_topic = HashSet::new();
        // Once recorded, an ID costs a commit nothing more than this look.
        let any_to_write = tracker.topics.values().any(|s| s.to_write().is_some());
        for (index, entry) in entries.iter().enumerate().filter(|_| any_to_write) {
            let topic = entry.partition.topic.as_ref();
            if !first_of_topic.insert(topic) {
                continue;
            }
            let Some(Some(Some((version, _)))) = tracker.topics.get(topic).map(|s| &s.node) else {
                continue;
            };
            let version = *version;
            if let Some(data) = identity_of(topic) {
                identities.push((
                    WriteOp::SetData {
                        path: layout.topic_dir(topic),
                        data,
                        version: self.fencing.then_some(version),
                    },
                    Role::Identity(index),
                ));
            }
        }
        let owner_check = self.owners.is_registered(group).then(|| {
            (
                WriteOp::Check {
                    path: layout.id_path(&self.owners.identity.consumer_id(group)),
                    version: -1,
                },
                Role::OwnerCheck,
            )
        });
        head.extend(owner_check.clone());
        let mut summary = CommitSummary::default();
        // Often few of a batch's partitions moved: no room is made for all of them.
        let mut leaves: Vec<(WriteOp, Role)> = Vec::new();
        // Unchanged partitions whose floor rises to the offset (their node is as committed).
        let mut risen = Vec::new();
        let known = tracker
            .nodes
            .get_each(entries.iter().map(|entry| entry.partition));
        for (index, (entry, seen)) in entries.iter().zip(known).enumerate() {
            let seen = seen.copied().unwrap_or_default();
            let op = match seen.version {
                None => WriteOp::Create {
                    path: entry.path(layout),
                    data: encode_offset(entry.offset),
                },
                Some(_) if seen.value == MaybeOffset::some(entry.offset) => {
                    // Nothing to send: a node another writer changed meanwhile is caught when
                    // this keeper next writes it, and ownership fences other instances.
                    summary.unchanged += 1;
                    if seen.committed < MaybeOffset::some(entry.offset) {
                        risen.push(entry);
                    }
                    continue;
                }
                Some(version) => WriteOp::SetData {
                    path: entry.path(layout),
                    data: encode_offset(entry.offset),
                    version: self.fencing.then_some(version),
                },
            };
            summary.written += 1;
            leaves.push((op, Role::Leaf(index)));
        }
        for entry in risen {
            if let Some(seen) = tracker.nodes.get_mut(entry.partition) {
                seen.committed = MaybeOffset::some(entry.offset);
            }
        }
        if summary.written == 0 && identities.is_empty() {
            if in_batch.is_some() {
                tracker.forget_old(entries);
            }
            return Ok(summary);
        }

        // One multi; more only for batches beyond one request's size. The topic IDs go in the
        // last one: a batch split over requests records a new ID only with its last offsets
        // (their bytes are kept free in every request, which one is last is known only after).
        let head_bytes: usize = head.iter().map(|(op, _)| op.estimated_bytes()).sum();
        let check_bytes = owner_check
            .as_ref()
            .map_or(0, |(op, _)| op.estimated_bytes());
        let identity_bytes: usize = identities.iter().map(|(op, _)| op.estimated_bytes()).sum();
        // Room for the check that chains a request to the one before it (see `chain`), at most
        // a leaf's size.
        let chain_bytes = if self.fencing {
            leaves
                .iter()
                .map(|(op, _)| op.estimated_bytes())
                .max()
                .unwrap_or(0)
        } else {
            0
        };
        let mut lengths: Vec<usize> = chunks_beside(
            &leaves,
            |(op, _)| op.estimated_bytes(),
            head_bytes.saturating_sub(check_bytes + chain_bytes),
            check_bytes + chain_bytes + identity_bytes,
        )
        .iter()
        .map(|chunk| chunk.len())
        .collect();
        if lengths.is_empty() {
            lengths.push(0);
        }
        let mut leaves = leaves.into_iter();
        let mut chunks: Vec<Vec<(WriteOp, Role)>> = Vec::with_capacity(lengths.len());
        for (i, length) in lengths.into_iter().enumerate() {
            let mut ops = if i == 0 {
                std::mem::take(&mut head)
            } else {
                owner_check.iter().cloned().collect()
            };
            ops.extend(leaves.by_ref().take(length));
            chunks.push(ops);
        }
        if let Some(last) = chunks.last_mut() {
            last.append(&mut identities);
        }
        if chunks.len() > 1 {
            log::warn!(
                "group {group}: committing {} offsets in {} multi requests: each is atomic, the batch as a whole is not",
                entries.len(),
                chunks.len()
            );
        }
        let outcomes = if self.fencing && chunks.len() > 1 {
            // All at once: each request after the first checks a node the one before it
            // writes, at the version that write gives it, so that a refused request refuses
            // the ones after it too, as when they go one after the other.
            chain(&mut chunks, entries, layout);
            let requests: Vec<Vec<&WriteOp>> = chunks
                .iter()
                .map(|chunk| chunk.iter().map(|(op, _)| op).collect())
                .collect();
            self.store
                .multis_in_order(&requests)
                .await
                .map_err(Failed::Final)?
        } else {
            // Without fencing the versions are not known: one after the other, up to the
            // first that does not go through.
            let mut outcomes = Vec::with_capacity(chunks.len());
            for chunk in &chunks {
                let ops: Vec<&WriteOp> = chunk.iter().map(|(op, _)| op).collect();
                let outcome = self.store.multi(&ops).await;
                let went_through = matches!(outcome, Ok(Ok(_)));
                outcomes.push(outcome);
                if !went_through {
                    break;
                }
            }
            outcomes
        };
        // Every answer is taken in, also after a refusal: a request that went through stays
        // written, and the next commit builds on what it wrote.
        let mut failure = None;
        let mut refusal = None;
        let mut applied_before = 0;
        for (number, (chunk, outcome)) in chunks.iter().zip(outcomes).enumerate() {
            match outcome {
                Err(err) => {
                    // The request failed on the way: it may or may not have been applied.
                    if self.fencing {
                        for (op, role) in chunk {
                            if let (
                                Role::Leaf(i),
                                WriteOp::Create { .. } | WriteOp::SetData { .. },
                            ) = (role, op)
                            {
                                let entry = &entries[*i];
                                if let Some(seen) = tracker.nodes.get(entry.partition) {
                                    let version = seen.version.map_or(0, |v| v.wrapping_add(1));
                                    tracker
                                        .pending
                                        .insert(entry.partition, (version, entry.offset));
                                }
                            }
                        }
                    }
                    // A topic folder whose ID may or may not be written is read again.
                    for (_, role) in chunk {
                        if let Role::Identity(i) = role {
                            if let Some(seen) =
                                tracker.topics.get_mut(&*entries[*i].partition.topic)
                            {
                                seen.node = None;
                            }
                        }
                    }
                    failure.get_or_insert(err);
                }
                Ok(Ok(applied)) => {
                    summary.requests += 1;
                    if refusal.is_none() {
                        applied_before += 1;
                    }
                    for ((op, role), applied) in chunk.iter().zip(applied) {
                        match role {
                            Role::Dir => {
                                tracker.dirs.insert(op.path().to_string());
                                if let WriteOp::Create { path, data } = op {
                                    let topic = path.rsplit('/').next().unwrap_or_default();
                                    if path.len() > offsets_dir_len {
                                        if let Some(seen) = tracker.topics.get_mut(topic) {
                                            let id = parse_topic_identity(data);
                                            if id.is_some() {
                                                seen.old.clear();
                                            }
                                            seen.node = Some(Some((0, id)));
                                        }
                                    }
                                }
                            }
                            Role::Identity(i) => {
                                let topic: &str = &entries[*i].partition.topic;
                                if let (
                                    Some(seen),
                                    Applied::Written { version },
                                    WriteOp::SetData { data, .. },
                                ) = (tracker.topics.get_mut(topic), applied, op)
                                {
                                    seen.node = Some(Some((version, parse_topic_identity(data))));
                                    seen.old.clear();
                                }
                            }
                            Role::OwnerCheck | Role::Chain(_) => {}
                            Role::Leaf(i) => {
                                let entry = &entries[*i];
                                let seen = tracker.nodes.entry_or_default(entry.partition);
                                if let Applied::Written { version } = applied {
                                    seen.version = Some(version);
                                    seen.value = MaybeOffset::some(entry.offset);
                                }
                                seen.committed =
                                    seen.committed.max(MaybeOffset::some(entry.offset));
                            }
                        }
                    }
                }
                Ok(Err(refused)) => {
                    refusal.get_or_insert((number, refused));
                }
            }
        }
        if let Some(err) = failure {
            return Err(Failed::Final(err));
        }
        if let Some((number, refused)) = refusal {
            let Some((op, role)) = chunks[number].get(refused.index) else {
                // The server named an operation the multi does not have.
                return Err(Failed::Final(Error::ZooKeeper {
                    operation: "multi-write",
                    path: chunks[number]
                        .first()
                        .map_or("/", |(op, _)| op.path())
                        .to_string(),
                    source: refused.error,
                }));
            };
            return Err(self
                .refused(
                    tracker,
                    layout,
                    entries,
                    op,
                    *role,
                    refused.error,
                    applied_before,
                )
                .await);
        }
        if in_batch.is_some() {
            tracker.forget_old(entries);
        }
        Ok(summary)
    }

    /// What to do when ZooKeeper refused one operation of a commit's multi.
    #[allow(clippy::too_many_arguments)]
    async fn refused(
        &self,
        tracker: &mut Tracker,
        layout: &GroupLayout<'_>,
        entries: &[Entry<'_>],
        op: &WriteOp,
        role: Role,
        error: zk::Error,
        applied_before: usize,
    ) -> Failed {
        let group = layout.group;
        let zk_error = |error| Error::ZooKeeper {
            operation: "multi-write",
            path: op.path().to_string(),
            source: error,
        };
        match (role, &error) {
            // Another writer created the folder first, or removed one: look again.
            (Role::Dir, zk::Error::NodeExists | zk::Error::NoNode) => {
                tracker.dirs.clear();
                Failed::Again(zk_error(error))
            }
            // This keeper's session expired and its ownership went with it: take it again,
            // unless another instance took the group over meanwhile.
            (Role::OwnerCheck, zk::Error::NoNode) => {
                let owned = self.owners.owned_in(group);
                self.owners.unconfirm(group);
                log::warn!(
                    "group {group}: this keeper's ownership went with its ZooKeeper session; taking it again"
                );
                match self
                    .owners
                    .acquire(&self.store, group, &owned, std::time::Duration::ZERO)
                    .await
                {
                    Ok(()) => Failed::Again(zk_error(error)),
                    Err(Error::Owned {
                        partition, owner, ..
                    }) => Failed::Final(Error::CommitConflict {
                        group: group.to_string(),
                        partition,
                        detail: format!(
                            "this keeper's ZooKeeper session expired, and another instance, {owner}, owns the partition now. Nothing of this commit was written{}",
                            earlier(applied_before)
                        ),
                    }),
                    Err(other) => Failed::Final(other),
                }
            }
            // The topic folder changed since this keeper read its ID.
            (Role::Identity(i), _) => {
                let entry = &entries[i];
                let seen = tracker.topics.get_mut(&*entry.partition.topic);
                let before = seen
                    .as_ref()
                    .and_then(|seen| seen.node.clone())
                    .flatten()
                    .map(|(version, _)| version);
                if let Some(seen) = seen {
                    seen.node = None;
                }
                if !self.fencing || !matches!(error, zk::Error::BadVersion | zk::Error::NoNode) {
                    return if matches!(error, zk::Error::BadVersion | zk::Error::NoNode) {
                        Failed::Again(zk_error(error))
                    } else {
                        Failed::Final(zk_error(error))
                    };
                }
                Failed::Final(Error::CommitConflict {
                    group: group.to_string(),
                    partition: entry.partition.clone(),
                    detail: format!(
                        "the topic folder {}, which records the topic ID, is no longer at version {} that this keeper last saw ({}): another writer (a second job on this group, a zombie driver, or an operator's tool) changed it. Nothing of this commit was written{}. Load again to take the stored offsets over, or turn fencing off",
                        op.path(),
                        before.map_or("unknown".to_string(), |v| v.to_string()),
                        error,
                        earlier(applied_before)
                    ),
                })
            }
            (Role::Leaf(i), zk::Error::NoNode) if matches!(op, WriteOp::Create { .. }) => {
                // The topic folder went (an operator deleted the topic's offsets): not a
                // conflict for a node this keeper saw missing; create the folders again.
                tracker.dirs.clear();
                if !self.fencing {
                    tracker.nodes.remove(entries[i].partition);
                }
                Failed::Again(zk_error(error))
            }
            // A node the request before this one wrote changed in between: a conflict too.
            (
                Role::Leaf(i) | Role::Chain(i),
                zk::Error::BadVersion | zk::Error::NodeExists | zk::Error::NoNode,
            ) => {
                let entry = &entries[i];
                if !self.fencing {
                    // Changed between the read and the write: read again.
                    tracker.nodes.remove(entry.partition);
                    return Failed::Again(zk_error(error));
                }
                let seen = tracker
                    .nodes
                    .get(entry.partition)
                    .copied()
                    .unwrap_or_default();
                let now = match self.store.read_nodes(&[entry.path(layout)]).await {
                    Ok(mut nodes) => {
                        let node = nodes.pop().flatten();
                        let now = Seen::of(node.as_ref());
                        Seen::describe(now.version, now.value)
                    }
                    Err(_) => "something else (it could not be read)".to_string(),
                };
                Failed::Final(Error::CommitConflict {
                    group: group.to_string(),
                    partition: entry.partition.clone(),
                    detail: format!(
                        "this keeper last saw {}, ZooKeeper now has {now}: another writer (a second job on this group, a zombie driver, or an operator's reset) changed it. Nothing of this commit was written{}. Load again to take the stored offsets over, or turn fencing off",
                        Seen::describe(seen.version, seen.value),
                        earlier(applied_before)
                    ),
                })
            }
            _ => Failed::Final(zk_error(error)),
        }
    }
}

/// Starts each request after the first with a check of one node the request before it writes,
/// at the version that write gives it: a changed node's (a created node's version 0 says less).
fn chain(chunks: &mut [Vec<(WriteOp, Role)>], entries: &[Entry<'_>], layout: &GroupLayout<'_>) {
    for number in 1..chunks.len() {
        let before = &chunks[number - 1];
        let changed = before.iter().rev().find_map(|(op, role)| match (op, role) {
            (
                WriteOp::SetData {
                    version: Some(v), ..
                },
                Role::Leaf(i),
            ) => Some((*i, v.wrapping_add(1))),
            _ => None,
        });
        let created = || {
            before.iter().rev().find_map(|(op, role)| match (op, role) {
                (WriteOp::Create { .. }, Role::Leaf(i)) => Some((*i, 0)),
                _ => None,
            })
        };
        if let Some((i, version)) = changed.or_else(created) {
            let check = WriteOp::Check {
                path: entries[i].path(layout),
                version,
            };
            chunks[number].insert(0, (check, Role::Chain(i)));
        }
    }
}

/// The note for a batch split over several requests, some of which went through.
fn earlier(applied: usize) -> String {
    if applied == 0 {
        String::new()
    } else {
        format!(" by this request; the {applied} request(s) of the batch before it were applied")
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
        assert_eq!(Seen::describe(None, MaybeOffset::NONE), "no node");
        assert_eq!(
            Seen::describe(Some(2), MaybeOffset::some(7)),
            "version 2 holding 7"
        );
        assert!(Seen::describe(Some(0), MaybeOffset::NONE).contains("no usable offset"));
        assert_eq!(Seen::of(Some(&node(1, "x"))).value, MaybeOffset::NONE);
    }
}
