//! Topic identity against real ZooKeeper and Kafka: the topic ID a commit records in the topic
//! folder, a re-created topic caught even when its new log is longer than the stored offset, and
//! offsets stored for partitions that no longer exist reported. Brokers before Kafka 2.8 have no
//! topic IDs (`support::capabilities().topic_ids`): there nothing is recorded, a re-created topic
//! is judged by its range alone, and stale partitions are reported all the same.

mod support;

use offsetkeeper::zookeeper::layout::parse_topic_identity;
use offsetkeeper::{Action, Error, OnRecreated, Recreated, Stored, TopicPartition};
use support::{batch, capabilities, cluster, keeper, keeper_with, offset_path, unique, Kafka, Zk};

fn topic_dir(group: &str, topic: &str) -> String {
    format!("/consumers/{group}/offsets/{topic}")
}

/// The topic ID the topic folder records.
fn stored_id(zk: &Zk, group: &str, topic: &str) -> Option<String> {
    parse_topic_identity(&zk.get(&topic_dir(group, topic)).expect("topic folder"))
}

/// Checks that a topic ID was recorded exactly when the brokers have topic IDs.
fn recorded_as_the_brokers_allow(id: &Option<String>) {
    assert_eq!(
        id.is_some(),
        capabilities().topic_ids,
        "Kafka {}: a commit records the topic ID when the brokers have one (2.8+), got {id:?}",
        capabilities().kafka
    );
}

/// The stored and current IDs of a re-creation its topic ID told.
struct Ids {
    stored_id: String,
    current_id: String,
}

fn by_id(recreated: Option<Recreated>) -> Ids {
    match recreated {
        Some(Recreated::TopicId {
            stored_id,
            current_id,
        }) => Ids {
            stored_id,
            current_id,
        },
        other => panic!("expected a re-creation told by the topic ID, got {other:?}"),
    }
}

/// (partition, stored, chosen, action, records lost) of a load.
fn rows(loaded: &offsetkeeper::Loaded) -> Vec<(i32, Stored, i64, Action, i64)> {
    loaded
        .partitions
        .iter()
        .map(|r| {
            (
                r.partition.partition,
                r.stored.clone(),
                r.decision.offset,
                r.decision.action,
                r.decision.records_lost,
            )
        })
        .collect()
}

