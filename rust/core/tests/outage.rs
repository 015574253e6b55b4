//! Commits riding out a ZooKeeper outage, for real: a one-node ensemble of its own
//! (`tests/cluster/ensemble.sh`) stopped or frozen (SIGSTOP) for longer than the request
//! timeout. What must hold: a commit during the outage is deferred (no error) until the commit
//! outage tolerance passes, then fails with `Error::Timeout` saying for how long; the first
//! commit after the outage writes the newest offsets, deferred ones included, in one multi;
//! stored offsets never go backwards; conflicts still fail; a tolerance of zero fails at once
//! as before; closing during an outage returns within its bound; a timeout is always
//! `Error::Timeout`, never a ZooKeeper error naming a znode.
//!
//! The tests that load (ownership) use the shared cluster's Kafka (`gradle clusterStart`).

mod support;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use offsetkeeper::{
    CommitSummary, Error, KeeperConfig, OffsetKeeper, Stored, TopicPartition, ZkConfig,
};
use support::{batch, cluster, keeper_with, unique, Cluster, Ensemble, Kafka};

/// One ensemble at a time: the tests measure timeouts on a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

const REQUEST_TIMEOUT: Duration = Duration::from_secs(1);
/// Scheduling and connection slack on a busy machine.
const SLACK: Duration = Duration::from_secs(3);

fn keeper_on(
    connect: &str,
    bootstrap: &str,
    tweak: impl FnOnce(&mut KeeperConfig),
) -> OffsetKeeper {
    let servers = Cluster {
        zookeeper: connect.to_string(),
        bootstrap: bootstrap.to_string(),
    };
    keeper_with(&servers, &[], |config| {
        config.zookeeper.request_timeout = REQUEST_TIMEOUT;
        config.zookeeper.session_timeout = Duration::from_secs(6);
        config.commit_outage_tolerance = Duration::from_secs(120);
        tweak(config);
    })
}

