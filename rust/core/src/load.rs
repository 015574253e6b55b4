//! `load`: discovers a group's partitions, takes their ownership, reads their stored offsets
//! and their ranges side by side, and validates each against the policy.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::time::Duration;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::names::checked_topics;
use crate::recreated::{recreated_by_record_time, Unidentified};
use crate::runtime::runtime;
use crate::tracked::Tracker;
use crate::validate::{
    validate, validate_recreated, Action, Decision, PartitionRange, Policy, Recreated, Stored,
};
use crate::zookeeper::clock::ClockOffset;
use crate::zookeeper::layout::{parse_partition, parse_topic_identity, GroupLayout};
use crate::zookeeper::Node;
use crate::TopicPartition;
use rustc_hash::FxHashSet;

/// What ZooKeeper and Kafka hold for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspected {
    pub partition: TopicPartition,
    pub stored: Stored,
    pub range: PartitionRange,
}

impl Inspected {
    /// The partition's lag ([`crate::lag`]): log end minus the stored offset, `None` when
    /// nothing usable is stored.
    pub fn lag(&self) -> Option<i64> {
        crate::lag::lag(&self.stored, Some(self.range))
    }
}

/// What load found and decided for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionReport {
    pub partition: TopicPartition,
    pub stored: Stored,
    pub range: PartitionRange,
    pub decision: Decision,
    /// Set when the topic was re-created since the offsets were stored (the topic ID recorded
    /// beside them is not the brokers'); the action is then [`Action::Recreated`] for a stored
    /// offset.
    pub recreated: Option<Recreated>,
}

impl PartitionReport {
    /// The action as reports show it: `re-created (id A -> B)` for a re-created topic's
    /// stored offset, else the action's name.
    pub fn action_text(&self) -> String {
        match (&self.recreated, self.decision.action) {
            (Some(recreated), Action::Recreated) => recreated.to_string(),
            (_, action) => action.name().to_string(),
        }
    }
}

/// An offset stored for a partition the topic no longer has (it was re-created with fewer
/// partitions, or the brokers lost it): never handed to Spark, reported, and left in place
/// (`offsetkeeper delete --stale` removes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StalePartition {
    pub partition: TopicPartition,
    pub stored: Stored,
}

/// The result of a load: one entry for every partition that exists now, in topic order then
/// partition order; and the offsets stored for partitions that no longer exist.
/// A partition where the mirror holds something else than the authoritative store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorDifference {
    pub partition: TopicPartition,
    /// What the authoritative store holds.
    pub authoritative: Stored,
    /// What the mirror holds.
    pub mirror: Stored,
    /// The load started at the mirror's offset: it was ahead, in range, of a topic not
    /// re-created.
    pub taken: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub partitions: Vec<PartitionReport>,
    pub stale: Vec<StalePartition>,
    /// During a move between stores, the partitions where the mirror holds something else
    /// than the authoritative store ([`crate::mirror`]); empty otherwise.
    pub mirror: Vec<MirrorDifference>,
}

impl Loaded {
    /// The offsets to hand to Spark.
    pub fn offsets(&self) -> impl Iterator<Item = (&TopicPartition, i64)> {
        self.partitions
            .iter()
            .map(|report| (&report.partition, report.decision.offset))
    }

