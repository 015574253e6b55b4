//! What a keeper knows of a ZooKeeper outage, shared by its commits and its background
//! reconnect (`crate::reconnect`). A commit deferred for want of ZooKeeper makes the outage
//! known; while it is, a commit waits for the reconnect at most the probe bound instead of a
//! whole ZooKeeper timeout, and is deferred at once after it; the reconnect ends the outage as
//! soon as ZooKeeper answers. So a batch is held one timeout at the outage's start, then about
//! nothing.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::config::defaults::{OUTAGE_PROBE, RECONNECT_BACKOFF_MAX, RECONNECT_BACKOFF_MIN};

/// Whether ZooKeeper is known to be out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Answering, as far as this keeper knows.
    Answering,
    /// Out: a commit that started at `since` could not reach it, and nothing answered since.
    Out { since: Instant },
}

/// The keeper's [`Reach`], watched by commits waiting for the reconnect and by the reconnect.
pub(crate) struct Outage {
    reach: watch::Sender<Reach>,
}

impl Outage {
    pub(crate) fn new() -> Outage {
        Outage {
            reach: watch::Sender::new(Reach::Answering),
        }
    }

    pub(crate) fn reach(&self) -> Reach {
        *self.reach.borrow()
    }

    /// A commit that started at `at` could not reach ZooKeeper. True when that makes the outage
    /// known (it was not yet): the caller starts the reconnect.
    pub(crate) fn began(&self, at: Instant) -> bool {
        self.reach.send_if_modified(|reach| begin(reach, at))
    }

    /// ZooKeeper answers: how long the outage was known, if it was.
    pub(crate) fn ended(&self) -> Option<Duration> {
        let mut lasted = None;
        self.reach.send_if_modified(|reach| {
            lasted = end(reach, Instant::now());
            lasted.is_some()
        });
        lasted
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<Reach> {
        self.reach.subscribe()
    }

    /// Waits up to `bound` for a known outage to end; whether ZooKeeper answers by then.
    pub(crate) async fn answers_within(&self, bound: Duration) -> bool {
        let mut reach = self.reach.subscribe();
        let answering = reach.wait_for(|reach| *reach == Reach::Answering);
        let answers = matches!(tokio::time::timeout(bound, answering).await, Ok(Ok(_)));
        answers
    }
}

fn begin(reach: &mut Reach, at: Instant) -> bool {
    match reach {
        Reach::Answering => {
            *reach = Reach::Out { since: at };
            true
        }
        // The outage runs since its first commit.
        Reach::Out { .. } => false,
    }
}

fn end(reach: &mut Reach, now: Instant) -> Option<Duration> {
    match *reach {
        Reach::Out { since } => {
            *reach = Reach::Answering;
            Some(now.saturating_duration_since(since))
        }
        Reach::Answering => None,
    }
}

/// How long a commit waits for ZooKeeper before it is deferred: `None` when no outage is known
/// (the whole ZooKeeper timeout, as any call), else the probe bound, never more than the timeout.
pub(crate) fn probe_bound(reach: Reach, request_timeout: Duration) -> Option<Duration> {
    match reach {
        Reach::Answering => None,
        Reach::Out { .. } => Some(OUTAGE_PROBE.min(request_timeout)),
    }
}

/// The pauses between the background reconnect's tries: doubling from the shortest to the
/// longest.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Backoff {
        Backoff {
            next: RECONNECT_BACKOFF_MIN,
        }
    }

    pub(crate) fn next_pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = (pause * 2).min(RECONNECT_BACKOFF_MAX);
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_runs_from_its_first_commit_until_zookeeper_answers() {
        let start = Instant::now();
        let mut reach = Reach::Answering;
        assert_eq!(end(&mut reach, start), None, "nothing to end");
        assert!(begin(&mut reach, start));
        // Later commits of the same outage do not move its start.
        assert!(!begin(&mut reach, start + Duration::from_secs(3)));
        assert_eq!(reach, Reach::Out { since: start });
        assert_eq!(
            end(&mut reach, start + Duration::from_secs(40)),
            Some(Duration::from_secs(40))
        );
        assert_eq!(reach, Reach::Answering);
        // The next outage is a new one.
        let later = start + Duration::from_secs(60);
        assert!(begin(&mut reach, later));
        assert_eq!(reach, Reach::Out { since: later });
    }

    #[test]
    fn the_watched_state_follows_the_outage() {
        let outage = Outage::new();
        let mut watching = outage.subscribe();
        assert_eq!(outage.reach(), Reach::Answering);
        assert!(outage.began(Instant::now()));
        assert!(!outage.began(Instant::now()));
        assert!(watching.has_changed().unwrap());
        assert!(matches!(*watching.borrow_and_update(), Reach::Out { .. }));
        assert!(outage.ended().is_some());
        assert_eq!(outage.ended(), None);
        assert_eq!(*watching.borrow_and_update(), Reach::Answering);
    }

    #[test]
    fn a_commit_probes_only_during_a_known_outage_and_never_past_its_timeout() {
        let timeout = Duration::from_secs(10);
        assert_eq!(probe_bound(Reach::Answering, timeout), None);
        let out = Reach::Out {
            since: Instant::now(),
        };
        assert_eq!(probe_bound(out, timeout), Some(OUTAGE_PROBE));
        let short = Duration::from_millis(100);
        assert_eq!(probe_bound(out, short), Some(short));
        assert!(OUTAGE_PROBE < Duration::from_secs(1), "a few hundred ms");
    }

    #[test]
    fn waiting_for_the_reconnect_ends_at_the_bound_or_when_zookeeper_answers() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let outage = Outage::new();
        runtime.block_on(async {
            assert!(outage.answers_within(Duration::ZERO).await, "no outage");
            outage.began(Instant::now());
            let started = Instant::now();
            assert!(!outage.answers_within(Duration::from_millis(50)).await);
            assert!(started.elapsed() >= Duration::from_millis(50));
            let (answers, ()) =
                tokio::join!(outage.answers_within(Duration::from_secs(10)), async {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    outage.ended();
                });
            assert!(answers);
            assert!(started.elapsed() < Duration::from_secs(5));
        });
    }

    #[test]
    fn reconnect_pauses_double_up_to_the_longest() {
        let mut backoff = Backoff::new();
        let pauses: Vec<Duration> = (0..8).map(|_| backoff.next_pause()).collect();
        assert_eq!(pauses[0], RECONNECT_BACKOFF_MIN);
        assert_eq!(pauses[1], RECONNECT_BACKOFF_MIN * 2);
        assert!(pauses.windows(2).all(|w| w[0] <= w[1]), "{pauses:?}");
        assert_eq!(*pauses.last().unwrap(), RECONNECT_BACKOFF_MAX);
    }
}
