//! [`OffsetKeeper`], the one handle the JNI bridge, the CLI and the tests drive: a facade over
//! `load`, `commit` and `admin`, which share its [`Context`] (one ZooKeeper session, one
//! Kafka client, the ownership nodes and the tracked state).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::admin::{self, GroupSummary, Surveyed};
use crate::batch::CommitBatch;
use crate::commit::{self, CommitSummary};
use crate::config::{KeeperConfig, Ownership, Store};
use crate::context::Context;
use crate::error::Result;
use crate::kafka::Brokers;
use crate::kafka_store::KafkaStore;
use crate::load::{self, Inspected, Loaded};
use crate::mirror::{Mirror, MirrorStatus};
use crate::ownership::Owners;
use crate::reconnect::Reconnect;
use crate::runtime::runtime;
use crate::sasl::SaslProviderHandle;
use crate::tracked::Tracked;
use crate::validate::{Policy, Stored};
use crate::zookeeper::{WriteOp, ZkConfig, ZkStore};
use crate::TopicPartition;

/// How long closing a keeper waits for ZooKeeper to delete its ownership nodes, at most.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(3);

/// How long closing waits for the session to be handed over for closing (never in practice:
/// nothing else holds it while the keeper is dropped).
const CLOSE_SESSION_TIMEOUT: Duration = Duration::from_millis(500);

/// Loads, validates and commits offsets for any number of groups and topics, in the store
/// its configuration names: ZooKeeper or Kafka's group store.
pub struct OffsetKeeper {
    store: Keeping,
    /// The second store during a move between stores (`offsetkeeper.store=zookeeper,kafka`).
    mirror: Option<Mirror>,
}

/// The store a keeper keeps offsets in.
enum Keeping {
    ZooKeeper(ZkKeeper),
    Kafka(Box<KafkaStore>),
}

/// A keeper of offsets in ZooKeeper.
struct ZkKeeper {
    /// Shared with the background reconnect, which holds it only while it works.
    cx: Arc<Context>,
    /// The background reconnect of a keeper whose commits may be deferred; stopped first when
    /// the keeper closes.
    reconnect: Option<Reconnect>,
}

impl std::ops::Deref for ZkKeeper {
    type Target = Context;
    fn deref(&self) -> &Context {
        &self.cx
    }
}

impl OffsetKeeper {
    /// Checks the configuration and prepares the clients; servers are contacted on first use.
    pub fn open(config: KeeperConfig) -> Result<OffsetKeeper> {
        config.check_limits()?;
        let mirror = match config.mirror {
            Some(store) => {
                // The mirror never owns the group (the authoritative store fences the job), and
                // its failures wait in the mirror's writer instead of being deferred.
                let mut mirrored = config.clone();
                mirrored.store = store;
                mirrored.mirror = None;
                mirrored.ownership.enabled = false;
                mirrored.commit_outage_tolerance = Duration::ZERO;
                Some(Mirror::start(store, OffsetKeeper::open(mirrored)?)?)
            }
            None => None,
        };
        let provider = config.sasl_provider.as_ref();
        if config.store == Store::Kafka {
            let brokers =
                Brokers::with_sasl_provider(config.kafka.clone(), config.kafka_timeout, provider)?;
            return Ok(OffsetKeeper {
                store: Keeping::Kafka(Box::new(KafkaStore::open(config, brokers))),
                mirror,
            });
        }
        let cx = Arc::new(Context {
            store: ZkStore::with_sasl_provider(config.zookeeper, provider)?,
            brokers: Some(Brokers::with_sasl_provider(
                config.kafka,
                config.kafka_timeout,
                provider,
            )?),
            owners: Owners::new(),
            tracked: Tracked::default(),
            policy: config.policy,
            fencing: config.fencing,
            monotonic: config.monotonic,
            ownership: config.ownership,
            commit_outage_tolerance: config.commit_outage_tolerance,
            recreated_timestamp_tolerance: config.recreated_timestamp_tolerance,
        });
        // Only a deferred commit makes an outage known: with a tolerance of zero none is.
        let reconnect = if cx.commit_outage_tolerance.is_zero() {
            None
        } else {
            Some(Reconnect::start(&cx)?)
        };
        Ok(OffsetKeeper {
            store: Keeping::ZooKeeper(ZkKeeper { cx, reconnect }),
            mirror,
        })
    }

