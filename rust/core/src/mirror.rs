//! The second store of a move between stores: with `offsetkeeper.store=zookeeper,kafka` (or
//! `kafka,zookeeper`) the first store is authoritative and the second mirrors it.
//!
//! - A commit is stored in the authoritative store as on a single store; once it is, its offsets
//!   are handed to the mirror's writer, a thread of its own, and the commit returns. The mirror's
//!   latency or outage never holds up or fails a batch: offsets the mirror could not take wait,
//!   merged with the next batches' (each partition's highest), and are written again with
//!   growing pauses (up to [`MAX_RETRY_PAUSE`]) until the mirror takes them. A WARN says when
//!   the mirror starts failing and an INFO when it has caught up.
//! - A load decides from the authoritative store and reads the mirror beside it: each partition
//!   where the two differ is reported ([`MirrorDifference`], and a WARN). Where the mirror holds
//!   an offset ahead of the load's choice, within the log's range and of a topic not re-created,
//!   the load starts there: the mirror only ever holds offsets the authoritative store stored
//!   before, so this is one a job finished, and an offset never moves backwards when the roles
//!   switch (a rollback from `kafka,zookeeper` to `zookeeper,kafka` after the mirror fell
//!   behind).
//! - The mirror keeper never takes ownership (the authoritative store's ownership fences the
//!   job); with Kafka as the mirror its commits are simple commits, which the coordinator takes
//!   only while no consumer is a member of the group.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::Store;
use crate::load::{Loaded, MirrorDifference};
use crate::validate::{Action, Stored};
use crate::{OffsetKeeper, TopicPartition};

/// The longest pause between two writes to a mirror that keeps failing.
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(30);
/// The first pause after a failed write; doubled after each failure.
const FIRST_RETRY_PAUSE: Duration = Duration::from_millis(500);
/// A write to the mirror under way for longer than this counts as failing (the WARN once, the
/// INFO when caught up), before it ends: a Kafka mirror whose coordinator cannot be reached asks
/// again until the Kafka timeout (60 s by default) before its write fails.
const SLOW_WRITE: Duration = Duration::from_secs(5);

/// What a keeper's mirror is doing, for operators and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MirrorStatus {
    /// The mirror's store.
    pub store: Store,
    /// Partitions whose newest committed offset the mirror does not hold yet.
    pub pending: usize,
    /// Writes to the mirror that failed since the keeper opened.
    pub failures: u64,
    /// The last failure, while the mirror is behind because of it.
    pub last_error: Option<String>,
    /// How long the mirror has lacked an offset handed to it: since the oldest batch it does
    /// not hold yet was handed over; zero when it holds every one.
    pub behind: Duration,
}

/// The mirror store and its writer thread.
pub(crate) struct Mirror {
    store: Store,
    shared: Arc<Shared>,
    writer: Option<JoinHandle<()>>,
}

struct Shared {
    keeper: OffsetKeeper,
    store: Store,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// By group, each partition's newest offset not yet in the mirror.
    pending: BTreeMap<String, BTreeMap<TopicPartition, i64>>,
    /// By group, the partitions of the write under way (taken out of `pending`).
    in_flight: BTreeMap<String, BTreeSet<TopicPartition>>,
    writing: bool,
    closing: bool,
    failures: u64,
    failing_since: Option<Instant>,
    last_error: Option<String>,
    /// When the oldest offset in `pending` was handed over.
    pending_since: Option<Instant>,
    /// When the oldest offset of the write under way was handed over.
    in_flight_since: Option<Instant>,
    /// When the write under way started.
    writing_since: Option<Instant>,
}

impl State {
    /// The partitions whose newest offset the mirror does not hold yet: those pending and those
    /// of the write under way, each once.
    fn behind(&self) -> usize {
        let mut groups: BTreeSet<&str> = self.pending.keys().map(String::as_str).collect();
        groups.extend(self.in_flight.keys().map(String::as_str));
        groups
            .into_iter()
            .map(|group| {
                let pending = self.pending.get(group);
                let in_flight = self.in_flight.get(group);
                let mut partitions: BTreeSet<&TopicPartition> =
                    pending.into_iter().flat_map(BTreeMap::keys).collect();
                partitions.extend(in_flight.into_iter().flatten());
                partitions.len()
            })
            .sum()
    }

    /// Since when the mirror lacks an offset handed to it.
    fn behind_since(&self) -> Option<Instant> {
        earliest(self.pending_since, self.in_flight_since)
    }

    /// A write under way for longer than [`SLOW_WRITE`] is a failure as a failed write is: the
    /// WARN now, once, and the INFO when the mirror has caught up.
    fn warn_if_stuck(&mut self, store: Store) {
        let Some(started) = self.writing_since else {
            return;
        };
        if self.failing_since.is_some() || started.elapsed() < SLOW_WRITE {
            return;
        }
        self.failing_since = Some(started);
        log::warn!(
            "the mirror ({}) could not take the committed offsets within {} ms (a write has been under way for {} ms: its store is slow or cannot be reached); batches go on, and their offsets wait for it (each partition's newest)",
            store.name(),
            SLOW_WRITE.as_millis(),
            started.elapsed().as_millis()
        );
    }
}

