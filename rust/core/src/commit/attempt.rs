//! One attempt of a commit: read what is not known, plan the multi, split it into requests,
//! send them, and take in every answer (or, when ZooKeeper refused one, say why).

use std::collections::HashSet;

use zookeeper_client as zk;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::partition_map::same_topic;
use crate::tracked::{Seen, Tracker};
use crate::zookeeper::layout::{encode_offset, GroupLayout};
use crate::zookeeper::{chunks_beside, Applied, Refused, WriteOp};
use crate::TopicPartition;
use rustc_hash::FxHashSet;

/// One partition of a batch.
pub(super) struct Entry<'a> {
    pub(super) partition: &'a TopicPartition,
    pub(super) offset: i64,
}

impl Entry<'_> {
    pub(super) fn path(&self, layout: &GroupLayout<'_>) -> String {
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

type Op = (WriteOp, Role);

/// One request's outcome: failed on the way, refused, or applied.
type Outcome = Result<std::result::Result<Vec<Applied>, Refused>>;

/// Why one attempt did not commit.
pub(super) enum Failed {
    /// Worth another attempt (a folder appeared, ownership was taken again).
    Again(Error),
    Final(Error),
}

/// What one attempt stored.
#[derive(Debug, Default)]
pub(super) struct Done {
    pub(super) written: usize,
    pub(super) unchanged: usize,
    pub(super) requests: usize,
}

/// The operations of one attempt, before they are split into requests.
struct Plan {
    /// Folders to create (a topic's with its ID), then the ownership check.
    head: Vec<Op>,
    owner_check: Option<Op>,
    /// One per partition that changed.
    leaves: Vec<Op>,
    /// The topic IDs of folders that exist.
    identities: Vec<Op>,
    /// The batch overwrites old offsets of a re-created topic.
    overwrites_old: bool,
}

/// Commits the entries in one multi (more for a batch beyond one request's size).
pub(super) async fn commit_once(
    cx: &Context,
    tracker: &mut Tracker,
    layout: &GroupLayout<'_>,
    entries: &[Entry<'_>],
) -> std::result::Result<Done, Failed> {
    let (dirs, topics) = dirs_to_read(tracker, layout, entries);
    let missing_dirs = read_unknown(cx, tracker, layout, entries, dirs).await?;
    let mut done = Done::default();
    let plan = plan(
        cx,
        tracker,
        layout,
        entries,
        &topics,
        &missing_dirs,
        &mut done,
    );
    if plan.leaves.is_empty() && plan.identities.is_empty() {
        if plan.overwrites_old {
            tracker.forget_old(entries.iter().map(|entry| entry.partition));
        }
        return Ok(done);
    }
    let overwrites_old = plan.overwrites_old;
    let mut chunks = split_into_requests(cx, plan);
    if chunks.len() > 1 {
        log::warn!(
            "group {}: committing {} offsets in {} multi requests: each is atomic, the batch as a whole is not",
            layout.group,
            entries.len(),
            chunks.len()
        );
    }
    let outcomes = send(cx, &mut chunks, entries, layout).await?;
    take_in(cx, tracker, layout, entries, &chunks, outcomes, &mut done).await?;
    if overwrites_old {
        tracker.forget_old(entries.iter().map(|entry| entry.partition));
    }
    Ok(done)
}

/// The group's folders and the batch's topic folders not known to exist (or whose topic
/// identity must be read again), and the batch's topics.
fn dirs_to_read<'e>(
    tracker: &Tracker,
    layout: &GroupLayout<'_>,
    entries: &[Entry<'e>],
) -> (Vec<String>, FxHashSet<&'e str>) {
    let mut dirs: Vec<String> = layout.group_dirs();
    let mut topics: FxHashSet<&str> = FxHashSet::default();
    let mut identity_dirs: HashSet<String> = HashSet::new();
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
            if tracker.topic_folder_unknown(topic) {
                identity_dirs.insert(dir.clone());
            }
            dirs.push(dir);
        }
    }
    dirs.retain(|dir| !tracker.knows_dir(dir) || identity_dirs.contains(dir));
    (dirs, topics)
}

