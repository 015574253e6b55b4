//! One active instance per group: ephemeral nodes in the layout of Kafka's old consumer, which
//! CMAK and ConsumerOffsetChecker show as owners.
//!
//! - `<base>/<group>/ids/<consumer id>`: this keeper, with a JSON value (subscription, host,
//!   pid, since when), as the old consumer registered itself.
//! - `<base>/<group>/owners/<topic>/<partition>`: the owning consumer thread id,
//!   `<consumer id>-0`.
//!
//! Both are ephemeral: they go when the keeper closes its session, or when the session expires
//! after a crash. A load takes ownership of every partition it returns, and a keeper that
//! commits without having loaded (one deserialized from a Spark checkpoint) takes those of its
//! first commit; another keeper waits for the owner to go (up to the configured wait) and then
//! fails naming it.
//!
//! An owner that registered from this host and pid namespace, whose process is gone (its pid
//! free, a zombie, or another process's since: the start time in `/proc/<pid>/stat` differs),
//! crashed while its session lives on: its partitions, its lock and its `ids` node are taken
//! over at once instead.
//!
//! After a ZooKeeper outage that a deferred commit made known, the background reconnect
//! (`crate::reconnect`) takes this keeper's ownership again as soon as ZooKeeper answers,
//! replacing its nodes of an expired session that ZooKeeper has not removed yet.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::zookeeper::clock::ClockOffset;
use crate::zookeeper::layout::GroupLayout;
use crate::zookeeper::{chunks_beside, Node, Refused, WriteOp, ZkStore};
use crate::TopicPartition;
use rustc_hash::FxHashSet;

/// How often a waiting load looks again whether the owner went.
const POLL: Duration = Duration::from_millis(250);

/// The operation an error names when other writers kept creating or deleting the ownership
/// nodes until the wait ran out.
const CHURN: &str = "take ownership (other writers kept creating or deleting the ownership nodes until the ownership wait, or at least the ZooKeeper request timeout, ran out)";

/// Who this keeper is, as its ownership nodes say.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    host: String,
    pid: u32,
    /// This process's start time in clock ticks since boot, and its pid namespace's inode: with
    /// the pid they tell a later process on this host whether this one is gone.
    start_ticks: Option<u64>,
    pid_ns: Option<u64>,
    since_ms: i64,
    unique: String,
}

impl Identity {
    pub(crate) fn new() -> Identity {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let since_ms = now_ms();
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_i64(since_ms);
        hasher.write_u32(std::process::id());
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        Identity {
            host: host_name(),
            pid: std::process::id(),
            start_ticks: proc_stat("self").map(|stat| stat.start_ticks),
            pid_ns: pid_namespace(),
            since_ms,
            unique: format!("{:08x}", hasher.finish() as u32),
        }
    }

    /// `<group>_<host>-<since ms>-<8 hex>`, as Kafka's old consumer named its instances.
    pub(crate) fn consumer_id(&self, group: &str) -> String {
        format!("{group}_{}-{}-{}", self.host, self.since_ms, self.unique)
    }

    /// The owner value of a partition node: the consumer id and thread number 0.
    pub(crate) fn thread_id(&self, group: &str) -> String {
        format!("{}-0", self.consumer_id(group))
    }

    /// The value of `ids/<consumer id>`: the old consumer's registration JSON, plus host, pid,
    /// and (where known) the process's start time and pid namespace.
    pub(crate) fn registration(&self, topics: &BTreeSet<String>) -> Vec<u8> {
        let registration = Registration {
            version: 1,
            subscription: topics.iter().map(|topic| (topic.as_str(), 1)).collect(),
            pattern: "static",
            timestamp: self.since_ms.to_string(),
            host: &self.host,
            pid: self.pid,
            starttime: self.start_ticks,
            pidns: self.pid_ns,
            client: concat!("offsetkeeper ", env!("CARGO_PKG_VERSION")),
        };
        // Strings, integers and a map with string keys: serializing cannot fail.
        serde_json::to_vec(&registration).unwrap_or_default()
    }

    /// Why the process that wrote a registration is known to be gone: it registered from this
    /// host and pid namespace, and its pid is free, a zombie's, or another process's (a
    /// different start time). `None` when it may live: another host or namespace, a live pid
    /// with the same start time, or anything that cannot be read.
    pub(crate) fn gone(&self, registered: &Registered) -> Option<String> {
        if registered.host.as_ref() != Some(&self.host) {
            return None;
        }
        let ns = registered.pidns?;
        if Some(ns) != self.pid_ns {
            return None;
        }
        let pid = registered.pid?;
        if !process_exists(pid)? {
            return Some(format!("no process has pid {pid}"));
        }
        let stat = proc_stat(&pid.to_string())?;
        if stat.zombie {
            return Some(format!("process {pid} has exited (a zombie)"));
        }
        let recorded = registered.starttime?;
        (stat.start_ticks != recorded).then(|| {
            format!(
                "pid {pid} is another process now (started at tick {}, the owner at tick {recorded})",
                stat.start_ticks
            )
        })
    }
}

/// The JSON of an `ids` node as this keeper writes it: Kafka's old consumer's fields, then
/// host, pid, start time, pid namespace and client.
#[derive(Serialize)]
struct Registration<'a> {
    version: u32,
    subscription: BTreeMap<&'a str, u32>,
    pattern: &'a str,
    timestamp: String,
    host: &'a str,
    pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    starttime: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pidns: Option<u64>,
    client: &'a str,
}

/// What a keeper reads of an `ids` node, which any tool may have written: the fields that tell
/// whether its process is gone. Absent ones (Kafka's old consumer writes none of them) and a
/// value that is not a JSON object leave them unknown.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Registered {
    host: Option<String>,
    pid: Option<u32>,
    starttime: Option<u64>,
    pidns: Option<u64>,
}

impl Registered {
    pub(crate) fn parse(data: &[u8]) -> Registered {
        serde_json::from_slice(data).unwrap_or_default()
    }
}