/// The earlier of two instants, either absent.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding it leaves plain data: go on with it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Mirror {
    /// Starts the writer of `keeper`, a keeper of the mirror store `store` (ownership off).
    pub(crate) fn start(store: Store, keeper: OffsetKeeper) -> crate::Result<Mirror> {
        let shared = Arc::new(Shared {
            keeper,
            store,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let writer = std::thread::Builder::new()
            .name("offsetkeeper-mirror".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || write_loop(&shared)
            })
            .map_err(|e| crate::Error::invalid(format!("cannot start the mirror's writer: {e}")))?;
        Ok(Mirror {
            store,
            shared,
            writer: Some(writer),
        })
    }

    /// Hands a stored batch to the writer; returns at once.
    pub(crate) fn enqueue(
        &self,
        group: &str,
        offsets: impl IntoIterator<Item = (TopicPartition, i64)>,
    ) {
        let mut state = self.shared.lock();
        merge(state.pending.entry(group.to_string()).or_default(), offsets);
        state.pending_since.get_or_insert_with(Instant::now);
        state.warn_if_stuck(self.store);
        self.shared.changed.notify_all();
    }

    /// Waits until the mirror holds every offset handed to it, at most `timeout`; whether it
    /// does.
    pub(crate) fn flush(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut state = self.shared.lock();
        while !state.pending.is_empty() || state.writing {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, left)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        true
    }

    pub(crate) fn status(&self) -> MirrorStatus {
        let mut state = self.shared.lock();
        state.warn_if_stuck(self.store);
        MirrorStatus {
            store: self.store,
            pending: state.behind(),
            failures: state.failures,
            last_error: state.last_error.clone(),
            behind: state
                .behind_since()
                .map_or(Duration::ZERO, |since| since.elapsed()),
        }
    }

    /// Reads the mirror beside a load of the authoritative store, reports every partition where
    /// they differ, and starts at the mirror's offset where it is ahead (see the module's
    /// documentation). A mirror that cannot be read leaves the load as it is, with a WARN.
    pub(crate) fn compare(&self, group: &str, topics: &[String], loaded: &mut Loaded) {
        let held = match self.shared.keeper.stored(group, topics) {
            Ok(held) => held,
            Err(err) => {
                log::warn!(
                    "group {group}: the mirror ({}) could not be read to compare it with the load: {err}",
                    self.store.name()
                );
                return;
            }
        };
        let held: HashMap<TopicPartition, Stored> = held.into_iter().collect();
        for report in &mut loaded.partitions {
            let mirror = held
                .get(&report.partition)
                .cloned()
                .unwrap_or(Stored::Missing);
            if mirror == report.stored {
                continue;
            }
            let ahead = match mirror {
                Stored::Offset(offset) => {
                    offset > report.decision.offset
                        && report.range.earliest <= offset
                        && offset <= report.range.latest
                        && report.recreated.is_none()
                        && report.decision.action != Action::Recreated
                }
                _ => false,
            };
            let authoritative = report.stored.clone();
            if let (true, Stored::Offset(offset)) = (ahead, &mirror) {
                log::warn!(
                    "group {group}: {}: the mirror ({}) holds {offset}, ahead of the load's {} (the authoritative store holds {}): starting at {offset}, so that no offset moves backwards when the stores switch roles",
                    report.partition,
                    self.store.name(),
                    report.decision.offset,
                    authoritative
                );
                report.stored = mirror.clone();
                report.decision.offset = *offset;
                report.decision.action = Action::Kept;
                report.decision.records_lost = 0;
            }
            loaded.mirror.push(MirrorDifference {
                partition: report.partition.clone(),
                authoritative,
                mirror,
                taken: ahead,
            });
        }
        if !loaded.mirror.is_empty() {
            let shown: Vec<String> = loaded
                .mirror
                .iter()
                .take(10)
                .map(|d| format!("{} {} vs {}", d.partition, d.authoritative, d.mirror))
                .collect();
            log::warn!(
                "group {group}: the authoritative store and the mirror ({}) differ on {} partition(s): {}{}",
                self.store.name(),
                loaded.mirror.len(),
                shown.join(", "),
                if loaded.mirror.len() > 10 { ", ..." } else { "" }
            );
        }
    }
}

