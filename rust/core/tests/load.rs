//! `load` against real ZooKeeper and Kafka: each restart situation a Spark job meets.

mod support;

use std::future::Future as _;

use offsetkeeper::{Action, Error, OnAboveRange, OnMissing, Stored, TopicPartition};
use support::{cluster, keeper, keeper_with, offset_path, unique, Kafka, Zk};

fn topics(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// (partition, stored, earliest, latest, chosen, action, records lost) of a load, for asserts.
type Row = (i32, Stored, i64, i64, i64, Action, i64);

fn rows(loaded: &offsetkeeper::Loaded) -> Vec<Row> {
    loaded
        .partitions
        .iter()
        .map(|r| {
            (
                r.partition.partition,
                r.stored.clone(),
                r.range.earliest,
                r.range.latest,
                r.decision.offset,
                r.decision.action,
                r.decision.records_lost,
            )
        })
        .collect()
}

#[test]
fn first_start_without_stored_offsets_follows_the_policy() {
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let (group, topic) = (unique("g"), unique("fresh"));
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 0, 5);
    kafka.produce(&topic, 1, 3);

    let loaded = keeper(&cluster).load(&group, &topics(&[&topic])).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![
            (0, Stored::Missing, 0, 5, 0, Action::Initialized, 0),
            (1, Stored::Missing, 0, 3, 0, Action::Initialized, 0),
        ]
    );

    // The job's own auto.offset.reset=latest is the policy for missing offsets.
    let latest = keeper_with(&cluster, &[("auto.offset.reset", "latest")], |_| {});
    let loaded = latest.load(&group, &topics(&[&topic])).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![
            (0, Stored::Missing, 0, 5, 5, Action::Initialized, 5),
            (1, Stored::Missing, 0, 3, 3, Action::Initialized, 3),
        ]
    );
}

#[test]
fn stored_offsets_in_range_are_kept() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic) = (unique("g"), unique("kept"));
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 0, 10);
    kafka.produce(&topic, 1, 10);
    zk.put(&offset_path(&group, &topic, 0), b"4");
    zk.put(&offset_path(&group, &topic, 1), b"10");

    let loaded = keeper(&cluster).load(&group, &topics(&[&topic])).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![
            (0, Stored::Offset(4), 0, 10, 4, Action::Kept, 0),
            (1, Stored::Offset(10), 0, 10, 10, Action::Kept, 0),
        ]
    );
    assert_eq!(loaded.corrections().count(), 0);
}

#[test]
fn retention_purge_moves_to_earliest_and_counts_the_lost_records() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic) = (unique("g"), unique("purged"));
    // deleteRecords, or time retention on brokers without it (Kafka 0.10).
    kafka.create_purged_topic(&topic, &[20], &[(0, 12)]);
    zk.put(&offset_path(&group, &topic, 0), b"5");

    let loaded = keeper(&cluster).load(&group, &topics(&[&topic])).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![(0, Stored::Offset(5), 12, 20, 12, Action::ResetBelowRange, 7)]
    );
}

#[test]
fn recreated_topic_with_fewer_records_starts_at_earliest() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic) = (unique("g"), unique("recreated"));
    kafka.create_topic(&topic, 1);
    kafka.produce(&topic, 0, 30);
    zk.put(&offset_path(&group, &topic, 0), b"30");
    kafka.delete_topic(&topic);
    kafka.create_topic(&topic, 1);
    kafka.produce(&topic, 0, 4);

    let loaded = keeper(&cluster).load(&group, &topics(&[&topic])).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![(0, Stored::Offset(30), 0, 4, 0, Action::ResetAboveRange, 0)]
    );

    let to_latest = keeper_with(&cluster, &[], |c| {
        c.policy.on_above_range = OnAboveRange::Latest
    });
    let loaded = to_latest.load(&group, &topics(&[&topic])).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![(0, Stored::Offset(30), 0, 4, 4, Action::ResetAboveRange, 4)]
    );
}