/// What `/proc/<pid>/stat` says of a process.
struct ProcStat {
    zombie: bool,
    /// Start time, in clock ticks since boot.
    start_ticks: u64,
}

/// `/proc/<pid>/stat` (`pid` a number or `self`); `None` where there is no such file.
fn proc_stat(pid: &str) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(ProcStat {
        zombie: *fields.first()? == "Z",
        start_ticks: fields.get(19)?.parse().ok()?, // field 22, starttime
    })
}

/// The inode of this process's pid namespace, from `/proc/self/ns/pid` (`pid:[4026531836]`).
fn pid_namespace() -> Option<u64> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let text = link.to_str()?;
    text.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// Whether a process with the pid exists in this pid namespace (signal 0 sends nothing);
/// `None` when it cannot be told.
#[cfg(unix)]
fn process_exists(pid: u32) -> Option<bool> {
    let pid = libc::pid_t::try_from(pid).ok().filter(|pid| *pid > 0)?;
    // SAFETY: kill with signal 0 only checks that the process exists and may be signalled.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return Some(true);
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ESRCH) => Some(false),
        Some(libc::EPERM) => Some(true),
        _ => None,
    }
}

#[cfg(not(unix))]
fn process_exists(_pid: u32) -> Option<bool> {
    None
}

/// The ownership a keeper holds, per group.
pub(crate) struct Owners {
    pub(crate) identity: Identity,
    /// Partitions owned per group (those of the loads so far); every warm load checks its
    /// partitions against them, so a hash set (a B-tree compared names ~15 times a lookup).
    owned: Mutex<HashMap<String, FxHashSet<TopicPartition>>>,
    /// Per group, the ZooKeeper session in which this keeper last found every partition it
    /// owns in place: while that session lives its ephemeral nodes do too, so a load asking
    /// for no more than that needs no request.
    confirmed: Mutex<HashMap<String, i64>>,
    /// Per group, the owner nodes of the first acquisition on their way (see `acquire`).
    following: Mutex<HashMap<String, Following>>,
    /// One acquisition at a time per keeper, so that its own threads never race each other.
    acquiring: tokio::sync::Mutex<()>,
    /// Per group, the partition and owner that kept the background reconnect from taking
    /// ownership again after an outage: for the group's next commit to fail with.
    refusals: Mutex<HashMap<String, (TopicPartition, String)>>,
    /// ZooKeeper's clock against this host's, and the session it was measured in.
    clock: Mutex<Option<(i64, ClockOffset)>>,
}

/// The owner nodes of a first acquisition, for the session that took the group's lock: kept
/// until the load has read what it needs (ZooKeeper answers a session's requests in order, so
/// a read sent after them would wait for them), then created in the background.
enum Following {
    Queued {
        session: i64,
        ops: Vec<WriteOp>,
    },
    Sent {
        session: i64,
        task: tokio::task::JoinHandle<std::result::Result<(), String>>,
    },
}

impl Owners {
    pub(crate) fn new() -> Owners {
        Owners {
            identity: Identity::new(),
            owned: Mutex::new(HashMap::new()),
            confirmed: Mutex::new(HashMap::new()),
            following: Mutex::new(HashMap::new()),
            acquiring: tokio::sync::Mutex::new(()),
            refusals: Mutex::new(HashMap::new()),
            clock: Mutex::new(None),
        }
    }

    /// ZooKeeper's clock as measured in `session`, if it was.
    pub(crate) fn clock_measured(&self, session: i64) -> Option<ClockOffset> {
        let clock = self
            .clock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        clock
            .filter(|(measured_in, _)| *measured_in == session)
            .map(|(_, clock)| clock)
    }

    pub(crate) fn remember_clock(&self, session: i64, clock: ClockOffset) {
        *self
            .clock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some((session, clock));
    }

    /// Measures ZooKeeper's clock on a node of this keeper's alone in the group's folder,
    /// created, written and deleted in one multi.
    pub(crate) async fn measure_clock(&self, store: &ZkStore, group: &str) -> Result<ClockOffset> {
        let layout = GroupLayout {
            base_path: &store.config().base_path,
            group,
        };
        let path = layout.clock_path(&self.identity.consumer_id(group));
        store.measure_clock(&path).await
    }

    fn refusals(&self) -> std::sync::MutexGuard<'_, HashMap<String, (TopicPartition, String)>> {
        self.refusals
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Another instance, `owner`, holds `partition` of the group: ownership could not be taken
    /// again after an outage.
    pub(crate) fn refused(&self, group: &str, partition: TopicPartition, owner: String) {
        self.refusals()
            .insert(group.to_string(), (partition, owner));
    }

    /// The refusal recorded for the group, once: the partition and its owner.
    pub(crate) fn take_refusal(&self, group: &str) -> Option<(TopicPartition, String)> {
        self.refusals().remove(group)
    }

    /// The groups this keeper registered in, sorted.
    pub(crate) fn groups(&self) -> Vec<String> {
        let mut groups: Vec<String> = self.owned().keys().cloned().collect();
        groups.sort_unstable();
        groups
    }

    /// The session in which this keeper last found all its nodes of the group in place.
    pub(crate) fn confirmed_in(&self, group: &str) -> Option<i64> {
        self.confirmed().get(group).copied()
    }

    fn owned(&self) -> std::sync::MutexGuard<'_, HashMap<String, FxHashSet<TopicPartition>>> {
        self.owned
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn confirmed(&self) -> std::sync::MutexGuard<'_, HashMap<String, i64>> {
        self.confirmed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records that the keeper owns `wanted` in the group, as found in `session`.
    fn settle(&self, group: &str, wanted: Vec<TopicPartition>, session: Option<i64>) {
        self.refusals().remove(group);
        self.owned()
            .insert(group.to_string(), wanted.into_iter().collect());
        match session {
            Some(session) => self.confirmed().insert(group.to_string(), session),
            None => self.confirmed().remove(group),
        };
    }