    /// The report as a plain-text table, one row per partition.
    pub fn table(&self) -> String {
        let header = [
            "TOPIC",
            "PARTITION",
            "STORED",
            "EARLIEST",
            "LATEST",
            "CHOSEN",
            "ACTION",
            "LOST",
        ]
        .map(String::from);
        let rows: Vec<[String; 8]> = self
            .partitions
            .iter()
            .map(|r| {
                [
                    r.partition.topic.to_string(),
                    r.partition.partition.to_string(),
                    r.stored.to_string(),
                    r.range.earliest.to_string(),
                    r.range.latest.to_string(),
                    r.decision.offset.to_string(),
                    r.action_text(),
                    r.decision.records_lost.to_string(),
                ]
            })
            .chain(self.stale.iter().map(|s| {
                [
                    s.partition.topic.to_string(),
                    s.partition.partition.to_string(),
                    s.stored.to_string(),
                    "-".to_string(),
                    "-".to_string(),
                    "-".to_string(),
                    STALE.to_string(),
                    "0".to_string(),
                ]
            }))
            .collect();
        let mut widths = header.clone().map(|h| h.len());
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.len());
            }
        }
        std::iter::once(&header)
            .chain(&rows)
            .map(|row| {
                let cells: Vec<String> = row
                    .iter()
                    .zip(widths)
                    .map(|(cell, width)| format!("{cell:<width$}"))
                    .collect();
                cells.join("  ").trim_end().to_string() + "\n"
            })
            .collect()
    }

    /// The partitions whose stored offset was not used as it was.
    pub fn corrections(&self) -> impl Iterator<Item = &PartitionReport> {
        self.partitions
            .iter()
            .filter(|report| report.decision.action != Action::Kept)
    }
}

/// The action shown for an offset stored for a partition that no longer exists.
pub const STALE: &str = "stale (partition no longer exists)";

/// What a load read: the partitions that exist, the topics re-created since their offsets
/// were stored, and the offsets stored for partitions that no longer exist.
struct Inspection {
    partitions: Vec<Inspected>,
    /// When each partition's offset node was last written (ms since the epoch; 0: no node),
    /// in the order of `partitions`.
    committed_at: Vec<i64>,
    recreated: HashMap<String, Recreated>,
    /// The topics whose recorded and current IDs tell nothing (either is unknown).
    unidentified: HashSet<String>,
    stale: Vec<StalePartition>,
}

/// The brokers' topic IDs, by topic; `None` from brokers before 2.8.
type TopicIds = HashMap<String, Option<String>>;

/// What a read of the ZooKeeper side found: the partitions' nodes then the topics' folders,
/// and the offsets stored for partitions that no longer exist.
type Read = (Vec<Option<Node>>, Vec<StalePartition>);

/// What ZooKeeper holds and what Kafka has, unvalidated.
pub(crate) fn inspect(cx: &Context, group: &str, topics: &[String]) -> Result<Vec<Inspected>> {
    let topics = checked_topics(group, topics)?;
    // The raw view: no re-creation verdict (its ListOffsets round would serve nothing here).
    let inspection = runtime()?.block_on(discover_and_inspect(cx, group, &topics, false))?;
    Ok(inspection.partitions)
}

/// Discovers, takes ownership, reads and validates; see [`crate::OffsetKeeper::load`].
pub(crate) fn load(cx: &Context, group: &str, topics: &[String]) -> Result<Loaded> {
    let topics = checked_topics(group, topics)?;
    let runtime = runtime()?;
    let before = cx.owners.owned_in(group);
    let inspected = runtime.block_on(inspect_and_judge(cx, group, &topics, true));
    let loaded = inspected.and_then(|inspected| validated(cx, group, inspected));
    if let Err(err) = &loaded {
        // A failed load leaves no ownership behind that it took, when ZooKeeper can answer:
        // never on a new session (nothing of this load is left without the old one), nor
        // waiting out a second timeout (the nodes go with the session, or with `close`).
        if cx.ownership.enabled && !err.is_zookeeper_unreachable() {
            runtime.block_on(async {
                if cx.store.session_id().await.is_some() {
                    let release = cx.owners.release_since(&cx.store, group, &before);
                    let _ = tokio::time::timeout(cx.request_timeout(), release).await;
                }
            });
        }
    }
    loaded
}

