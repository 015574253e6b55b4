//! `load` and `commit`: the two operations a Spark job runs, on one ZooKeeper session and one
//! Kafka client.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::batch::CommitBatch;
use crate::commit::Trackers;
use crate::error::{Error, Result};
use crate::kafka::{Brokers, KafkaSettings};
use crate::names::check_name;
use crate::ownership::Owners;
use crate::runtime::runtime;
use crate::validate::{
    validate, validate_recreated, Action, Decision, OnMissing, PartitionRange, Policy, Recreated,
    Stored,
};
use crate::zookeeper::layout::{parse_topic_identity, GroupLayout};
use crate::zookeeper::{WriteOp, ZkConfig, ZkStore};
use crate::TopicPartition;
use rustc_hash::FxHashSet;

/// How long closing a keeper waits for ZooKeeper to delete its ownership nodes, at most.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(3);

/// How long closing waits for the session to be handed over for closing (never in practice:
/// nothing else holds it while the keeper is dropped).
const CLOSE_SESSION_TIMEOUT: Duration = Duration::from_millis(500);

/// How long commits may fail for want of ZooKeeper, by default, before `commit` fails: long
/// enough for a rolling restart of a 3-node ensemble (each node restarted and caught up in turn,
/// with up to a few elections of some seconds each), and short enough that a job whose
/// ZooKeeper is gone for good stops while little has to be reprocessed.
pub const DEFAULT_COMMIT_OUTAGE_TOLERANCE: Duration = Duration::from_secs(300);

/// Added to the session timeout for the default ownership wait: ZooKeeper expires sessions on
/// its tick, up to one tick (2 s by default) after their timeout.
const EXPIRY_SLACK: Duration = Duration::from_secs(5);

/// Everything an [`OffsetKeeper`] needs.
#[derive(Debug, Clone)]
pub struct KeeperConfig {
    pub zookeeper: ZkConfig,
    pub kafka: KafkaSettings,
    /// Deadline of each Kafka operation of a load (Metadata, ListOffsets, their retries
    /// included). `None` (the default): the job's `default.api.timeout.ms` when its kafkaParams
    /// set it, else 60 s, Kafka's default, which outlasts the ~9 s Kafka takes to fence a
    /// dead broker and move its partitions' leadership. `Some` wins over the kafkaParams.
    pub kafka_timeout: Option<Duration>,
    pub policy: Policy,
    /// Fencing: every commit checks, in its multi, the znode versions this keeper last saw, so
    /// that a concurrent writer makes it fail with [`Error::CommitConflict`]. On by default.
    pub fencing: bool,
    /// Monotonic commits: an offset below what this keeper already committed for the partition
    /// is left out with a WARN. On by default.
    pub monotonic: bool,
    /// One active instance per group. On by default.
    pub ownership: Ownership,
    /// How long commits may fail because ZooKeeper cannot be reached (a timeout, a lost
    /// connection or session) before [`OffsetKeeper::commit`] returns the error. Until then a
    /// failed commit returns `Ok` with [`CommitSummary::deferred`] set, its offsets kept to be
    /// written by the next commit. Zero: every such failure is returned at once. 5 minutes by
    /// default ([`DEFAULT_COMMIT_OUTAGE_TOLERANCE`]).
    pub commit_outage_tolerance: Duration,
}

/// Ownership of a group's partitions: a load registers the keeper under
/// `<base>/<group>/ids` and takes `<base>/<group>/owners/<topic>/<partition>`, ephemeral nodes
/// in the layout of Kafka's old consumer. A keeper that commits without having loaded the group
/// takes the partitions of its first commit the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ownership {
    pub enabled: bool,
    /// How long a load (or a first commit without a load) waits for another instance's
    /// ownership to go before failing with [`Error::Owned`]. An owner of this host whose
    /// process is gone is not waited for. `None`: this keeper's ZooKeeper session timeout plus 5 s, the longest a
    /// crashed driver's session (with the same timeout) outlives it.
    pub wait: Option<Duration>,
}

impl Default for Ownership {
    fn default() -> Self {
        Ownership {
            enabled: true,
            wait: None,
        }
    }
}

