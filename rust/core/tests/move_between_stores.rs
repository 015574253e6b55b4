//! A move from ZooKeeper to Kafka's group store and back, against the real servers: the four
//! phases of `offsetkeeper.store` (`zookeeper`, `zookeeper,kafka`, `kafka,zookeeper`, `kafka`),
//! each one setting and one new keeper, with rollbacks; a mirror that cannot be reached never
//! fails or holds up a batch, and is repaired when it returns; no offset ever moves backwards.
//! ZooKeeper is reached through a proxy that the test cuts and heals.

mod support;

use std::time::{Duration, Instant};

use offsetkeeper::{KeeperConfig, OffsetKeeper, Stored};
use support::{batch, cluster, unique, Kafka, Proxy};

const PARTITIONS: i32 = 2;

/// A keeper of `store` (`offsetkeeper.store`), reaching ZooKeeper through `zookeeper`.
fn keeper(store: &str, zookeeper: &str, extra: &[(&str, &str)]) -> OffsetKeeper {
    let cluster = cluster();
    let mut properties = vec![
        ("bootstrap.servers", cluster.bootstrap.as_str()),
        ("zookeeper.connect", zookeeper),
        ("offsetkeeper.store", store),
        // A cut ZooKeeper fails a request within 3 s rather than the default.
        ("offsetkeeper.zookeeper.timeout.ms", "3000"),
    ];
    properties.extend_from_slice(extra);
    let config = KeeperConfig::from_properties(properties).expect("config");
    OffsetKeeper::open(config).expect("open keeper")
}

/// What each store holds for the topic's partitions, read by keepers that never own the group.
fn held(zookeeper: &str, group: &str, topic: &str) -> (Vec<Stored>, Vec<Stored>) {
    let read = |store: &str| -> Vec<Stored> {
        let reader = keeper(store, zookeeper, &[("offsetkeeper.ownership", "false")]);
        let stored = reader
            .stored(group, &[topic.to_string()])
            .unwrap_or_else(|e| panic!("read {store}: {e}"));
        (0..PARTITIONS)
            .map(|p| {
                stored
                    .iter()
                    .find(|(tp, _)| tp.partition == p)
                    .map_or(Stored::Missing, |(_, s)| s.clone())
            })
            .collect()
    };
    (read("zookeeper"), read("kafka"))
}

fn offsets(loaded: &offsetkeeper::Loaded) -> Vec<i64> {
    loaded.offsets().map(|(_, offset)| offset).collect()
}

fn at(value: i64) -> Vec<Stored> {
    vec![Stored::Offset(value); PARTITIONS as usize]
}