/// `discover_and_inspect`, then the topics with no usable topic ID judged by their records'
/// timestamps ([`crate::recreated`]): one more ListOffsets round, only for those topics'
/// partitions whose stored offset the rule can judge. With `own`, the partitions of a topic so
/// found re-created hold old offsets for the tracker, as with a changed topic ID.
async fn inspect_and_judge(
    cx: &Context,
    group: &str,
    topics: &[String],
    own: bool,
) -> Result<Inspection> {
    let mut inspection = discover_and_inspect(cx, group, topics, own).await?;
    let Some(tolerance) = cx.recreated_timestamp_tolerance else {
        return Ok(inspection);
    };
    let unidentified: Vec<Unidentified> = inspection
        .partitions
        .iter()
        .zip(&inspection.committed_at)
        .filter(|(i, _)| inspection.unidentified.contains(&*i.partition.topic))
        .map(|(i, committed_at_ms)| Unidentified {
            partition: &i.partition,
            stored: &i.stored,
            range: i.range,
            committed_at_ms: *committed_at_ms,
        })
        .collect();
    let judgeable = unidentified
        .iter()
        .any(|p| Recreated::record_time_can_tell(p.stored, p.range, p.committed_at_ms));
    let clock = if judgeable && own {
        zookeeper_clock(cx, group).await
    } else {
        None
    };
    let found =
        recreated_by_record_time(cx.brokers()?, group, &unidentified, tolerance, clock).await?;
    if own && !found.is_empty() {
        let mut trackers = cx.tracked.lock();
        let tracker = trackers.group(group);
        for topic in found.keys() {
            let old: BTreeSet<i32> = inspection
                .partitions
                .iter()
                .filter(|i| *i.partition.topic == **topic && i.stored != Stored::Missing)
                .map(|i| i.partition.partition)
                .collect();
            tracker.mark_old(topic, old);
        }
    }
    inspection.recreated.extend(found);
    Ok(inspection)
}

/// ZooKeeper's clock against this host's, measured on a node of this keeper's own in the group
/// folder, once per ZooKeeper session; a WARN names an offset over a second. `None`
/// without ownership or when the write fails (the check then takes ZooKeeper's clock as is).
async fn zookeeper_clock(cx: &Context, group: &str) -> Option<ClockOffset> {
    if !cx.ownership.enabled {
        return None;
    }
    let session = cx.store.session_id().await?;
    if let Some(known) = cx.owners.clock_measured(session) {
        return Some(known);
    }
    let measured = cx
        .store
        .bounded(
            cx.request_timeout(),
            cx.owners.measure_clock(&cx.store, group),
        )
        .await;
    match measured {
        Ok(clock) => {
            if clock.is_notable() {
                log::warn!(
                    "group {group}: {clock}, measured on a write of its own in the group's folder; the check of topics without a recorded topic ID corrects commit times by it. Keep ZooKeeper's servers on NTP"
                );
            }
            cx.owners.remember_clock(session, clock);
            Some(clock)
        }
        Err(err) => {
            log::info!("group {group}: ZooKeeper's clock not measured ({err}); commit times are taken by its clock as they are");
            None
        }
    }
}