impl Drop for Mirror {
    /// Writes what is pending, within the mirror keeper's request timeout, then stops the
    /// writer.
    fn drop(&mut self) {
        if !self.flush(self.shared.keeper.request_timeout()) {
            let status = self.status();
            log::warn!(
                "closing: the mirror ({}) does not hold the newest offsets of {} partition(s){}; the next keeper of the groups writes them",
                self.store.name(),
                status.pending,
                status
                    .last_error
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            );
        }
        self.shared.lock().closing = true;
        self.shared.changed.notify_all();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// Each partition's highest offset of both.
fn merge(
    into: &mut BTreeMap<TopicPartition, i64>,
    offsets: impl IntoIterator<Item = (TopicPartition, i64)>,
) {
    for (partition, offset) in offsets {
        let entry = into.entry(partition).or_insert(offset);
        *entry = (*entry).max(offset);
    }
}

/// The writer: takes what is pending, writes it, puts back what failed, pauses after a failure.
fn write_loop(shared: &Shared) {
    let mut pause = FIRST_RETRY_PAUSE;
    loop {
        let work = {
            let mut state = shared.lock();
            while state.pending.is_empty() && !state.closing {
                state = shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(|e| e.into_inner());
            }
            if state.closing {
                return;
            }
            state.writing = true;
            state.writing_since = Some(Instant::now());
            state.in_flight_since = state.pending_since.take();
            let work = std::mem::take(&mut state.pending);
            state.in_flight = work
                .iter()
                .map(|(group, offsets)| (group.clone(), offsets.keys().cloned().collect()))
                .collect();
            work
        };
        let mut failed: Vec<(String, BTreeMap<TopicPartition, i64>, String)> = Vec::new();
        for (group, offsets) in work {
            let pairs: Vec<(TopicPartition, i64)> =
                offsets.iter().map(|(tp, o)| (tp.clone(), *o)).collect();
            match shared.keeper.commit(&group, &pairs) {
                Ok(summary) if !summary.deferred => {}
                Ok(_) => failed.push((group, offsets, "deferred".to_string())),
                Err(err) => {
                    let why = err.to_string();
                    failed.push((group, offsets, why));
                }
            }
        }
        let mut state = shared.lock();
        state.writing = false;
        state.writing_since = None;
        state.in_flight.clear();
        let in_flight_since = state.in_flight_since.take();
        if failed.is_empty() {
            if let Some(since) = state.failing_since.take() {
                log::info!(
                    "the mirror ({}) holds every committed offset again, after failing (or waiting for its store) for {} ms",
                    shared.store.name(),
                    since.elapsed().as_millis()
                );
            }
            state.last_error = None;
            pause = FIRST_RETRY_PAUSE;
            shared.changed.notify_all();
            continue;
        }
        state.failures += 1;
        state.pending_since = earliest(state.pending_since, in_flight_since);
        let mut reasons = Vec::new();
        for (group, offsets, why) in failed {
            reasons.push(format!("group {group}: {why}"));
            merge(state.pending.entry(group).or_default(), offsets);
        }
        let reason = reasons.join("; ");
        if state.failing_since.is_none() {
            state.failing_since = Some(Instant::now());
            log::warn!(
                "the mirror ({}) could not take the committed offsets ({reason}); batches go on, and their offsets wait for it (each partition's newest), written again every {} ms up to every {} s",
                shared.store.name(),
                pause.as_millis(),
                MAX_RETRY_PAUSE.as_secs()
            );
        } else {
            log::debug!("the mirror ({}) still fails: {reason}", shared.store.name());
        }
        state.last_error = Some(reason);
        shared.changed.notify_all();
        // Paused, unless the keeper closes meanwhile.
        let (state, _) = shared
            .changed
            .wait_timeout_while(state, pause, |s| !s.closing)
            .unwrap_or_else(|e| e.into_inner());
        if state.closing {
            return;
        }
        pause = (pause * 2).min(MAX_RETRY_PAUSE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_behind_count_the_write_under_way_once() {
        let tp = |p| TopicPartition::new("t", p);
        let mut state = State::default();
        assert_eq!(state.behind(), 0);
        // A write of four partitions under way (the mirror down), one of them committed again.
        state.in_flight.insert("g".into(), (0..4).map(tp).collect());
        state
            .pending
            .insert("g".into(), [(tp(3), 9), (tp(4), 9)].into_iter().collect());
        state
            .pending
            .insert("h".into(), [(tp(0), 1)].into_iter().collect());
        assert_eq!(state.behind(), 6);
    }

    #[test]
    fn a_write_under_way_too_long_fails_once_and_the_oldest_batch_says_how_far_behind() {
        let ago = |secs| Instant::now().checked_sub(Duration::from_secs(secs));
        let mut state = State::default();
        assert_eq!(state.behind_since(), None);
        state.pending_since = ago(1);
        state.in_flight_since = ago(8);
        assert_eq!(state.behind_since(), state.in_flight_since);
        // Under way for less than SLOW_WRITE: not failing yet.
        state.writing_since = ago(1);
        state.warn_if_stuck(Store::Kafka);
        assert!(state.failing_since.is_none());
        // For longer: failing since the write started, and said once.
        state.writing_since = ago(7);
        state.warn_if_stuck(Store::Kafka);
        assert_eq!(state.failing_since, state.writing_since);
        let first = state.failing_since;
        state.writing_since = ago(9);
        state.warn_if_stuck(Store::Kafka);
        assert_eq!(state.failing_since, first);
    }
}