    /// A keeper for the operations that touch ZooKeeper only: listing groups, reading,
    /// committing, exporting and deleting stored offsets. Operations that ask the brokers fail
    /// with [`Error::InvalidArgument`](crate::Error::InvalidArgument). Commits are fenced; it
    /// never takes ownership.
    pub fn open_zookeeper_only(zookeeper: ZkConfig) -> Result<OffsetKeeper> {
        OffsetKeeper::open_zookeeper_only_with_sasl_provider(zookeeper, None)
    }

    /// [`open_zookeeper_only`](Self::open_zookeeper_only), with the host's provider for
    /// `zookeeper.sasl.mechanism=GSSAPI` (the CLI's Kerberos).
    pub fn open_zookeeper_only_with_sasl_provider(
        zookeeper: ZkConfig,
        provider: Option<&SaslProviderHandle>,
    ) -> Result<OffsetKeeper> {
        Ok(OffsetKeeper {
            store: Keeping::ZooKeeper(ZkKeeper {
                cx: Arc::new(Context {
                    store: ZkStore::with_sasl_provider(zookeeper, provider)?,
                    brokers: None,
                    owners: Owners::new(),
                    tracked: Tracked::default(),
                    policy: Policy::default(),
                    fencing: true,
                    monotonic: true,
                    ownership: Ownership {
                        enabled: false,
                        wait: None,
                    },
                    // Operators' tools fail at once (and so need no reconnect).
                    commit_outage_tolerance: Duration::ZERO,
                    recreated_timestamp_tolerance: None,
                }),
                reconnect: None,
            }),
            mirror: None,
        })
    }

    /// The ZooKeeper server version the session's requests are chosen for, and how it was
    /// learned; `None` before the first ZooKeeper call.
    pub fn zookeeper_server_version(&self) -> Option<crate::zookeeper::LearnedVersion> {
        self.zk().ok()?.store.server_version()
    }

    /// The ZooKeeper session timeout in force: as the servers granted it to the last session
    /// (they bound what is asked by their tick), else as configured. The default ownership wait
    /// is this plus 5 s.
    pub fn zookeeper_session_timeout(&self) -> Duration {
        match &self.store {
            Keeping::ZooKeeper(zk) => zk.store.session_timeout(),
            Keeping::Kafka(_) => Duration::ZERO,
        }
    }

    /// The ZooKeeper session's id and password, for tests that expire it from outside.
    #[doc(hidden)]
    pub fn zookeeper_session(&self) -> Option<zookeeper_client::SessionInfo> {
        runtime()
            .ok()?
            .block_on(self.zk().ok()?.store.session_info())
    }

    /// Kafka store only: stops heartbeating the group, as a process paused longer than the
    /// member session timeout would, so that tests can make a zombie. Nothing else changes.
    #[doc(hidden)]
    pub fn stop_heartbeat(&self, group: &str) {
        if let Keeping::Kafka(kafka) = &self.store {
            kafka.stop_heartbeat(group);
        }
    }

    pub fn policy(&self) -> &Policy {
        match &self.store {
            Keeping::ZooKeeper(zk) => &zk.policy,
            Keeping::Kafka(kafka) => kafka.policy(),
        }
    }

    /// The ZooKeeper keeper, or an error naming the operation for a keeper of the Kafka store.
    fn zk(&self) -> Result<&ZkKeeper> {
        match &self.store {
            Keeping::ZooKeeper(zk) => Ok(zk),
            Keeping::Kafka(_) => Err(crate::Error::invalid(
                "this operation reads or writes ZooKeeper, but this keeper keeps offsets in Kafka's group store (offsetkeeper.store=kafka)",
            )),
        }
    }

    /// The Kafka client of either store.
    fn brokers(&self) -> Result<&Brokers> {
        match &self.store {
            Keeping::ZooKeeper(zk) => zk.brokers(),
            Keeping::Kafka(kafka) => Ok(kafka.brokers()),
        }
    }