#[test]
fn a_recreated_topic_filled_past_the_stored_offset_is_caught_by_its_id() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic) = (unique("g"), unique("reborn"));
    let topics = vec![topic.clone()];
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 0, 10);
    kafka.produce(&topic, 1, 10);

    // The job's first run: the commit records the topic ID beside the offsets, which stay bare
    // decimals for the readers of the old layout.
    let first = keeper(&cluster);
    first.load(&group, &topics).unwrap();
    first.commit(&group, &batch(&topic, 2, 8)).unwrap();
    drop(first);
    let old_id = stored_id(&zk, &group, &topic);
    recorded_as_the_brokers_allow(&old_id);
    assert_eq!(zk.get(&offset_path(&group, &topic, 0)).unwrap(), b"8");
    assert_eq!(zk.get(&offset_path(&group, &topic, 1)).unwrap(), b"8");

    // Deleted, re-created and filled past the stored offset before the job restarts.
    kafka.delete_topic(&topic);
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 0, 20);
    kafka.produce(&topic, 1, 20);

    let Some(old_id) = old_id else {
        // No topic IDs: judged by its range alone, 8 within [0, 20] is kept under every
        // on_recreated, and commits record nothing.
        for on_recreated in [
            OnRecreated::Fail,
            OnRecreated::Latest,
            OnRecreated::Earliest,
        ] {
            let keeper = keeper_with(&cluster, &[], |c| c.policy.on_recreated = on_recreated);
            let loaded = keeper.load(&group, &topics).unwrap();
            assert_eq!(
                rows(&loaded),
                vec![
                    (0, Stored::Offset(8), 8, Action::Kept, 0),
                    (1, Stored::Offset(8), 8, Action::Kept, 0),
                ],
                "{on_recreated:?}"
            );
            assert!(loaded.partitions.iter().all(|r| r.recreated.is_none()));
            assert!(loaded.stale.is_empty());
        }
        let keeper = keeper(&cluster);
        keeper.load(&group, &topics).unwrap();
        keeper.commit(&group, &batch(&topic, 2, 5)).unwrap();
        drop(keeper);
        assert_eq!(stored_id(&zk, &group, &topic), None);
        return;
    };

    // fail: an error naming the topic and both IDs; nothing written.
    let fail = keeper_with(&cluster, &[], |c| c.policy.on_recreated = OnRecreated::Fail);
    let err = fail.load(&group, &topics).unwrap_err();
    drop(fail);
    let Error::PolicyViolation(message) = &err else {
        panic!("expected a policy violation, got {err}");
    };
    assert!(
        message.contains(&format!("topic {topic} was re-created (id {old_id} -> "))
            && message.contains("on_recreated=fail"),
        "{message}"
    );
    assert_eq!(stored_id(&zk, &group, &topic).as_deref(), Some(&*old_id));

    // latest: every stored offset moves to the end, the records skipped counted.
    let latest = keeper_with(&cluster, &[], |c| {
        c.policy.on_recreated = OnRecreated::Latest
    });
    let loaded = latest.load(&group, &topics).unwrap();
    drop(latest);
    assert_eq!(
        rows(&loaded),
        vec![
            (0, Stored::Offset(8), 20, Action::Recreated, 20),
            (1, Stored::Offset(8), 20, Action::Recreated, 20),
        ]
    );

    // The default, earliest: every record of the new topic, though 8 is within [0, 20].
    let keeper = keeper(&cluster);
    let loaded = keeper.load(&group, &topics).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![
            (0, Stored::Offset(8), 0, Action::Recreated, 0),
            (1, Stored::Offset(8), 0, Action::Recreated, 0),
        ]
    );
    let recreated = by_id(loaded.partitions[0].recreated.clone());
    assert_eq!(recreated.stored_id, old_id);
    assert_ne!(recreated.current_id, old_id);
    let text = format!("re-created (id {old_id} -> {})", recreated.current_id);
    assert_eq!(loaded.partitions[1].action_text(), text);
    assert!(loaded.table().contains(&text), "{}", loaded.table());
    assert!(loaded.stale.is_empty());

    // The first commit records the new ID, in the multi of its offsets.
    keeper.commit(&group, &batch(&topic, 2, 5)).unwrap();
    drop(keeper);
    assert_eq!(
        stored_id(&zk, &group, &topic).as_deref(),
        Some(&*recreated.current_id)
    );
    let loaded = self::keeper(&cluster).load(&group, &topics).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![
            (0, Stored::Offset(5), 5, Action::Kept, 0),
            (1, Stored::Offset(5), 5, Action::Kept, 0),
        ]
    );
}

#[test]
fn a_topic_recreated_with_fewer_partitions_reports_the_stale_ones_and_records_its_id_once_every_old_offset_is_replaced(
) {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic) = (unique("g"), unique("shrunk"));
    let topics = vec![topic.clone()];
    kafka.create_topic(&topic, 4);
    for partition in 0..4 {
        kafka.produce(&topic, partition, 5);
    }
    let first = keeper(&cluster);
    first.load(&group, &topics).unwrap();
    first.commit(&group, &batch(&topic, 4, 3)).unwrap();
    drop(first);
    let old_id = stored_id(&zk, &group, &topic);
    recorded_as_the_brokers_allow(&old_id);

    kafka.delete_topic(&topic);
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 0, 9);
    kafka.produce(&topic, 1, 9);

    // Re-created: earliest by its new ID; without topic IDs 3 is within [0, 9] and kept.
    let (chosen, action) = if capabilities().topic_ids {
        (0, Action::Recreated)
    } else {
        (3, Action::Kept)
    };
    let keeper = keeper(&cluster);
    let loaded = keeper.load(&group, &topics).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![
            (0, Stored::Offset(3), chosen, action, 0),
            (1, Stored::Offset(3), chosen, action, 0),
        ]
    );
    let stale: Vec<(TopicPartition, Stored)> = loaded
        .stale
        .iter()
        .map(|s| (s.partition.clone(), s.stored.clone()))
        .collect();
    assert_eq!(
        stale,
        vec![
            (TopicPartition::new(&*topic, 2), Stored::Offset(3)),
            (TopicPartition::new(&*topic, 3), Stored::Offset(3)),
        ]
    );
    assert!(
        loaded
            .table()
            .contains("stale (partition no longer exists)"),
        "{}",
        loaded.table()
    );

    // A commit of partition 0 alone leaves partition 1 with the old topic's offset: the old ID
    // stays, so that a restart does not keep that offset.
    keeper
        .commit(&group, &[(TopicPartition::new(&*topic, 0), 4)])
        .unwrap();
    assert_eq!(stored_id(&zk, &group, &topic), old_id);
    // Once partition 1 is written too, the new ID is recorded.
    keeper
        .commit(&group, &[(TopicPartition::new(&*topic, 1), 2)])
        .unwrap();
    drop(keeper);
    let new_id = stored_id(&zk, &group, &topic);
    recorded_as_the_brokers_allow(&new_id);
    if new_id.is_some() {
        assert_ne!(new_id, old_id);
    }
    // The stale offsets stay, as bare decimals, until deleted.
    assert_eq!(zk.get(&offset_path(&group, &topic, 3)).unwrap(), b"3");
}

