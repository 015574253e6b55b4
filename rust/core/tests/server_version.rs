//! The ZooKeeper server version: learned with `srvr` from the real test cluster, or set with
//! `zookeeper.server.version`, whose old-server protocol (plain creates in multis, single reads)
//! must still load and commit.

mod support;

use std::time::Duration;

use offsetkeeper::kafka::connection::Connection;
use offsetkeeper::kafka::protocol::{
    API_LIST_OFFSETS, API_METADATA, API_VERSIONS, API_VERSIONS_NEWEST, LIST_OFFSETS_VERSIONS,
    METADATA_VERSIONS,
};
use offsetkeeper::kafka::security::KafkaSecurity;
use offsetkeeper::zookeeper::{server_version, LearnedVersion, ServerVersion, VersionSource};
use offsetkeeper::{Action, Stored, TopicPartition, ZkConfig};
use support::{cluster, keeper, keeper_with, offset_path, unique, Kafka, Zk, RUNTIME};

/// The test cluster's ZooKeeper (build.gradle, configuration testCluster); another server given
/// by OFFSETKEEPER_ZK names its version in OFFSETKEEPER_ZK_VERSION.
fn expected_version() -> ServerVersion {
    let text = std::env::var("OFFSETKEEPER_ZK_VERSION").unwrap_or_else(|_| "3.8.4".to_string());
    ServerVersion::from_property(&text).expect("OFFSETKEEPER_ZK_VERSION")
}

#[test]
fn srvr_tells_the_clusters_version_and_the_session_uses_it() {
    let cluster = cluster();
    let detected = RUNTIME
        .block_on(server_version::detect(
            &cluster.zookeeper,
            Duration::from_secs(10),
            None,
        ))
        .unwrap();
    assert_eq!(detected.lowest, Some(expected_version()), "{detected:?}");
    assert!(detected.silent.is_empty(), "{detected:?}");

    let keeper = keeper(&cluster);
    assert_eq!(keeper.zookeeper_server_version(), None);
    let (group, topic) = (unique("g"), unique("t"));
    keeper
        .commit(&group, &[(TopicPartition::new(&*topic, 0), 1)])
        .unwrap();
    assert_eq!(
        keeper.zookeeper_server_version(),
        Some(LearnedVersion {
            version: expected_version(),
            source: VersionSource::Srvr
        })
    );
}

/// The Kafka versions the cluster's broker is asked in: the newest both sides know. The test
/// cluster runs Kafka 3.9.1; the compat cells name theirs in OFFSETKEEPER_KAFKA_VERSION
/// (`support::capabilities`).
#[test]
fn the_broker_is_asked_in_the_newest_versions_both_know() {
    let kafka = support::capabilities().kafka.clone();
    // (ApiVersions, Metadata, ListOffsets) as each release answers them; Metadata v10+ carries
    // topic ids (2.8+), v9+ and ListOffsets v6+ are flexible.
    let expected = match kafka.as_str() {
        "0.10.2.2" => (0, 2, 1),
        "0.11.0.3" => (1, 4, 2),
        "1.1.1" => (1, 5, 2),
        "2.8.2" => (3, 11, 6),
        "3.9.1" => (4, 12, 9),
        "4.4.0" => (4, 13, 10),
        other => panic!("no expected versions for Kafka {other}"),
    };
    let cluster = cluster();
    let address = cluster.bootstrap.split(',').next().unwrap().to_string();
    let connection = RUNTIME
        .block_on(Connection::open(
            &address,
            "versions",
            &KafkaSecurity::default(),
        ))
        .unwrap_or_else(|err| panic!("{address}: {err}"));
    let picked = |api, key, ours| connection.version(api, key, ours).unwrap();
    let spoken = (
        picked("ApiVersions", API_VERSIONS, 0..=API_VERSIONS_NEWEST),
        picked("Metadata", API_METADATA, METADATA_VERSIONS),
        picked("ListOffsets", API_LIST_OFFSETS, LIST_OFFSETS_VERSIONS),
    );
    println!(
        "Kafka {kafka}: ApiVersions v{}, Metadata v{}, ListOffsets v{}",
        spoken.0, spoken.1, spoken.2
    );
    assert_eq!(
        spoken, expected,
        "Kafka {kafka}: (ApiVersions, Metadata, ListOffsets)"
    );
}

#[test]
fn a_closed_port_answers_no_version() {
    // Bound, then closed: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .unwrap()
        .port();
    let detected = RUNTIME
        .block_on(server_version::detect(
            &format!("127.0.0.1:{port}"),
            Duration::from_secs(5),
            None,
        ))
        .unwrap();
    assert_eq!(detected.lowest, None);
    assert_eq!(detected.silent.len(), 1, "{detected:?}");
}

#[test]
fn the_3_4_protocol_loads_and_commits_with_creates() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic) = (unique("g"), unique("old-protocol"));
    kafka.create_topic(&topic, 3);
    kafka.produce(&topic, 0, 4);
    let topics = [topic.clone()];
    let keeper = keeper_with(&cluster, &[], |config| {
        config
            .zookeeper
            .apply_properties([("zookeeper.server.version", "3.4.14")])
            .unwrap();
    });

    // Missing offsets: the load creates the ownership nodes (creates in a multi).
    let loaded = keeper.load(&group, &topics).unwrap();
    let actions: Vec<_> = loaded
        .partitions
        .iter()
        .map(|r| (r.stored.clone(), r.decision.action))
        .collect();
    assert_eq!(actions, vec![(Stored::Missing, Action::Initialized); 3]);
    assert_eq!(
        keeper.zookeeper_server_version(),
        Some(LearnedVersion {
            version: ServerVersion::new(3, 4, 14),
            source: VersionSource::Configured
        })
    );

    // The commit creates the offset nodes, the next one changes one of them.
    let offsets: Vec<_> = (0..3)
        .map(|p| (TopicPartition::new(&*topic, p), 0))
        .collect();
    let summary = keeper.commit(&group, &offsets).unwrap();
    assert_eq!((summary.written, summary.requests), (3, 1));
    let summary = keeper
        .commit(&group, &[(TopicPartition::new(&*topic, 0), 3)])
        .unwrap();
    assert_eq!(summary.written, 1);
    assert_eq!(zk.get(&offset_path(&group, &topic, 0)), Some(b"3".to_vec()));
    assert_eq!(zk.get(&offset_path(&group, &topic, 2)), Some(b"0".to_vec()));

    // Read back with pipelined reads.
    let loaded = keeper.load(&group, &topics).unwrap();
    let stored: Vec<_> = loaded.partitions.iter().map(|r| r.stored.clone()).collect();
    assert_eq!(
        stored,
        [Stored::Offset(3), Stored::Offset(0), Stored::Offset(0)]
    );
}

#[test]
fn a_bad_version_setting_is_refused_naming_it() {
    for bad in ["3.x", "3.3", "4", ""] {
        let mut config = ZkConfig::new("127.0.0.1:2181");
        let err = config
            .apply_properties([("zookeeper.server.version", bad)])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("zookeeper.server.version '{bad}'"))
                && err.contains("allowed: major.minor[.patch]"),
            "{bad}: {err}"
        );
        assert_eq!(config.server_version, None);
    }
}