/// Asks the brokers for the topics' partitions (while the ZooKeeper session opens), then
/// `inspect_partitions`. When this keeper found the same topics' partitions before (and, when
/// taking ownership, owns them all), it inspects those at once with the metadata request: a
/// warm load then waits for the metadata, the ZooKeeper read and the ranges side by side,
/// not for the metadata first. What it inspected is kept only if the metadata finds the same
/// partitions; otherwise it is dropped and the new partitions inspected as on a first load.
async fn discover_and_inspect(
    cx: &Context,
    group: &str,
    topics: &[String],
    own: bool,
) -> Result<Inspection> {
    use futures::future::{select, Either};
    let brokers = cx.brokers()?;
    let connect = || cx.store.bounded(cx.request_timeout(), cx.store.connect());
    let found_before = brokers
        .partitions_found_before(topics)
        .filter(|partitions| {
            !(own && cx.ownership.enabled) || cx.owners.owns_all(group, partitions)
        });
    // The partitions the metadata just found, inspected as on a first load.
    let inspect_found = async |partitions: Vec<TopicPartition>, ids| {
        let ranges = brokers.ranges(&partitions);
        inspect_partitions(
            cx,
            group,
            topics,
            &partitions,
            async { Ok(ids) },
            own,
            ranges,
        )
        .await
    };
    let Some(before) = found_before else {
        let ((partitions, ids), ()) =
            futures::try_join!(brokers.partitions_and_ids(topics), connect())?;
        return inspect_found(partitions, ids).await;
    };
    let (ids_sender, ids_receiver) = tokio::sync::oneshot::channel();
    let ids = async {
        ids_receiver
            .await
            .map_err(|_| Error::Internal("the topics' metadata went away".into()))
    };
    // Ranges on the leaders known from before; if any has moved, after fresh metadata.
    let ranges = async {
        match brokers.ranges_on_known_leaders(&before).await {
            Some(ranges) => Ok(ranges),
            None => brokers.ranges(&before).await,
        }
    };
    let ahead = async {
        connect().await?;
        inspect_partitions(cx, group, topics, &before, ids, own, ranges).await
    };
    let metadata = std::pin::pin!(brokers.partitions_and_ids(topics));
    // Boxed so that dropping it ends it (and frees what it holds, such as the tracker).
    let ahead = Box::pin(ahead);
    let first = select(metadata, ahead).await;
    match first {
        Either::Left((Ok((partitions, ids)), ahead)) if partitions == before => {
            // The receiver waits in `ahead` unless that has failed, which it then reports.
            let _ = ids_sender.send(ids);
            ahead.await
        }
        Either::Left((Ok((partitions, ids)), ahead)) => {
            drop(ahead);
            inspect_found(partitions, ids).await
        }
        Either::Left((Err(err), _)) => Err(err),
        // Only a failure ends it before the metadata is in.
        Either::Right((failed, _)) => failed,
    }
}

/// Stored offsets and ranges of the partitions, asked of ZooKeeper and Kafka at the same
/// time, with each topic's folder (the topic ID recorded beside the offsets) and the offsets
/// stored for partitions that no longer exist. With `own`, the partitions' ownership is
/// taken first (on the ZooKeeper side), and what was read becomes what this keeper last saw
/// (for fencing, and the topic IDs commits record), read and recorded without a commit of
/// this keeper in between.
async fn inspect_partitions(
    cx: &Context,
    group: &str,
    topics: &[String],
    partitions: &[TopicPartition],
    ids: impl Future<Output = Result<TopicIds>>,
    own: bool,
    ranges: impl Future<Output = Result<Vec<PartitionRange>>>,
) -> Result<Inspection> {
    let reading = Reading::new(cx, group, topics, partitions);
    let stored = async {
        if own {
            read_owned(&reading, ids).await
        } else {
            let budget = cx.request_timeout();
            futures::try_join!(cx.store.bounded(budget, reading.read()), ids)
        }
    };
    let (((nodes, stale), ids), ranges) = futures::try_join!(stored, ranges)?;
    let (leaves, folders) = nodes.split_at(partitions.len());
    Ok(Inspection {
        partitions: inspected(partitions, leaves, ranges),
        committed_at: leaves
            .iter()
            .map(|node| node.as_ref().map_or(0, |node| node.mtime))
            .collect(),
        recreated: recreated_topics(topics, folders, &ids),
        unidentified: unidentified_topics(topics, folders, &ids),
        stale,
    })
}