    /// Makes the next acquisition in the group look at ZooKeeper again (its nodes went).
    pub(crate) fn unconfirm(&self, group: &str) {
        self.confirmed().remove(group);
    }

    /// Whether this keeper registered itself in the group.
    pub(crate) fn is_registered(&self, group: &str) -> bool {
        self.owned().contains_key(group)
    }

    /// The partitions this keeper took in the group, in order.
    pub(crate) fn owned_in(&self, group: &str) -> Vec<TopicPartition> {
        let mut owned: Vec<TopicPartition> = self
            .owned()
            .get(group)
            .map(|owned| owned.iter().cloned().collect())
            .unwrap_or_default();
        owned.sort_unstable();
        owned
    }

    /// Whether this keeper took every one of `partitions` in the group.
    pub(crate) fn owns_all(&self, group: &str, partitions: &[TopicPartition]) -> bool {
        self.owned()
            .get(group)
            .is_some_and(|owned| partitions.iter().all(|tp| owned.contains(tp)))
    }

    /// Whether the owner nodes of this keeper's first acquisition in the group may still be on
    /// their way (see [`Owners::acquire`]); the next acquisition looks at how they went.
    pub(crate) fn is_following(&self, group: &str) -> bool {
        self.following().contains_key(group)
    }

    fn following(&self) -> std::sync::MutexGuard<'_, HashMap<String, Following>> {
        self.following
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sends the group's queued owner nodes in the background, on the session that took the
    /// lock; if that session is gone, so is the lock, and the next acquisition starts over.
    pub(crate) async fn send_following(&self, store: &ZkStore, group: &str) {
        let queued = {
            let mut following = self.following();
            match following.remove(group) {
                Some(Following::Queued { session, ops }) => Some((session, ops)),
                // Already sent: kept, for `settle_following` to wait for.
                Some(sent) => {
                    following.insert(group.to_string(), sent);
                    None
                }
                None => None,
            }
        };
        let Some((session, ops)) = queued else {
            return;
        };
        match store.spawn_multi_chunked(ops).await {
            Some((now, task)) if now == session => {
                self.following()
                    .insert(group.to_string(), Following::Sent { session, task });
            }
            Some((_, task)) => {
                task.abort();
                self.unconfirm(group);
            }
            None => self.unconfirm(group),
        }
    }

    /// Waits, within `within`, for the owner nodes on their way in the group: once they are all
    /// in place the ownership is confirmed for their session; if they could not all be created
    /// (another kind of owner came first, the session went), the next acquisition looks at
    /// every node again.
    async fn settle_following(&self, store: &ZkStore, group: &str, within: Duration) {
        self.send_following(store, group).await;
        let Some(Following::Sent { session, task }) = self.following().remove(group) else {
            return;
        };
        match tokio::time::timeout(within, task).await {
            Ok(Ok(Ok(()))) => {
                self.confirmed().insert(group.to_string(), session);
            }
            Ok(Ok(Err(why))) => {
                log::warn!("group {group}: the partitions' owner nodes were not all created ({why}); looking at them again");
                self.unconfirm(group);
            }
            _ => {
                log::debug!(
                    "group {group}: owner nodes not known to be in place; looking at them again"
                );
                self.unconfirm(group);
            }
        }
    }

    /// Before giving ownership up: forgets the group's owner nodes not sent yet (so that none
    /// is to be deleted), and waits within `within` for those sent.
    async fn finish_following(&self, store: &ZkStore, group: &str, within: Duration) {
        let queued = matches!(self.following().get(group), Some(Following::Queued { .. }));
        if queued {
            self.following().remove(group);
            self.owned().insert(group.to_string(), FxHashSet::default());
            return;
        }
        self.settle_following(store, group, within).await;
    }

    /// [`Owners::finish_following`] for every group, within `within` in all (before closing).
    pub(crate) async fn finish_all_following(&self, store: &ZkStore, within: Duration) {
        let deadline = Instant::now() + within;
        let groups: Vec<String> = self.following().keys().cloned().collect();
        for group in groups {
            let left = deadline.saturating_duration_since(Instant::now());
            self.finish_following(store, &group, left).await;
        }
    }

    /// Registers this keeper in the group and takes the partitions, waiting up to `wait` for
    /// other owners to go. Partitions it already owns are kept as they are.
    ///
    /// The group's lock node decides which instance runs: the first acquisition of a keeper in
    /// a group creates it and the registration in one multi, checks that no other owner nodes
    /// are under `owners/`, and returns; the partitions' owner nodes (what CMAK and
    /// ConsumerOffsetChecker show) follow in the background, and the next acquisition or
    /// commit looks at how that went. Anything else (the lock held, a folder missing, owner
    /// nodes present) takes the careful way: read every node, wait for or take over from
    /// other owners, create what is missing.
    pub(crate) async fn acquire(
        &self,
        store: &ZkStore,
        group: &str,
        partitions: &[TopicPartition],
        wait: Duration,
    ) -> Result<()> {
        let _one_at_a_time = self.acquiring.lock().await;
        self.settle_following(store, group, store.time_left()).await;
        let started = Instant::now();
        let layout = GroupLayout {
            base_path: &store.config().base_path,
            group,
        };
        let session = store.session_id().await;
        let confirmed = self.confirmed().get(group).copied();
        if session.is_some() && confirmed == session && self.owns_all(group, partitions) {
            return Ok(());
        }
        let registered = self.owned().get(group).cloned();
        // In order, once each: a load's partitions come sorted, which the sort sees in one pass.
        let mut wanted: Vec<TopicPartition> = registered
            .iter()
            .flatten()
            .chain(partitions)
            .cloned()
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let topics: BTreeSet<String> = wanted
            .chunk_by(|a, b| a.topic == b.topic)
            .map(|run| run[0].topic.to_string())
            .collect();
        let registration = self.identity.registration(&topics);
        if registered.is_none()
            && self
                .claim_with_lock(store, &layout, &topics, &wanted, &registration)
                .await?
        {
            return Ok(());
        }
        let claim = Claim::new(&self.identity, layout, wanted, &topics, registration);
        self.claim_carefully(store, claim, started, started + wait)
            .await
    }