impl KeeperConfig {
    /// The defaults: the policy keeps data (earliest everywhere), except that a partition with no
    /// stored offset follows the job's `auto.offset.reset` when it set one; fencing, monotonic
    /// commits and ownership on.
    pub fn new(zookeeper: ZkConfig, kafka: KafkaSettings) -> KeeperConfig {
        let policy = Policy {
            on_missing: kafka.auto_offset_reset.unwrap_or(OnMissing::Earliest),
            ..Policy::default()
        };
        KeeperConfig {
            zookeeper,
            kafka,
            kafka_timeout: None,
            policy,
            fencing: true,
            monotonic: true,
            ownership: Ownership::default(),
            commit_outage_tolerance: DEFAULT_COMMIT_OUTAGE_TOLERANCE,
        }
    }
}

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub partitions: Vec<PartitionReport>,
    pub stale: Vec<StalePartition>,
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
    recreated: HashMap<String, Recreated>,
    stale: Vec<StalePartition>,
}

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

/// Loads, validates and commits offsets for any number of groups and topics.
pub struct OffsetKeeper {
    pub(crate) store: ZkStore,
    /// `None` for a keeper opened for ZooKeeper-only work.
    brokers: Option<Brokers>,
    policy: Policy,
    pub(crate) fencing: bool,
    pub(crate) monotonic: bool,
    pub(crate) ownership: Ownership,
    pub(crate) commit_outage_tolerance: Duration,
    /// What this keeper saw of the offset nodes; held through each commit, so that commits of
    /// one keeper never race each other.
    tracker: Mutex<Trackers>,
    pub(crate) owners: Owners,
}

impl OffsetKeeper {
    /// Checks the configuration and prepares the clients; servers are contacted on first use.
    pub fn open(config: KeeperConfig) -> Result<OffsetKeeper> {
        if config.commit_outage_tolerance > Duration::from_secs(24 * 3600) {
            return Err(Error::invalid(format!(
                "commit outage tolerance of {} ms is too long; allowed: 0 ms to 24 h",
                config.commit_outage_tolerance.as_millis()
            )));
        }
        if let Some(wait) = config.ownership.wait {
            if wait > Duration::from_secs(24 * 3600) {
                return Err(Error::invalid(format!(
                    "ownership wait of {} ms is too long; allowed: 0 ms to 24 h",
                    wait.as_millis()
                )));
            }
        }
        Ok(OffsetKeeper {
            store: ZkStore::new(config.zookeeper)?,
            brokers: Some(Brokers::new(config.kafka, config.kafka_timeout)?),
            policy: config.policy,
            fencing: config.fencing,
            monotonic: config.monotonic,
            ownership: config.ownership,
            commit_outage_tolerance: config.commit_outage_tolerance,
            tracker: Mutex::new(Trackers::default()),
            owners: Owners::new(),
        })
    }

    /// A keeper for the operations that touch ZooKeeper only: listing groups, reading,
    /// committing, exporting and deleting stored offsets. Operations that ask the brokers fail
    /// with [`Error::InvalidArgument`]. Commits are fenced; it never takes ownership.
    pub fn open_zookeeper_only(zookeeper: ZkConfig) -> Result<OffsetKeeper> {
        Ok(OffsetKeeper {
            store: ZkStore::new(zookeeper)?,
            brokers: None,
            policy: Policy::default(),
            fencing: true,
            monotonic: true,
            ownership: Ownership {
                enabled: false,
                wait: None,
            },
            // Operators' tools fail at once.
            commit_outage_tolerance: Duration::ZERO,
            tracker: Mutex::new(Trackers::default()),
            owners: Owners::new(),
        })
    }