/// What another session reads: each partition's stored offset, waiting for ZooKeeper to answer.
fn stored(connect: &str, group: &str, topic: &str) -> Vec<Option<i64>> {
    let mut config = ZkConfig::new(connect);
    config.request_timeout = Duration::from_secs(2);
    let reader = OffsetKeeper::open_zookeeper_only(config).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match reader.stored(group, &[topic.to_string()]) {
            Ok(stored) => {
                return stored
                    .into_iter()
                    .map(|(_, s)| match s {
                        Stored::Offset(v) => Some(v),
                        _ => None,
                    })
                    .collect()
            }
            Err(err) => {
                assert!(Instant::now() < deadline, "no read answered: {err}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// Commits until one goes through (ZooKeeper is coming back), for at most 30 s.
fn commit_until_written(
    keeper: &OffsetKeeper,
    group: &str,
    offsets: &[(TopicPartition, i64)],
) -> CommitSummary {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // With a tolerance of zero, errors while the client reconnects.
        match keeper.commit(group, offsets) {
            Ok(summary) if !summary.deferred => return summary,
            Ok(_) => {}
            Err(err) => assert!(err.is_zookeeper_unreachable(), "{err:?}"),
        }
        assert!(
            Instant::now() < deadline,
            "commits still deferred 30 s after the outage"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A commit during the outage: deferred, no error, within the request timeout (twice when the
/// session is opened again) plus slack.
fn deferred_commit(
    keeper: &OffsetKeeper,
    group: &str,
    offsets: &[(TopicPartition, i64)],
) -> CommitSummary {
    let t = Instant::now();
    let summary = keeper
        .commit(group, offsets)
        .unwrap_or_else(|err| panic!("a commit during the outage failed: {err}"));
    assert!(
        summary.deferred,
        "a commit went through during the outage: {summary:?}"
    );
    assert!(
        t.elapsed() < REQUEST_TIMEOUT * 2 + SLACK,
        "deferring took {:?}",
        t.elapsed()
    );
    summary
}

/// Outage, deferred commits, recovery: the first commit after writes the newest offsets of
/// every partition, those of deferred commits it does not carry included.
fn ride_out(down: &str, up: &str) -> String {
    let ensemble = Ensemble::start(&format!("outage-{down}"), 1);
    let keeper = keeper_on(&ensemble.connect, "127.0.0.1:1", |_| {});
    let (group, topic) = (unique("g"), unique("t"));
    keeper.commit(&group, &batch(&topic, 3, 10)).unwrap();
    assert_eq!(stored(&ensemble.connect, &group, &topic), vec![Some(10); 3]);

    ensemble.node(down, 1);
    let first = deferred_commit(&keeper, &group, &batch(&topic, 3, 20));
    assert_eq!((first.pending, first.written, first.requests), (3, 0, 0));
    // A second one, of two partitions only, during the same outage.
    let second = deferred_commit(&keeper, &group, &batch(&topic, 2, 30));
    assert_eq!(second.pending, 3, "{second:?}");
    assert!(second.behind > first.behind, "{first:?} then {second:?}");
    assert!(second.behind >= REQUEST_TIMEOUT, "{second:?}");
    ensemble.node(up, 1);

    // The next commit carries partition 0 only: 1 gets 30, 2 gets 20 from the deferred ones.
    // A request the client had queued may have reached the server once it answered again
    // (its outcome was unknown): then a partition already holds its deferred offset.
    let after = commit_until_written(
        &keeper,
        &group,
        &[(TopicPartition::new(topic.as_str(), 0), 40)],
    );
    assert_eq!(
        (
            after.pending,
            after.written + after.unchanged,
            after.requests
        ),
        (0, 3, 1),
        "{after:?}"
    );
    assert_eq!(
        stored(&ensemble.connect, &group, &topic),
        vec![Some(40), Some(30), Some(20)]
    );
    // Nothing is deferred any more; monotonic: an older batch does not take offsets back.
    let older = keeper.commit(&group, &batch(&topic, 3, 15)).unwrap();
    assert_eq!((older.deferred, older.skipped), (false, 3));
    assert_eq!(
        stored(&ensemble.connect, &group, &topic),
        vec![Some(40), Some(30), Some(20)]
    );
    format!(
        "deferred after {:?} and {:?} behind, then one multi wrote 3 partitions",
        first.behind, second.behind
    )
}

#[test]
fn commits_ride_out_a_stopped_zookeeper() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let report = ride_out("stop-node", "start-node");
    println!("OUTAGE zookeeper stopped: {report}");
}

#[test]
fn commits_ride_out_a_frozen_zookeeper() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let report = ride_out("freeze", "thaw");
    println!("OUTAGE zookeeper frozen: {report}");
}

#[test]
fn a_tolerance_of_zero_fails_at_once_with_a_timeout() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ensemble = Ensemble::start("outage-zero", 1);
    let keeper = keeper_on(&ensemble.connect, "127.0.0.1:1", |c| {
        c.commit_outage_tolerance = Duration::ZERO;
    });
    let (group, topic) = (unique("g"), unique("t"));
    keeper.commit(&group, &batch(&topic, 2, 1)).unwrap();
    ensemble.node("freeze", 1);
    let t = Instant::now();
    let err = keeper.commit(&group, &batch(&topic, 2, 2)).unwrap_err();
    let took = t.elapsed();
    ensemble.node("thaw", 1);
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains(&ensemble.connect), "{message}");
    assert!(took < REQUEST_TIMEOUT * 2 + SLACK, "failing took {took:?}");
    // Nothing kept: the next commit writes its own batch only.
    let next = commit_until_written(
        &keeper,
        &group,
        &[(TopicPartition::new(topic.as_str(), 0), 3)],
    );
    assert_eq!(next.written, 1);
    // The failed commit's request may have reached the server once thawed (its outcome was
    // unknown); nothing of it is written again.
    let now = stored(&ensemble.connect, &group, &topic);
    assert!(
        now == [Some(3), Some(1)] || now == [Some(3), Some(2)],
        "{now:?}"
    );

    // Stopped rather than frozen: an error that says ZooKeeper could not be reached.
    ensemble.node("stop-node", 1);
    let err = keeper.commit(&group, &batch(&topic, 2, 4)).unwrap_err();
    ensemble.node("start-node", 1);
    assert!(err.is_zookeeper_unreachable(), "{err:?}");
    println!("OUTAGE tolerance 0: frozen -> {message} ({took:?}); stopped -> {err}");
}

#[test]
fn past_the_tolerance_commits_fail_with_a_timeout_saying_how_long() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ensemble = Ensemble::start("outage-tolerance", 1);
    let tolerance = Duration::from_secs(2);
    let keeper = keeper_on(&ensemble.connect, "127.0.0.1:1", |c| {
        c.commit_outage_tolerance = tolerance;
    });
    let (group, topic) = (unique("g"), unique("t"));
    keeper.commit(&group, &batch(&topic, 2, 1)).unwrap();
    ensemble.node("freeze", 1);
    let first = Instant::now();
    deferred_commit(&keeper, &group, &batch(&topic, 2, 2));
    if let Some(rest) = tolerance.checked_sub(first.elapsed()) {
        std::thread::sleep(rest);
    }
    let err = keeper.commit(&group, &batch(&topic, 2, 3)).unwrap_err();
    ensemble.node("thaw", 1);
    let Error::Timeout { after, .. } = &err else {
        panic!("not a timeout: {err:?}");
    };
    assert!(*after >= tolerance, "{err}");
    let message = err.to_string();
    assert!(message.contains("commit outage tolerance"), "{message}");
    assert!(
        message.contains(&format!("{} ms", after.as_millis())),
        "{message}"
    );
    assert!(message.contains(&ensemble.connect), "{message}");
    // Still pending after the error: the first commit after the outage writes the newest.
    let next = commit_until_written(
        &keeper,
        &group,
        &[(TopicPartition::new(topic.as_str(), 0), 4)],
    );
    assert_eq!(next.written + next.unchanged, 2, "{next:?}");
    assert_eq!(
        stored(&ensemble.connect, &group, &topic),
        vec![Some(4), Some(3)]
    );
    println!("OUTAGE past a tolerance of {tolerance:?}: {message}");
}

#[test]
fn a_conflict_after_an_outage_still_fails() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ensemble = Ensemble::start("outage-conflict", 1);
    let keeper = keeper_on(&ensemble.connect, "127.0.0.1:1", |_| {});
    let (group, topic) = (unique("g"), unique("t"));
    keeper.commit(&group, &batch(&topic, 2, 1)).unwrap();
    ensemble.node("stop-node", 1);
    deferred_commit(&keeper, &group, &batch(&topic, 2, 2));
    ensemble.node("start-node", 1);
    // Another writer (an operator's reset) changes partition 0 meanwhile.
    let mut config = ZkConfig::new(ensemble.connect.clone());
    config.request_timeout = Duration::from_secs(5);
    let other = OffsetKeeper::open_zookeeper_only(config).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Err(err) = other.commit(&group, &[(TopicPartition::new(topic.as_str(), 0), 100)]) {
        assert!(
            Instant::now() < deadline,
            "the other writer never got through: {err}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let err = loop {
        match keeper.commit(&group, &batch(&topic, 2, 3)) {
            Ok(summary) if summary.deferred && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(200));
            }
            Ok(summary) => panic!("a commit over another writer's change returned {summary:?}"),
            Err(err) => break err,
        }
    };
    assert!(matches!(err, Error::CommitConflict { .. }), "{err:?}");
    // The conflicting commit wrote nothing (3 nowhere). Partition 1 holds 1, or 2 when the client
    // sent the deferred commit's multi once ZooKeeper was back, before the other writer's change:
    // a write of unknown outcome that may land later, which the engine settles on its next read.
    let now = stored(&ensemble.connect, &group, &topic);
    assert!(
        now == vec![Some(100), Some(1)] || now == vec![Some(100), Some(2)],
        "{now:?}"
    );
    println!("OUTAGE conflict after the outage: {err}");
}