    /// The careful way: reads every node of the claim, waits for or takes over from other
    /// owners, and creates what is missing, until every node is this keeper's.
    async fn claim_carefully(
        &self,
        store: &ZkStore,
        claim: Claim<'_>,
        started: Instant,
        deadline: Instant,
    ) -> Result<()> {
        // Races with other keepers for the nodes (refused creates) are bounded by the wait too,
        // but get at least one ZooKeeper request timeout to settle.
        let settle_by = deadline.max(started + store.config().request_timeout);
        let mut told = false;
        let mut given_up = BTreeSet::new();
        loop {
            let nodes = store.read_nodes(&claim.paths).await?;
            let session = store.session_id().await.unwrap_or_default();
            let (dir_nodes, rest) = nodes.split_at(claim.dirs.len());
            let (id_node, claim_nodes) = rest.split_at(1);
            let foreign = claim.foreign(claim_nodes);
            if !foreign.is_empty() {
                // Bounded too: a take-over refused again and again ends in the wait below.
                let taken_over = Instant::now() < settle_by
                    && self
                        .take_over_from_gone(
                            store,
                            &claim.layout,
                            &claim.claims,
                            &foreign,
                            &mut given_up,
                        )
                        .await?;
                if !taken_over {
                    wait_for_owner(store, &claim, &foreign, started, deadline, &mut told).await?;
                }
                continue;
            }
            let ops = claim.missing(dir_nodes, &id_node[0], claim_nodes, session);
            if ops.is_empty() {
                if told {
                    log::info!(
                        "group {}: the other owner went; this keeper owns the partitions after waiting {} ms",
                        claim.layout.group,
                        started.elapsed().as_millis()
                    );
                }
                self.settle(claim.layout.group, claim.wanted, store.session_id().await);
                return Ok(());
            }
            // Applied: read again, every node must now be ours.
            if let Err(refused) = store.multi_chunked(&ops).await? {
                after_refused_claim(&ops, refused, settle_by).await?;
            }
        }
    }

    /// The first acquisition of this keeper in the group, in one step when nothing stands in
    /// the way: one multi creates the group's lock and this keeper's registration while the
    /// `owners/` folders are listed; with no owner node of anyone there, the partitions'
    /// owner nodes (and missing folders) are queued for [`Owners::send_following`] and `true`
    /// returned.
    /// `false` leaves the rest to the careful way, with whatever this created (the lock and
    /// registration are this keeper's either way).
    async fn claim_with_lock(
        &self,
        store: &ZkStore,
        layout: &GroupLayout<'_>,
        topics: &BTreeSet<String>,
        wanted: &[TopicPartition],
        registration: &[u8],
    ) -> Result<bool> {
        let group = layout.group;
        let me = self.identity.thread_id(group);
        let ops = [
            WriteOp::CreateEphemeral {
                path: layout.lock_path(),
                data: me.clone().into_bytes(),
            },
            WriteOp::CreateEphemeral {
                path: layout.id_path(&self.identity.consumer_id(group)),
                data: registration.to_vec(),
            },
        ];
        let owners_dir = layout.owners_dir();
        let topic_dirs: Vec<String> = topics.iter().map(|t| layout.owners_topic_dir(t)).collect();
        let listed = futures::future::try_join_all(
            std::iter::once(&owners_dir)
                .chain(&topic_dirs)
                .map(|dir| store.children(dir)),
        );
        let (created, listed) = futures::try_join!(store.multi(&ops), listed)?;
        if let Err(refused) = created {
            log::debug!(
                "group {group}: ownership in one step refused ({}); looking at the nodes",
                refused.error
            );
            return Ok(false);
        }
        let (owners, topic_listings) = listed.split_at(1);
        if topic_listings
            .iter()
            .any(|children| children.as_ref().is_some_and(|c| !c.is_empty()))
        {
            // Owner nodes of an owner that takes no lock (Kafka's old consumer, an older
            // offsetkeeper) or of this keeper's previous session: looked at one by one.
            return Ok(false);
        }
        let mut follow: Vec<WriteOp> = Vec::with_capacity(wanted.len() + topics.len() + 1);
        if owners[0].is_none() {
            follow.push(WriteOp::Create {
                path: owners_dir,
                data: Vec::new(),
            });
        }
        follow.extend(
            topic_dirs
                .into_iter()
                .zip(topic_listings)
                .filter(|(_, children)| children.is_none())
                .map(|(path, _)| WriteOp::Create {
                    path,
                    data: Vec::new(),
                }),
        );
        follow.extend(wanted.iter().map(|tp| WriteOp::CreateEphemeral {
            path: layout.owner_path(&tp.topic, tp.partition),
            data: me.clone().into_bytes(),
        }));
        let Some(session) = store.session_id().await else {
            return Ok(false);
        };
        self.owned()
            .insert(group.to_string(), wanted.iter().cloned().collect());
        self.refusals().remove(group);
        self.unconfirm(group);
        self.following().insert(
            group.to_string(),
            Following::Queued {
                session,
                ops: follow,
            },
        );
        Ok(true)
    }