/// Takes the partitions' ownership (when ownership is on), reads them, and records what was
/// read as what this keeper last saw, with no commit of this keeper in between.
#[allow(clippy::await_holding_lock)] // see the tracker below
async fn read_owned(
    reading: &Reading<'_>,
    ids: impl Future<Output = Result<TopicIds>>,
) -> Result<(Read, TopicIds)> {
    let cx = reading.cx;
    let group = reading.layout.group;
    // One deadline for the ZooKeeper side: the request timeout, plus the wait for another
    // owner to go when ownership is taken.
    let owning = cx.ownership.enabled;
    let budget = cx.request_timeout()
        + if owning {
            cx.ownership_wait()
        } else {
            Duration::ZERO
        };
    let (taken, read_first) = cx
        .store
        .bounded(budget, async {
            if owning {
                let wait = cx.ownership_wait();
                cx.owners
                    .acquire(&cx.store, group, reading.partitions, wait)
                    .await?;
            }
            let taken = cx.tracked.lock().times_taken;
            let read = reading.read().await?;
            // Read first: ZooKeeper answers the session's requests in order.
            cx.owners.send_following(&cx.store, group).await;
            Ok((taken, read))
        })
        .await?;
    // The topics' IDs, from a metadata request that may still be on its way. The tracker is
    // not held meanwhile: holding it, this thread would block commits and loads of other
    // threads, which may hold the Kafka connection this one waits for.
    let ids = ids.await?;
    let mut trackers = cx.tracked.lock();
    // What is recorded was read with no commit of this keeper in between: read again, holding
    // the tracker (and only ZooKeeper's answer awaited), when anything took it.
    let (nodes, stale) = if trackers.times_taken == taken + 1 {
        read_first
    } else {
        cx.store
            .bounded(cx.request_timeout(), reading.read())
            .await?
    };
    reading.record(trackers.group(group), &nodes, &ids);
    Ok(((nodes, stale), ids))
}

/// The reads of one inspection: the partitions' nodes, then the topics' folders, with the
/// folders' children (for stale partitions), in one read.
struct Reading<'a> {
    cx: &'a Context,
    layout: GroupLayout<'a>,
    topics: &'a [String],
    partitions: &'a [TopicPartition],
    dirs: Vec<String>,
    paths: Vec<String>,
}

impl<'a> Reading<'a> {
    fn new(
        cx: &'a Context,
        group: &'a str,
        topics: &'a [String],
        partitions: &'a [TopicPartition],
    ) -> Reading<'a> {
        let layout = cx.layout(group);
        let dirs: Vec<String> = topics.iter().map(|topic| layout.topic_dir(topic)).collect();
        let paths: Vec<String> = partitions
            .iter()
            .map(|tp| layout.offset_path(&tp.topic, tp.partition))
            .chain(dirs.iter().cloned())
            .collect();
        Reading {
            cx,
            layout,
            topics,
            partitions,
            dirs,
            paths,
        }
    }

    async fn read(&self) -> Result<Read> {
        let store = &self.cx.store;
        let (nodes, listed) = store
            .read_nodes_and_children(&self.paths, &self.dirs)
            .await?;
        let stale = self.stale(listed);
        let stale_paths: Vec<String> = stale
            .iter()
            .map(|tp| self.layout.offset_path(&tp.topic, tp.partition))
            .collect();
        let stale_nodes = if stale.is_empty() {
            Vec::new()
        } else {
            store.read_nodes(&stale_paths).await?
        };
        let stale: Vec<StalePartition> = stale
            .into_iter()
            .zip(stale_nodes)
            .filter_map(|(partition, node)| {
                node.map(|node| StalePartition {
                    partition,
                    stored: Stored::parse(&node.data),
                })
            })
            .collect();
        Ok((nodes, stale))
    }

    /// The partitions the topics' folders hold that do not exist any more, in partition order.
    fn stale(&self, listed: Vec<Option<Vec<String>>>) -> Vec<TopicPartition> {
        let existing: FxHashSet<&TopicPartition> = self.partitions.iter().collect();
        let mut stale = Vec::new();
        for (topic, children) in self.topics.iter().zip(listed) {
            let mut numbers: Vec<i32> = children
                .unwrap_or_default()
                .iter()
                .filter_map(|child| parse_partition(child))
                .collect();
            numbers.sort_unstable();
            stale.extend(
                numbers
                    .into_iter()
                    .map(|n| TopicPartition::new(topic.as_str(), n))
                    .filter(|tp| !existing.contains(tp)),
            );
        }
        stale
    }

    /// What was read becomes what the tracker last saw: each partition's node, and each
    /// topic's identity with, for a re-created topic, the partitions holding old offsets.
    fn record(&self, tracker: &mut Tracker, nodes: &[Option<Node>], ids: &TopicIds) {
        let partitions = self.partitions;
        for (partition, node) in partitions.iter().zip(nodes) {
            tracker.observe(partition, node.as_ref());
        }
        let folders = &nodes[partitions.len()..];
        for (topic, folder) in self.topics.iter().zip(folders) {
            let current = ids.get(topic).cloned().flatten();
            let stored_id = folder.as_ref().and_then(|f| parse_topic_identity(&f.data));
            let old: BTreeSet<i32> =
                if Recreated::between(stored_id.as_deref(), current.as_deref()).is_some() {
                    partitions
                        .iter()
                        .zip(nodes)
                        .filter(|(tp, node)| *tp.topic == **topic && node.is_some())
                        .map(|(tp, _)| tp.partition)
                        .collect()
                } else {
                    BTreeSet::new()
                };
            tracker.observe_topic(topic, current, folder.as_ref(), old);
        }
    }
}