    pub(crate) fn tracker(&self) -> MutexGuard<'_, Trackers> {
        let mut trackers = self
            .tracker
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        trackers.times_taken += 1;
        trackers
    }

    /// How long a load (or a first commit without a load) waits for another owner to go.
    pub(crate) fn ownership_wait(&self) -> Duration {
        self.ownership
            .wait
            .unwrap_or(self.store.config().session_timeout + EXPIRY_SLACK)
    }

    /// The ZooKeeper server version the session's requests are chosen for, and how it was
    /// learned; `None` before the first ZooKeeper call.
    pub fn zookeeper_server_version(&self) -> Option<crate::zookeeper::LearnedVersion> {
        self.store.server_version()
    }

    /// The ZooKeeper session's id and password, for tests that expire it from outside.
    #[doc(hidden)]
    pub fn zookeeper_session(&self) -> Option<zookeeper_client::SessionInfo> {
        runtime().ok()?.block_on(self.store.session_info())
    }

    /// The Kafka client, or an error when this keeper was opened without Kafka.
    pub(crate) fn brokers(&self) -> Result<&Brokers> {
        self.brokers.as_ref().ok_or_else(|| {
            Error::invalid(
                "this operation reads the Kafka brokers, but no bootstrap.servers was given",
            )
        })
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// What ZooKeeper holds and what Kafka has, for every partition of the topics that exists
    /// now, in topic order then partition order. No validation: the raw view for lag and for
    /// operators.
    pub fn inspect(&self, group: &str, topics: &[String]) -> Result<Vec<Inspected>> {
        let topics = checked_topics(group, topics)?;
        let inspection = runtime()?.block_on(self.discover_and_inspect(group, &topics, false))?;
        Ok(inspection.partitions)
    }

    /// Asks the brokers for the topics' partitions (while the ZooKeeper session opens), then
    /// `inspect_partitions`. When this keeper found the same topics' partitions before (and, when
    /// taking ownership, owns them all), it inspects those at once with the metadata request: a
    /// warm load then waits for the metadata, the ZooKeeper read and the ranges side by side,
    /// not for the metadata first. What it inspected is kept only if the metadata finds the same
    /// partitions; otherwise it is dropped and the new partitions inspected as on a first load.
    async fn discover_and_inspect(
        &self,
        group: &str,
        topics: &[String],
        own: bool,
    ) -> Result<Inspection> {
        use futures::future::{select, Either};
        let brokers = self.brokers()?;
        let timeout = self.store.config().request_timeout;
        let connect = || self.store.bounded(timeout, self.store.connect());
        let found_before = brokers
            .partitions_found_before(topics)
            .filter(|partitions| {
                !(own && self.ownership.enabled) || self.owners.owns_all(group, partitions)
            });
        // The partitions the metadata just found, inspected as on a first load.
        let inspect_found = async |partitions: Vec<TopicPartition>, ids| {
            let ranges = brokers.ranges(&partitions);
            self.inspect_partitions(group, topics, &partitions, async { Ok(ids) }, own, ranges)
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
            self.inspect_partitions(group, topics, &before, ids, own, ranges)
                .await
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
    #[allow(clippy::await_holding_lock)] // see the tracker below
    async fn inspect_partitions(
        &self,
        group: &str,
        topics: &[String],
        partitions: &[TopicPartition],
        ids: impl Future<Output = Result<HashMap<String, Option<String>>>>,
        own: bool,
        ranges: impl Future<Output = Result<Vec<PartitionRange>>>,
    ) -> Result<Inspection> {
        let layout = GroupLayout {
            base_path: &self.store.config().base_path,
            group,
        };
        // The partitions' nodes, then the topics' folders, with the folders' children (for
        // stale partitions), in one read.
        let dirs: Vec<String> = topics.iter().map(|topic| layout.topic_dir(topic)).collect();
        let paths: Vec<String> = partitions
            .iter()
            .map(|tp| layout.offset_path(&tp.topic, tp.partition))
            .chain(dirs.iter().cloned())
            .collect();
        let read = || async {
            let (nodes, listed) = self.store.read_nodes_and_children(&paths, &dirs).await?;
            let existing: FxHashSet<&TopicPartition> = partitions.iter().collect();
            let mut stale = Vec::new();
            for (topic, children) in topics.iter().zip(listed) {
                let mut numbers: Vec<i32> = children
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|child| crate::admin::parse_partition(child))
                    .collect();
                numbers.sort_unstable();
                stale.extend(
                    numbers
                        .into_iter()
                        .map(|n| TopicPartition::new(topic.as_str(), n))
                        .filter(|tp| !existing.contains(tp)),
                );
            }
            let stale_paths: Vec<String> = stale
                .iter()
                .map(|tp| layout.offset_path(&tp.topic, tp.partition))
                .collect();
            let stale_nodes = if stale.is_empty() {
                Vec::new()
            } else {
                self.store.read_nodes(&stale_paths).await?
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
            Ok::<_, Error>((nodes, stale))
        };
        // One deadline for the ZooKeeper side: the request timeout, plus the wait for another
        // owner to go when ownership is taken.
        let owning = own && self.ownership.enabled;
        let budget = self.store.config().request_timeout
            + if owning {
                self.ownership_wait()
            } else {
                Duration::ZERO
            };
        let stored = async {
            if !own {
                return futures::try_join!(self.store.bounded(budget, read()), ids);
            }
            let (taken, read_first) = self
                .store
                .bounded(budget, async {
                    if owning {
                        let wait = self.ownership_wait();
                        self.owners
                            .acquire(&self.store, group, partitions, wait)
                            .await?;
                    }
                    let taken = self.tracker().times_taken;
                    let read = read().await?;
                    // Read first: ZooKeeper answers the session's requests in order.
                    self.owners.send_following(&self.store, group).await;
                    Ok((taken, read))
                })
                .await?;
            // The topics' IDs, from a metadata request that may still be on its way. The
            // tracker is not held meanwhile: holding it, this thread would block commits and
            // loads of other threads, which may hold the Kafka connection this one waits for.
            let ids = ids.await?;
            let mut trackers = self.tracker();
            // What is recorded was read with no commit of this keeper in between: read again,
            // holding the tracker (and only ZooKeeper's answer awaited), when anything took it.
            let (nodes, stale) = if trackers.times_taken == taken + 1 {
                read_first
            } else {
                let timeout = self.store.config().request_timeout;
                self.store.bounded(timeout, read()).await?
            };
            let tracker = trackers.group(group);
            for (partition, node) in partitions.iter().zip(&nodes) {
                tracker.observe(partition, node.as_ref());
            }
            let folders = &nodes[partitions.len()..];
            for (topic, folder) in topics.iter().zip(folders) {
                let current = ids.get(topic).cloned().flatten();
                let stored_id = folder.as_ref().and_then(|f| parse_topic_identity(&f.data));
                let old: BTreeSet<i32> =
                    if Recreated::between(stored_id.as_deref(), current.as_deref()).is_some() {
                        partitions
                            .iter()
                            .zip(&nodes)
                            .filter(|(tp, node)| *tp.topic == **topic && node.is_some())
                            .map(|(tp, _)| tp.partition)
                            .collect()
                    } else {
                        BTreeSet::new()
                    };
                tracker.observe_topic(topic, current, folder.as_ref(), old);
            }
            Ok(((nodes, stale), ids))
        };
        let (((nodes, stale), ids), ranges) = futures::try_join!(stored, ranges)?;
        let (leaves, folders) = nodes.split_at(partitions.len());
        let recreated: HashMap<String, Recreated> = topics
            .iter()
            .zip(folders)
            .filter_map(|(topic, folder)| {
                let stored_id = folder.as_ref().and_then(|f| parse_topic_identity(&f.data));
                let current = ids.get(topic).cloned().flatten();
                Recreated::between(stored_id.as_deref(), current.as_deref())
                    .map(|recreated| (topic.clone(), recreated))
            })
            .collect();
        let partitions = partitions
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
            .collect();
        Ok(Inspection {
            partitions,
            recreated,
            stale,
        })
    }

    /// Discovers the topics' partitions, takes ownership of them (unless ownership is off),
    /// reads their stored offsets and ranges, and validates each. Partitions that no longer
    /// exist are not returned; a `fail` policy that applies makes the whole load an error
    /// listing every refused partition. Nothing is written but the ownership nodes.
    pub fn load(&self, group: &str, topics: &[String]) -> Result<Loaded> {
        let topics = checked_topics(group, topics)?;
        let runtime = runtime()?;
        let before = self.owners.owned_in(group);
        let inspected = runtime.block_on(self.discover_and_inspect(group, &topics, true));
        let loaded = inspected.and_then(|inspected| self.validated(group, inspected));
        if let Err(err) = &loaded {
            // A failed load leaves no ownership behind that it took, when ZooKeeper can answer:
            // never on a new session (nothing of this load is left without the old one), nor
            // waiting out a second timeout (the nodes go with the session, or with `close`).
            if self.ownership.enabled && !err.is_zookeeper_unreachable() {
                runtime.block_on(async {
                    if self.store.session_id().await.is_some() {
                        let release = self.owners.release_since(&self.store, group, &before);
                        let timeout = self.store.config().request_timeout;
                        let _ = tokio::time::timeout(timeout, release).await;
                    }
                });
            }
        }
        loaded
    }

    /// Validates and reports what a load read.
    fn validated(&self, group: &str, inspection: Inspection) -> Result<Loaded> {
        let Inspection {
            partitions: inspected,
            recreated,
            stale,
        } = inspection;
        log_stale(group, &stale);
        // Each partition's own stored value: no copies, no map (perf showed them at P=1000).
        let each = inspected
            .into_iter()
            .map(|i| (i.partition, i.stored, i.range));
        let reports = match decide_each(each, &recreated, &self.policy) {
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
        };
        let mut trackers = self.tracker();
        let tracker = trackers.group(group);
        for report in loaded.corrections() {
            // The job starts elsewhere than the stored offset: commits may go below it.
            tracker.reset_floor(&report.partition);
        }
        log_load(group, &loaded);
        Ok(loaded)
    }
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

impl Drop for OffsetKeeper {
    /// Closing tries once to write the offsets of deferred commits, then releases ownership: the
    /// ownership nodes are deleted, then the ZooKeeper session is closed, which takes any that
    /// remain. It returns within the ZooKeeper request timeout (plus a moment for closing the
    /// session); ownership nodes it could not delete are named in a WARN, and go when the
    /// session expires, within the session timeout.
    fn drop(&mut self) {
        // Never block inside an async context; the session close still takes the nodes.
        if tokio::runtime::Handle::try_current().is_ok() {
            return;
        }
        let Ok(runtime) = runtime() else { return };
        let config = self.store.config();
        let deadline = Instant::now() + config.request_timeout;
        self.flush_deferred(deadline);
        let left = deadline.saturating_duration_since(Instant::now());
        runtime.block_on(self.owners.finish_all_following(&self.store, left));
        let ops = self.owners.release_ops(&config.base_path);
        if ops.is_empty() {
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let released = runtime.block_on(async {
            // The bound covers waiting for the session too.
            tokio::time::timeout(
                left,
                self.store
                    .multi_on_live_session(&ops, left.min(RELEASE_TIMEOUT)),
            )
            .await
            .unwrap_or(false)
        });
        if !released {
            let paths: Vec<&str> = ops.iter().map(WriteOp::path).collect();
            let more = paths.len().saturating_sub(10);
            log::warn!(
                "closing could not remove the ownership nodes {}{} (ZooKeeper did not answer within {} ms); they go when this keeper's ZooKeeper session expires, within its session timeout of {} ms",
                paths[..paths.len().min(10)].join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() },
                left.min(RELEASE_TIMEOUT).as_millis(),
                config.session_timeout.as_millis()
            );
        }
        runtime.block_on(async {
            let _ = tokio::time::timeout(CLOSE_SESSION_TIMEOUT, self.store.close_session()).await;
        });
        self.owners.forget();
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

/// Checks a group and a topic list, and drops repeated topics.
fn checked_topics(group: &str, topics: &[String]) -> Result<Vec<String>> {
    check_name("group", group)?;
    if topics.is_empty() {
        return Err(Error::invalid(
            "topic list is empty; give at least one topic",
        ));
    }
    for topic in topics {
        check_name("topic", topic)?;
    }
    let mut unique = HashSet::new();
    Ok(topics
        .iter()
        .filter(|t| unique.insert(*t))
        .cloned()
        .collect())
}

/// Refuses illegal names, negative partitions or offsets and duplicate partitions: the input
/// checks of [`OffsetKeeper::commit`], for callers that write offsets elsewhere (the CLI's
/// `migrate` to a Kafka consumer group).
pub fn check_commit(group: &str, offsets: &[(TopicPartition, i64)]) -> Result<()> {
    CommitBatch::from_pairs(offsets).check(group)
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
            Recreated {
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