    /// Takes over the claims among `foreign` (indexes into `claims`, the owner nodes and the
    /// group's lock, with their nodes) whose owner registered from this host and whose process is gone
    /// (see [`Identity::gone`]): their owner nodes are deleted, each multi also setting the
    /// dead owner's `ids` node to the version read, so that it applies only while that
    /// registration (and so its session) is still the one read, and nobody else took over
    /// meanwhile: a live owner's node is never deleted. The last multi deletes the `ids` node
    /// too, so that the dead driver is not listed until its session expires. Whether any multi went through or was
    /// refused for a change: the nodes are to be read again. An owner whose nodes could not be
    /// deleted otherwise (an ACL) goes into `given_up`, and is waited for.
    async fn take_over_from_gone(
        &self,
        store: &ZkStore,
        layout: &GroupLayout<'_>,
        claims: &[String],
        foreign: &[(usize, &Node)],
        given_up: &mut BTreeSet<String>,
    ) -> Result<bool> {
        let group = layout.group;
        let mut by_consumer: BTreeMap<String, Vec<(usize, &Node)>> = BTreeMap::new();
        for (i, node) in foreign {
            if let Some(consumer) = consumer_of(&node.data) {
                by_consumer.entry(consumer).or_default().push((*i, node));
            }
        }
        let id_paths: Vec<String> = by_consumer.keys().map(|c| layout.id_path(c)).collect();
        let registrations = store.read_nodes(&id_paths).await?;
        let mut sent = false;
        for (((consumer, owned), id_path), registration) in
            by_consumer.iter().zip(&id_paths).zip(registrations)
        {
            let Some(registration) = registration else {
                continue;
            };
            let registered = Registered::parse(&registration.data);
            let Some(reason) = self.identity.gone(&registered) else {
                continue;
            };
            // Only the nodes of the registration's own session.
            let owned: Vec<&(usize, &Node)> = owned
                .iter()
                .filter(|(_, node)| node.ephemeral_owner == registration.ephemeral_owner)
                .collect();
            if owned.is_empty() || given_up.contains(consumer) {
                continue;
            }
            let deletes: Vec<[WriteOp; 2]> = owned
                .iter()
                .map(|(i, node)| {
                    [
                        WriteOp::Check {
                            path: claims[*i].clone(),
                            version: node.version,
                        },
                        WriteOp::Delete {
                            path: claims[*i].clone(),
                        },
                    ]
                })
                .collect();
            // Each request also sets the registration, and the last one deletes it.
            let beside = WriteOp::SetData {
                path: id_path.clone(),
                data: registration.data.clone(),
                version: None,
            }
            .estimated_bytes()
                + WriteOp::Delete {
                    path: id_path.clone(),
                }
                .estimated_bytes();
            let chunks = chunks_beside(
                &deletes,
                |pair| pair.iter().map(WriteOp::estimated_bytes).sum::<usize>(),
                0,
                beside,
            );
            let mut version = registration.version;
            let mut refused = None;
            let last = chunks.len().saturating_sub(1);
            for (number, chunk) in chunks.into_iter().enumerate() {
                let mut ops = vec![WriteOp::SetData {
                    path: id_path.clone(),
                    data: registration.data.clone(),
                    version: Some(version),
                }];
                ops.extend(chunk.iter().flatten().cloned());
                if number == last {
                    // The dead owner's registration goes with its nodes, in the multi whose
                    // first operation checked it at the version read. Any of its owner nodes
                    // not taken here go with its session.
                    ops.push(WriteOp::Delete {
                        path: id_path.clone(),
                    });
                }
                match store.multi(&ops).await? {
                    Ok(_) => version = version.wrapping_add(1),
                    Err(no) => {
                        refused = Some(no.error);
                        break;
                    }
                }
            }
            let host = registered.host.as_deref().unwrap_or("unknown");
            let pid = registered
                .pid
                .map_or_else(|| "unknown".to_string(), |pid| pid.to_string());
            match refused {
                None => {
                    sent = true;
                    log::warn!(
                    "group {group}: took over {} node(s) (first {}) from '{consumer}' (host {host}, pid {pid}, ZooKeeper session 0x{:x}) and removed its registration {id_path}, without waiting for its session to expire: that process is gone from this host ({reason})",
                    owned.len(),
                    claims[owned[0].0],
                    registration.ephemeral_owner
                    );
                }
                // Its session expired, or another keeper took over first: read again.
                Some(zookeeper_client::Error::NoNode | zookeeper_client::Error::BadVersion) => {
                    sent = true;
                }
                Some(error) => {
                    log::warn!(
                        "group {group}: '{consumer}' (host {host}, pid {pid}) is gone from this host ({reason}), but its ownership nodes could not be deleted ({error}); waiting for its session to expire"
                    );
                    given_up.insert(consumer.clone());
                }
            }
        }
        Ok(sent)
    }

    /// Gives up what this keeper took in the group beyond `kept` (what it owned before a load
    /// that failed), and its registration when it keeps nothing. Best effort: whatever is left
    /// goes with the session.
    pub(crate) async fn release_since(
        &self,
        store: &ZkStore,
        group: &str,
        kept: &[TopicPartition],
    ) {
        let _one_at_a_time = self.acquiring.lock().await;
        self.finish_following(store, group, store.time_left()).await;
        let layout = GroupLayout {
            base_path: &store.config().base_path,
            group,
        };
        let kept: FxHashSet<TopicPartition> = kept.iter().cloned().collect();
        let owned = self.owned_in(group);
        let mut ops: Vec<WriteOp> = owned
            .iter()
            .filter(|tp| !kept.contains(*tp))
            .map(|tp| WriteOp::Delete {
                path: layout.owner_path(&tp.topic, tp.partition),
            })
            .collect();
        if kept.is_empty() {
            ops.push(WriteOp::Delete {
                path: layout.id_path(&self.identity.consumer_id(group)),
            });
            // The lock only if this keeper holds it, at the version read.
            let lock_path = layout.lock_path();
            if let Ok(mut nodes) = store.read_nodes(std::slice::from_ref(&lock_path)).await {
                if let Some(Some(lock)) = nodes.pop() {
                    if lock.data == self.identity.thread_id(group).as_bytes() {
                        ops.push(WriteOp::Check {
                            path: lock_path.clone(),
                            version: lock.version,
                        });
                        ops.push(WriteOp::Delete { path: lock_path });
                    }
                }
            }
        }
        if ops.is_empty() {
            return;
        }
        if !matches!(store.multi_chunked(&ops).await, Ok(Ok(()))) {
            log::debug!("group {group}: ownership nodes not released; they go with the session");
        }
        let mut all = self.owned();
        if kept.is_empty() {
            all.remove(group);
            self.unconfirm(group);
        } else {
            all.insert(group.to_string(), kept);
        }
    }