#[test]
fn offsets_stored_without_an_id_keep_todays_decisions_and_get_the_id_at_the_next_commit() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic) = (unique("g"), unique("legacy"));
    let topics = vec![topic.clone()];
    kafka.create_topic(&topic, 1);
    kafka.produce(&topic, 0, 10);
    // Written by Kafka's old consumer (or an older offsetkeeper): an empty topic folder.
    zk.put(&offset_path(&group, &topic, 0), b"7");
    assert_eq!(zk.get(&topic_dir(&group, &topic)).unwrap(), b"");

    let keeper = keeper(&cluster);
    let loaded = keeper.load(&group, &topics).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![(0, Stored::Offset(7), 7, Action::Kept, 0)]
    );
    assert!(loaded.partitions[0].recreated.is_none());
    // An unchanged offset writes nothing but the ID (nothing at all without topic IDs).
    let summary = keeper
        .commit(&group, &[(TopicPartition::new(&*topic, 0), 7)])
        .unwrap();
    let requests = usize::from(capabilities().topic_ids);
    assert_eq!((summary.written, summary.requests), (0, requests));
    recorded_as_the_brokers_allow(&stored_id(&zk, &group, &topic));
    // Once recorded, commits send nothing for it.
    let summary = keeper
        .commit(&group, &[(TopicPartition::new(&*topic, 0), 7)])
        .unwrap();
    assert_eq!(summary.requests, 0);
}

#[test]
fn another_writer_changing_the_recorded_id_fences_the_commit() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic) = (unique("g"), unique("fenced"));
    let topics = vec![topic.clone()];
    kafka.create_topic(&topic, 1);
    kafka.produce(&topic, 0, 10);
    zk.put(&offset_path(&group, &topic, 0), b"7");

    let keeper = keeper(&cluster);
    keeper.load(&group, &topics).unwrap();
    // Another writer records something in the folder after the load.
    let other = b"offsetkeeper-topic-identity 1\ntopic_id=other\n";
    zk.put(&topic_dir(&group, &topic), other);
    if !capabilities().topic_ids {
        // No topic IDs: commits neither record nor check one, so the folder is no part of
        // them; the offset is written and the folder left as the other writer put it.
        keeper
            .commit(&group, &[(TopicPartition::new(&*topic, 0), 8)])
            .unwrap();
        assert_eq!(zk.get(&offset_path(&group, &topic, 0)).unwrap(), b"8");
        assert_eq!(zk.get(&topic_dir(&group, &topic)).unwrap(), other);
        return;
    }
    let err = keeper
        .commit(&group, &[(TopicPartition::new(&*topic, 0), 8)])
        .unwrap_err();
    assert!(
        matches!(err, Error::CommitConflict { .. }) && err.to_string().contains("topic ID"),
        "{err}"
    );
    // Nothing of the commit was written.
    assert_eq!(zk.get(&offset_path(&group, &topic, 0)).unwrap(), b"7");
}

