//! ZooKeeper deadlines against real servers: a ZooKeeper chroot that does not exist fails every
//! call with one clear error, and with ZooKeeper stopped or frozen (SIGSTOP) every call ends
//! within its timeout, as [`Error::Timeout`] whichever layer noticed it. The stopped and frozen
//! ZooKeeper is an ensemble of one of the test's own (`tests/cluster/ensemble.sh`); Kafka is the
//! shared cluster's.

mod support;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use offsetkeeper::{Error, OffsetKeeper, ZkConfig};
use support::{batch, cluster, keeper_with, unique, Cluster, Ensemble, Kafka, Zk};

/// One ensemble at a time: the tests measure timeouts on a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

const TIMEOUT: Duration = Duration::from_millis(2000);

/// Thread wake-ups and scheduling on a small machine shared with builds (a few hundred ms at
/// worst, as measured); far less than the timeout a second wait would add.
const SLACK: Duration = Duration::from_millis(500);

/// The bound every call must meet: its timeout plus 20%, plus [`SLACK`].
fn bound() -> Duration {
    TIMEOUT.mul_f64(1.2) + SLACK
}

fn timed<T>(call: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let result = call();
    (result, started.elapsed())
}

fn keeper_on(cluster: &Cluster, ownership: bool) -> OffsetKeeper {
    keeper_with(cluster, &[], |config| {
        config.zookeeper.request_timeout = TIMEOUT;
        config.zookeeper.session_timeout = Duration::from_secs(6);
        config.ownership.enabled = ownership;
        config.ownership.wait = Some(Duration::from_secs(1));
        config.commit_outage_tolerance = Duration::ZERO;
    })
}

/// Asserts a call failed with [`Error::Timeout`] naming ZooKeeper, within [`bound`].
fn assert_timeout<T: std::fmt::Debug>(
    what: &str,
    (result, took): (offsetkeeper::Result<T>, Duration),
) {
    let err = result.expect_err(what);
    assert!(
        matches!(&err, Error::Timeout { server, .. } if server.starts_with("ZooKeeper")),
        "{what}: not a ZooKeeper timeout: {err:?}"
    );
    assert!(
        took <= bound(),
        "{what} took {took:?} (bound {:?}): {err}",
        bound()
    );
    println!("DEADLINE {what}: {} ms: {err}", took.as_millis());
}

#[test]
fn a_missing_chroot_fails_every_call_clearly_and_is_not_created() {
    let shared = cluster();
    let kafka = Kafka::new(&shared);
    let topic = unique("chroot");
    kafka.create_topic(&topic, 2);
    let chroot = format!("/{}", unique("newroot"));
    let rooted = Cluster {
        zookeeper: format!("{}{chroot}", shared.zookeeper),
        bootstrap: shared.bootstrap.clone(),
    };
    let group = unique("g");
    let topics = [topic.clone()];
    let check = |what: &str, err: Error, took: Duration| {
        let message = err.to_string();
        assert!(
            matches!(err, Error::MissingChroot { .. }),
            "{what}: {err:?}"
        );
        assert!(
            message.contains(&format!("chroot '{chroot}'"))
                && message.contains(&rooted.zookeeper)
                && message.contains(&format!("zkCli.sh create {chroot}")),
            "{what}: {message}"
        );
        assert!(!message.contains("internal error"), "{what}: {message}");
        assert!(took <= bound(), "{what} took {took:?}: {message}");
    };

    let owning = keeper_on(&rooted, true);
    let (result, took) = timed(|| owning.load(&group, &topics));
    check("load with ownership", result.expect_err("load"), took);
    let (result, took) = timed(|| owning.commit(&group, &batch(&topic, 2, 5)));
    check("commit", result.expect_err("commit"), took);

    let plain = keeper_on(&rooted, false);
    let (result, took) = timed(|| plain.load(&group, &topics));
    check("load without ownership", result.expect_err("load"), took);

    let mut config = ZkConfig::new(rooted.zookeeper.clone());
    config.request_timeout = TIMEOUT;
    let operator = OffsetKeeper::open_zookeeper_only(config).expect("keeper");
    let (result, took) = timed(|| operator.groups());
    check("list groups", result.expect_err("groups"), took);
    let (result, took) = timed(|| operator.stored(&group, &topics));
    check("stored", result.expect_err("stored"), took);

    // Nothing was created, the chroot least of all.
    let zk = Zk::new(&shared);
    assert_eq!(zk.get(&chroot), None, "the chroot was created");

    // Once it exists, the same keepers work: a missing chroot is not remembered.
    zk.put(&chroot, b"");
    let loaded = owning
        .load(&group, &topics)
        .expect("load once the chroot exists");
    assert_eq!(loaded.partitions.len(), 2);
    owning.commit(&group, &batch(&topic, 2, 0)).expect("commit");
    assert_eq!(
        zk.get(&format!("{chroot}/consumers/{group}/offsets/{topic}/1")),
        Some(b"0".to_vec())
    );
    assert_eq!(operator.groups().expect("groups").len(), 1);
}

#[test]
fn with_zookeeper_stopped_every_call_ends_within_its_timeout() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    outage("stop-node", "start-node");
}

#[test]
fn with_zookeeper_frozen_every_call_ends_within_its_timeout_as_a_timeout() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    outage("freeze", "thaw");
}

/// Loads and commits of a new keeper and of one whose session is open, while ZooKeeper is
/// down (`stop-node`) or frozen (`freeze`).
fn outage(down: &str, up: &str) {
    let shared = cluster();
    let kafka = Kafka::new(&shared);
    let topic = unique("deadline");
    kafka.create_topic(&topic, 2);
    let ensemble = Ensemble::start("zk-deadline", 1);
    let servers = Cluster {
        zookeeper: ensemble.connect.clone(),
        bootstrap: shared.bootstrap.clone(),
    };
    let (group, topics) = (unique("g"), [topic.clone()]);
    let open = keeper_on(&servers, true);
    open.load(&group, &topics).expect("load before the outage");
    open.commit(&group, &batch(&topic, 2, 1))
        .expect("commit before the outage");

    ensemble.node(down, 1);
    // At once, while the session may still look alive to the client: the request itself waits.
    assert_timeout(
        &format!("{down}: commit on an open session"),
        timed(|| open.commit(&group, &batch(&topic, 2, 3))),
    );
    assert_timeout(
        &format!("{down}: load on an open session"),
        timed(|| open.load(&group, &topics)),
    );
    for ownership in [true, false] {
        let fresh = keeper_on(&servers, ownership);
        assert_timeout(
            &format!("{down}: first load of a new keeper (ownership {ownership})"),
            timed(|| fresh.load(&group, &topics)),
        );
        assert_timeout(
            &format!("{down}: commit of a new keeper (ownership {ownership})"),
            timed(|| fresh.commit(&group, &batch(&topic, 2, 2))),
        );
        let (_, took) = timed(|| drop(fresh));
        assert!(took <= bound(), "{down}: closing took {took:?}");
    }
    ensemble.node(up, 1);
}
