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
//!   superseded by the next one. The first deferred commit makes the outage known: the keeper
//!   reconnects in the background (`crate::reconnect`), and until ZooKeeper answers the next
//!   commits wait for that at most the probe bound, then are deferred, instead of waiting a
//!   whole ZooKeeper timeout each. No offset is written in the background; `close` tries once.
//!   Conflicts, lost ownership and bad input fail at once as ever. Deferred offsets live in
//!   memory only: after a crash the job restarts from what was stored (at-least-once).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::batch::CommitBatch;
use crate::config::defaults::OUTAGE_PROBE;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::runtime::runtime;
use crate::tracked::Tracker;
use crate::zookeeper::layout::GroupLayout;
use crate::zookeeper::outage::probe_bound;
use crate::TopicPartition;
use attempt::{commit_once, Done, Entry, Failed};

mod attempt;

/// The operation an [`Error::Timeout`] names when commits failed for longer than the tolerance.
const OUTAGE_OPERATION: &str = "commits, failing for longer than the commit outage tolerance (the newest offsets are still pending; the next commit tries them again): none went through";

/// The operation a commit deferred during a known outage names.
const RECONNECT_OPERATION: &str =
    "the background reconnect of an outage an earlier commit found (no request sent)";

/// The operation a commit deferred because its session's connection had dropped names.
const DISCONNECTED_OPERATION: &str =
    "a new connection of this keeper's session, whose connection dropped (no request sent)";

/// What a commit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommitSummary {
    /// Znodes created or changed.
    pub written: usize,
    /// Offsets that already held the committed value.
    pub unchanged: usize,
    /// Multi requests sent: 1, or more for batches beyond one request's size; 0 when nothing
    /// was sent (fencing off and nothing changed, or every offset skipped).
    pub requests: usize,
    /// Offsets left out because they were below what this keeper already committed.
    pub skipped: usize,
    /// ZooKeeper could not be reached: nothing was written, and the offsets wait, with those
    /// of earlier deferred commits, for the next commit of the group (or `close`).
    pub deferred: bool,
    /// Partitions of the group whose newest offset is not stored yet (0 unless deferred).
    pub pending: usize,
    /// How long the stored offsets of the group have been behind: since the start of the first
    /// commit that was deferred (zero unless deferred).
    pub behind: Duration,
}

/// Refuses illegal names, negative partitions or offsets and duplicate partitions: the input
/// checks of [`OffsetKeeper::commit`](crate::OffsetKeeper::commit), for callers that write
/// offsets elsewhere (the CLI's `migrate` to a Kafka consumer group).
pub fn check_commit(group: &str, offsets: &[(TopicPartition, i64)]) -> Result<()> {
    CommitBatch::from_pairs(offsets).check(group)
}

/// Commits a batch; see [`crate::OffsetKeeper::commit`].
pub(crate) fn commit(cx: &Context, group: &str, batch: &CommitBatch) -> Result<CommitSummary> {
    batch.check(group)?;
    if batch.is_empty() {
        return Ok(CommitSummary::default());
    }
    let started = Instant::now();
    let runtime = runtime()?;
    let mut trackers = cx.tracked.lock();
    let tracker = trackers.group(group);
    let layout = cx.layout(group);
    let (offsets, settled) = to_commit(cx, tracker, &layout, batch);
    if offsets.is_empty() {
        // Every partition is stored as given: what the full path does for such a batch.
        tracker.went_through(group);
        return Ok(CommitSummary {
            unchanged: settled,
            ..CommitSummary::default()
        });
    }
    let (entries, skipped) = above_floors(cx, tracker, &offsets);
    log_skipped(group, &skipped);
    let summary = CommitSummary {
        skipped: skipped.len(),
        ..CommitSummary::default()
    };
    if entries.is_empty() {
        // Every deferred offset was below the floor too.
        tracker.drop_deferred();
        return Ok(summary);
    }
    if let Some(bound) = probe_bound(cx.store.outage().reach(), cx.request_timeout()) {
        // A known outage: no request, only a moment's wait for the background reconnect.
        let outage = cx.store.outage();
        if !runtime.block_on(outage.answers_within(bound)) {
            let err = Error::Timeout {
                server: format!("ZooKeeper at {}", cx.store.config().connect),
                operation: RECONNECT_OPERATION,
                after: bound,
                detail: String::new(),
            };
            return deferred_or(cx, err, group, tracker, &entries, started, summary);
        }
    } else if !cx.commit_outage_tolerance.is_zero() {
        // The session knows its connection dropped: a moment for it to connect again (an
        // ensemble's other server), not a whole timeout, before the batch is deferred.
        let bound = OUTAGE_PROBE.min(cx.request_timeout());
        if !runtime.block_on(cx.store.reconnects_within(bound)) {
            let err = Error::Timeout {
                server: format!("ZooKeeper at {}", cx.store.config().connect),
                operation: DISCONNECTED_OPERATION,
                after: bound,
                detail: String::new(),
            };
            return deferred_or(cx, err, group, tracker, &entries, started, summary);
        }
    }
    // After the wait: the reconnect that ended the outage may have found the group taken.
    if let Some((partition, owner)) = cx.owners.take_refusal(group) {
        let err = Error::CommitConflict {
            group: group.to_string(),
            partition,
            detail: format!(
                "this keeper's ZooKeeper session expired during an outage, and when ZooKeeper answered again another instance, {owner}, owns the partition now. Nothing of this commit was written"
            ),
        };
        return deferred_or(cx, err, group, tracker, &entries, started, summary);
    }
    // One deadline: the request timeout, plus the wait for another owner to go when this
    // keeper must take ownership first (as a load's).
    let mut budget = cx.request_timeout();
    if must_settle_ownership(cx, group) {
        budget += cx.ownership_wait();
    }
    let written = cx
        .store
        .bounded(budget, write_entries(cx, tracker, &layout, &entries));
    match runtime.block_on(written) {
        Ok(done) => {
            tracker.went_through(group);
            Ok(CommitSummary {
                written: done.written,
                unchanged: settled + done.unchanged,
                requests: done.requests,
                ..summary
            })
        }
        Err(err) => deferred_or(cx, err, group, tracker, &entries, started, summary),
    }
}

