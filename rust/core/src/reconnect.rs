//! The background reconnect: once a deferred commit made a ZooKeeper outage known
//! ([`crate::zookeeper::outage`]), a task on the engine's runtime tries to get a working session,
//! pausing between tries (100 ms doubling to 1 s), until ZooKeeper answers. It then takes this
//! keeper's ownership again where it went with an expired session (or records that another
//! instance has the group, for the group's next commit to report), and ends the outage, so that
//! the next commit writes the newest offsets at once. One task per keeper, idle between
//! outages; it ends when the keeper closes (aborted) or is gone (it holds no strong reference).

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::config::defaults::{OUTAGE_PROBE, RECONNECT_BACKOFF_MAX};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::runtime::runtime;
use crate::zookeeper::outage::{Backoff, Reach};

/// The keeper's reconnect task; aborted when dropped.
pub(crate) struct Reconnect {
    task: tokio::task::AbortHandle,
}

impl Reconnect {
    /// Starts the keeper's reconnect task, idle until an outage is known.
    pub(crate) fn start(cx: &Arc<Context>) -> Result<Reconnect> {
        let reach = cx.store.outage().subscribe();
        let task = runtime()?.spawn(run(Arc::downgrade(cx), reach));
        Ok(Reconnect {
            task: task.abort_handle(),
        })
    }
}

impl Drop for Reconnect {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn run(cx: Weak<Context>, mut reach: watch::Receiver<Reach>) {
    loop {
        // Errs once the keeper's store is gone.
        if reach
            .wait_for(|reach| matches!(reach, Reach::Out { .. }))
            .await
            .is_err()
        {
            return;
        }
        if !recover(&cx).await {
            return;
        }
    }
}

/// Tries until ZooKeeper answers, then takes ownership again and ends the outage. False when
/// the keeper is gone.
async fn recover(cx: &Weak<Context>) -> bool {
    let started = Instant::now();
    let mut backoff = Backoff::new();
    let mut tries = 0u32;
    if let Some(cx) = cx.upgrade() {
        log::info!(
            "ZooKeeper at {} cannot be reached: reconnecting in the background, trying again at least every {} ms for as long as the outage lasts (commits meanwhile are deferred within {} ms)",
            cx.store.config().connect,
            RECONNECT_BACKOFF_MAX.as_millis(),
            OUTAGE_PROBE.min(cx.request_timeout()).as_millis()
        );
    }
    loop {
        let Some(strong) = cx.upgrade() else {
            return false;
        };
        tries += 1;
        match strong.store.probe_quietly().await {
            Ok(()) => break,
            Err(err) if err.is_zookeeper_unreachable() => {
                log::debug!("background reconnect, try {tries}: {err}");
            }
            // ZooKeeper answers, refusing (authentication, a chroot gone): the outage is over,
            // and the calls say why they fail.
            Err(err) => {
                log::warn!("ZooKeeper answers again but refused the background reconnect: {err}");
                break;
            }
        }
        drop(strong);
        tokio::time::sleep(backoff.next_pause()).await;
    }
    let Some(cx) = cx.upgrade() else {
        return false;
    };
    // Ownership first: a commit let through by the end of the outage finds its nodes in place.
    take_ownership_again(&cx).await;
    let known = cx.store.outage().ended().unwrap_or_default();
    log::info!(
        "ZooKeeper at {} answers again: reconnected in the background after {} ms ({tries} tries; the outage was known for {} ms); the next commit writes the newest offsets",
        cx.store.config().connect,
        started.elapsed().as_millis(),
        known.as_millis()
    );
    true
}

/// Takes the partitions of every group this keeper owns again where they went with an expired
/// session, without waiting for anyone (as a commit finding its ownership gone does). Another
/// instance holding them is recorded for the group's next commit to fail with.
async fn take_ownership_again(cx: &Context) {
    if !cx.ownership.enabled {
        return;
    }
    let session = cx.store.session_id().await;
    for group in cx.owners.groups() {
        let owned = cx.owners.owned_in(&group);
        let held = session.is_some() && cx.owners.confirmed_in(&group) == session;
        let taken = cx
            .store
            .bounded(
                cx.request_timeout(),
                cx.owners.acquire(&cx.store, &group, &owned, Duration::ZERO),
            )
            .await;
        match taken {
            Ok(()) if held => {}
            Ok(()) => log::info!(
                "group {group}: ownership of {} partition(s) is in place again on ZooKeeper session 0x{:x}",
                owned.len(),
                session.unwrap_or_default()
            ),
            Err(Error::Owned {
                partition, owner, ..
            }) => {
                log::warn!(
                    "group {group}: ZooKeeper answers again, but another instance, {owner}, owns {partition} now (this keeper's session expired during the outage); the group's next commit fails, writing nothing"
                );
                cx.owners.refused(&group, partition, owner);
            }
            // The group's next commit tries again, as it would have without this.
            Err(err) => log::warn!(
                "group {group}: ownership not taken again after the outage ({err}); the next commit tries"
            ),
        }
    }
}
