//! What a keeper's operations share: the ZooKeeper store, the Kafka client, the ownership
//! nodes, the tracked state and the settings. Load, commit and admin take it by reference.

use std::time::Duration;

use crate::config::Ownership;
use crate::error::{Error, Result};
use crate::kafka::Brokers;
use crate::ownership::Owners;
use crate::tracked::Tracked;
use crate::validate::Policy;
use crate::zookeeper::layout::GroupLayout;
use crate::zookeeper::ZkStore;

pub(crate) struct Context {
    pub(crate) store: ZkStore,
    /// `None` for a keeper opened for ZooKeeper-only work.
    pub(crate) brokers: Option<Brokers>,
    pub(crate) owners: Owners,
    /// What this keeper saw of the offset nodes; held through each commit.
    pub(crate) tracked: Tracked,
    pub(crate) policy: Policy,
    pub(crate) fencing: bool,
    pub(crate) monotonic: bool,
    pub(crate) ownership: Ownership,
    pub(crate) commit_outage_tolerance: Duration,
    /// See [`crate::KeeperConfig::recreated_timestamp_tolerance`].
    pub(crate) recreated_timestamp_tolerance: Option<Duration>,
}

impl Context {
    /// The Kafka client, or an error when this keeper was opened without Kafka.
    pub(crate) fn brokers(&self) -> Result<&Brokers> {
        self.brokers.as_ref().ok_or_else(|| {
            Error::invalid(
                "this operation reads the Kafka brokers, but no bootstrap.servers was given",
            )
        })
    }

    /// How long a load (or a first commit without a load) waits for another owner to go: from
    /// the session timeout the servers granted (they may cut what was asked), once a session
    /// is open.
    pub(crate) fn ownership_wait(&self) -> Duration {
        self.ownership.wait_for(self.store.session_timeout())
    }

    /// The group's paths under this keeper's base path.
    pub(crate) fn layout<'a>(&'a self, group: &'a str) -> GroupLayout<'a> {
        GroupLayout {
            base_path: &self.store.config().base_path,
            group,
        }
    }

    /// The ZooKeeper request timeout: the deadline of one call.
    pub(crate) fn request_timeout(&self) -> Duration {
        self.store.config().request_timeout
    }
}