/// The offsets to write, and how many of the batch's are left out as stored already. The
/// offsets of commits deferred during a ZooKeeper outage go in this batch's multi.
fn to_commit(
    cx: &Context,
    tracker: &Tracker,
    layout: &GroupLayout<'_>,
    batch: &CommitBatch,
) -> (Vec<(TopicPartition, i64)>, usize) {
    if tracker.has_deferred() {
        (tracker.with_deferred(&batch.pairs(), cx.monotonic), 0)
    } else if may_leave_out_settled(cx, tracker, layout) {
        tracker.unsettled(layout, batch)
    } else {
        (batch.pairs(), 0)
    }
}

/// Whether a commit may leave out the partitions this keeper knows are stored exactly as
/// given (its load read them, or its commits wrote them, fenced since). A streaming batch
/// names every partition and often few moved: the others then cost one lookup each, no path
/// and no pass of the full commit. Only where that full commit would do nothing for them
/// either: fenced (without fencing every node is read again), nothing deferred, ownership
/// settled, folders and topic identities known, and no write of the partition pending.
fn may_leave_out_settled(cx: &Context, tracker: &Tracker, layout: &GroupLayout<'_>) -> bool {
    let group = layout.group;
    cx.fencing
        && tracker.is_quiet(layout)
        && (!cx.ownership.enabled
            || (cx.owners.is_registered(group) && !cx.owners.is_following(group)))
}

/// A partition's offset below what this keeper already committed for it (its floor).
type Skipped<'a> = (&'a TopicPartition, i64, i64);