/// The topics re-created since their offsets were stored: the ID a folder records is not the
/// brokers'.
fn recreated_topics(
    topics: &[String],
    folders: &[Option<Node>],
    ids: &TopicIds,
) -> HashMap<String, Recreated> {
    topics
        .iter()
        .zip(folders)
        .filter_map(|(topic, folder)| {
            let stored_id = folder.as_ref().and_then(|f| parse_topic_identity(&f.data));
            let current = ids.get(topic).cloned().flatten();
            Recreated::between(stored_id.as_deref(), current.as_deref())
                .map(|recreated| (topic.clone(), recreated))
        })
        .collect()
}

/// The topics whose recorded and current IDs tell nothing: no ID recorded beside the offsets
/// (written by another tool, or by offsetkeeper before its first commit on Kafka 2.8+), or
/// none from the brokers (before 2.8).
fn unidentified_topics(
    topics: &[String],
    folders: &[Option<Node>],
    ids: &TopicIds,
) -> HashSet<String> {
    topics
        .iter()
        .zip(folders)
        .filter(|(topic, folder)| {
            let stored_id = folder.as_ref().and_then(|f| parse_topic_identity(&f.data));
            let current = ids.get(*topic).cloned().flatten();
            stored_id.is_none() || current.is_none()
        })
        .map(|(topic, _)| topic.clone())
        .collect()
}

/// Each partition with what its node stores and its range.
fn inspected(
    partitions: &[TopicPartition],
    leaves: &[Option<Node>],
    ranges: Vec<PartitionRange>,
) -> Vec<Inspected> {
    partitions
        .iter()
        .cloned()
        .zip(leaves)
        .zip(ranges)
        .map(|((partition, node), range)| Inspected {
            stored: node
                .as_ref()
                .map_or(Stored::Missing, |node| Stored::parse(&node.data)),
            partition,
            range,
        })
        .collect()
}

/// Validates and reports what a load read.
fn validated(cx: &Context, group: &str, inspection: Inspection) -> Result<Loaded> {
    let Inspection {
        partitions: inspected,
        recreated,
        stale,
        ..
    } = inspection;
    let loaded = judged(group, inspected, &recreated, stale, &cx.policy)?;
    let mut trackers = cx.tracked.lock();
    let tracker = trackers.group(group);
    for report in loaded.corrections() {
        // The job starts elsewhere than the stored offset: commits may go below it.
        tracker.reset_floor(&report.partition);
    }
    Ok(loaded)
}