#[test]
fn closing_during_an_outage_returns_within_its_bound() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ensemble = Ensemble::start("outage-close", 1);
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let (group, topic) = (unique("g"), unique("close"));
    kafka.create_topic(&topic, 2);
    let keeper = keeper_on(&ensemble.connect, &cluster.bootstrap, |_| {});
    keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
    keeper.commit(&group, &batch(&topic, 2, 1)).unwrap();
    ensemble.node("freeze", 1);
    deferred_commit(&keeper, &group, &batch(&topic, 2, 2));
    let t = Instant::now();
    drop(keeper);
    let took = t.elapsed();
    ensemble.node("thaw", 1);
    // The bound: the request timeout (a moment more for closing the session).
    assert!(
        took < REQUEST_TIMEOUT + Duration::from_millis(1500),
        "closing took {took:?}"
    );
    // What was stored before the outage, or the deferred commit's request, which the server
    // had received and applies once thawed; never a torn batch.
    let now = stored(&ensemble.connect, &group, &topic);
    assert!(now == [Some(1); 2] || now == [Some(2); 2], "{now:?}");
    println!("OUTAGE close during a frozen ZooKeeper returned in {took:?}");
}

#[test]
fn closing_after_an_outage_writes_the_deferred_offsets() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ensemble = Ensemble::start("outage-flush", 1);
    let keeper = keeper_on(&ensemble.connect, "127.0.0.1:1", |c| {
        c.zookeeper.request_timeout = Duration::from_secs(3);
    });
    let (group, topic) = (unique("g"), unique("t"));
    keeper.commit(&group, &batch(&topic, 2, 1)).unwrap();
    ensemble.node("stop-node", 1);
    let summary = keeper.commit(&group, &batch(&topic, 2, 2)).unwrap();
    assert!(summary.deferred);
    ensemble.node("start-node", 1);
    // Give the client a moment to find the server again, then close.
    std::thread::sleep(Duration::from_secs(2));
    drop(keeper);
    assert_eq!(stored(&ensemble.connect, &group, &topic), vec![Some(2); 2]);
}