    /// What ZooKeeper holds and what Kafka has, for every partition of the topics that exists
    /// now, in topic order then partition order. No validation: the raw view for lag and for
    /// operators.
    pub fn inspect(&self, group: &str, topics: &[String]) -> Result<Vec<Inspected>> {
        match &self.store {
            Keeping::ZooKeeper(zk) => self.explained(load::inspect(zk, group, topics)),
            Keeping::Kafka(kafka) => kafka.inspect(group, topics),
        }
    }

    /// Discovers the topics' partitions, takes ownership of them (unless ownership is off),
    /// reads their stored offsets and ranges, and validates each. Partitions that no longer
    /// exist are not returned; a `fail` policy that applies makes the whole load an error
    /// listing every refused partition. Nothing is written but the ownership nodes.
    ///
    /// During a move between stores the mirror is read beside it: see [`crate::mirror`].
    pub fn load(&self, group: &str, topics: &[String]) -> Result<Loaded> {
        let mut loaded = match &self.store {
            Keeping::ZooKeeper(zk) => self.explained(load::load(zk, group, topics)),
            Keeping::Kafka(kafka) => kafka.load(group, topics),
        }?;
        if let Some(mirror) = &self.mirror {
            mirror.compare(group, topics, &mut loaded);
        }
        Ok(loaded)
    }

    /// Stores each partition's next offset to read (Spark's `untilOffset`) in one atomic multi,
    /// creating missing nodes and skipping unchanged ones. Bad input is refused before anything
    /// is written. With fencing on, the multi fails as a whole with
    /// [`Error::CommitConflict`](crate::Error::CommitConflict) when another writer changed any
    /// of the partitions since this keeper last saw them. Offsets below what this keeper
    /// already committed are skipped with a WARN (monotonic commits). A keeper that did not
    /// load the group (one deserialized from a Spark checkpoint) first takes ownership of the
    /// batch's partitions, waiting as a load does and failing with
    /// [`Error::Owned`](crate::Error::Owned) (nothing written) when another instance keeps them.
    ///
    /// When ZooKeeper cannot be reached
    /// ([`Error::is_zookeeper_unreachable`](crate::Error::is_zookeeper_unreachable)) the commit
    /// is deferred: it returns `Ok` with [`CommitSummary::deferred`] set and a WARN saying how
    /// far behind the stored offsets are, and the next commit writes its offsets with its own
    /// in one multi. Once commits have failed for the keeper's commit outage tolerance (counted
    /// from the start of the first deferred one) it returns
    /// [`Error::Timeout`](crate::Error::Timeout) with that duration; a tolerance of zero returns
    /// every such error at once. Either way a commit ends within the ZooKeeper request timeout,
    /// opening a session again included. After one commit was deferred the keeper reconnects in
    /// the background, and the next commits of the same outage are deferred within a few hundred
    /// milliseconds (`config::defaults::OUTAGE_PROBE`) until ZooKeeper answers; the reconnect
    /// then takes this keeper's ownership again, and when another instance took the group
    /// meanwhile the group's next commit fails with
    /// [`Error::CommitConflict`](crate::Error::CommitConflict), writing nothing.
    ///
    /// With the Kafka store, a keeper whose commit met a conflict (its membership refused by the
    /// coordinator, or the group's offsets changed by someone else) fails every later commit of
    /// the group at once with a conflict naming that one, writing nothing and not joining the
    /// group, until a load of the group succeeds.
    pub fn commit(&self, group: &str, offsets: &[(TopicPartition, i64)]) -> Result<CommitSummary> {
        self.commit_batch(group, &CommitBatch::from_pairs(offsets))
    }

    /// [`OffsetKeeper::commit`] of a batch in columns (as it crosses JNI).
    ///
    /// During a move between stores, a batch stored in the authoritative store is handed to
    /// the mirror's writer; the commit does not wait for it ([`crate::mirror`]).
    pub fn commit_batch(&self, group: &str, batch: &CommitBatch) -> Result<CommitSummary> {
        let summary = match &self.store {
            Keeping::ZooKeeper(zk) => self.explained(commit::commit(zk, group, batch)),
            Keeping::Kafka(kafka) => kafka.commit(group, batch),
        }?;
        if let Some(mirror) = &self.mirror {
            // A deferred batch is mirrored once it is stored, with the commit that stores it.
            if !summary.deferred {
                mirror.enqueue(group, batch.pairs());
            }
        }
        Ok(summary)
    }