/// Waits until `done`, at most `within`, failing with `what`.
fn wait_for(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_group_moves_to_kafka_through_four_phases_and_back_with_no_offset_backwards() {
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let proxy = Proxy::to(&cluster.zookeeper);
    let zookeeper = proxy.address.clone();
    let (topic, group) = (unique("move"), unique("move-g"));
    kafka.create_topic(&topic, PARTITIONS);
    for p in 0..PARTITIONS {
        kafka.produce(&topic, p, 100);
    }
    let topics = vec![topic.clone()];

    // Phase 1, ZooKeeper only.
    let phase = keeper("zookeeper", &zookeeper, &[]);
    assert_eq!(offsets(&phase.load(&group, &topics).expect("load")), [0, 0]);
    phase
        .commit(&group, &batch(&topic, PARTITIONS, 10))
        .expect("commit");
    drop(phase);
    assert_eq!(
        held(&zookeeper, &group, &topic),
        (at(10), vec![Stored::Missing; 2])
    );

    // Phase 2, ZooKeeper authoritative, Kafka mirrored: the load reports Kafka's missing
    // offsets, and the first commit writes both.
    let phase = keeper("zookeeper,kafka", &zookeeper, &[]);
    let loaded = phase.load(&group, &topics).expect("load");
    assert_eq!(offsets(&loaded), [10, 10]);
    assert_eq!(loaded.mirror.len(), 2, "{:?}", loaded.mirror);
    assert!(loaded
        .mirror
        .iter()
        .all(|d| d.authoritative == Stored::Offset(10) && d.mirror == Stored::Missing && !d.taken));
    phase
        .commit(&group, &batch(&topic, PARTITIONS, 20))
        .expect("commit");
    assert!(
        phase.flush_mirror(Duration::from_secs(30)),
        "{:?}",
        phase.mirror_status()
    );
    drop(phase);
    assert_eq!(held(&zookeeper, &group, &topic), (at(20), at(20)));

    // Phase 3, Kafka authoritative, ZooKeeper mirrored; ZooKeeper cut: batches go on, not
    // deferred, and ZooKeeper is repaired when it returns.
    let phase = keeper("kafka,zookeeper", &zookeeper, &[]);
    let loaded = phase.load(&group, &topics).expect("load");
    assert_eq!(offsets(&loaded), [20, 20]);
    assert!(loaded.mirror.is_empty(), "{:?}", loaded.mirror);
    proxy.cut();
    for value in [30, 40] {
        let started = Instant::now();
        let summary = phase
            .commit(&group, &batch(&topic, PARTITIONS, value))
            .expect("a commit while the mirror is cut");
        assert!(!summary.deferred, "{summary:?}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the batch waited {:?} for the cut mirror",
            started.elapsed()
        );
    }
    wait_for(
        Duration::from_secs(30),
        "the mirror's failure counted",
        || {
            phase
                .mirror_status()
                .is_some_and(|s| s.failures >= 1 && s.pending == 2)
        },
    );
    let status = phase.mirror_status().expect("a mirror");
    assert!(status.last_error.is_some(), "{status:?}");
    assert!(status.behind > Duration::ZERO, "{status:?}");
    proxy.heal();
    assert!(
        phase.flush_mirror(Duration::from_secs(60)),
        "the mirror was not repaired: {:?}",
        phase.mirror_status()
    );
    assert_eq!(phase.mirror_status().map(|s| s.pending), Some(0));
    assert_eq!(
        phase.mirror_status().map(|s| s.behind),
        Some(Duration::ZERO)
    );
    assert_eq!(held(&zookeeper, &group, &topic), (at(40), at(40)));

    // Cut again, and the job stops before the mirror took the last batch.
    proxy.cut();
    phase
        .commit(&group, &batch(&topic, PARTITIONS, 50))
        .expect("commit");
    drop(phase);
    proxy.heal();
    assert_eq!(held(&zookeeper, &group, &topic), (at(40), at(50)));

    // Rolled back to phase 2: ZooKeeper is authoritative again, but behind; the load starts
    // at Kafka's 50, never backwards, and says so.
    let phase = keeper("zookeeper,kafka", &zookeeper, &[]);
    let loaded = phase.load(&group, &topics).expect("load");
    assert_eq!(offsets(&loaded), [50, 50]);
    assert_eq!(loaded.mirror.len(), 2, "{:?}", loaded.mirror);
    assert!(loaded
        .mirror
        .iter()
        .all(|d| d.authoritative == Stored::Offset(40)
            && d.mirror == Stored::Offset(50)
            && d.taken));
    phase
        .commit(&group, &batch(&topic, PARTITIONS, 60))
        .expect("commit");
    assert!(phase.flush_mirror(Duration::from_secs(30)));
    drop(phase);
    assert_eq!(held(&zookeeper, &group, &topic), (at(60), at(60)));

    // Rolled back to phase 1, then forward through 3 to 4, Kafka only.
    let phase = keeper("zookeeper", &zookeeper, &[]);
    assert_eq!(
        offsets(&phase.load(&group, &topics).expect("load")),
        [60, 60]
    );
    phase
        .commit(&group, &batch(&topic, PARTITIONS, 70))
        .expect("commit");
    drop(phase);
    let phase = keeper("zookeeper,kafka", &zookeeper, &[]);
    assert_eq!(
        offsets(&phase.load(&group, &topics).expect("load")),
        [70, 70]
    );
    phase
        .commit(&group, &batch(&topic, PARTITIONS, 80))
        .expect("commit");
    drop(phase);
    let phase = keeper("kafka,zookeeper", &zookeeper, &[]);
    assert_eq!(
        offsets(&phase.load(&group, &topics).expect("load")),
        [80, 80]
    );
    phase
        .commit(&group, &batch(&topic, PARTITIONS, 90))
        .expect("commit");
    drop(phase);
    assert_eq!(held(&zookeeper, &group, &topic), (at(90), at(90)));
    let phase = keeper("kafka", &zookeeper, &[]);
    assert_eq!(
        offsets(&phase.load(&group, &topics).expect("load")),
        [90, 90]
    );
    phase
        .commit(&group, &batch(&topic, PARTITIONS, 100))
        .expect("commit");
    drop(phase);
    assert_eq!(held(&zookeeper, &group, &topic), (at(90), at(100)));
}

#[test]
fn a_store_setting_outside_the_four_phases_is_refused_naming_them() {
    let err = KeeperConfig::from_properties([
        ("bootstrap.servers", "localhost:9092"),
        ("zookeeper.connect", "localhost:2181"),
        ("offsetkeeper.store", "kafka,kafka"),
    ])
    .expect_err("kafka,kafka");
    let text = err.to_string();
    assert!(
        text.contains("'kafka,kafka'") && text.contains("zookeeper,kafka"),
        "{text}"
    );
}