#[test]
fn a_frozen_zookeeper_under_an_ownership_checking_commit_is_a_timeout() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ensemble = Ensemble::start("outage-owner", 1);
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let (group, topic) = (unique("g"), unique("owned"));
    kafka.create_topic(&topic, 2);
    let keeper = keeper_on(&ensemble.connect, &cluster.bootstrap, |c| {
        c.commit_outage_tolerance = Duration::ZERO;
    });
    keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
    // Versions and folders known: the next commit is one multi whose first operation checks
    // this keeper's ids node.
    keeper.commit(&group, &batch(&topic, 2, 1)).unwrap();
    ensemble.node("freeze", 1);
    let err = keeper.commit(&group, &batch(&topic, 2, 2)).unwrap_err();
    ensemble.node("thaw", 1);
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains(&ensemble.connect), "{message}");
    assert!(message.contains("multi-write"), "{message}");
    assert!(!message.contains("/ids/"), "{message}");
    println!("OUTAGE ownership-checking multi on a frozen ZooKeeper: {message}");
}

#[test]
fn after_an_outage_longer_than_the_session_ownership_is_taken_again_or_refused() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ensemble = Ensemble::start("outage-session", 1);
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let (group, topic) = (unique("g"), unique("expired"));
    kafka.create_topic(&topic, 2);
    // Sessions of 4 s (the ensemble's tick is 1 s); each freeze lasts 7 s.
    let sessions = |c: &mut KeeperConfig| {
        c.zookeeper.session_timeout = Duration::from_secs(4);
        c.ownership.wait = Some(Duration::from_secs(15));
    };
    let keeper = keeper_on(&ensemble.connect, &cluster.bootstrap, sessions);
    keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
    keeper.commit(&group, &batch(&topic, 2, 1)).unwrap();
    let session_before = keeper.zookeeper_session().map(|s| s.id());

    // Alone in the group: the first commit after takes ownership again and writes the newest.
    ensemble.node("freeze", 1);
    deferred_commit(&keeper, &group, &batch(&topic, 2, 2));
    std::thread::sleep(Duration::from_secs(7));
    ensemble.node("thaw", 1);
    let after = commit_until_written(
        &keeper,
        &group,
        &[(TopicPartition::new(topic.as_str(), 0), 3)],
    );
    assert_eq!(after.pending, 0, "{after:?}");
    assert_eq!(
        stored(&ensemble.connect, &group, &topic),
        vec![Some(3), Some(2)]
    );
    let session_after = keeper.zookeeper_session().map(|s| s.id());
    assert_ne!(
        session_before, session_after,
        "the session outlived the freeze"
    );

    // Another instance takes the group meanwhile: the first commit after fails, writing nothing.
    ensemble.node("freeze", 1);
    deferred_commit(&keeper, &group, &batch(&topic, 2, 4));
    std::thread::sleep(Duration::from_secs(7));
    ensemble.node("thaw", 1);
    let successor = keeper_on(&ensemble.connect, &cluster.bootstrap, sessions);
    successor
        .load(&group, std::slice::from_ref(&topic))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let err = loop {
        match keeper.commit(&group, &batch(&topic, 2, 5)) {
            Ok(summary) if summary.deferred && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(200));
            }
            Ok(summary) => panic!("a commit over the successor's ownership returned {summary:?}"),
            Err(err) => break err,
        }
    };
    assert!(
        matches!(&err, Error::CommitConflict { detail, .. } if detail.contains("owns the partition")),
        "{err:?}"
    );
    // What was stored before, or the deferred commit's request, which the frozen server had
    // received and may apply once thawed; never the refused commit.
    let now = stored(&ensemble.connect, &group, &topic);
    assert!(now == [Some(3), Some(2)] || now == [Some(4); 2], "{now:?}");
    println!("OUTAGE longer than the session: ownership taken again alone; refused after a successor took the group: {err}");
}
