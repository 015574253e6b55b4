//! The Kafka group store (`offsetkeeper.store=kafka`) against a real broker: no ZooKeeper
//! setting at all; offsets that Kafka's own consumers read back; the load's decisions and
//! report as on ZooKeeper (retention purge, re-created topic, offsets of another committer);
//! one active instance; a zombie's commit refused by the coordinator, and every later one until
//! it loads again; a consumer of another kind refused, never committed over.

mod support;

use std::time::{Duration, Instant};

use offsetkeeper::{Action, Error, KeeperConfig, OffsetKeeper, Recreated, Stored, TopicPartition};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::ClientConfig;
use support::{batch, cluster, unique, Kafka};

/// A keeper of the Kafka store: the bootstrap servers and the store, nothing of ZooKeeper.
fn kafka_keeper(extra: &[(&str, &str)]) -> OffsetKeeper {
    let cluster = cluster();
    let mut properties = vec![
        ("bootstrap.servers", cluster.bootstrap.as_str()),
        ("offsetkeeper.store", "kafka"),
    ];
    properties.extend_from_slice(extra);
    let config = KeeperConfig::from_properties(properties).expect("config");
    OffsetKeeper::open(config).expect("open keeper")
}

fn topics(topic: &str) -> Vec<String> {
    vec![topic.to_string()]
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
fn offsets_live_in_kafkas_group_store_and_kafkas_consumers_read_them() {
    let kafka = Kafka::new(&cluster());
    let (topic, group) = (unique("ks-topic"), unique("ks-group"));
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 0, 10);
    kafka.produce(&topic, 1, 10);
    {
        let keeper = kafka_keeper(&[]);
        let loaded = keeper.load(&group, &topics(&topic)).expect("first load");
        assert_eq!(
            rows(&loaded),
            vec![
                (0, Stored::Missing, 0, Action::Initialized, 0),
                (1, Stored::Missing, 0, Action::Initialized, 0)
            ]
        );
        let offsets = vec![
            (TopicPartition::new(topic.as_str(), 0), 5),
            (TopicPartition::new(topic.as_str(), 1), 7),
        ];
        let summary = keeper.commit(&group, &offsets).expect("commit");
        assert_eq!((summary.written, summary.requests), (2, 1), "{summary:?}");
        // The same batch again: nothing to send.
        let again = keeper.commit(&group, &offsets).expect("commit again");
        assert_eq!((again.written, again.unchanged, again.requests), (0, 2, 0));
        // ZooKeeper's operations are refused by name.
        let err = keeper.groups().unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument(m) if m.contains("offsetkeeper.store=kafka")),
            "{err}"
        );
    }
    // Kafka's own consumer (librdkafka) reads what was committed, once the keeper closed.
    assert_eq!(
        kafka.group_offsets(&group, &topic, &[0, 1]),
        vec![Some(5), Some(7)]
    );
    let keeper = kafka_keeper(&[]);
    let loaded = keeper.load(&group, &topics(&topic)).expect("second load");
    assert_eq!(
        rows(&loaded),
        vec![
            (0, Stored::Offset(5), 5, Action::Kept, 0),
            (1, Stored::Offset(7), 7, Action::Kept, 0)
        ]
    );
    // Monotonic commits: below what is stored is left out.
    let summary = keeper
        .commit(&group, &[(TopicPartition::new(topic.as_str(), 0), 3)])
        .expect("commit below");
    assert_eq!((summary.skipped, summary.written), (1, 0));
    drop(keeper);
    // A keeper that commits without loading (deserialized from a Spark checkpoint) joins the
    // group first, and its commit records the topic's ID as a loaded keeper's does.
    let restored = kafka_keeper(&[]);
    restored
        .commit(&group, &[(TopicPartition::new(topic.as_str(), 0), 9)])
        .expect("commit without a load");
    drop(restored);
    let metadata = committed_metadata(&group, &topic, 0);
    // Brokers before 2.8 have no topic IDs: the metadata records the time alone.
    let recorded = if support::capabilities().topic_ids {
        "{\"offsetkeeper\":1,\"topic_id\":\""
    } else {
        "{\"offsetkeeper\":1,\"committed_at\":"
    };
    assert!(metadata.starts_with(recorded), "{metadata}");
}