/// A load's decisions over what a store read, logged; a `fail` policy that applies is an
/// [`Error::PolicyViolation`] listing every refused partition. The same for every store.
pub(crate) fn judged(
    group: &str,
    inspected: Vec<Inspected>,
    recreated: &HashMap<String, Recreated>,
    stale: Vec<StalePartition>,
    policy: &Policy,
) -> Result<Loaded> {
    log_stale(group, &stale);
    // Each partition's own stored value: no copies, no map (perf showed them at P=1000).
    let each = inspected
        .into_iter()
        .map(|i| (i.partition, i.stored, i.range));
    let reports = match decide_each(each, recreated, policy) {
        Ok(reports) => reports,
        Err(refusals) => {
            for refusal in &refusals {
                log::warn!("group {group}: {refusal}");
            }
            return Err(Error::PolicyViolation(format!(
                "group {group}, {} partition(s): {}",
                refusals.len(),
                refusals.join("; ")
            )));
        }
    };
    let loaded = Loaded {
        partitions: reports,
        stale,
        mirror: Vec::new(),
    };
    log_load(group, &loaded);
    Ok(loaded)
}

/// Logs the offsets stored for partitions that no longer exist, at WARN: they stay in
/// ZooKeeper until deleted, and a partition of that number added later would start from them.
fn log_stale(group: &str, stale: &[StalePartition]) {
    if stale.is_empty() {
        return;
    }
    let shown: Vec<String> = stale
        .iter()
        .take(10)
        .map(|s| format!("{} stored {}", s.partition, s.stored))
        .collect();
    let more = stale.len().saturating_sub(10);
    log::warn!(
        "group {group}: {} offset(s) stored for partitions that no longer exist, not loaded: {}{}; `offsetkeeper delete --stale` removes them",
        stale.len(),
        shown.join(", "),
        if more > 0 { format!(" and {more} more") } else { String::new() }
    );
}

/// Up to this many corrections are logged one line each; more get one summary line, and
/// their details a level lower, so that a first start of 1,000 partitions is no WARN flood.
const CORRECTIONS_LOGGED_ONE_BY_ONE: usize = 5;

/// Logs a load: WARN for what skips or loses records or is unexpected (below or above range,
/// corrupt); INFO for a first start (initialized) and for the load's summary.
fn log_load(group: &str, loaded: &Loaded) {
    let corrections: Vec<&PartitionReport> = loaded.corrections().collect();
    let unexpected = |r: &PartitionReport| {
        r.decision.action != Action::Initialized || r.decision.records_lost > 0
    };
    let one_by_one = corrections.len() <= CORRECTIONS_LOGGED_ONE_BY_ONE;
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    let mut lost = 0i64;
    for report in &loaded.partitions {
        let name = report.decision.action.name();
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => counts.push((name, 1)),
        }
        lost = lost.saturating_add(report.decision.records_lost);
    }
    let summary_level = if !one_by_one && corrections.iter().any(|r| unexpected(r)) {
        log::Level::Warn
    } else {
        log::Level::Info
    };
    log::log!(
        summary_level,
        "group {group}: loaded {} partition(s){}; {lost} records lost{}",
        loaded.partitions.len(),
        counts
            .iter()
            .enumerate()
            .map(|(i, (name, count))| format!("{}{count} {name}", if i == 0 { ": " } else { ", " }))
            .collect::<String>(),
        if one_by_one {
            ""
        } else {
            " (each correction at INFO, each initialized partition at DEBUG)"
        }
    );
    for report in corrections {
        let level = match (unexpected(report), one_by_one) {
            (true, true) => log::Level::Warn,
            (true, false) | (false, true) => log::Level::Info,
            (false, false) => log::Level::Debug,
        };
        log::log!(
            level,
            "group {group}: {} stored {} with range [{}, {}]; starting at {} ({}, {} records lost)",
            report.partition,
            report.stored,
            report.range.earliest,
            report.range.latest,
            report.decision.offset,
            report.action_text(),
            report.decision.records_lost
        );
    }
}