/// A keeper that loaded the topics before asks their ranges and stored offsets at once with the
/// metadata; what it read is kept only when the metadata finds the same partitions. Here the
/// same keeper loads again after the topic was re-created (same partitions, new ID and leaders'
/// logs), then after it grew, then after it was re-created with fewer partitions. Without topic
/// IDs (before Kafka 2.8) the re-created topic is judged by its ranges alone.
#[test]
fn a_keeper_loading_again_sees_a_topic_re_created_or_grown_since_its_last_load() {
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let (group, topic) = (unique("g"), unique("again"));
    let topics = vec![topic.clone()];
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 0, 10);
    kafka.produce(&topic, 1, 10);
    let keeper = keeper(&cluster);
    keeper.load(&group, &topics).unwrap();
    keeper.commit(&group, &batch(&topic, 2, 8)).unwrap();
    let first_id = stored_id(&Zk::new(&cluster), &group, &topic);
    recorded_as_the_brokers_allow(&first_id);

    // Same partitions, new topic: the new ID comes from the metadata asked beside the read.
    kafka.delete_topic(&topic);
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 0, 20);
    kafka.produce(&topic, 1, 20);
    let loaded = keeper.load(&group, &topics).unwrap();
    if let Some(first_id) = first_id {
        assert_eq!(
            rows(&loaded),
            vec![
                (0, Stored::Offset(8), 0, Action::Recreated, 0),
                (1, Stored::Offset(8), 0, Action::Recreated, 0),
            ]
        );
        let recreated = by_id(loaded.partitions[0].recreated.clone());
        assert_eq!(recreated.stored_id, first_id);
        // The commit records the new ID: the load recorded what it read with the new metadata.
        keeper.commit(&group, &batch(&topic, 2, 5)).unwrap();
        let second_id = stored_id(&Zk::new(&cluster), &group, &topic).expect("recorded");
        assert_eq!(second_id, recreated.current_id);
    } else {
        // No topic IDs: 8 is within [0, 20] and kept; the commit records nothing.
        assert_eq!(
            rows(&loaded),
            vec![
                (0, Stored::Offset(8), 8, Action::Kept, 0),
                (1, Stored::Offset(8), 8, Action::Kept, 0),
            ]
        );
        assert!(loaded.partitions.iter().all(|r| r.recreated.is_none()));
        // Commits never move an offset backwards: 5 after the kept 8 writes nothing.
        keeper.commit(&group, &batch(&topic, 2, 5)).unwrap();
        assert_eq!(stored_id(&Zk::new(&cluster), &group, &topic), None);
    }
    let stored = if capabilities().topic_ids { 5 } else { 8 };

    // Grown: the new partitions are loaded too, with their ranges. (CreatePartitions, or the
    // assignment written to ZooKeeper before Kafka 1.0.)
    kafka.add_partitions(&topic, 3);
    kafka.produce(&topic, 2, 4);
    let loaded = keeper.load(&group, &topics).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![
            (0, Stored::Offset(stored), stored, Action::Kept, 0),
            (1, Stored::Offset(stored), stored, Action::Kept, 0),
            (2, Stored::Missing, 0, Action::Initialized, 0),
        ]
    );
    assert_eq!(loaded.partitions[2].range.latest, 4);

    // Re-created with fewer partitions: the one gone is reported stale, not loaded. Without
    // topic IDs, the stored offset is above [0, 3]: reset to the earliest all the same.
    kafka.delete_topic(&topic);
    kafka.create_topic(&topic, 1);
    kafka.produce(&topic, 0, 3);
    let loaded = keeper.load(&group, &topics).unwrap();
    let action = if capabilities().topic_ids {
        Action::Recreated
    } else {
        Action::ResetAboveRange
    };
    assert_eq!(
        rows(&loaded),
        vec![(0, Stored::Offset(stored), 0, action, 0)]
    );
    assert_eq!(loaded.partitions[0].range.latest, 3);
    let stale: Vec<i32> = loaded.stale.iter().map(|s| s.partition.partition).collect();
    assert_eq!(stale, vec![1]);
}

/// Milliseconds since the epoch, now.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .expect("clock after 1970")
}

/// A keeper whose re-creation check by record timestamps allows `tolerance` (`None`: off).
fn keeper_tolerating(
    cluster: &support::Cluster,
    tolerance: Option<std::time::Duration>,
) -> offsetkeeper::OffsetKeeper {
    keeper_with(cluster, &[], |c| {
        c.recreated_timestamp_tolerance = tolerance
    })
}

