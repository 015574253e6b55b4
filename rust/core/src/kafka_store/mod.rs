//! The Kafka group store (`offsetkeeper.store=kafka`): a group's offsets kept where Kafka's
//! consumers keep theirs (`__consumer_offsets`), read with OffsetFetch and written with
//! OffsetCommit by the engine itself over its own connections, and validated, reported and
//! decided exactly as the ZooKeeper store's ([`crate::load::judged`]).
//!
//! - One batch, one request: a commit's offsets go in one OffsetCommit, which the coordinator
//!   checks as a whole (the member and generation) and appends to the group's log as one
//!   record batch. A partition the coordinator refuses on its own (its metadata too large, its
//!   topic unknown to newer brokers) is named in the error; the others of the request are
//!   stored.
//! - Fencing: commits carry this keeper's membership ([`membership`]); a commit of an instance
//!   that lost its place is refused by the coordinator, nothing written.
//! - Identity: each offset's metadata records its topic's ID and when it was committed
//!   ([`metadata`]).
//! - Outages: a coordinator that cannot be reached (moving, restarting) defers commits within
//!   the commit outage tolerance, as ZooKeeper's outages do: the next commit writes the newest
//!   offsets of every deferred one in its own request.

mod admin;
mod membership;
mod metadata;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::batch::CommitBatch;
use crate::commit::CommitSummary;
use crate::config::{KeeperConfig, Ownership};
use crate::error::{Error, Result};
use crate::kafka::group::{codes, FetchedOffset};
use crate::kafka::protocol::error_name;
use crate::kafka::Brokers;
use crate::load::{judged, Inspected, Loaded, StalePartition};
use crate::names::checked_topics;
use crate::ownership::Identity;
use crate::partition_map::PartitionMap;
use crate::recreated::{recreated_by_record_time, Unidentified};
use crate::runtime::runtime;
use crate::validate::{Action, OnMissing, PartitionRange, Policy, Recreated, Stored};
use crate::TopicPartition;
use membership::{Joining, Member};
use metadata::CommitMetadata;

/// A keeper's state of one group.
#[derive(Default)]
struct GroupState {
    member: Option<Member>,
    /// The topics and partitions this keeper holds (what it joins with).
    topics: Vec<String>,
    partitions: Vec<TopicPartition>,
    /// The brokers' topic IDs as this keeper last saw them: what commits record.
    topic_ids: HashMap<String, Option<String>>,
    /// What this keeper knows is stored, from its load and its commits.
    stored: PartitionMap<i64>,
    /// The highest offset this keeper committed or found kept, per partition (monotonic
    /// commits).
    floors: PartitionMap<i64>,
    /// Offsets of commits deferred during a coordinator outage, the newest per partition.
    deferred: BTreeMap<TopicPartition, i64>,
    outage: Option<(Instant, usize)>,
}