    /// The mirror's state during a move between stores; `None` with one store.
    pub fn mirror_status(&self) -> Option<MirrorStatus> {
        self.mirror.as_ref().map(Mirror::status)
    }

    /// Waits until the mirror holds every offset committed so far, at most `timeout`; whether
    /// it does (true with one store).
    pub fn flush_mirror(&self, timeout: Duration) -> bool {
        self.mirror.as_ref().is_none_or(|m| m.flush(timeout))
    }

    /// How long one request to the store may take (ZooKeeper's request timeout, or the Kafka
    /// timeout).
    pub(crate) fn request_timeout(&self) -> Duration {
        match &self.store {
            Keeping::ZooKeeper(zk) => zk.store.config().request_timeout,
            Keeping::Kafka(kafka) => kafka.brokers().timeout(),
        }
    }

    /// An ACL refusal with the session's identities and the node's ACL
    /// ([`crate::zookeeper::ZkStore::explain_refusal`]); other results as they are.
    fn explained<T>(&self, result: Result<T>) -> Result<T> {
        match result {
            Err(
                err @ crate::Error::ZooKeeper {
                    source: zookeeper_client::Error::NoAuth,
                    ..
                },
            ) => Err(runtime()?.block_on(self.zk()?.store.explain_refusal(err))),
            other => other,
        }
    }

    /// The groups under the base path that have an `offsets` folder, sorted by name, each with
    /// its number of topic folders.
    pub fn groups(&self) -> Result<Vec<GroupSummary>> {
        self.explained(admin::groups(self.zk()?))
    }

    /// The topics a group has a folder for, sorted. Folders whose name is not a legal topic
    /// name (offsetkeeper never writes one) are left out with a WARN line.
    pub fn stored_topics(&self, group: &str) -> Result<Vec<String>> {
        match &self.store {
            Keeping::ZooKeeper(zk) => self.explained(admin::stored_topics(zk, group)),
            Keeping::Kafka(kafka) => kafka.stored_topics(group),
        }
    }

    /// Every offset a group stored for the topics, whether or not the partition still exists,
    /// in the order the topics are given then partition order. Children of a topic folder that
    /// are not partition numbers are left out with a WARN line.
    pub fn stored(&self, group: &str, topics: &[String]) -> Result<Vec<(TopicPartition, Stored)>> {
        match &self.store {
            Keeping::ZooKeeper(zk) => self.explained(admin::stored(zk, group, topics)),
            Keeping::Kafka(kafka) => kafka.stored(group, topics),
        }
    }

    /// The union of what a group stored for the topics and the partitions the brokers have,
    /// with each existing partition's range and whether its topic was re-created: the view of
    /// `describe` and `reset`. What it read of the topics' identity becomes what this keeper
    /// last saw, so that a reset's commit records the brokers' topic ID once it has written
    /// every stored partition of a re-created topic. A topic that is neither stored nor on the
    /// brokers is an [`Error::UnknownTopic`].
    pub fn survey(&self, group: &str, topics: &[String]) -> Result<Vec<Surveyed>> {
        match &self.store {
            Keeping::ZooKeeper(zk) => self.explained(admin::survey(zk, group, topics)),
            Keeping::Kafka(kafka) => kafka.survey(group, topics),
        }
    }

    /// Deletes the topics' folders and every offset in them, all in one multi. Returns the
    /// number of offset nodes deleted; topics the group has no folder for are skipped.
    pub fn delete_topics(&self, group: &str, topics: &[String]) -> Result<usize> {
        match &self.store {
            Keeping::ZooKeeper(zk) => self.explained(admin::delete_topics(zk, group, topics)),
            Keeping::Kafka(kafka) => kafka.delete_topics(group, topics),
        }
    }