/// Offsets as a hand-written coordinator stores them: the bare decimal in each partition's node,
/// no topic ID beside them.
fn store_by_hand(zk: &Zk, group: &str, topic: &str, offsets: &[(i32, i64)]) {
    for (partition, offset) in offsets {
        zk.put(
            &offset_path(group, topic, *partition),
            offset.to_string().as_bytes(),
        );
    }
    assert_eq!(stored_id(zk, group, topic), None, "no topic ID by hand");
}

#[test]
fn a_topic_recreated_without_a_recorded_id_is_caught_by_its_records_timestamps() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, topic) = (unique("g"), unique("moved"));
    let topics = vec![topic.clone()];
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 0, 10);
    kafka.produce(&topic, 1, 10);
    // The job before offsetkeeper stored 8 for each partition.
    store_by_hand(&zk, &group, &topic, &[(0, 8), (1, 8)]);
    let committed = now_ms();

    // Deleted and re-created while the job was stopped; refilled past 8 by producers that
    // went on later: every partition's records are stamped 6 minutes after the commit, beyond
    // the default 5-minute tolerance.
    kafka.delete_topic(&topic);
    kafka.create_topic(&topic, 2);
    let later: Vec<i64> = (0..20).map(|i| committed + 360_000 + i).collect();
    kafka.produce_at(&topic, 0, &later);
    kafka.produce_at(&topic, 1, &later);

    // describe's view tells the same as the load, before it.
    let surveyed = keeper(&cluster).survey(&group, &topics).unwrap();
    assert!(
        surveyed
            .iter()
            .all(|s| matches!(s.recreated, Some(Recreated::RecordAfterCommit { .. }))),
        "{surveyed:?}"
    );

    // The default policy: the whole topic starts at its earliest offset, and says how it knew.
    let keeper = keeper(&cluster);
    let loaded = keeper.load(&group, &topics).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![
            (0, Stored::Offset(8), 0, Action::Recreated, 0),
            (1, Stored::Offset(8), 0, Action::Recreated, 0),
        ]
    );
    let Some(Recreated::RecordAfterCommit {
        partition,
        stored,
        committed_at_ms,
        tolerance_ms,
        first_offset,
        zookeeper_clock_offset_ms,
    }) = loaded.partitions[1].recreated.clone()
    else {
        panic!(
            "expected a re-creation told by timestamps: {:?}",
            loaded.partitions[1]
        );
    };
    assert_eq!(
        (partition, stored, tolerance_ms, first_offset),
        (0, 8, 300_000, 0)
    );
    assert_eq!(
        zookeeper_clock_offset_ms, None,
        "the test cluster's ZooKeeper shares this host's clock"
    );
    // The node's modification time, by ZooKeeper's clock: the commit, within the test's span.
    assert!(
        (committed - 60_000..=committed + 60_000).contains(&committed_at_ms),
        "committed at {committed_at_ms}, stored by hand at {committed}"
    );
    let text = loaded.partitions[1].action_text();
    assert!(
        text.starts_with(
            "re-created (no topic ID stored; partition 0's offset 8 was committed at "
        ) && text.contains("yet its record at offset 0 is timestamped at or after"),
        "{text}"
    );
    assert!(loaded.table().contains(&text), "{}", loaded.table());

    // The first commit records the brokers' topic ID (2.8+), as after any load.
    keeper.commit(&group, &batch(&topic, 2, 5)).unwrap();
    drop(keeper);
    recorded_as_the_brokers_allow(&stored_id(&zk, &group, &topic));
    assert_eq!(zk.get(&offset_path(&group, &topic, 0)).unwrap(), b"5");

    // on_recreated=fail: refused naming the evidence; nothing written.
    let (group, topic) = (unique("g"), unique("moved"));
    let topics = vec![topic.clone()];
    kafka.create_topic(&topic, 1);
    kafka.produce(&topic, 0, 10);
    store_by_hand(&zk, &group, &topic, &[(0, 8)]);
    kafka.delete_topic(&topic);
    kafka.create_topic(&topic, 1);
    let later: Vec<i64> = (0..20).map(|i| now_ms() + 360_000 + i).collect();
    kafka.produce_at(&topic, 0, &later);
    let fail = keeper_with(&cluster, &[], |c| c.policy.on_recreated = OnRecreated::Fail);
    let err = fail.load(&group, &topics).unwrap_err();
    let Error::PolicyViolation(message) = &err else {
        panic!("expected a policy violation, got {err}");
    };
    assert!(
        message.contains(&format!(
            "topic {topic} was re-created (no topic ID stored; partition 0's offset 8"
        )) && message.contains("on_recreated=fail"),
        "{message}"
    );
    assert_eq!(zk.get(&offset_path(&group, &topic, 0)).unwrap(), b"8");
    assert_eq!(stored_id(&zk, &group, &topic), None);
    drop(fail);

    // off: not checked; 8 within [0, 20] is kept, as before the check existed.
    let unchecked = keeper_tolerating(&cluster, None);
    let loaded = unchecked.load(&group, &topics).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![(0, Stored::Offset(8), 8, Action::Kept, 0)]
    );
}

