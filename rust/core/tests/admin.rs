//! The operator calls of the engine (what the CLI is built on) against the real cluster.

mod support;

use offsetkeeper::{
    Error, GroupSummary, OffsetKeeper, PartitionRange, Stored, Surveyed, TopicPartition, ZkConfig,
};
use support::{cluster, keeper, offset_path, unique, Kafka, Zk};

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

#[test]
fn survey_joins_what_is_stored_with_what_exists() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic, gone) = (unique("g"), unique("survey"), unique("gone"));
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 0, 4);
    zk.put(&offset_path(&group, &topic, 0), b"3");
    zk.put(&offset_path(&group, &topic, 5), b"x");
    // Not a partition: left out.
    zk.put(&format!("/consumers/{group}/offsets/{topic}/owner"), b"");
    zk.put(&offset_path(&group, &gone, 0), b"9");
    let keeper = keeper(&cluster);

    let range = |latest| {
        Some(PartitionRange {
            earliest: 0,
            latest,
        })
    };
    assert_eq!(
        keeper
            .survey(&group, &[topic.clone(), gone.clone()])
            .unwrap(),
        vec![
            Surveyed {
                partition: tp(&topic, 0),
                stored: Stored::Offset(3),
                range: range(4),
                recreated: None
            },
            Surveyed {
                partition: tp(&topic, 1),
                stored: Stored::Missing,
                range: range(0),
                recreated: None
            },
            Surveyed {
                partition: tp(&topic, 5),
                stored: Stored::Corrupt(b"x".to_vec()),
                range: None,
                recreated: None
            },
            Surveyed {
                partition: tp(&gone, 0),
                stored: Stored::Offset(9),
                range: None,
                recreated: None
            },
        ]
    );
    let mut topics = vec![topic.clone(), gone.clone()];
    topics.sort();
    assert_eq!(keeper.stored_topics(&group).unwrap(), topics);
    let missing = unique("nosuch");
    assert!(matches!(
        keeper.survey(&group, std::slice::from_ref(&missing)),
        Err(Error::UnknownTopic { topic, .. }) if topic == missing
    ));
}

#[test]
fn groups_listing_and_topic_deletion_need_only_zookeeper() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let base = format!("/{}", unique("admin"));
    let mut config = ZkConfig::new(cluster.zookeeper.clone());
    config.base_path = base.clone();
    let keeper = OffsetKeeper::open_zookeeper_only(config).unwrap();
    assert_eq!(keeper.groups().unwrap(), vec![]);

    for (group, topic, partition) in [
        ("a", "t1", 0),
        ("a", "t1", 1),
        ("a", "t2", 0),
        ("b", "t1", 0),
    ] {
        zk.put(&format!("{base}/{group}/offsets/{topic}/{partition}"), b"1");
    }
    zk.put(&format!("{base}/c/ids/x"), b"");
    let summary = |group: &str, topics| GroupSummary {
        group: group.into(),
        topics,
    };
    assert_eq!(
        keeper.groups().unwrap(),
        vec![summary("a", 2), summary("b", 1)]
    );
    assert_eq!(
        keeper.stored("a", &["t1".into()]).unwrap(),
        vec![
            (tp("t1", 0), Stored::Offset(1)),
            (tp("t1", 1), Stored::Offset(1))
        ]
    );

    assert_eq!(
        keeper
            .delete_topics("a", &["t1".into(), "t9".into()])
            .unwrap(),
        2
    );
    assert_eq!(zk.get(&format!("{base}/a/offsets/t1")), None);
    assert!(zk.get(&format!("{base}/a/offsets/t2/0")).is_some());
    assert_eq!(keeper.delete_topics("a", &["t1".into()]).unwrap(), 0);

    // Kafka calls say what is missing.
    let message = keeper.partitions(&["t".into()]).unwrap_err().to_string();
    assert!(message.contains("no bootstrap.servers"), "{message}");
}

#[test]
fn offsets_for_a_timestamp() {
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let topic = unique("times");
    kafka.create_topic(&topic, 1);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let base = now - 3_600_000;
    kafka.produce_at(&topic, 0, &[base, base + 1000, base + 2000]);
    let keeper = keeper(&cluster);
    let partitions = [tp(&topic, 0)];

    for (at, expected) in [
        (base - 1, Some(0)),
        (base + 1000, Some(1)),
        (base + 1001, Some(2)),
        (base + 2001, None),
    ] {
        let found = keeper.offsets_for_timestamp(&partitions, at).unwrap();
        assert_eq!(found.get(&partitions[0]), Some(&expected), "{at}");
    }
    assert!(keeper.offsets_for_timestamp(&partitions, -5).is_err());
    // Kafka consumer groups (`migrate`) are the CLI's: rust/cli/src/migrate.rs and its tests.
}