    /// Deletes the offsets stored for the partitions, in one multi; the topic folders stay.
    /// Returns the number of nodes deleted; partitions with nothing stored are skipped.
    pub fn delete_partitions(&self, group: &str, partitions: &[TopicPartition]) -> Result<usize> {
        match &self.store {
            Keeping::ZooKeeper(zk) => {
                self.explained(admin::delete_partitions(zk, group, partitions))
            }
            Keeping::Kafka(kafka) => kafka.delete_partitions(group, partitions),
        }
    }

    /// The instances registered in the group (`<base>/<group>/ids`, ephemeral nodes of running
    /// keepers that own partitions), sorted: a group with any is active.
    pub fn active_instances(&self, group: &str) -> Result<Vec<String>> {
        match &self.store {
            Keeping::ZooKeeper(zk) => self.explained(admin::active_instances(zk, group)),
            Keeping::Kafka(kafka) => kafka.active_instances(group),
        }
    }

    /// The partitions of the topics, from broker metadata, in the order asked. An unknown topic
    /// is an error naming it.
    pub fn partitions(&self, topics: &[String]) -> Result<Vec<TopicPartition>> {
        admin::partitions(self.brokers()?, topics)
    }

    /// Every topic of the cluster but Kafka's internal ones, sorted.
    pub fn kafka_topics(&self) -> Result<Vec<String>> {
        admin::kafka_topics(self.brokers()?)
    }

    /// For each partition, the first offset whose record timestamp is at or after
    /// `timestamp_ms` (milliseconds since the epoch); `None` when no record is that recent.
    pub fn offsets_for_timestamp(
        &self,
        partitions: &[TopicPartition],
        timestamp_ms: i64,
    ) -> Result<std::collections::HashMap<TopicPartition, Option<i64>>> {
        admin::offsets_for_timestamp(self.brokers()?, partitions, timestamp_ms)
    }
}

impl Drop for OffsetKeeper {
    fn drop(&mut self) {
        // The mirror first: it writes what is pending before the keeper lets the group go.
        self.mirror.take();
        if let Keeping::Kafka(kafka) = &self.store {
            kafka.close();
        }
    }
}

impl Drop for ZkKeeper {
    /// Closing tries once to write the offsets of deferred commits, then releases ownership: the
    /// ownership nodes are deleted, then the ZooKeeper session is closed, which takes any that
    /// remain. It returns within the ZooKeeper request timeout (plus a moment for closing the
    /// session); ownership nodes it could not delete are named in a WARN, and go when the
    /// session expires, within the session timeout.
    fn drop(&mut self) {
        // Before anything else: no ownership is taken again while it is given up.
        self.reconnect.take();
        // Never block inside an async context; the session close still takes the nodes.
        if tokio::runtime::Handle::try_current().is_ok() {
            return;
        }
        let Ok(runtime) = runtime() else { return };
        let cx = &self.cx;
        let config = cx.store.config();
        let deadline = Instant::now() + config.request_timeout;
        commit::flush_deferred(cx, deadline);
        let left = deadline.saturating_duration_since(Instant::now());
        runtime.block_on(cx.owners.finish_all_following(&cx.store, left));
        let ops = cx.owners.release_ops(&config.base_path);
        if ops.is_empty() {
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let released = runtime.block_on(async {
            // The bound covers waiting for the session too.
            tokio::time::timeout(
                left,
                cx.store
                    .multi_on_live_session(&ops, left.min(RELEASE_TIMEOUT)),
            )
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "ZooKeeper did not answer within {} ms",
                    left.as_millis()
                ))
            })
        });
        if let Err(reason) = released {
            let paths: Vec<&str> = ops.iter().map(WriteOp::path).collect();
            let more = paths.len().saturating_sub(10);
            log::warn!(
                "closing could not remove the ownership nodes {}{} ({reason}); any left go when this keeper's ZooKeeper session expires, within its session timeout of {} ms",
                paths[..paths.len().min(10)].join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() },
                cx.store.session_timeout().as_millis()
            );
        }
        runtime.block_on(async {
            let _ = tokio::time::timeout(CLOSE_SESSION_TIMEOUT, cx.store.close_session()).await;
        });
        cx.owners.forget();
    }
}