    /// Deletes of every ownership node this keeper made: owners first, then its ids nodes and
    /// the groups' locks. Its owner nodes on their way are to be settled first
    /// ([`Owners::finish_all_following`]).
    pub(crate) fn release_ops(&self, base_path: &str) -> Vec<WriteOp> {
        let owned = self.owned();
        let mut ops = Vec::new();
        for (group, partitions) in owned.iter() {
            let layout = GroupLayout { base_path, group };
            ops.extend(partitions.iter().map(|tp| WriteOp::Delete {
                path: layout.owner_path(&tp.topic, tp.partition),
            }));
            ops.push(WriteOp::Delete {
                path: layout.id_path(&self.identity.consumer_id(group)),
            });
            ops.push(WriteOp::Delete {
                path: layout.lock_path(),
            });
        }
        ops
    }

    /// Forgets every ownership (after releasing it).
    pub(crate) fn forget(&self) {
        self.owned().clear();
        self.confirmed().clear();
        for (_, following) in self.following().drain() {
            if let Following::Sent { task, .. } = following {
                task.abort();
            }
        }
    }
}

/// What an acquisition claims in a group, read and created as one list of paths.
struct Claim<'a> {
    layout: GroupLayout<'a>,
    /// The partitions, sorted, once each.
    wanted: Vec<TopicPartition>,
    /// This keeper's thread id in the group: the data of its owner nodes and lock.
    me: String,
    id_path: String,
    registration: Vec<u8>,
    /// The folders above the nodes.
    dirs: Vec<String>,
    /// Every partition's owner node, then the group's lock.
    claims: Vec<String>,
    /// The folders, the registration, then the claims.
    paths: Vec<String>,
}

impl<'a> Claim<'a> {
    fn new(
        identity: &Identity,
        layout: GroupLayout<'a>,
        wanted: Vec<TopicPartition>,
        topics: &BTreeSet<String>,
        registration: Vec<u8>,
    ) -> Claim<'a> {
        let group = layout.group;
        let mut dirs = layout.ancestors();
        dirs.push(layout.ids_dir());
        dirs.push(layout.owners_dir());
        dirs.extend(topics.iter().map(|t| layout.owners_topic_dir(t)));
        let claims: Vec<String> = wanted
            .iter()
            .map(|tp| layout.owner_path(&tp.topic, tp.partition))
            .chain(std::iter::once(layout.lock_path()))
            .collect();
        let id_path = layout.id_path(&identity.consumer_id(group));
        let paths: Vec<String> = dirs
            .iter()
            .chain(std::iter::once(&id_path))
            .chain(&claims)
            .cloned()
            .collect();
        Claim {
            me: identity.thread_id(group),
            layout,
            wanted,
            id_path,
            registration,
            dirs,
            claims,
            paths,
        }
    }

    /// The claims held by someone else, with their nodes.
    fn foreign<'n>(&self, claim_nodes: &'n [Option<Node>]) -> Vec<(usize, &'n Node)> {
        claim_nodes
            .iter()
            .enumerate()
            .filter_map(|(i, node)| node.as_ref().map(|node| (i, node)))
            .filter(|(_, node)| node.data != self.me.as_bytes())
            .collect()
    }

    /// The partition a claim stands for in messages (the lock: the first one).
    fn claimed(&self, i: usize) -> Option<TopicPartition> {
        self.wanted.get(i).or(self.wanted.first()).cloned()
    }

    /// What is missing, with no other owner in the way: the folders, the registration (or
    /// its data brought up to date), and the claims. This keeper's own ephemeral nodes of an
    /// earlier session (one that expired during an outage, which ZooKeeper may not have
    /// removed yet) are replaced by nodes of `session`: the old ones go when ZooKeeper expires
    /// it, and ownership with them.
    fn missing(
        &self,
        dir_nodes: &[Option<Node>],
        id_node: &Option<Node>,
        claim_nodes: &[Option<Node>],
        session: i64,
    ) -> Vec<WriteOp> {
        let mut ops: Vec<WriteOp> = self
            .dirs
            .iter()
            .zip(dir_nodes)
            .filter(|(_, node)| node.is_none())
            .map(|(path, _)| {
                WriteOp::create_dir(path.clone(), Vec::new(), self.layout.is_shared_dir(path))
            })
            .collect();
        // Session 0: none known, nothing taken for stale.
        let stale = |node: &Node| {
            session != 0 && node.ephemeral_owner != 0 && node.ephemeral_owner != session
        };
        // Checked at the version read: replaced only if still that node.
        let replace = |ops: &mut Vec<WriteOp>, path: &str, node: &Node, data: Vec<u8>| {
            ops.push(WriteOp::Check {
                path: path.to_string(),
                version: node.version,
            });
            ops.push(WriteOp::Delete {
                path: path.to_string(),
            });
            ops.push(WriteOp::CreateEphemeral {
                path: path.to_string(),
                data,
            });
        };
        match id_node {
            None => ops.push(WriteOp::CreateEphemeral {
                path: self.id_path.clone(),
                data: self.registration.clone(),
            }),
            Some(node) if stale(node) => {
                replace(&mut ops, &self.id_path, node, self.registration.clone());
            }
            Some(node) if node.data != self.registration => ops.push(WriteOp::SetData {
                path: self.id_path.clone(),
                data: self.registration.clone(),
                version: None,
            }),
            Some(_) => {}
        }
        for (path, node) in self.claims.iter().zip(claim_nodes) {
            match node {
                None => ops.push(WriteOp::CreateEphemeral {
                    path: path.clone(),
                    data: self.me.clone().into_bytes(),
                }),
                // Only this keeper's nodes get here (`foreign` took the others).
                Some(node) if stale(node) => {
                    replace(&mut ops, path, node, self.me.clone().into_bytes());
                }
                Some(_) => {}
            }
        }
        ops
    }
}