#[test]
fn a_live_topic_is_never_judged_recreated_by_its_records_timestamps() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("g");
    // A 1.5 s tolerance, so that records produced after the commit are beyond it within a test.
    let keeper = keeper_tolerating(&cluster, Some(std::time::Duration::from_millis(1_500)));
    let expect_kept = |topic: &str, stored: i64, why: &str| {
        let loaded = keeper.load(&group, &[topic.to_string()]).unwrap();
        let report = &loaded.partitions[0];
        assert_eq!(
            (
                report.decision.action,
                report.decision.offset,
                report.recreated.clone()
            ),
            (Action::Kept, stored, None),
            "{why}: {report:?}"
        );
    };

    // Records after the stored offset produced well after the commit (CreateTime).
    let after = unique("after");
    kafka.create_topic(&after, 1);
    kafka.produce(&after, 0, 10);
    store_by_hand(&zk, &group, &after, &[(0, 8)]);
    // A producer clock running ahead within the tolerance, below the stored offset.
    let skewed = unique("skewed");
    kafka.create_topic(&skewed, 1);
    kafka.produce_at(
        &skewed,
        0,
        &(0..10).map(|i| now_ms() + 1_000 + i).collect::<Vec<_>>(),
    );
    store_by_hand(&zk, &group, &skewed, &[(0, 8)]);
    // LogAppendTime: the brokers stamp records; the producers' (future) stamps do not count.
    let appended = unique("appended");
    kafka.create_topic_with(
        &appended,
        1,
        1,
        &[("message.timestamp.type", "LogAppendTime")],
    );
    kafka.produce_at(
        &appended,
        0,
        &(0..10)
            .map(|i| now_ms() + 3_600_000 + i)
            .collect::<Vec<_>>(),
    );
    store_by_hand(&zk, &group, &appended, &[(0, 8)]);
    // A compacted topic.
    let compacted = unique("compacted");
    kafka.create_topic_with(&compacted, 1, 1, &[("cleanup.policy", "compact")]);
    kafka.produce(&compacted, 0, 10);
    store_by_hand(&zk, &group, &compacted, &[(0, 8)]);
    // No record after the stored offset.
    let idle = unique("idle");
    kafka.create_topic(&idle, 1);
    kafka.produce(&idle, 0, 10);
    store_by_hand(&zk, &group, &idle, &[(0, 10)]);
    // An offset written by offsetkeeper's commit path, as `reset` and `import` write (within
    // the range), with no load before it.
    let reset = unique("reset");
    kafka.create_topic(&reset, 1);
    kafka.produce(&reset, 0, 10);
    let writer = support::keeper(&cluster);
    writer
        .commit(&group, &[(TopicPartition::new(reset.as_str(), 0), 8)])
        .unwrap();
    drop(writer);

    // Beyond the tolerance, each gets records newer than the commit past its stored offset.
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    for topic in [&after, &skewed, &appended, &compacted, &reset] {
        kafka.produce(topic, 0, 10);
    }
    expect_kept(
        &after,
        8,
        "records after the stored offset, newer than the commit",
    );
    expect_kept(&skewed, 8, "a producer clock ahead within the tolerance");
    expect_kept(&appended, 8, "LogAppendTime, producer stamps an hour ahead");
    expect_kept(&compacted, 8, "compacted topic");
    expect_kept(&idle, 10, "no record after the stored offset");
    expect_kept(&reset, 8, "written by offsetkeeper's commit path");

    // A partition added later: nothing stored for it, initialized; the others kept.
    kafka.add_partitions(&after, 2);
    kafka.produce(&after, 1, 5);
    let loaded = keeper.load(&group, std::slice::from_ref(&after)).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![
            (0, Stored::Offset(8), 8, Action::Kept, 0),
            (1, Stored::Missing, 0, Action::Initialized, 0),
        ]
    );

    // The control: the same tolerance catches a topic re-created after its commit.
    let reborn = unique("reborn");
    kafka.create_topic(&reborn, 1);
    kafka.produce(&reborn, 0, 10);
    store_by_hand(&zk, &group, &reborn, &[(0, 8)]);
    std::thread::sleep(std::time::Duration::from_millis(2_000));
    kafka.delete_topic(&reborn);
    kafka.create_topic(&reborn, 1);
    kafka.produce(&reborn, 0, 20);
    let loaded = keeper.load(&group, std::slice::from_ref(&reborn)).unwrap();
    assert_eq!(
        rows(&loaded),
        vec![(0, Stored::Offset(8), 0, Action::Recreated, 0)]
    );
}