/// The metadata string committed with a partition's offset, as a Kafka consumer reads it.
fn committed_metadata(group: &str, topic: &str, partition: i32) -> String {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &cluster().bootstrap)
        .set("group.id", group)
        .create()
        .expect("consumer");
    let mut list = rdkafka::TopicPartitionList::new();
    list.add_partition(topic, partition);
    let committed = consumer
        .committed_offsets(list, Duration::from_secs(30))
        .expect("committed offsets");
    let element = committed
        .find_partition(topic, partition)
        .expect("the partition");
    element.metadata().to_string()
}

#[test]
fn a_purge_a_recreated_topic_and_another_committers_offsets_are_decided_as_on_zookeeper() {
    let kafka = Kafka::new(&cluster());
    let (topic, group) = (unique("ks-purge"), unique("ks-group"));
    kafka.create_topic(&topic, 1);
    kafka.produce(&topic, 0, 20);
    // Offsets written by someone else (a Kafka consumer): read as an offset without a topic
    // ID, kept.
    kafka.commit_group(&group, &topic, &[(0, 4)]);
    {
        let keeper = kafka_keeper(&[]);
        let loaded = keeper.load(&group, &topics(&topic)).expect("load foreign");
        assert_eq!(
            rows(&loaded),
            vec![(0, Stored::Offset(4), 4, Action::Kept, 0)]
        );
        keeper
            .commit(&group, &[(TopicPartition::new(topic.as_str(), 0), 8)])
            .expect("commit 8");
    }
    // Retention purged the stored position: earliest, the records lost counted.
    kafka.delete_records(&topic, 0, 12);
    {
        let keeper = kafka_keeper(&[]);
        let loaded = keeper.load(&group, &topics(&topic)).expect("load purged");
        assert_eq!(
            rows(&loaded),
            vec![(0, Stored::Offset(8), 12, Action::ResetBelowRange, 4)]
        );
        keeper
            .commit(&group, &[(TopicPartition::new(topic.as_str(), 0), 15)])
            .expect("commit 15");
    }
    // Re-created while a job runs: its keeper loaded the old topic, and its next commit lands
    // in the new log with the old topic's ID recorded beside it.
    let running = kafka_keeper(&[]);
    running.load(&group, &topics(&topic)).expect("load before");
    kafka.delete_topic(&topic);
    kafka.create_topic(&topic, 1);
    kafka.produce(&topic, 0, 30);
    running
        .commit(&group, &[(TopicPartition::new(topic.as_str(), 0), 16)])
        .expect("commit after the re-creation");
    drop(running);
    let keeper = kafka_keeper(&[]);
    let loaded = keeper
        .load(&group, &topics(&topic))
        .expect("load re-created");
    assert_eq!(
        rows(&loaded),
        vec![(0, Stored::Offset(16), 0, Action::Recreated, 0)]
    );
    assert!(
        matches!(
            loaded.partitions[0].recreated,
            Some(Recreated::TopicId { .. })
        ),
        "{:?}",
        loaded.partitions[0].recreated
    );
    keeper
        .commit(&group, &[(TopicPartition::new(topic.as_str(), 0), 20)])
        .expect("commit in the new topic");
    drop(keeper);
    // Deleted while no job runs: the brokers remove a deleted topic's committed offsets, so
    // the load finds none and follows on_missing.
    kafka.delete_topic(&topic);
    kafka.create_topic(&topic, 1);
    kafka.produce(&topic, 0, 5);
    let keeper = kafka_keeper(&[]);
    let loaded = keeper
        .load(&group, &topics(&topic))
        .expect("load after deletion");
    assert_eq!(
        rows(&loaded),
        vec![(0, Stored::Missing, 0, Action::Initialized, 0)]
    );
}