/// Another instance owns some of the claim: fails with [`Error::Owned`] once the wait is
/// over, else says so (once) and waits a moment before the nodes are read again.
async fn wait_for_owner(
    store: &ZkStore,
    claim: &Claim<'_>,
    foreign: &[(usize, &Node)],
    started: Instant,
    deadline: Instant,
    told: &mut bool,
) -> Result<()> {
    let group = claim.layout.group;
    let (first, node) = foreign[0];
    let Some(partition) = claim.claimed(first) else {
        return Err(Error::Internal(format!(
            "group {group}: ownership asked for no partition"
        )));
    };
    let now = Instant::now();
    if now >= deadline {
        if *told {
            log::info!(
                "group {group}: gave up waiting for the other owner after {} ms",
                started.elapsed().as_millis()
            );
        }
        let owner = describe_owner(store, &claim.layout, node).await;
        return Err(Error::Owned {
            group: group.to_string(),
            partition,
            owner,
            others: foreign
                .iter()
                .filter(|(i, _)| *i < claim.wanted.len())
                .count()
                .saturating_sub(1),
            waited: started.elapsed(),
        });
    }
    if !*told {
        *told = true;
        let owner = describe_owner(store, &claim.layout, node).await;
        log::info!(
            "group {group}: {partition} and {} more partition(s) are owned by another instance, {owner}; waiting up to {} ms for it to go",
            foreign.len() - 1,
            deadline.saturating_duration_since(now).as_millis()
        );
    }
    tokio::time::sleep(POLL.min(deadline.saturating_duration_since(now))).await;
    Ok(())
}

/// ZooKeeper refused the claim's multi. Another keeper, or this one's previous session, got
/// there first: the nodes are read again (`Ok`), unless that has gone on for the whole wait.
async fn after_refused_claim(ops: &[WriteOp], refused: Refused, settle_by: Instant) -> Result<()> {
    let path = ops
        .get(refused.index)
        .map(WriteOp::path)
        .unwrap_or("/")
        .to_string();
    match refused.error {
        zookeeper_client::Error::NodeExists | zookeeper_client::Error::NoNode
            if Instant::now() < settle_by =>
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok(())
        }
        zookeeper_client::Error::NodeExists | zookeeper_client::Error::NoNode => {
            Err(Error::ZooKeeper {
                operation: CHURN,
                path,
                source: refused.error,
                detail: String::new(),
            })
        }
        error => Err(Error::ZooKeeper {
            operation: "register ownership",
            path,
            source: error,
            detail: String::new(),
        }),
    }
}

/// The owner of a partition node, for messages: its thread id, and from its `ids` node the
/// host and pid; since when (the node's creation) and its ZooKeeper session.
pub(crate) async fn describe_owner(
    store: &ZkStore,
    layout: &GroupLayout<'_>,
    owner: &Node,
) -> String {
    let thread = String::from_utf8_lossy(&owner.data).trim().to_string();
    let registration = match consumer_of(&owner.data) {
        None => None,
        Some(consumer) => store
            .read(&[layout.id_path(&consumer)])
            .await
            .ok()
            .and_then(|mut values| values.pop().flatten()),
    };
    let registered = registration
        .as_deref()
        .map(Registered::parse)
        .unwrap_or_default();
    let host = registered.host.as_deref().unwrap_or("unknown");
    let pid = registered
        .pid
        .map_or_else(|| "unknown".to_string(), |pid| pid.to_string());
    format!(
        "'{thread}' (host {host}, pid {pid}, since {}, ZooKeeper session 0x{:x})",
        format_utc(owner.ctime),
        owner.ephemeral_owner
    )
}