/// Loads, validates and commits offsets kept in Kafka's group store.
pub(crate) struct KafkaStore {
    brokers: Arc<Brokers>,
    policy: Policy,
    monotonic: bool,
    ownership: Ownership,
    commit_outage_tolerance: Duration,
    recreated_timestamp_tolerance: Option<Duration>,
    identity: Identity,
    /// Each group's state behind a lock of its own: one group's join or commit never waits for
    /// another's.
    groups: Mutex<HashMap<String, Arc<Mutex<GroupState>>>>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl KafkaStore {
    pub(crate) fn open(config: KeeperConfig, brokers: Brokers) -> KafkaStore {
        KafkaStore {
            brokers: Arc::new(brokers),
            policy: config.policy,
            monotonic: config.monotonic,
            ownership: config.ownership,
            commit_outage_tolerance: config.commit_outage_tolerance,
            recreated_timestamp_tolerance: config.recreated_timestamp_tolerance,
            identity: Identity::new(),
            groups: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn brokers(&self) -> &Brokers {
        &self.brokers
    }

    pub(crate) fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The group's state, locked for one operation.
    fn group(&self, group: &str) -> OwnedGroup {
        let state = self
            .groups
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(group.to_string())
            .or_default()
            .clone();
        OwnedGroup(state)
    }

    /// The groups this keeper has state for.
    fn group_names(&self) -> Vec<String> {
        self.groups
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .keys()
            .cloned()
            .collect()
    }

    /// What joining the group with these topics and partitions says of this keeper.
    fn joining<'a>(
        &'a self,
        group: &'a str,
        topics: &'a [String],
        partitions: &'a [TopicPartition],
    ) -> Joining<'a> {
        Joining {
            brokers: &self.brokers,
            identity: &self.identity,
            group,
            topics,
            partitions,
        }
    }

    fn ownership_wait(&self) -> Duration {
        self.ownership.wait_for(membership::SESSION_TIMEOUT)
    }

    /// What the group stored and what Kafka has, unvalidated.
    pub(crate) fn inspect(&self, group: &str, topics: &[String]) -> Result<Vec<Inspected>> {
        let topics = checked_topics(group, topics)?;
        runtime()?.block_on(async {
            let (partitions, ids) = self.brokers.partitions_and_ids(&topics).await?;
            Ok(self
                .read(group, &topics, &partitions, &ids)
                .await?
                .partitions)
        })
    }

    /// Discovers the partitions, joins the group (unless ownership is off), reads the committed
    /// offsets and ranges, and validates each; see [`crate::OffsetKeeper::load`].
    pub(crate) fn load(&self, group: &str, topics: &[String]) -> Result<Loaded> {
        let topics = checked_topics(group, topics)?;
        let runtime = runtime()?;
        let owned = self.group(group);
        let mut state = owned.lock();
        let state = &mut *state;
        runtime.block_on(async {
            // A keeper that holds the group already (or does not own it) reads the offsets
            // beside the metadata and ranges, as nothing can commit but it; one that joins
            // reads them after joining, once no one else can.
            let early = !self.ownership.enabled || state.member.is_some();
            let (partitions, ids, mut early_read) = if early {
                let discovered = async {
                    let (partitions, ids) = self.brokers.partitions_and_ids(&topics).await?;
                    let ranges = self.brokers.ranges(&partitions).await?;
                    Ok::<_, Error>((partitions, ids, ranges))
                };
                let ((partitions, ids, ranges), fetched) =
                    futures::try_join!(discovered, self.brokers.fetch_offsets(group))?;
                (partitions, ids, Some((fetched, ranges)))
            } else {
                let (partitions, ids) = self.brokers.partitions_and_ids(&topics).await?;
                (partitions, ids, None)
            };
            if self.ownership.enabled && state.holds_other_than(&topics, &partitions) {
                // Joined for other partitions: join again with these, and read after it.
                self.release(state, group).await;
                early_read = None;
            }
            if self.ownership.enabled && state.member.is_none() {
                let joining = self.joining(group, &topics, &partitions);
                state.member = Some(joining.join(self.ownership_wait()).await?);
                early_read = None;
            }
            state.topics = topics.clone();
            state.partitions = partitions.clone();
            let read = match early_read {
                Some((fetched, ranges)) => {
                    self.combine(&topics, &partitions, &ids, fetched, ranges)
                        .await
                }
                None => self.read(group, &topics, &partitions, &ids).await,
            };
            let read = match read {
                Ok(read) => read,
                Err(err) => {
                    self.release(state, group).await;
                    return Err(err);
                }
            };
            if read.nothing_committed {
                // Before the decisions: said too when on.missing=fail refuses the load. Kafka
                // keeps nothing of expired offsets, so when the group last committed is not
                // known here.
                let then = match self.policy.on_missing {
                    OnMissing::Fail => "offsetkeeper.on.missing=fail refuses the load".to_string(),
                    other => format!(
                        "the partitions start by offsetkeeper.on.missing ({})",
                        other.name()
                    ),
                };
                log::warn!(
                    "group {group}: Kafka holds no committed offset of the group for {}: a first start, or the group's offsets expired (the brokers remove an empty group's offsets offsets.retention.minutes after its last commit, 7 days by default); {then}",
                    topics.join(", ")
                );
            }
            let loaded = judged(
                group,
                read.partitions,
                &read.recreated,
                read.stale,
                &self.policy,
            );
            let loaded = match loaded {
                Ok(loaded) => loaded,
                Err(err) => {
                    self.release(state, group).await;
                    return Err(err);
                }
            };
            state.topic_ids = ids;
            for report in &loaded.partitions {
                match (&report.stored, report.decision.action) {
                    (Stored::Offset(offset), Action::Kept) => {
                        state.floors.insert(&report.partition, *offset);
                    }
                    _ => {
                        state.floors.remove(&report.partition);
                    }
                }
                match &report.stored {
                    Stored::Offset(offset)
                        if report.recreated.is_none()
                            && read.identified.contains(&report.partition) =>
                    {
                        state.stored.insert(&report.partition, *offset);
                    }
                    _ => {
                        state.stored.remove(&report.partition);
                    }
                }
            }
            Ok(loaded)
        })
    }

    /// Leaves the group after a failed load: nothing of it stays behind.
    async fn release(&self, state: &mut GroupState, group: &str) {
        if let Some(member) = state.member.take() {
            member
                .leave(&self.brokers, group, self.brokers.timeout())
                .await;
        }
    }

    /// The committed offsets and ranges of the partitions, the topics found re-created (by
    /// the recorded topic ID, else by record times), and the offsets committed for partitions
    /// that no longer exist.
    async fn read(
        &self,
        group: &str,
        topics: &[String],
        partitions: &[TopicPartition],
        ids: &HashMap<String, Option<String>>,
    ) -> Result<Read> {
        let (fetched, ranges) = futures::try_join!(
            self.brokers.fetch_offsets(group),
            self.brokers.ranges(partitions)
        )?;
        self.combine(topics, partitions, ids, fetched, ranges).await
    }

    /// [`Self::read`]'s answers put together: the committed offsets beside the ranges, the
    /// offsets of partitions that no longer exist, and the re-created topics.
    async fn combine(
        &self,
        topics: &[String],
        partitions: &[TopicPartition],
        ids: &HashMap<String, Option<String>>,
        fetched: Vec<FetchedOffset>,
        ranges: Vec<PartitionRange>,
    ) -> Result<Read> {
        let asked: HashSet<&str> = topics.iter().map(String::as_str).collect();
        let existing: HashSet<&TopicPartition> = partitions.iter().collect();
        let mut committed: HashMap<TopicPartition, (i64, CommitMetadata)> = HashMap::new();
        let mut stale = Vec::new();
        for offset in fetched {
            if !asked.contains(&*offset.partition.topic) {
                continue;
            }
            if existing.contains(&offset.partition) {
                let metadata = CommitMetadata::parse(&offset.metadata);
                committed.insert(offset.partition, (offset.offset, metadata));
            } else {
                stale.push(StalePartition {
                    partition: offset.partition,
                    stored: Stored::Offset(offset.offset),
                });
            }
        }
        stale.sort_by(|a, b| a.partition.cmp(&b.partition));
        let inspected: Vec<Inspected> = partitions
            .iter()
            .zip(ranges)
            .map(|(tp, range)| Inspected {
                partition: tp.clone(),
                stored: committed
                    .get(tp)
                    .map_or(Stored::Missing, |(offset, _)| Stored::Offset(*offset)),
                range,
            })
            .collect();
        let mut recreated: HashMap<String, Recreated> = HashMap::new();
        let mut unidentified: HashSet<&str> = HashSet::new();
        let mut identified: HashSet<TopicPartition> = HashSet::new();
        for (tp, (_, metadata)) in &committed {
            let current = ids.get(&*tp.topic).cloned().flatten();
            match (&metadata.topic_id, &current) {
                (Some(_), Some(_)) => {
                    if let Some(found) =
                        Recreated::between(metadata.topic_id.as_deref(), current.as_deref())
                    {
                        recreated.entry(tp.topic.to_string()).or_insert(found);
                    } else {
                        identified.insert(tp.clone());
                    }
                }
                _ => {
                    unidentified.insert(&tp.topic);
                }
            }
        }
        if let Some(tolerance) = self.recreated_timestamp_tolerance {
            let judged: Vec<Unidentified> = inspected
                .iter()
                .filter(|i| unidentified.contains(&*i.partition.topic))
                .filter(|i| !recreated.contains_key(&*i.partition.topic))
                .map(|i| Unidentified {
                    partition: &i.partition,
                    stored: &i.stored,
                    range: i.range,
                    committed_at_ms: committed
                        .get(&i.partition)
                        .map_or(0, |(_, m)| m.committed_at),
                })
                .collect();
            let found = recreated_by_record_time(&self.brokers, &judged, tolerance).await?;
            recreated.extend(found);
        }
        Ok(Read {
            nothing_committed: committed.is_empty() && stale.is_empty(),
            partitions: inspected,
            recreated,
            stale,
            identified,
        })
    }

    /// Commits a batch in one OffsetCommit; see the module's documentation.
    pub(crate) fn commit(&self, group: &str, batch: &CommitBatch) -> Result<CommitSummary> {
        batch.check(group)?;
        if batch.is_empty() {
            return Ok(CommitSummary::default());
        }
        let started = Instant::now();
        let runtime = runtime()?;
        let owned = self.group(group);
        let mut state = owned.lock();
        let state = &mut *state;
        // The batch in its order, each topic's known offsets looked up once per run of its
        // partitions, with the offsets of deferred commits: the newest of each partition, and
        // those the batch does not name after it.
        let mut deferred = std::mem::take(&mut state.deferred);
        let mut summary = CommitSummary::default();
        let mut skipped = Vec::new();
        let mut entries: Vec<(TopicPartition, i64)> = Vec::new();
        let unchanged_counts = state.outage.is_none();
        // Left out below the floor, counted when stored already, else written; the partition's
        // name is made only for the ones written or left out.
        let mut decide = |tp: &dyn Fn() -> TopicPartition,
                          offset: i64,
                          floor: Option<i64>,
                          stored: Option<i64>| {
            if self.monotonic && floor.is_some_and(|floor| offset < floor) {
                skipped.push(format!("{} {offset} < {}", tp(), floor.unwrap_or_default()));
            } else if unchanged_counts && stored == Some(offset) {
                summary.unchanged += 1;
            } else {
                entries.push((tp(), offset));
            }
        };
        for (topic, run) in batch.runs() {
            let (floors, stored) = (state.floors.topic(topic), state.stored.topic(topic));
            for entry in run {
                let partition = batch.partition(entry);
                let mut offset = batch.offset(entry);
                let tp = || TopicPartition {
                    topic: topic.clone(),
                    partition,
                };
                if !deferred.is_empty() {
                    if let Some(earlier) = deferred.remove(&tp()) {
                        if self.monotonic {
                            offset = offset.max(earlier);
                        }
                    }
                }
                let floor = floors.and_then(|f| f.get(partition)).copied();
                let known = stored.and_then(|s| s.get(partition)).copied();
                decide(&tp, offset, floor, known);
            }
        }
        for (tp, offset) in deferred {
            let floor = state.floors.get(&tp).copied();
            let known = state.stored.get(&tp).copied();
            decide(&|| tp.clone(), offset, floor, known);
        }
        summary.skipped = skipped.len();
        if !skipped.is_empty() {
            log::warn!(
                "group {group}: {} offset(s) left out, below what this keeper already committed (batches finishing out of order?): {}; nothing written for them",
                skipped.len(),
                skipped.iter().take(10).cloned().collect::<Vec<_>>().join(", ")
            );
        }
        if entries.is_empty() {
            return Ok(summary);
        }
        let written = runtime.block_on(self.write(group, state, &entries));
        match written {
            Ok(()) => {
                if let Some((since, commits)) = state.outage.take() {
                    log::info!(
                        "group {group}: the group coordinator answers again; the newest offsets are stored, after {commits} deferred commit(s) over {} ms",
                        since.elapsed().as_millis()
                    );
                }
                summary.written = entries.len();
                summary.requests = 1;
                Ok(summary)
            }
            Err(err) if is_unreachable(&err) && !self.commit_outage_tolerance.is_zero() => {
                let (since, commits) = state.outage.get_or_insert((started, 0));
                *commits += 1;
                let behind = since.elapsed();
                if behind >= self.commit_outage_tolerance {
                    state.deferred = entries.into_iter().collect();
                    return Err(Error::Timeout {
                        server: format!("Kafka's group coordinator at {}", self.brokers.settings().bootstrap),
                        operation: "commits, failing for longer than the commit outage tolerance (the newest offsets are still pending; the next commit tries them again): none went through",
                        after: self.commit_outage_tolerance,
                        detail: format!(" ({err})"),
                    });
                }
                log::warn!(
                    "group {group}: commit deferred, the group coordinator cannot be reached ({err}); the stored offsets of {} partition(s) are {} ms behind; the next commit writes them",
                    entries.len(),
                    behind.as_millis()
                );
                summary.deferred = true;
                summary.pending = entries.len();
                summary.behind = behind;
                state.deferred = entries.into_iter().collect();
                Ok(summary)
            }
            Err(err) => Err(err),
        }
    }

    /// One OffsetCommit of the entries, as this keeper's membership when ownership is on
    /// (joining first when it has none, and then fencing on what is stored).
    async fn write(
        &self,
        group: &str,
        state: &mut GroupState,
        entries: &[(TopicPartition, i64)],
    ) -> Result<()> {
        if self.ownership.enabled {
            self.settle_membership(group, state, entries).await?;
        }
        // A keeper that commits before any load (deserialized from a checkpoint) or survey
        // learns the topics' IDs once, so that its commits record them too.
        let unknown: Vec<String> = entries
            .iter()
            .map(|(tp, _)| tp.topic.to_string())
            .filter(|topic| !state.topic_ids.contains_key(topic))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if !unknown.is_empty() {
            let known = self.brokers.described(&unknown).await?;
            for topic in unknown {
                let id = known.get(&topic).and_then(|(_, id)| id.clone());
                state.topic_ids.insert(topic, id);
            }
        }
        let committed_at = now_ms();
        // One metadata string per run of a topic's entries (they come topic by topic).
        let mut last: Option<(&str, String)> = None;
        let offsets: Vec<(TopicPartition, i64, String)> = entries
            .iter()
            .map(|(tp, offset)| {
                let metadata = match &last {
                    Some((topic, text)) if *topic == &*tp.topic => text.clone(),
                    _ => {
                        let topic_id = state.topic_ids.get(&*tp.topic).cloned().flatten();
                        let text = CommitMetadata::new(topic_id, committed_at).text();
                        last = Some((&tp.topic, text.clone()));
                        text
                    }
                };
                (tp.clone(), *offset, metadata)
            })
            .collect();
        // A second try only when the heartbeat joined again (a new generation) meanwhile.
        let mut tries = 0;
        let answered = loop {
            tries += 1;
            let membership = match &state.member {
                Some(member) => match member.membership() {
                    Ok(membership) => Some(membership),
                    Err(lost) => return Err(conflict(group, &entries[0].0, &lost)),
                },
                None => None,
            };
            let answered = self
                .brokers
                .commit_offsets(group, membership.as_ref(), &offsets)
                .await?;
            let fenced = answered.iter().all(|code| {
                matches!(
                    *code,
                    codes::ILLEGAL_GENERATION
                        | codes::UNKNOWN_MEMBER_ID
                        | codes::FENCED_INSTANCE_ID
                )
            });
            if let (true, Some(used), Some(member)) = (fenced, &membership, &state.member) {
                let why = format!(
                    "the group coordinator refused this keeper's membership ({}): its session ended or another instance took the group over",
                    error_name(answered[0])
                );
                if !member.lose(used, why.clone()) && tries < 2 {
                    continue;
                }
                return Err(conflict(group, &entries[0].0, &why));
            }
            break answered;
        };
        let mut refused = Vec::new();
        for ((tp, offset), code) in entries.iter().zip(&answered) {
            if *code == 0 {
                state.stored.insert(tp, *offset);
                let floor = state.floors.get(tp).map_or(*offset, |f| (*f).max(*offset));
                state.floors.insert(tp, floor);
            } else {
                refused.push((tp, *code));
            }
        }
        let Some((_, code)) = refused.first().copied() else {
            return Ok(());
        };
        let all = refused.len() == entries.len();
        match code {
            codes::ILLEGAL_GENERATION | codes::UNKNOWN_MEMBER_ID if all => {
                let view = self.brokers.describe_group(group).await?;
                let members: Vec<String> = view.members.iter().map(|m| m.describe()).collect();
                Err(Error::GroupInUse {
                    group: group.to_string(),
                    detail: format!(
                        "{} live member(s) ({}): {}",
                        members.len(),
                        error_name(code),
                        members.join("; ")
                    ),
                })
            }
            codes::REBALANCE_IN_PROGRESS if all => Err(Error::Timeout {
                server: format!(
                    "Kafka's group coordinator at {}",
                    self.brokers.settings().bootstrap
                ),
                operation:
                    "the offset commit (a rebalance is in progress: this keeper joins again)",
                after: Duration::ZERO,
                detail: String::new(),
            }),
            _ => {
                let named: Vec<String> = refused
                    .iter()
                    .take(10)
                    .map(|(tp, code)| format!("{tp}: {}", error_name(*code)))
                    .collect();
                Err(Error::Kafka {
                    operation: "offset commit",
                    bootstrap: self.brokers.settings().bootstrap.clone(),
                    message: format!(
                        "group {group}: the coordinator refused {} of the {} offset(s) of the request ({}){}",
                        refused.len(),
                        entries.len(),
                        named.join(", "),
                        if all { "; nothing was stored" } else { "; the others are stored" }
                    ),
                })
            }
        }
    }

    /// A keeper that holds no membership of the group (it never loaded it: deserialized from a
    /// checkpoint; or its place was lost and the group is free again) joins first, then reads
    /// what is stored: offsets that differ from what this keeper last knew were written by
    /// someone else meanwhile, and the commit is a conflict, nothing written.
    async fn settle_membership(
        &self,
        group: &str,
        state: &mut GroupState,
        entries: &[(TopicPartition, i64)],
    ) -> Result<()> {
        let lost = match &state.member {
            Some(member) => match member.membership() {
                Ok(_) => return Ok(()),
                Err(lost) => Some(lost),
            },
            None => None,
        };
        let mut partitions: Vec<TopicPartition> = state.partitions.clone();
        partitions.extend(entries.iter().map(|(tp, _)| tp.clone()));
        partitions.sort();
        partitions.dedup();
        let mut topics: Vec<String> = partitions.iter().map(|tp| tp.topic.to_string()).collect();
        topics.dedup();
        let wait = if lost.is_some() {
            Duration::ZERO
        } else {
            self.ownership_wait()
        };
        state.member = None;
        let member = self
            .joining(group, &topics, &partitions)
            .join(wait)
            .await
            .map_err(|err| match (&lost, err) {
                (Some(lost), Error::Owned { owner, .. }) => conflict(
                    group,
                    &entries[0].0,
                    &format!("{lost}; another instance holds the group now: {owner}"),
                ),
                (_, err) => err,
            })?;
        state.member = Some(member);
        state.partitions = partitions;
        state.topics = topics;
        let fetched = self.brokers.fetch_offsets(group).await?;
        let now: HashMap<&TopicPartition, i64> =
            fetched.iter().map(|f| (&f.partition, f.offset)).collect();
        if lost.is_some() {
            for (tp, known) in state.stored.iter() {
                if now.get(&tp) != Some(known) {
                    return Err(conflict(
                        group,
                        &tp,
                        &format!(
                            "this keeper lost its membership of the group ({}), and meanwhile someone else committed {} where this keeper had stored {known}; nothing of this commit was written",
                            lost.as_deref().unwrap_or_default(),
                            now.get(&tp).map_or("nothing".to_string(), |o| o.to_string())
                        ),
                    ));
                }
            }
        } else {
            log::info!(
                "group {group}: this keeper commits without having loaded the group (deserialized from a checkpoint?); it joined the group for the {} partition(s) of its first commit",
                entries.len()
            );
            for (tp, offset) in now {
                state.stored.insert(tp, offset);
            }
        }
        Ok(())
    }

    /// Stops the group's heartbeat; see [`crate::OffsetKeeper::stop_heartbeat`].
    pub(crate) fn stop_heartbeat(&self, group: &str) {
        if let Some(member) = self.group(group).lock().member.as_ref() {
            member.stop_heartbeat();
        }
    }

    /// Closing: one try to write deferred offsets, then the group is left.
    pub(crate) fn close(&self) {
        if tokio::runtime::Handle::try_current().is_ok() {
            return;
        }
        let Ok(runtime) = runtime() else { return };
        for group in self.group_names() {
            let owned = self.group(&group);
            let mut state = owned.lock();
            let state = &mut *state;
            if !state.deferred.is_empty() {
                let entries: Vec<(TopicPartition, i64)> =
                    std::mem::take(&mut state.deferred).into_iter().collect();
                if let Err(err) = runtime.block_on(self.write(&group, state, &entries)) {
                    log::warn!(
                        "group {group}: closing could not store the offsets of {} partition(s) from deferred commits ({err}); the job restarts from what is stored",
                        entries.len()
                    );
                }
            }
            if let Some(member) = state.member.take() {
                runtime.block_on(member.leave(&self.brokers, &group, Duration::from_secs(3)));
            }
        }
    }
}

/// One group's state, shared between the keeper's threads.
struct OwnedGroup(Arc<Mutex<GroupState>>);

impl OwnedGroup {
    fn lock(&self) -> MutexGuard<'_, GroupState> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl GroupState {
    /// Whether this keeper's membership holds other topics or partitions than these.
    fn holds_other_than(&self, topics: &[String], partitions: &[TopicPartition]) -> bool {
        self.member.is_some() && (self.topics != topics || self.partitions != partitions)
    }
}

/// What a read of the group store found.
struct Read {
    partitions: Vec<Inspected>,
    recreated: HashMap<String, Recreated>,
    stale: Vec<StalePartition>,
    /// The partitions whose committed metadata records the brokers' current topic ID.
    identified: HashSet<TopicPartition>,
    /// The group has no offset committed for the topics at all.
    nothing_committed: bool,
}

fn conflict(group: &str, partition: &TopicPartition, detail: &str) -> Error {
    Error::CommitConflict {
        group: group.to_string(),
        partition: partition.clone(),
        detail: detail.to_string(),
    }
}

/// Whether a Kafka error means the coordinator could not be reached in time (what a commit
/// defers over), as opposed to an answer that refused it.
fn is_unreachable(err: &Error) -> bool {
    match err {
        Error::Timeout { server, .. } => server.starts_with("Kafka"),
        Error::Kafka {
            operation, message, ..
        } => *operation == "group coordinator request" && message.starts_with("gave up"),
        _ => false,
    }
}
