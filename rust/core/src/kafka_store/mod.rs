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
//!   that lost its place is refused by the coordinator, nothing written. A conflict refuses
//!   every later commit of the group at once, with no request and no join, until a load of it
//!   succeeds: a zombie never rejoins an emptied group to write its older offsets.
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
use crate::kafka::group::{codes, FetchedOffset, PROTOCOL_TYPE};
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
    /// What this keeper last saw the group hold per partition, from its load and its commits
    /// (`None`: nothing committed), whatever the topic ID: what tells, when it joins again,
    /// that someone else committed meanwhile.
    seen: PartitionMap<Option<i64>>,
    /// Offsets of this keeper's writes that failed on the way, outcome unknown: the group may
    /// hold one of them with no one else having written. Rare, so kept apart.
    unsure: HashMap<TopicPartition, Vec<i64>>,
    /// Offsets of commits deferred during a coordinator outage, the newest per partition.
    deferred: BTreeMap<TopicPartition, i64>,
    outage: Option<(Instant, usize)>,
    /// The conflict that refused a commit: every later commit fails at once with it, writing
    /// nothing and joining nothing, until a load of the group succeeds (as on ZooKeeper, whose
    /// fencing versions stay stale until then).
    refused: Option<Refused>,
}

/// A commit conflict that refuses the group's later commits.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Refused {
    partition: TopicPartition,
    detail: String,
}

impl Refused {
    /// The error of a later commit: the same kind, naming the original conflict.
    fn again(&self, group: &str) -> Error {
        conflict(
            group,
            &self.partition,
            &format!(
                "an earlier commit of this keeper was refused ({}); every later commit of the group fails at once, and nothing of this one was written. Load the group again (restart the job) to take over what is stored",
                self.detail
            ),
        )
    }
}