/// Reads the folders and the nodes whose version is not known (or, without fencing, every
/// node: the write must not rely on what was seen before), settling writes whose outcome was
/// unknown. Returns the folders that do not exist.
async fn read_unknown(
    cx: &Context,
    tracker: &mut Tracker,
    layout: &GroupLayout<'_>,
    entries: &[Entry<'_>],
    dirs: Vec<String>,
) -> std::result::Result<Vec<String>, Failed> {
    let unknown: Vec<usize> = tracker
        .seen_each(entries.iter().map(|entry| entry.partition))
        .into_iter()
        .enumerate()
        .filter(|(i, seen)| tracker.must_read(*seen, entries[*i].partition, cx.fencing))
        .map(|(i, _)| i)
        .collect();
    let mut missing_dirs = Vec::new();
    if dirs.is_empty() && unknown.is_empty() {
        return Ok(missing_dirs);
    }
    let paths: Vec<String> = dirs
        .iter()
        .cloned()
        .chain(unknown.iter().map(|i| entries[*i].path(layout)))
        .collect();
    let nodes = cx.store.read_nodes(&paths).await.map_err(Failed::Final)?;
    let (dir_nodes, leaf_nodes) = nodes.split_at(dirs.len());
    for (dir, node) in dirs.iter().zip(dir_nodes) {
        if node.is_none() {
            missing_dirs.push(dir.clone());
        }
        tracker.read_dir(layout, dir, node.as_ref());
    }
    for (i, node) in unknown.iter().zip(leaf_nodes) {
        let entry = &entries[*i];
        if let Err(found) = tracker.read_leaf(entry.partition, node.as_ref(), cx.fencing) {
            return Err(Failed::Final(Error::CommitConflict {
                group: layout.group.to_string(),
                partition: entry.partition.clone(),
                detail: format!(
                    "a commit of this keeper failed on the way with its outcome unknown, and {found}: another writer (a second job on this group, a zombie driver, or an operator's reset) changed it. Nothing of this commit was written. Load again to take the stored offsets over, or turn fencing off"
                ),
            }));
        }
    }
    Ok(missing_dirs)
}

/// The operations: folders to create (a topic's with its ID), the ownership check, then one
/// per partition that changed, then the topic IDs of folders that exist. Counts the
/// unchanged partitions into `done`.
fn plan(
    cx: &Context,
    tracker: &mut Tracker,
    layout: &GroupLayout<'_>,
    entries: &[Entry<'_>],
    topics: &FxHashSet<&str>,
    missing_dirs: &[String],
    done: &mut Done,
) -> Plan {
    // The topic IDs to record: of topics whose old offsets this batch overwrites all.
    let in_batch: Option<HashSet<(&str, i32)>> =
        tracker.holds_old_offsets(topics.iter().copied()).then(|| {
            entries
                .iter()
                .map(|e| (e.partition.topic.as_ref(), e.partition.partition))
                .collect()
        });
    let identity_of = |topic: &str| tracker.identity_to_write(topic, in_batch.as_ref());
    let offsets_dir_len = layout.offsets_dir().len();
    let mut head: Vec<Op> = missing_dirs
        .iter()
        .map(|dir| {
            let data = if dir.len() > offsets_dir_len {
                identity_of(dir.rsplit('/').next().unwrap_or_default()).unwrap_or_default()
            } else {
                Vec::new()
            };
            let create = WriteOp::create_dir(dir.clone(), data, layout.is_shared_dir(dir));
            (create, Role::Dir)
        })
        .collect();
    let identities = identity_ops(cx, tracker, layout, entries, identity_of);
    let group = layout.group;
    let owner_check = cx.owners.is_registered(group).then(|| {
        let check = WriteOp::Check {
            path: layout.id_path(&cx.owners.identity.consumer_id(group)),
            version: -1,
        };
        (check, Role::OwnerCheck)
    });
    head.extend(owner_check.clone());
    let leaves = leaf_ops(cx, tracker, layout, entries, done);
    Plan {
        head,
        owner_check,
        leaves,
        identities,
        overwrites_old: in_batch.is_some(),
    }
}

/// The topic IDs to write into folders that exist, one per topic of the batch.
fn identity_ops(
    cx: &Context,
    tracker: &Tracker,
    layout: &GroupLayout<'_>,
    entries: &[Entry<'_>],
    identity_of: impl Fn(&str) -> Option<Vec<u8>>,
) -> Vec<Op> {
    let mut identities = Vec::new();
    // Once recorded, an ID costs a commit nothing more than this look.
    if !tracker.any_identity_to_write() {
        return identities;
    }
    let mut first_of_topic = HashSet::new();
    for (index, entry) in entries.iter().enumerate() {
        let topic = entry.partition.topic.as_ref();
        if !first_of_topic.insert(topic) {
            continue;
        }
        let Some(version) = tracker.folder_version(topic) else {
            continue;
        };
        if let Some(data) = identity_of(topic) {
            let set = WriteOp::SetData {
                path: layout.topic_dir(topic),
                data,
                version: cx.fencing.then_some(version),
            };
            identities.push((set, Role::Identity(index)));
        }
    }
    identities
}

/// A write per partition whose node does not hold its offset; the others are counted as
/// unchanged, and their floor rises to the offset.
fn leaf_ops(
    cx: &Context,
    tracker: &mut Tracker,
    layout: &GroupLayout<'_>,
    entries: &[Entry<'_>],
    done: &mut Done,
) -> Vec<Op> {
    // Often few of a batch's partitions moved: no room is made for all of them.
    let mut leaves: Vec<Op> = Vec::new();
    let mut risen = Vec::new();
    let known = tracker.seen_each(entries.iter().map(|entry| entry.partition));
    for (index, (entry, seen)) in entries.iter().zip(known).enumerate() {
        let seen = seen.copied().unwrap_or_default();
        let op = match seen.version {
            None => WriteOp::Create {
                path: entry.path(layout),
                data: encode_offset(entry.offset),
            },
            Some(_) if seen.holds(entry.offset) => {
                // Nothing to send: a node another writer changed meanwhile is caught when
                // this keeper next writes it, and ownership fences other instances.
                done.unchanged += 1;
                if seen.floor_below(entry.offset) {
                    risen.push(entry);
                }
                continue;
            }
            Some(version) => WriteOp::SetData {
                path: entry.path(layout),
                data: encode_offset(entry.offset),
                version: cx.fencing.then_some(version),
            },
        };
        done.written += 1;
        leaves.push((op, Role::Leaf(index)));
    }
    for entry in risen {
        tracker.raise_floor(entry.partition, entry.offset);
    }
    leaves
}

/// One multi; more only for batches beyond one request's size. The topic IDs go in the last
/// one: a batch split over requests records a new ID only with its last offsets (their bytes
/// are kept free in every request, which one is last is known only after).
fn split_into_requests(cx: &Context, plan: Plan) -> Vec<Vec<Op>> {
    let Plan {
        mut head,
        owner_check,
        leaves,
        mut identities,
        ..
    } = plan;
    let bytes = |ops: &[Op]| -> usize { ops.iter().map(|(op, _)| op.estimated_bytes()).sum() };
    let head_bytes = bytes(&head);
    let check_bytes = bytes(owner_check.as_slice());
    let identity_bytes = bytes(&identities);
    // Room for the check that chains a request to the one before it (see `chain`), at most a
    // leaf's size.
    let chain_bytes = if cx.fencing {
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
    let mut chunks: Vec<Vec<Op>> = Vec::with_capacity(lengths.len());
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
    chunks
}

/// Sends the requests and returns each one's outcome.
async fn send(
    cx: &Context,
    chunks: &mut [Vec<Op>],
    entries: &[Entry<'_>],
    layout: &GroupLayout<'_>,
) -> std::result::Result<Vec<Outcome>, Failed> {
    if cx.fencing && chunks.len() > 1 {
        // All at once: each request after the first checks a node the one before it writes,
        // at the version that write gives it, so that a refused request refuses the ones
        // after it too, as when they go one after the other.
        chain(chunks, entries, layout);
        let requests: Vec<Vec<&WriteOp>> = chunks
            .iter()
            .map(|chunk| chunk.iter().map(|(op, _)| op).collect())
            .collect();
        return cx
            .store
            .multis_in_order(&requests)
            .await
            .map_err(Failed::Final);
    }
    // Without fencing the versions are not known: one after the other, up to the first that
    // does not go through.
    let mut outcomes = Vec::with_capacity(chunks.len());
    for chunk in chunks.iter() {
        let ops: Vec<&WriteOp> = chunk.iter().map(|(op, _)| op).collect();
        let outcome = cx.store.multi(&ops).await;
        let went_through = matches!(outcome, Ok(Ok(_)));
        outcomes.push(outcome);
        if !went_through {
            break;
        }
    }
    Ok(outcomes)
}

/// Starts each request after the first with a check of one node the request before it writes,
/// at the version that write gives it: a changed node's (a created node's version 0 says less).
fn chain(chunks: &mut [Vec<Op>], entries: &[Entry<'_>], layout: &GroupLayout<'_>) {
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

/// Takes in every answer, also after a refusal: a request that went through stays written, and
/// the next commit builds on what it wrote. Then fails with the first failure or refusal.
async fn take_in(
    cx: &Context,
    tracker: &mut Tracker,
    layout: &GroupLayout<'_>,
    entries: &[Entry<'_>],
    chunks: &[Vec<Op>],
    outcomes: Vec<Outcome>,
    done: &mut Done,
) -> std::result::Result<(), Failed> {
    let mut failure = None;
    let mut refusal = None;
    let mut applied_before = 0;
    for (number, (chunk, outcome)) in chunks.iter().zip(outcomes).enumerate() {
        match outcome {
            Err(err) => {
                outcome_unknown(cx, tracker, entries, chunk);
                failure.get_or_insert(err);
            }
            Ok(Ok(applied)) => {
                done.requests += 1;
                if refusal.is_none() {
                    applied_before += 1;
                }
                record_applied(tracker, layout, entries, chunk, applied);
            }
            Ok(Err(refused)) => {
                refusal.get_or_insert((number, refused));
            }
        }
    }
    if let Some(err) = failure {
        return Err(Failed::Final(err));
    }
    let Some((number, refused)) = refusal else {
        return Ok(());
    };
    let Some((op, role)) = chunks[number].get(refused.index) else {
        // The server named an operation the multi does not have.
        return Err(Failed::Final(Error::ZooKeeper {
            operation: "multi-write",
            path: chunks[number]
                .first()
                .map_or("/", |(op, _)| op.path())
                .to_string(),
            source: refused.error,
            detail: String::new(),
        }));
    };
    let refusal = Refusal {
        op,
        error: refused.error,
        applied_before,
    };
    Err(refusal.handle(cx, tracker, layout, entries, *role).await)
}

/// A request failed on the way: it may or may not have been applied. Its writes are settled
/// by the next commit, and a topic folder whose ID may or may not be written is read again.
fn outcome_unknown(cx: &Context, tracker: &mut Tracker, entries: &[Entry<'_>], chunk: &[Op]) {
    if cx.fencing {
        for (op, role) in chunk {
            if let (Role::Leaf(i), WriteOp::Create { .. } | WriteOp::SetData { .. }) = (role, op) {
                let entry = &entries[*i];
                tracker.write_unknown(entry.partition, entry.offset);
            }
        }
    }
    for (_, role) in chunk {
        if let Role::Identity(i) = role {
            tracker.forget_folder(&entries[*i].partition.topic);
        }
    }
}

/// What an applied request wrote becomes what this keeper last saw.
fn record_applied(
    tracker: &mut Tracker,
    layout: &GroupLayout<'_>,
    entries: &[Entry<'_>],
    chunk: &[Op],
    applied: Vec<Applied>,
) {
    for ((op, role), applied) in chunk.iter().zip(applied) {
        match role {
            Role::Dir => match op {
                WriteOp::Create { path, data } => tracker.created_dir(layout, path, data),
                WriteOp::CreateShared { path } => tracker.created_dir(layout, path, &[]),
                other => tracker.known_dir(other.path()),
            },
            Role::Identity(i) => {
                if let (Applied::Written { version }, WriteOp::SetData { data, .. }) = (applied, op)
                {
                    tracker.wrote_identity(&entries[*i].partition.topic, version, data);
                }
            }
            Role::OwnerCheck | Role::Chain(_) => {}
            Role::Leaf(i) => {
                let entry = &entries[*i];
                let version = match applied {
                    Applied::Written { version } => Some(version),
                    Applied::Other => None,
                };
                tracker.wrote_leaf(entry.partition, entry.offset, version);
            }
        }
    }
}

/// ZooKeeper refused one operation of a commit's multi.
struct Refusal<'a> {
    op: &'a WriteOp,
    error: zk::Error,
    /// Requests of the batch applied before the refused one.
    applied_before: usize,
}

impl Refusal<'_> {
    /// What to do: try again or fail, with a conflict that says what changed.
    async fn handle(
        self,
        cx: &Context,
        tracker: &mut Tracker,
        layout: &GroupLayout<'_>,
        entries: &[Entry<'_>],
        role: Role,
    ) -> Failed {
        let gone_or_changed = matches!(self.error, zk::Error::BadVersion | zk::Error::NoNode);
        match (role, &self.error) {
            // Another writer created the folder first, or removed one: look again.
            (Role::Dir, zk::Error::NodeExists | zk::Error::NoNode) => {
                tracker.forget_dirs();
                Failed::Again(self.zk_error())
            }
            (Role::OwnerCheck, zk::Error::NoNode) => self.ownership_lost(cx, layout.group).await,
            (Role::Identity(i), _) if cx.fencing && gone_or_changed => {
                self.folder_changed(tracker, layout.group, &entries[i])
            }
            // Without fencing the folder is read again; other errors are final.
            (Role::Identity(i), _) => {
                tracker.forget_folder(&entries[i].partition.topic);
                if gone_or_changed {
                    Failed::Again(self.zk_error())
                } else {
                    Failed::Final(self.zk_error())
                }
            }
            (Role::Leaf(i), zk::Error::NoNode) if matches!(self.op, WriteOp::Create { .. }) => {
                // The topic folder went (an operator deleted the topic's offsets): not a
                // conflict for a node this keeper saw missing; create the folders again.
                tracker.forget_dirs();
                if !cx.fencing {
                    tracker.forget_node(entries[i].partition);
                }
                Failed::Again(self.zk_error())
            }
            // A node the request before this one wrote changed in between: a conflict too.
            (
                Role::Leaf(i) | Role::Chain(i),
                zk::Error::BadVersion | zk::Error::NodeExists | zk::Error::NoNode,
            ) => self.node_changed(cx, tracker, layout, &entries[i]).await,
            _ => Failed::Final(self.zk_error()),
        }
    }

    fn zk_error(self) -> Error {
        Error::ZooKeeper {
            operation: "multi-write",
            path: self.op.path().to_string(),
            source: self.error,
            detail: String::new(),
        }
    }

    /// This keeper's session expired and its ownership went with it: take it again, unless
    /// another instance took the group over meanwhile.
    async fn ownership_lost(self, cx: &Context, group: &str) -> Failed {
        let owned = cx.owners.owned_in(group);
        cx.owners.unconfirm(group);
        log::warn!(
            "group {group}: this keeper's ownership went with its ZooKeeper session; taking it again"
        );
        let taken = cx
            .owners
            .acquire(&cx.store, group, &owned, std::time::Duration::ZERO)
            .await;
        match taken {
            Ok(()) => Failed::Again(self.zk_error()),
            Err(Error::Owned {
                partition, owner, ..
            }) => Failed::Final(Error::CommitConflict {
                group: group.to_string(),
                partition,
                detail: format!(
                    "this keeper's ZooKeeper session expired, and another instance, {owner}, owns the partition now. Nothing of this commit was written{}",
                    earlier(self.applied_before)
                ),
            }),
            Err(other) => Failed::Final(other),
        }
    }

    /// The topic folder changed since this keeper read its ID: a conflict.
    fn folder_changed(self, tracker: &mut Tracker, group: &str, entry: &Entry<'_>) -> Failed {
        let before = tracker.forget_folder(&entry.partition.topic);
        Failed::Final(Error::CommitConflict {
            group: group.to_string(),
            partition: entry.partition.clone(),
            detail: format!(
                "the topic folder {}, which records the topic ID, is no longer at version {} that this keeper last saw ({}): another writer (a second job on this group, a zombie driver, or an operator's tool) changed it. Nothing of this commit was written{}. Load again to take the stored offsets over, or turn fencing off",
                self.op.path(),
                before.map_or("unknown".to_string(), |v| v.to_string()),
                self.error,
                earlier(self.applied_before)
            ),
        })
    }

    /// The partition's node changed since this keeper saw it: a conflict naming both, or
    /// (fencing off) another attempt after reading it again.
    async fn node_changed(
        self,
        cx: &Context,
        tracker: &mut Tracker,
        layout: &GroupLayout<'_>,
        entry: &Entry<'_>,
    ) -> Failed {
        if !cx.fencing {
            // Changed between the read and the write: read again.
            tracker.forget_node(entry.partition);
            return Failed::Again(self.zk_error());
        }
        let seen = tracker.seen(entry.partition);
        let now = match cx.store.read_nodes(&[entry.path(layout)]).await {
            Ok(mut nodes) => Seen::of(nodes.pop().flatten().as_ref()).describe(),
            Err(_) => "something else (it could not be read)".to_string(),
        };
        Failed::Final(Error::CommitConflict {
            group: layout.group.to_string(),
            partition: entry.partition.clone(),
            detail: format!(
                "this keeper last saw {}, ZooKeeper now has {now}: another writer (a second job on this group, a zombie driver, or an operator's reset) changed it. Nothing of this commit was written{}. Load again to take the stored offsets over, or turn fencing off",
                seen.describe(),
                earlier(self.applied_before)
            ),
        })
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
