//! Servers that stop: calls fail within their timeout with a clear error, and nothing is
//! half-written. These tests run on a cluster of their own, since they stop and kill its
//! servers.

mod support;

use std::time::{Duration, Instant};

use offsetkeeper::{Error, TopicPartition};
use support::{keeper_with, offset_path, unique, Kafka, PrivateCluster, Zk};

const TIMEOUT: Duration = Duration::from_secs(3);
/// Slack for thread scheduling and connection set-up on a busy 2-core machine.
const SLACK: Duration = Duration::from_secs(4);

fn offsets(topic: &str, offset: i64) -> Vec<(TopicPartition, i64)> {
    (0..3)
        .map(|p| (TopicPartition::new(topic, p), offset))
        .collect()
}

#[test]
#[ignore = "stops, freezes or cuts servers for minutes: run by `gradle cargoTestSlow`"]
fn stopped_servers_fail_calls_within_their_timeout_and_nothing_is_half_written() {
    let private = PrivateCluster::start("faults");
    let cluster = private.cluster.clone();
    let kafka = Kafka::new(&cluster);
    let (group, topic) = (unique("g"), unique("faulty"));
    kafka.create_topic(&topic, 3);
    for p in 0..3 {
        kafka.produce(&topic, p, 5);
    }
    let keeper = keeper_with(&cluster, &[], |c| {
        c.kafka_timeout = Some(TIMEOUT);
        c.zookeeper.request_timeout = TIMEOUT;
        c.zookeeper.session_timeout = Duration::from_secs(6);
    });
    keeper.commit(&group, &offsets(&topic, 2)).unwrap();
    assert_eq!(
        keeper
            .load(&group, std::slice::from_ref(&topic))
            .unwrap()
            .partitions
            .len(),
        3
    );

    // Broker down: load fails after its timeout, naming Kafka.
    private.run("stop-kafka");
    let started = Instant::now();
    let err = keeper
        .load(&group, std::slice::from_ref(&topic))
        .unwrap_err();
    let took = started.elapsed();
    assert!(took < TIMEOUT * 2 + SLACK, "load took {took:?}");
    assert!(
        matches!(err, Error::Timeout { .. } | Error::Kafka { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("Kafka"), "{err}");
    private.run("start-kafka");
    // The keeper's Kafka client reconnects to the restarted broker (bounded), so that the
    // next failures are ZooKeeper's alone.
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Err(err) = keeper.load(&group, std::slice::from_ref(&topic)) {
        assert!(
            Instant::now() < deadline,
            "the keeper did not reach Kafka again: {err}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }

    // ZooKeeper down: a commit is deferred after its timeout (within the commit outage
    // tolerance), a load fails after its timeout, naming ZooKeeper.
    private.run("stop-zk");
    let started = Instant::now();
    let summary = keeper.commit(&group, &offsets(&topic, 4)).unwrap();
    let took = started.elapsed();
    assert!(took < TIMEOUT * 2 + SLACK, "commit took {took:?}");
    assert!(summary.deferred && summary.written == 0, "{summary:?}");
    let started = Instant::now();
    let err = keeper
        .load(&group, std::slice::from_ref(&topic))
        .unwrap_err();
    let took = started.elapsed();
    assert!(took < TIMEOUT * 2 + SLACK, "load took {took:?}");
    assert!(err.to_string().contains("ZooKeeper"), "{err}");
    private.run("start-zk");

    // Back up: every offset is still the last committed batch, and the keeper works again.
    let zk = Zk::new(&cluster);
    for p in 0..3 {
        assert_eq!(zk.get(&offset_path(&group, &topic, p)), Some(b"2".to_vec()));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let loaded = loop {
        match keeper.load(&group, std::slice::from_ref(&topic)) {
            Ok(loaded) => break loaded,
            Err(err) if Instant::now() < deadline => {
                eprintln!("waiting for the cluster to recover: {err}");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(err) => panic!("keeper did not recover: {err}"),
        }
    };
    assert!(loaded.offsets().all(|(_, offset)| offset == 2));

    // The broker killed (SIGKILL) while loads run: the load in flight and the next ones fail
    // within the Kafka timeout, and nothing is written.
    let zk_before = zk.tree(&format!("/consumers/{group}/offsets"));
    let kafka_pid = std::fs::read_to_string(private.dir.join("kafka.pid")).unwrap();
    let (mut ok, mut failed) = (0, Vec::new());
    std::thread::scope(|scope| {
        let killer = scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(400));
            let status = std::process::Command::new("kill")
                .args(["-KILL", kafka_pid.trim()])
                .status()
                .unwrap();
            assert!(status.success());
            Instant::now()
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        while failed.len() < 3 && Instant::now() < deadline {
            let started = Instant::now();
            match keeper.load(&group, std::slice::from_ref(&topic)) {
                Ok(_) => ok += 1,
                Err(err) => failed.push((started, started.elapsed(), err)),
            }
        }
        let killed_at = killer.join().unwrap();
        assert!(
            failed.len() >= 3,
            "loads kept succeeding after the broker was killed"
        );
        for (started, took, err) in &failed {
            assert!(
                *took < TIMEOUT * 2 + SLACK,
                "a load failed after {took:?}: {err}"
            );
            assert!(
                matches!(err, Error::Timeout { .. } | Error::Kafka { .. }),
                "{err:?}"
            );
            // Only the load in flight at the kill may have started before it.
            assert!(
                *started + SLACK >= killed_at,
                "a load before the kill failed: {err}"
            );
        }
    });
    assert_eq!(zk.tree(&format!("/consumers/{group}/offsets")), zk_before);
    println!(
        "FAULT broker killed during loads: {ok} loads before the kill, then {} failed in {:?} ({})",
        failed.len(),
        failed.iter().map(|f| f.1).collect::<Vec<_>>(),
        failed
            .iter()
            .map(|f| format!("{}", f.2))
            .collect::<Vec<_>>()
            .join(" | ")
    );
}