#[test]
fn added_partitions_are_initialized_and_old_ones_kept() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic) = (unique("g"), unique("grown"));
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 0, 6);
    kafka.produce(&topic, 1, 6);
    zk.put(&offset_path(&group, &topic, 0), b"6");
    zk.put(&offset_path(&group, &topic, 1), b"3");
    // CreatePartitions, or the assignment written to ZooKeeper before Kafka 1.0.
    kafka.add_partitions(&topic, 4);
    kafka.produce(&topic, 3, 2);

    let loaded = keeper(&cluster).load(&group, &topics(&[&topic])).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![
            (0, Stored::Offset(6), 0, 6, 6, Action::Kept, 0),
            (1, Stored::Offset(3), 0, 6, 3, Action::Kept, 0),
            (2, Stored::Missing, 0, 0, 0, Action::Initialized, 0),
            (3, Stored::Missing, 0, 2, 0, Action::Initialized, 0),
        ]
    );
}

#[test]
fn partitions_that_no_longer_exist_are_not_returned() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic) = (unique("g"), unique("shrunk"));
    kafka.create_topic(&topic, 4);
    for partition in 0..4 {
        zk.put(&offset_path(&group, &topic, partition), b"0");
    }
    kafka.delete_topic(&topic);
    kafka.create_topic(&topic, 2);

    let loaded = keeper(&cluster).load(&group, &topics(&[&topic])).unwrap();
    let partitions: Vec<i32> = loaded.offsets().map(|(tp, _)| tp.partition).collect();
    assert_eq!(partitions, vec![0, 1]);
}

#[test]
fn corrupt_znodes_are_replaced_by_the_policy_with_raw_bytes_reported() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic) = (unique("g"), unique("corrupt"));
    let values: [&[u8]; 5] = [b"", b"-1", b"twelve", b"99999999999999999999999", b" 3 \n"];
    kafka.create_topic(&topic, values.len() as i32);
    for (partition, value) in values.iter().enumerate() {
        kafka.produce(&topic, partition as i32, 5);
        zk.put(&offset_path(&group, &topic, partition as i32), value);
    }

    let loaded = keeper(&cluster).load(&group, &topics(&[&topic])).unwrap();
    let corrupt = |p: i32, raw: &[u8]| {
        (
            p,
            Stored::Corrupt(raw.to_vec()),
            0,
            5,
            0,
            Action::CorruptReplaced,
            0,
        )
    };
    assert_eq!(
        rows(&loaded),
        vec![
            corrupt(0, b""),
            corrupt(1, b"-1"),
            corrupt(2, b"twelve"),
            corrupt(3, b"99999999999999999999999"),
            (4, Stored::Offset(3), 0, 5, 3, Action::Kept, 0),
        ]
    );
}

#[test]
fn three_topics_load_in_one_call_in_the_order_asked() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("g");
    let names = [unique("t-a"), unique("t-b"), unique("t-c")];
    for (i, topic) in names.iter().enumerate() {
        kafka.create_topic(topic, i as i32 + 1);
        kafka.produce(topic, 0, 4);
        zk.put(&offset_path(&group, topic, 0), b"2");
    }
    let asked = vec![names[2].clone(), names[0].clone(), names[1].clone()];
    let loaded = keeper(&cluster).load(&group, &asked).unwrap();
    let got: Vec<(String, i32, i64)> = loaded
        .offsets()
        .map(|(tp, offset)| (tp.topic.to_string(), tp.partition, offset))
        .collect();
    assert_eq!(
        got,
        vec![
            (names[2].clone(), 0, 2),
            (names[2].clone(), 1, 0),
            (names[2].clone(), 2, 0),
            (names[0].clone(), 0, 2),
            (names[1].clone(), 0, 2),
            (names[1].clone(), 1, 0),
        ]
    );
}

#[test]
fn an_unknown_topic_is_an_error_naming_it() {
    let cluster = cluster();
    let missing = unique("no-such-topic");
    let err = keeper(&cluster)
        .load("g", &topics(&[&missing]))
        .unwrap_err();
    assert!(matches!(err, Error::UnknownTopic { .. }), "{err:?}");
    assert!(err.to_string().contains(&missing), "{err}");
}

#[test]
fn a_fail_policy_refuses_the_load_and_names_each_partition() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic) = (unique("g"), unique("strict"));
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 1, 3);
    zk.put(&offset_path(&group, &topic, 1), b"1");
    let strict = keeper_with(&cluster, &[("auto.offset.reset", "none")], |_| {});
    let err = strict.load(&group, &topics(&[&topic])).unwrap_err();
    assert!(matches!(err, Error::PolicyViolation(_)), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains(&format!("{topic}-0")) && message.contains("on_missing=fail"),
        "{message}"
    );
    assert!(!message.contains(&format!("{topic}-1")), "{message}");
    // Explicit policy beats auto.offset.reset.
    let lenient = keeper_with(&cluster, &[("auto.offset.reset", "none")], |c| {
        c.policy.on_missing = OnMissing::Earliest
    });
    assert!(lenient.load(&group, &topics(&[&topic])).is_ok());
}