/// One record stamped in the future by a producer with a wrong clock, below the stored offset of
/// one partition of four: evidence on one partition only is no re-creation (a re-created topic
/// restarts every partition's log), so every offset is kept; the same topic re-created for real
/// is still caught.
#[test]
fn one_future_stamped_record_never_resets_a_live_topic() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    for ahead_ms in [600_000, 86_400_000] {
        let (group, topic) = (unique("g"), unique("future"));
        let topics = vec![topic.clone()];
        kafka.create_topic(&topic, 4);
        for partition in 0..4 {
            kafka.produce(&topic, partition, 100);
        }
        // The broken producer's record on partition 2, below the offset stored next.
        kafka.produce_at(&topic, 2, &[now_ms() + ahead_ms]);
        for partition in 0..4 {
            kafka.produce(&topic, partition, 100);
        }
        store_by_hand(
            &zk,
            &group,
            &topic,
            &[(0, 180), (1, 180), (2, 180), (3, 180)],
        );
        for partition in 0..4 {
            kafka.produce(&topic, partition, 20);
        }

        let surveyed = keeper(&cluster).survey(&group, &topics).unwrap();
        assert!(
            surveyed.iter().all(|s| s.recreated.is_none()),
            "ahead {ahead_ms} ms: {surveyed:?}"
        );
        let keeper = keeper(&cluster);
        let loaded = keeper.load(&group, &topics).unwrap();
        let kept: Vec<(i32, i64, Action)> = loaded
            .partitions
            .iter()
            .map(|r| (r.partition.partition, r.decision.offset, r.decision.action))
            .collect();
        assert_eq!(
            kept,
            (0..4).map(|p| (p, 180, Action::Kept)).collect::<Vec<_>>(),
            "ahead {ahead_ms} ms"
        );
        drop(keeper);
        for partition in 0..4 {
            assert_eq!(
                zk.get(&offset_path(&group, &topic, partition)).unwrap(),
                b"180",
                "nothing written"
            );
        }
    }

    // The control: four partitions re-created and refilled later are still caught.
    let (group, topic) = (unique("g"), unique("reborn4"));
    let topics = vec![topic.clone()];
    kafka.create_topic(&topic, 4);
    for partition in 0..4 {
        kafka.produce(&topic, partition, 10);
    }
    store_by_hand(&zk, &group, &topic, &[(0, 8), (1, 8), (2, 8), (3, 8)]);
    kafka.delete_topic(&topic);
    kafka.create_topic(&topic, 4);
    let later: Vec<i64> = (0..20).map(|i| now_ms() + 360_000 + i).collect();
    for partition in 0..4 {
        kafka.produce_at(&topic, partition, &later);
    }
    let loaded = keeper(&cluster).load(&group, &topics).unwrap();
    assert!(
        loaded
            .partitions
            .iter()
            .all(|r| r.decision.action == Action::Recreated && r.decision.offset == 0),
        "{}",
        loaded.table()
    );
}