/// A load's decisions, a pure function: one report per partition that exists now (with its
/// range), in the order given, from what is stored (a partition absent from `stored` has
/// nothing stored). The stored offsets of a topic in `recreated` follow `on_recreated`
/// whatever the range says. Offsets stored for partitions that do not exist are never
/// returned. A `fail` policy that applies gives every refused partition instead.
pub fn decide(
    existing: &[(TopicPartition, PartitionRange)],
    stored: &HashMap<TopicPartition, Stored>,
    recreated: &HashMap<String, Recreated>,
    policy: &Policy,
) -> std::result::Result<Vec<PartitionReport>, Vec<String>> {
    decide_each(
        existing.iter().map(|(partition, range)| {
            let stored = stored.get(partition).cloned().unwrap_or(Stored::Missing);
            (partition.clone(), stored, *range)
        }),
        recreated,
        policy,
    )
}

/// [`decide`] over each partition with what is stored for it, in the order given.
fn decide_each(
    each: impl ExactSizeIterator<Item = (TopicPartition, Stored, PartitionRange)>,
    recreated: &HashMap<String, Recreated>,
    policy: &Policy,
) -> std::result::Result<Vec<PartitionReport>, Vec<String>> {
    let mut reports = Vec::with_capacity(each.len());
    let mut refusals = Vec::new();
    for (partition, stored, range) in each {
        let recreated = recreated.get(&*partition.topic);
        let decided = match recreated {
            Some(_) => validate_recreated(&stored, range, policy),
            None => validate(&stored, range, policy),
        };
        match decided {
            Ok(decision) => reports.push(PartitionReport {
                partition,
                stored,
                range,
                decision,
                recreated: recreated.cloned(),
            }),
            Err(refusal) => match recreated {
                Some(recreated) => refusals.push(format!(
                    "{partition}: topic {} was {recreated}: {refusal}",
                    partition.topic
                )),
                None => refusals.push(format!("{partition}: {refusal}")),
            },
        }
    }
    if refusals.is_empty() {
        Ok(reports)
    } else {
        Err(refusals)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition::new(topic, partition)
    }

    #[test]
    fn a_recreated_topics_stored_offsets_follow_on_recreated_even_within_range() {
        let range = PartitionRange {
            earliest: 0,
            latest: 500,
        };
        let existing = vec![
            (tp("t", 0), range),
            (tp("t", 1), range),
            (tp("u", 0), range),
        ];
        let stored: HashMap<TopicPartition, Stored> = [
            (tp("t", 0), Stored::Offset(300)),
            (tp("u", 0), Stored::Offset(300)),
        ]
        .into_iter()
        .collect();
        let recreated: HashMap<String, Recreated> = [(
            "t".to_string(),
            Recreated::TopicId {
                stored_id: "A".into(),
                current_id: "B".into(),
            },
        )]
        .into_iter()
        .collect();
        let reports = decide(&existing, &stored, &recreated, &Policy::default()).unwrap();
        assert_eq!(reports[0].decision.offset, 0);
        assert_eq!(reports[0].decision.action, Action::Recreated);
        assert_eq!(reports[0].action_text(), "re-created (id A -> B)");
        // Nothing stored: initialized as ever; another topic: kept as ever.
        assert_eq!(reports[1].decision.action, Action::Initialized);
        assert_eq!(reports[1].action_text(), "initialized");
        assert_eq!(reports[2].decision.action, Action::Kept);
        assert_eq!(reports[2].decision.offset, 300);
        // Without the IDs, today's decision: kept.
        let plain = decide(&existing, &stored, &HashMap::new(), &Policy::default()).unwrap();
        assert_eq!(plain[0].decision.action, Action::Kept);
        let fail = Policy {
            on_recreated: crate::validate::OnRecreated::Fail,
            ..Policy::default()
        };
        let refusals = decide(&existing, &stored, &recreated, &fail).unwrap_err();
        assert_eq!(refusals.len(), 1, "{refusals:?}");
        assert!(
            refusals[0].starts_with("t-0: topic t was re-created (id A -> B): stored 300")
                && refusals[0].contains("on_recreated=fail"),
            "{}",
            refusals[0]
        );
    }
}