/// The consumer id of an owner node's value (`<consumer id>-<thread>`), when it can name an
/// `ids` node.
fn consumer_of(owner: &[u8]) -> Option<String> {
    let thread = String::from_utf8_lossy(owner).trim().to_string();
    let consumer = thread
        .rsplit_once('-')
        .filter(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .map(|(consumer, _)| consumer.to_string())
        .unwrap_or(thread);
    (!consumer.is_empty() && !consumer.contains('/')).then_some(consumer)
}

/// Milliseconds since the epoch as `2024-05-01T12:00:00Z` (the milliseconds left out); the
/// bare number when out of the calendar's range.
pub(crate) fn format_utc(ms: i64) -> String {
    jiff::Timestamp::from_second(ms.div_euclid(1000))
        .map_or_else(|_| format!("{ms} ms since the epoch"), |at| at.to_string())
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// This machine's name, cut to the characters of a ZooKeeper path segment that Kafka's tools
/// expect (`[a-zA-Z0-9._-]`).
fn host_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .unwrap_or_default();
    let name: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "unknown-host".to_string()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_kafkas_old_consumer() {
        let identity = Identity::new();
        let id = identity.consumer_id("billing");
        assert!(id.starts_with("billing_"), "{id}");
        assert_eq!(identity.thread_id("billing"), format!("{id}-0"));
        assert!(crate::names::check_name("id", &id).is_ok(), "{id}");
        assert_ne!(Identity::new().unique, identity.unique);
    }

    #[test]
    fn registration_is_the_old_consumers_json_with_host_and_pid() {
        let identity = Identity::new();
        let topics: BTreeSet<String> = ["a".to_string(), "b".to_string()].into();
        let data = identity.registration(&topics);
        let text = String::from_utf8(data.clone()).unwrap();
        assert!(
            text.starts_with(
                "{\"version\":1,\"subscription\":{\"a\":1,\"b\":1},\"pattern\":\"static\",\"timestamp\":\""
            ),
            "{text}"
        );
        assert!(
            text.ends_with(&format!(
                ",\"client\":\"offsetkeeper {}\"}}",
                env!("CARGO_PKG_VERSION")
            )),
            "{text}"
        );
        let registered = Registered::parse(&data);
        assert_eq!(registered.pid, Some(std::process::id()));
        assert_eq!(registered.host.as_ref(), Some(&identity.host));
        assert_eq!(registered.starttime, identity.start_ticks);
        assert_eq!(registered.pidns, identity.pid_ns);
    }

    #[test]
    fn only_a_gone_process_of_this_host_and_namespace_is_gone() {
        let identity = Identity::new();
        let mine = Registered::parse(&identity.registration(&BTreeSet::new()));
        assert!(mine.starttime.is_some() && mine.pidns.is_some(), "{mine:?}");
        assert_eq!(identity.gone(&mine), None, "this process lives");
        let start = mine.starttime.unwrap();
        let reused = identity.gone(&Registered {
            starttime: Some(start + 1),
            ..mine.clone()
        });
        assert!(reused.is_some_and(|why| why.contains("another process")));
        let free = Registered {
            pid: Some(4_194_321),
            ..mine.clone()
        };
        assert!(identity
            .gone(&free)
            .is_some_and(|why| why.contains("no process")));
        let elsewhere = Registered {
            host: Some("elsewhere".into()),
            ..free.clone()
        };
        assert_eq!(identity.gone(&elsewhere), None);
        let other_ns = Registered {
            pidns: Some(1),
            ..free.clone()
        };
        assert_eq!(identity.gone(&other_ns), None);
        let old = Registered {
            pidns: None,
            ..free
        };
        assert_eq!(
            identity.gone(&old),
            None,
            "an owner that did not record its namespace"
        );
        assert_eq!(
            identity.gone(&Registered {
                pid: Some(0),
                ..mine
            }),
            None
        );
    }

    #[test]
    fn registrations_other_tools_wrote_are_read_or_left_unknown() {
        // Escaped quotes and nested objects before the fields read.
        let written = br#"{"client":"tool \"x\", \"host\":\"fake\"","subscription":{"t":1},"host":"h-1","pid":42,"starttime":7,"pidns":9}"#;
        let registered = Registered::parse(written);
        assert_eq!(registered.host.as_deref(), Some("h-1"));
        assert_eq!(
            (registered.pid, registered.starttime, registered.pidns),
            (Some(42), Some(7), Some(9))
        );
        // Kafka's old consumer records no host or pid.
        let kafka = Registered::parse(
            br#"{"version":1,"subscription":{"t":1},"pattern":"static","timestamp":"1403061899"}"#,
        );
        assert_eq!((kafka.host, kafka.pid), (None, None));
        for unreadable in [
            &b""[..],
            b"not json \"unterminated",
            b"[1,2]",
            b"{\"pid\":\"x\"}",
        ] {
            let registered = Registered::parse(unreadable);
            assert!(
                registered.host.is_none() && registered.pid.is_none(),
                "{registered:?}"
            );
        }
    }

    #[test]
    fn own_nodes_of_an_expired_session_are_replaced_others_kept_or_created() {
        let identity = Identity::new();
        let layout = GroupLayout {
            base_path: "/consumers",
            group: "g",
        };
        let wanted = vec![TopicPartition::new("t", 0), TopicPartition::new("t", 1)];
        let topics: BTreeSet<String> = ["t".to_string()].into();
        let registration = identity.registration(&topics);
        let claim = Claim::new(&identity, layout, wanted, &topics, registration.clone());
        let node = |data: &[u8], version, session| Node {
            data: data.to_vec(),
            version,
            ctime: 0,
            mtime: 0,
            ephemeral_owner: session,
        };
        let me = identity.thread_id("g").into_bytes();
        let dirs: Vec<Option<Node>> = claim.dirs.iter().map(|_| Some(node(b"", 0, 0))).collect();
        // The registration and partition 0 of the expired session 7, partition 1 of the live
        // session 9, the lock missing.
        let id = Some(node(&registration, 2, 7));
        let claims = [Some(node(&me, 0, 7)), Some(node(&me, 0, 9)), None];
        let ops = claim.missing(&dirs, &id, &claims, 9);
        let id_path = claim.id_path.clone();
        let owner0 = claim.claims[0].clone();
        let lock = claim.claims[2].clone();
        assert_eq!(
            ops,
            vec![
                WriteOp::Check {
                    path: id_path.clone(),
                    version: 2
                },
                WriteOp::Delete {
                    path: id_path.clone()
                },
                WriteOp::CreateEphemeral {
                    path: id_path,
                    data: registration
                },
                WriteOp::Check {
                    path: owner0.clone(),
                    version: 0
                },
                WriteOp::Delete {
                    path: owner0.clone()
                },
                WriteOp::CreateEphemeral {
                    path: owner0,
                    data: me.clone()
                },
                WriteOp::CreateEphemeral {
                    path: lock,
                    data: me.clone()
                },
            ]
        );
        // All on the live session: nothing to do. No session known: nothing taken for stale.
        let live = [
            Some(node(&me, 0, 9)),
            Some(node(&me, 0, 9)),
            Some(node(&me, 0, 9)),
        ];
        let id = Some(node(&claim.registration, 2, 9));
        assert!(claim.missing(&dirs, &id, &live, 9).is_empty());
        assert!(claim.missing(&dirs, &id, &live, 0).is_empty());
    }

    #[test]
    fn times_are_utc() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_714_564_800_123), "2024-05-01T12:00:00Z");
        assert_eq!(format_utc(-1000), "1969-12-31T23:59:59Z");
        assert_eq!(
            format_utc(i64::MAX),
            "9223372036854775807 ms since the epoch"
        );
    }
}