#[test]
fn pipelined_reads_see_what_multi_reads_see() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic) = (unique("g"), unique("pipelined"));
    kafka.create_topic(&topic, 3);
    kafka.produce(&topic, 0, 3);
    zk.put(&offset_path(&group, &topic, 0), b"2");
    zk.put(&offset_path(&group, &topic, 1), b"x");
    let multi = keeper(&cluster).load(&group, &topics(&[&topic])).unwrap();
    let pipelined = keeper_with(&cluster, &[], |c| {
        c.zookeeper.read_mode = offsetkeeper::ReadMode::Pipelined
    })
    .load(&group, &topics(&[&topic]))
    .unwrap();
    assert_eq!(multi, pipelined);
    assert_eq!(multi.partitions[0].stored, Stored::Offset(2));
    assert_eq!(multi.partitions[1].stored, Stored::Corrupt(b"x".to_vec()));
    assert_eq!(multi.partitions[2].stored, Stored::Missing);
}

#[test]
fn chroot_and_base_path_are_honoured() {
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let (group, topic) = (unique("g"), unique("chroot"));
    kafka.create_topic(&topic, 1);
    kafka.produce(&topic, 0, 8);
    let chroot = format!("/{}", unique("kafka-root"));
    // The chroot must exist, as with Kafka's own tools.
    Zk::new(&cluster).put(&format!("{chroot}/marker"), b"");
    let chrooted = support::Cluster {
        zookeeper: format!("{}{chroot}", cluster.zookeeper),
        bootstrap: cluster.bootstrap.clone(),
    };
    let keeper = keeper_with(&chrooted, &[], |c| {
        c.zookeeper.base_path = "/offsets/spark".into()
    });
    let tp = TopicPartition::new(&*topic, 0);
    keeper.commit(&group, &[(tp, 6)]).unwrap();
    let zk = Zk::new(&cluster);
    assert_eq!(
        zk.get(&format!("{chroot}/offsets/spark/{group}/offsets/{topic}/0")),
        Some(b"6".to_vec())
    );
    assert_eq!(zk.get(&offset_path(&group, &topic, 0)), None);
    let loaded = keeper.load(&group, &topics(&[&topic])).unwrap();
    assert_eq!(loaded.partitions[0].decision.offset, 6);
    assert_eq!(loaded.partitions[0].decision.action, Action::Kept);
}

/// A call dropped after its request went out (a load whose ZooKeeper side failed first drops
/// its Kafka side) must not leave the answer on a kept connection for the next request.
#[test]
fn a_kafka_call_dropped_half_way_leaves_no_answer_behind() {
    const TRIES: usize = 500;
    let cluster = cluster();
    let topic = unique("dropped");
    Kafka::new(&cluster).create_topic(&topic, 2);
    let settings = offsetkeeper::KafkaSettings::from_params([(
        "bootstrap.servers",
        cluster.bootstrap.as_str(),
    )])
    .expect("kafka params");
    let brokers =
        offsetkeeper::kafka::Brokers::new(settings, Some(std::time::Duration::from_secs(10)))
            .expect("brokers");
    let topics = [topic.clone()];
    support::RUNTIME.block_on(async {
        assert_eq!(brokers.partitions(&topics).await.expect("first").len(), 2);
        // Polled once: the request is written on the kept connection, then dropped unanswered.
        // A broker that answers within that first poll leaves nothing to test: again, until
        // one call is dropped with its answer still on the way (on a busy machine the answer
        // often wins: tries are cheap).
        let mut dropped_pending = 0;
        for _ in 0..TRIES {
            let mut dropped = Box::pin(brokers.partitions(&topics));
            let first =
                std::future::poll_fn(|cx| std::task::Poll::Ready(dropped.as_mut().poll(cx)));
            let pending = first.await.is_pending();
            drop(dropped);
            if !pending {
                continue;
            }
            dropped_pending += 1;
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            let again = brokers.partitions(&topics).await;
            assert_eq!(again.expect("after a dropped call").len(), 2);
            break;
        }
        assert_eq!(
            dropped_pending, 1,
            "no call was still waiting for its answer after its first poll in {TRIES} tries"
        );
    });
}