#[test]
fn one_instance_holds_a_group_and_a_zombies_commit_is_refused_by_the_coordinator() {
    let kafka = Kafka::new(&cluster());
    let (topic, group) = (unique("ks-fence"), unique("ks-group"));
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 0, 10);
    let first = kafka_keeper(&[]);
    first.load(&group, &topics(&topic)).expect("first load");
    first
        .commit(&group, &batch(&topic, 2, 1))
        .expect("first commit");
    // A second live instance is refused once its wait is over, naming the member.
    let second = kafka_keeper(&[("offsetkeeper.ownership.wait.ms", "1000")]);
    let started = Instant::now();
    let err = second.load(&group, &topics(&topic)).unwrap_err();
    assert!(matches!(err, Error::Owned { .. }), "{err}");
    assert!(err.to_string().contains("member"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // The first stops heartbeating (a long pause): its member session ends, and the second
    // takes the group over.
    first.stop_heartbeat(&group);
    let taker = kafka_keeper(&[("offsetkeeper.ownership.wait.ms", "30000")]);
    let loaded = taker.load(&group, &topics(&topic)).expect("take over");
    assert_eq!(loaded.partitions[0].stored, Stored::Offset(1));
    taker
        .commit(&group, &batch(&topic, 2, 2))
        .expect("taker commits");
    // The zombie's commit is refused by the coordinator: nothing written.
    let err = first.commit(&group, &batch(&topic, 2, 9)).unwrap_err();
    assert!(matches!(err, Error::CommitConflict { .. }), "{err}");
    drop(taker);
    assert_eq!(
        kafka.group_offsets(&group, &topic, &[0, 1]),
        vec![Some(2), Some(2)]
    );
}

/// The member session is a setting (`offsetkeeper.kafka.session.timeout.ms`): with 6 s, the
/// broker's default minimum, a paused instance's member leaves 6 s after its last heartbeat and
/// a new instance (whose default ownership wait is its session plus 5 s) takes over sooner than
/// the default 10 s session allows; a second live instance's refusal names the session. A
/// session below the broker's `group.min.session.timeout.ms` (6000 by default) is refused by
/// the coordinator, and the error names the value, the broker's settings and the key.
#[test]
fn the_member_session_is_a_setting_and_a_session_the_broker_refuses_is_named() {
    let kafka = Kafka::new(&cluster());
    let (topic, group) = (unique("ks-session"), unique("ks-group"));
    kafka.create_topic(&topic, 1);
    kafka.produce(&topic, 0, 10);

    let short = kafka_keeper(&[("offsetkeeper.kafka.session.timeout.ms", "3000")]);
    let started = Instant::now();
    let err = short.load(&group, &topics(&topic)).unwrap_err();
    let message = err.to_string();
    for needle in [
        "the member session of 3000 ms (INVALID_SESSION_TIMEOUT)",
        "group.min.session.timeout.ms and group.max.session.timeout.ms",
        "Set offsetkeeper.kafka.session.timeout.ms within the broker's limits",
    ] {
        assert!(message.contains(needle), "{needle} not in {message}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    drop(short);

    let session = [("offsetkeeper.kafka.session.timeout.ms", "6000")];
    let first = kafka_keeper(&session);
    first.load(&group, &topics(&topic)).expect("first load");
    first
        .commit(&group, &batch(&topic, 1, 4))
        .expect("first commit");
    let second = kafka_keeper(&[
        ("offsetkeeper.kafka.session.timeout.ms", "6000"),
        ("offsetkeeper.ownership.wait.ms", "500"),
    ]);
    let err = second.load(&group, &topics(&topic)).unwrap_err();
    assert!(matches!(err, Error::Owned { .. }), "{err}");
    assert!(
        err.to_string().contains(
            "6000 ms if it runs with this keeper's offsetkeeper.kafka.session.timeout.ms"
        ),
        "{err}"
    );
    drop(second);
    first.stop_heartbeat(&group);
    let stopped = Instant::now();
    let taker = kafka_keeper(&session);
    let loaded = taker.load(&group, &topics(&topic)).expect("take over");
    let took = stopped.elapsed();
    assert_eq!(loaded.partitions[0].stored, Stored::Offset(4));
    // The member left at most 6 s after its last heartbeat, sent within 2 s of the stop.
    assert!(
        took < Duration::from_millis(9500),
        "took over after {took:?}"
    );
    assert!(took > Duration::from_secs(3), "took over after {took:?}");
    let err = first.commit(&group, &batch(&topic, 1, 9)).unwrap_err();
    assert!(matches!(err, Error::CommitConflict { .. }), "{err}");
}

/// A zombie refused once stays refused: keeper A loads and commits, then stops
/// heartbeating (a pause longer than its member session); keeper B takes the group over,
/// commits higher offsets and closes, leaving the group empty. A's commits are each refused at
/// once with a conflict naming the first refusal, none joins the group again or writes, and the
/// group keeps B's offsets, also for a commit above them. Once A loads again it commits on from
/// B's offsets.
/// A keeper whose member session ended while nobody else took the group (a stall, a cut
/// network) is not a zombie: its next commit is refused by the coordinator, joins again at once,
/// finds the group holding what it saw, and writes.
#[test]
fn a_keeper_whose_member_session_ended_with_nobody_else_commits_on() {
    let kafka = Kafka::new(&cluster());
    let (topic, group) = (unique("ks-stall"), unique("ks-group"));
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 0, 30);
    kafka.produce(&topic, 1, 30);
    let keeper = kafka_keeper(&[("offsetkeeper.kafka.session.timeout.ms", "6000")]);
    keeper.load(&group, &topics(&topic)).expect("load");
    keeper
        .commit(&group, &batch(&topic, 2, 10))
        .expect("commit");
    keeper.stop_heartbeat(&group);
    // Past the member session: the coordinator removed the member, the group is empty.
    std::thread::sleep(Duration::from_secs(8));
    let summary = keeper
        .commit(&group, &batch(&topic, 2, 20))
        .expect("the commit after the session ended");
    assert!(!summary.deferred, "{summary:?}");
    assert_eq!(
        kafka.group_offsets(&group, &topic, &[0, 1]),
        vec![Some(20), Some(20)]
    );
    keeper
        .commit(&group, &batch(&topic, 2, 25))
        .expect("and the next");
    assert_eq!(
        kafka.group_offsets(&group, &topic, &[0, 1]),
        vec![Some(25), Some(25)]
    );
}

#[test]
fn a_refused_zombie_stays_refused_without_joining_again_until_it_loads() {
    let kafka = Kafka::new(&cluster());
    let (topic, group) = (unique("ks-zombie"), unique("ks-group"));
    kafka.create_topic(&topic, 2);
    kafka.produce(&topic, 0, 60);
    kafka.produce(&topic, 1, 60);
    let zombie = kafka_keeper(&[]);
    zombie.load(&group, &topics(&topic)).expect("zombie's load");
    zombie
        .commit(&group, &batch(&topic, 2, 10))
        .expect("zombie's commit");
    zombie.stop_heartbeat(&group);
    {
        let taker = kafka_keeper(&[("offsetkeeper.ownership.wait.ms", "30000")]);
        let loaded = taker.load(&group, &topics(&topic)).expect("take over");
        assert_eq!(loaded.partitions[0].stored, Stored::Offset(10));
        taker
            .commit(&group, &batch(&topic, 2, 50))
            .expect("taker commits");
    }
    // The taker closed: the group is empty, free for anyone to join.
    let inspector = kafka_keeper(&[("offsetkeeper.ownership", "false")]);
    let members = || {
        inspector
            .active_instances(&group)
            .expect("describe the group")
    };
    assert_eq!(members(), Vec::<String>::new());
    let first = zombie.commit(&group, &batch(&topic, 2, 20)).unwrap_err();
    let Error::CommitConflict {
        detail: refusal, ..
    } = &first
    else {
        panic!("the zombie's first commit: {first}");
    };
    for offset in [30, 40, 45, 55] {
        let started = Instant::now();
        let err = zombie
            .commit(&group, &batch(&topic, 2, offset))
            .unwrap_err();
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(2),
            "commit of {offset}: {took:?}"
        );
        assert!(
            matches!(&err, Error::CommitConflict { detail, .. } if detail.contains(refusal.as_str())),
            "commit of {offset}: {err}"
        );
        assert_eq!(
            kafka.group_offsets(&group, &topic, &[0, 1]),
            vec![Some(50), Some(50)],
            "after the commit of {offset}"
        );
        assert_eq!(
            members(),
            Vec::<String>::new(),
            "after the commit of {offset}"
        );
    }
    // A load takes B's offsets over, and the keeper commits on from them.
    let loaded = zombie.load(&group, &topics(&topic)).expect("load again");
    assert_eq!(
        rows(&loaded),
        vec![
            (0, Stored::Offset(50), 50, Action::Kept, 0),
            (1, Stored::Offset(50), 50, Action::Kept, 0)
        ]
    );
    let summary = zombie
        .commit(&group, &batch(&topic, 2, 55))
        .expect("commit after the load");
    assert_eq!(summary.written, 2, "{summary:?}");
    drop(zombie);
    assert_eq!(
        kafka.group_offsets(&group, &topic, &[0, 1]),
        vec![Some(55), Some(55)]
    );
}

#[test]
fn a_group_with_a_consumer_of_another_kind_is_refused_naming_it() {
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let (topic, group) = (unique("ks-other"), unique("ks-group"));
    kafka.create_topic(&topic, 1);
    let consumer = kafka.subscribed_member(&group, &topic, &[("client.id", "spark-subscribe-job")]);
    let keeper = kafka_keeper(&[]);
    let err = keeper.load(&group, &topics(&topic)).unwrap_err();
    assert!(matches!(err, Error::GroupInUse { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("spark-subscribe-job") && text.contains(&topic),
        "{text}"
    );
    // Nothing was committed over it.
    drop(consumer);
    assert_eq!(kafka.group_offsets(&group, &topic, &[0]), vec![None]);
}