/// The offsets to write and, with monotonic commits, those left out below their floor.
fn above_floors<'a>(
    cx: &Context,
    tracker: &Tracker,
    offsets: &'a [(TopicPartition, i64)],
) -> (Vec<Entry<'a>>, Vec<Skipped<'a>>) {
    let mut entries = Vec::with_capacity(offsets.len());
    let mut skipped = Vec::new();
    let floors: Vec<Option<i64>> = if cx.monotonic {
        let seen = tracker.seen_each(offsets.iter().map(|(tp, _)| tp));
        seen.into_iter()
            .map(|seen| seen.and_then(|seen| seen.floor()))
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
    (entries, skipped)
}

fn log_skipped(group: &str, skipped: &[Skipped<'_>]) {
    if skipped.is_empty() {
        return;
    }
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

/// Whether a commit in the group may first have to take ownership (and so gets the
/// ownership wait): a keeper that did not load it, or whose load's owner nodes are still
/// to be confirmed.
fn must_settle_ownership(cx: &Context, group: &str) -> bool {
    cx.ownership.enabled && (!cx.owners.is_registered(group) || cx.owners.is_following(group))
}

/// Commits the entries, trying again when a folder appeared, ownership was taken again or
/// (fencing off) a node changed between the read and the write, until the call's deadline.
async fn write_entries(
    cx: &Context,
    tracker: &mut Tracker,
    layout: &GroupLayout<'_>,
    entries: &[Entry<'_>],
) -> Result<Done> {
    let group = layout.group;
    if cx.ownership.enabled && !cx.owners.is_registered(group) {
        take_ownership(cx, tracker, layout, entries).await?;
    } else if cx.ownership.enabled && cx.owners.is_following(group) {
        // The load's owner nodes were sent in the background: no write before they are
        // known to be in place, or taken with the wait of a load when they are not.
        let owned = cx.owners.owned_in(group);
        let wait = cx.ownership_wait();
        cx.owners.acquire(&cx.store, group, &owned, wait).await?;
    }
    let mut attempt = 1;
    loop {
        match commit_once(cx, tracker, layout, entries).await {
            Ok(done) => return Ok(done),
            Err(Failed::Again(err)) if !cx.store.time_left().is_zero() => {
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
    cx: &Context,
    tracker: &mut Tracker,
    layout: &GroupLayout<'_>,
    entries: &[Entry<'_>],
) -> Result<()> {
    let group = layout.group;
    let partitions: Vec<TopicPartition> = entries
        .iter()
        .map(|entry| entry.partition.clone())
        .collect();
    // The session first: the wait follows the session timeout the servers granted.
    cx.store.connect().await?;
    let wait = cx.ownership_wait();
    if let Err(err) = cx.owners.acquire(&cx.store, group, &partitions, wait).await {
        if !err.is_zookeeper_unreachable() {
            // Nothing of a refused acquisition stays behind.
            cx.owners.release_since(&cx.store, group, &[]).await;
        }
        return Err(err);
    }
    if cx.fencing {
        let paths: Vec<String> = entries.iter().map(|entry| entry.path(layout)).collect();
        let nodes = cx.store.read_nodes(&paths).await?;
        for (entry, node) in entries.iter().zip(&nodes) {
            tracker.adopt(entry.partition, node.as_ref());
        }
    }
    // The owner nodes go in before this commit's multi, on the same session.
    cx.owners
        .acquire(&cx.store, group, &partitions, wait)
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
    cx: &Context,
    err: Error,
    group: &str,
    tracker: &mut Tracker,
    entries: &[Entry<'_>],
    started: Instant,
    summary: CommitSummary,
) -> Result<CommitSummary> {
    let tolerance = cx.commit_outage_tolerance;
    if tolerance.is_zero() || !err.is_zookeeper_unreachable() {
        if tracker.has_deferred() {
            log::warn!(
                "group {group}: the offsets of {} partition(s) from earlier deferred commits were not written either",
                tracker.deferred_count()
            );
        }
        return Err(err);
    }
    // The next commits do not wait a whole timeout each: see `crate::reconnect`.
    cx.store.outage().began(started);
    // Newest wins: this batch already holds the deferred offsets it did not replace.
    let outage = tracker.defer(
        entries.iter().map(|entry| (entry.partition, entry.offset)),
        started,
    );
    let behind = outage.since.elapsed();
    let commits = outage.commits;
    let pending = tracker.deferred_count();
    let last = match tracker.last_success() {
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
            _ => format!("ZooKeeper at {}", cx.store.config().connect),
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
pub(crate) fn flush_deferred(cx: &Context, deadline: Instant) {
    let Ok(runtime) = runtime() else { return };
    let mut trackers = cx.tracked.lock();
    for (group, tracker) in trackers.each_group() {
        if !tracker.has_deferred() {
            continue;
        }
        let offsets = tracker.deferred();
        let entries: Vec<Entry<'_>> = offsets
            .iter()
            .map(|(partition, offset)| Entry {
                partition,
                offset: *offset,
            })
            .collect();
        let layout = cx.layout(group);
        let left = deadline.saturating_duration_since(Instant::now());
        // The timer is made inside the runtime.
        let outcome = runtime.block_on(async {
            let written = cx
                .store
                .bounded(left, write_entries(cx, tracker, &layout, &entries));
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
        log::warn!(
            "group {group}: closing could not write the offsets of deferred commits for {} partition(s) ({reason}); the stored offsets are {} ms behind, and a restarted job starts from them (at-least-once)",
            entries.len(),
            tracker.behind().as_millis()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition::new(topic, partition)
    }

    #[test]
    fn commit_input_is_checked_before_any_io() {
        assert!(check_commit("g", &[(tp("t", 0), 5), (tp("t", 1), 0)]).is_ok());
        type Case = (&'static str, Vec<(TopicPartition, i64)>, &'static str);
        let cases: Vec<Case> = vec![
            ("", vec![], "group name ''"),
            ("a/b", vec![], "'/'"),
            ("g", vec![(tp("../x", 0), 1)], "topic name '../x'"),
            ("g", vec![(tp("t", -2), 1)], "partition -2"),
            ("g", vec![(tp("t", 0), -1)], "offset -1"),
            // A run is checked in one pass; the bad entry is then named, wherever it is.
            (
                "g",
                vec![(tp("t", 0), 1), (tp("t", 1), 2), (tp("t", 2), -7)],
                "offset -7 for t-2 is negative",
            ),
            (
                "g",
                vec![(tp("t", 0), 1), (tp("t", -3), 2), (tp("t", 5), 3)],
                "partition -3 of topic 't'",
            ),
            (
                "g",
                vec![(tp("t", 0), 1), (tp("t", 0), 2)],
                "t-0 appears twice",
            ),
            // Runs that fall, or a topic in two runs, are searched for repeats.
            (
                "g",
                vec![(tp("t", 3), 1), (tp("t", 1), 1), (tp("t", 3), 2)],
                "t-3 appears twice",
            ),
            (
                "g",
                vec![(tp("t", 1), 1), (tp("u", 0), 1), (tp("t", 1), 2)],
                "t-1 appears twice",
            ),
        ];
        for (group, offsets, needle) in cases {
            let message = check_commit(group, &offsets).unwrap_err().to_string();
            assert!(message.contains(needle), "{needle}: {message}");
        }
    }
}