/// Loads, validates and commits offsets kept in Kafka's group store.
pub(crate) struct KafkaStore {
    brokers: Arc<Brokers>,
    policy: Policy,
    monotonic: bool,
    ownership: Ownership,
    commit_outage_tolerance: Duration,
    recreated_timestamp_tolerance: Option<Duration>,
    /// The member session this keeper joins with (`offsetkeeper.kafka.session.timeout.ms`).
    session_timeout: Duration,
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
            session_timeout: config.kafka_session_timeout,
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
            session: self.session_timeout,
        }
    }

    fn ownership_wait(&self) -> Duration {
        self.ownership.wait_for(self.session_timeout)
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
                    self.combine(group, &topics, &partitions, &ids, fetched, ranges)
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
                    "group {group}: Kafka holds no committed offset of the group for {}: a first start, or the group's offsets expired (Kafka 2.1 and later remove a group's offsets offsets.retention.minutes after the group became empty, 7 days by default; older brokers after the offset's last commit); {then}",
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
            // A load takes over what is stored: a refused keeper commits again from it.
            state.refused = None;
            for report in &loaded.partitions {
                state.loaded(&report.partition, &report.stored);
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
        self.combine(group, topics, partitions, ids, fetched, ranges)
            .await
    }

    /// [`Self::read`]'s answers put together: the committed offsets beside the ranges, the
    /// offsets of partitions that no longer exist, and the re-created topics.
    async fn combine(
        &self,
        group: &str,
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
            let found =
                recreated_by_record_time(&self.brokers, group, &judged, tolerance, None).await?;
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
        let started = Instant::now();
        let owned = self.group(group);
        let mut state = owned.lock();
        let state = &mut *state;
        // A refused keeper fails at once: no request, no join.
        if let Some(refused) = state.refusal(group) {
            return Err(refused);
        }
        if batch.is_empty() {
            return Ok(CommitSummary::default());
        }
        let runtime = runtime()?;
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

    /// [`Self::send`], unless the group's commits are refused; a conflict refuses them from
    /// then on, and the membership is left.
    async fn write(
        &self,
        group: &str,
        state: &mut GroupState,
        entries: &[(TopicPartition, i64)],
    ) -> Result<()> {
        if let Some(refused) = state.refusal(group) {
            return Err(refused);
        }
        let sent = self.send(group, state, entries).await;
        if let Err(Error::CommitConflict {
            partition, detail, ..
        }) = &sent
        {
            if let Some(member) = state.refuse(group, partition, detail) {
                member
                    .leave(&self.brokers, group, self.brokers.timeout())
                    .await;
            }
        }
        sent
    }

    /// One OffsetCommit of the entries, as this keeper's membership when ownership is on
    /// (joining first when it has none, and then fencing on what is stored).
    async fn send(
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
            let answered = match self
                .brokers
                .commit_offsets(group, membership.as_ref(), &offsets)
                .await
            {
                Ok(answered) => answered,
                Err(err) => {
                    state.write_unknown(entries);
                    return Err(err);
                }
            };
            let fenced = answered.iter().all(|code| {
                matches!(
                    *code,
                    codes::ILLEGAL_GENERATION
                        | codes::UNKNOWN_MEMBER_ID
                        | codes::FENCED_INSTANCE_ID
                )
            });
            if let (true, Some(used)) = (fenced, &membership) {
                let why = format!(
                    "the group coordinator refused this keeper's membership ({}): its session ended or another instance took the group over",
                    error_name(answered[0])
                );
                let lost_now = state
                    .member
                    .as_ref()
                    .is_some_and(|member| member.lose(used, why.clone()));
                // The heartbeat joined again meanwhile (a new generation): send on that.
                if !lost_now && tries < 2 {
                    continue;
                }
                // This keeper's place is gone: join again at once and compare what the group
                // holds with what this keeper saw. Only another instance's commit or member
                // refuses; a session that merely ended (a stall, a cut network) goes on.
                if tries < 3 {
                    self.settle_membership(group, state, entries).await?;
                    continue;
                }
                return Err(conflict(group, &entries[0].0, &why));
            }
            break answered;
        };
        let mut refused = Vec::new();
        for ((tp, offset), code) in entries.iter().zip(&answered) {
            if *code == 0 {
                state.wrote(tp, *offset);
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
                // A member of offsetkeeper's own protocol is a driver of a job on this group,
                // perhaps one just killed, whose member lingers until its session ends.
                let ours = if view.protocol_type == PROTOCOL_TYPE {
                    format!(
                        "; a driver of this job killed a moment ago stays a member until its member session ends ({} ms after its last heartbeat with this keeper's offsetkeeper.kafka.session.timeout.ms): a later commit then goes through",
                        self.session_timeout.as_millis()
                    )
                } else {
                    String::new()
                };
                Err(Error::GroupInUse {
                    group: group.to_string(),
                    detail: format!(
                        "{} live member(s) ({}): {}{ours}",
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
    /// what is stored: offsets that differ from what this keeper last saw were written by
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
        // The lost membership stays until a new one replaces it: a join that fails for want of
        // an answer leaves the next commit a keeper that lost its place, not one that never
        // joined (which would wait the whole ownership wait and take over what it finds).
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
                (Some(lost), Error::GroupInUse { detail, .. }) => conflict(
                    group,
                    &entries[0].0,
                    &format!("{lost}; the group is in use now: {detail}"),
                ),
                (_, err) => err,
            })?;
        let fetched = match self.brokers.fetch_offsets(group).await {
            Ok(fetched) => fetched,
            Err(err) => {
                // Not compared with what is stored: no commit on this membership, the next
                // commit joins and reads again.
                member
                    .leave(&self.brokers, group, self.brokers.timeout())
                    .await;
                return Err(err);
            }
        };
        state.member = Some(member);
        state.partitions = partitions;
        state.topics = topics;
        let now: HashMap<&TopicPartition, i64> =
            fetched.iter().map(|f| (&f.partition, f.offset)).collect();
        let why = match &lost {
            Some(lost) => format!("this keeper lost its membership of the group ({lost})"),
            None => "this keeper left the group (a load of it failed)".to_string(),
        };
        if let Some((tp, saw, holds)) = overtaken(&state.seen, &state.unsure, &now) {
            return Err(conflict(
                group,
                &tp,
                &format!(
                    "{why}, and meanwhile someone else committed {} where this keeper had seen {}; nothing of this commit was written",
                    shown(holds),
                    shown(saw)
                ),
            ));
        }
        if lost.is_some() {
            // Never below another member's offset of a partition this keeper knew nothing of.
            if let Some((tp, offset, holds)) = below_others(entries, &state.seen, &now) {
                return Err(conflict(
                    group,
                    tp,
                    &format!(
                        "{why}, and meanwhile someone else committed {holds}, above this commit's {offset}; nothing of this commit was written"
                    ),
                ));
            }
            // Writes of this keeper whose outcome was unknown: those the group holds are its own.
            for (tp, offsets) in std::mem::take(&mut state.unsure) {
                if let Some(offset) = now.get(&tp).filter(|o| offsets.contains(o)) {
                    state.wrote(&tp, *offset);
                }
            }
        } else {
            log::info!(
                "group {group}: this keeper commits without having loaded the group (deserialized from a checkpoint?); it joined the group for the {} partition(s) of its first commit",
                entries.len()
            );
            for (tp, offset) in now {
                state.stored.insert(tp, offset);
                state.seen.insert(tp, Some(offset));
            }
            // What the group holds is taken over, the writes of unknown outcome with it.
            state.unsure.clear();
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

    /// The error of a commit while the group's commits are refused.
    fn refusal(&self, group: &str) -> Option<Error> {
        self.refused.as_ref().map(|refused| refused.again(group))
    }

    /// A commit met a conflict: the group's commits are refused from now on, deferred offsets
    /// are dropped (nothing of a refused keeper is written), and the membership is handed back
    /// to be left, so that the group is free for the instance that holds it.
    fn refuse(&mut self, group: &str, partition: &TopicPartition, detail: &str) -> Option<Member> {
        log::warn!(
            "group {group}: this keeper's commits are refused from now on ({detail}); each fails at once, writing nothing, until the job loads the group again"
        );
        self.refused = Some(Refused {
            partition: partition.clone(),
            detail: detail.to_string(),
        });
        self.deferred.clear();
        self.outage = None;
        self.member.take()
    }

    /// What a load found stored: the group's commits are no longer refused, and what this
    /// keeper saw is what the load read.
    fn loaded(&mut self, partition: &TopicPartition, stored: &Stored) {
        let offset = match stored {
            Stored::Offset(offset) => Some(*offset),
            _ => None,
        };
        self.seen.insert(partition, offset);
        self.unsure.remove(partition);
    }

    /// This keeper stored `offset` for the partition.
    fn wrote(&mut self, partition: &TopicPartition, offset: i64) {
        self.stored.insert(partition, offset);
        self.seen.insert(partition, Some(offset));
        let floor = self
            .floors
            .get(partition)
            .map_or(offset, |f| (*f).max(offset));
        self.floors.insert(partition, floor);
        if !self.unsure.is_empty() {
            self.unsure.remove(partition);
        }
    }

    /// A write of these offsets failed on the way: the group may hold them now.
    fn write_unknown(&mut self, entries: &[(TopicPartition, i64)]) {
        for (partition, offset) in entries {
            let offsets = self.unsure.entry(partition.clone()).or_default();
            if !offsets.contains(offset) {
                offsets.push(*offset);
            }
        }
    }
}

/// Someone else's commit: a partition whose offset the group holds now (`None`: none) is
/// neither what this keeper last saw there nor one of its writes whose outcome it does not
/// know. The first such partition, with what this keeper saw and what the group holds.
fn overtaken(
    seen: &PartitionMap<Option<i64>>,
    unsure: &HashMap<TopicPartition, Vec<i64>>,
    now: &HashMap<&TopicPartition, i64>,
) -> Option<(TopicPartition, Option<i64>, Option<i64>)> {
    seen.iter()
        .filter_map(|(partition, saw)| {
            let holds = now.get(&partition).copied();
            let ours = holds.is_some_and(|offset| {
                unsure
                    .get(&partition)
                    .is_some_and(|offsets| offsets.contains(&offset))
            });
            // An offset gone (expired, deleted with its topic) is nobody's commit.
            (holds.is_some() && holds != *saw && !ours).then_some((partition, *saw, holds))
        })
        .min_by(|a, b| a.0.cmp(&b.0))
}

/// The first entry of a partition this keeper never saw that the group holds a higher offset
/// for: one someone else committed. With the entry's offset and the group's.
fn below_others<'a>(
    entries: &'a [(TopicPartition, i64)],
    seen: &PartitionMap<Option<i64>>,
    now: &HashMap<&TopicPartition, i64>,
) -> Option<(&'a TopicPartition, i64, i64)> {
    entries.iter().find_map(|(tp, offset)| {
        let holds = now.get(tp).copied()?;
        (seen.get(tp).is_none() && holds > *offset).then_some((tp, *offset, holds))
    })
}

/// An offset as a message names it.
fn shown(offset: Option<i64>) -> String {
    offset.map_or("nothing".to_string(), |offset| offset.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(partition: i32) -> TopicPartition {
        TopicPartition::new("t", partition)
    }

    #[test]
    fn a_refused_group_fails_every_commit_naming_the_first_conflict_until_a_load() {
        let mut state = GroupState::default();
        assert!(state.refusal("g").is_none());
        state.deferred.insert(tp(0), 300);
        state.outage = Some((Instant::now(), 2));
        let member = state.refuse("g", &tp(1), "someone else committed 1021");
        assert!(member.is_none());
        // Nothing of a refused keeper is written, not even at closing.
        assert!(state.deferred.is_empty() && state.outage.is_none());
        for _ in 0..3 {
            let Some(Error::CommitConflict {
                group,
                partition,
                detail,
            }) = state.refusal("g")
            else {
                panic!("a refused group's commit is a conflict");
            };
            assert_eq!((group.as_str(), partition), ("g", tp(1)));
            assert!(
                detail.contains("someone else committed 1021")
                    && detail.contains("Load the group again"),
                "{detail}"
            );
        }
        // The load clears it (as `KafkaStore::load` does) and takes over what it read.
        state.refused = None;
        state.loaded(&tp(1), &Stored::Offset(1021));
        assert!(state.refusal("g").is_none());
        assert_eq!(state.seen.get(&tp(1)), Some(&Some(1021)));
    }

    #[test]
    fn a_change_this_keeper_did_not_make_is_someone_elses_commit() {
        let mut state = GroupState::default();
        state.loaded(&tp(0), &Stored::Offset(200));
        state.loaded(&tp(1), &Stored::Missing);
        state.wrote(&tp(0), 250);
        let (a, b, c) = (tp(0), tp(1), tp(2));
        fn holds<'a>(pairs: &[(&'a TopicPartition, i64)]) -> HashMap<&'a TopicPartition, i64> {
            pairs.iter().copied().collect()
        }
        // As this keeper left it; a partition it never saw is not compared.
        let same = holds(&[(&a, 250), (&c, 9)]);
        assert_eq!(overtaken(&state.seen, &state.unsure, &same), None);
        // Someone else committed above it, or where it saw nothing.
        let above = holds(&[(&a, 1021)]);
        assert_eq!(
            overtaken(&state.seen, &state.unsure, &above),
            Some((a.clone(), Some(250), Some(1021)))
        );
        let filled = holds(&[(&a, 250), (&b, 40)]);
        assert_eq!(
            overtaken(&state.seen, &state.unsure, &filled),
            Some((b.clone(), None, Some(40)))
        );
        // An offset gone (expired, or deleted with its topic) is nobody's commit.
        assert_eq!(overtaken(&state.seen, &state.unsure, &holds(&[])), None);
        // A write of this keeper that failed on the way may have landed: its own.
        state.write_unknown(&[(a.clone(), 300), (a.clone(), 300)]);
        assert_eq!(state.unsure.get(&a), Some(&vec![300]));
        assert_eq!(
            overtaken(&state.seen, &state.unsure, &holds(&[(&a, 300)])),
            None
        );
        state.wrote(&a, 320);
        assert!(state.unsure.is_empty());
        assert_eq!(
            (state.stored.get(&a), state.floors.get(&a)),
            (Some(&320), Some(&320))
        );
    }

    #[test]
    fn an_entry_below_another_members_offset_of_an_unseen_partition_is_found() {
        let mut seen = PartitionMap::default();
        seen.insert(&tp(0), Some(5));
        let entries = vec![(tp(0), 3), (tp(1), 10), (tp(2), 50)];
        let (b, c) = (tp(1), tp(2));
        let now: HashMap<&TopicPartition, i64> = [(&b, 10), (&c, 60)].into_iter().collect();
        // Seen partitions are `overtaken`'s; an equal offset is not below.
        assert_eq!(below_others(&entries, &seen, &now), Some((&c, 50, 60)));
        let now: HashMap<&TopicPartition, i64> = [(&b, 9)].into_iter().collect();
        assert_eq!(below_others(&entries, &seen, &now), None);
    }

    #[test]
    fn offsets_are_named_or_nothing() {
        assert_eq!(shown(Some(7)), "7");
        assert_eq!(shown(None), "nothing");
    }
}
