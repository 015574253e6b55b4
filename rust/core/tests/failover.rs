//! Broker failover on a real Kafka 4 KRaft cluster of three combined nodes, offsets in a
//! ZooKeeper of its own: the node leading most partitions is SIGKILLed while loads run, and
//! every load succeeds within the default deadline (60 s, Kafka's `default.api.timeout.ms`),
//! the ones that meet the ~9 s Kafka takes to fence the dead broker included. Then, with the
//! whole cluster killed, a load fails within its deadline naming the brokers. The Kafka group
//! store's tests start clusters of their own: three nodes losing the group coordinator's, and
//! one node whose brokers expire an empty group's offsets after a minute.
//!
//! Needs `gradle kraftClasspath` and `gradle clusterClasspath`; run by `gradle failoverTest`
//! (ignored in a plain `cargo test`, which has no KRaft jars). It fails loudly when its
//! servers cannot start.

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use offsetkeeper::TopicPartition;
use support::{batch, keeper_with, unique, Ensemble, Kafka, KraftCluster};

const NODES: usize = 3;
const PARTITIONS: i32 = 12;
const LOADERS: usize = 3;
/// Loads go on this long after the kill, to cover Kafka's fencing window (9 s).
const LOAD_FOR: Duration = Duration::from_secs(15);
const SHORT_DEADLINE_MS: u64 = 5000;

#[test]
#[ignore = "needs the Kafka 4 KRaft jars: run by `gradle failoverTest`"]
fn loads_survive_the_sigkill_of_the_busiest_leader_and_fail_in_time_without_brokers() {
    let kraft = KraftCluster::start("failover-kraft", NODES);
    let zookeeper = Ensemble::start("failover-zk", 1);
    let cluster = kraft.with_zookeeper(&zookeeper.connect);
    let kafka = Kafka::new(&cluster);
    let topics = [unique("failover-a"), unique("failover-b")];
    for topic in &topics {
        kafka.create_replicated_topic(topic, PARTITIONS, NODES as i32);
        for partition in 0..PARTITIONS {
            kafka.produce(topic, partition, 3);
        }
    }

    // The node leading most partitions; node I is broker I.
    let mut led: HashMap<i32, usize> = HashMap::new();
    for topic in &topics {
        for (_, leader) in kafka.leaders(topic) {
            *led.entry(leader).or_default() += 1;
        }
    }
    let (&victim, &leading) = led
        .iter()
        .max_by_key(|(id, count)| (**count, -**id))
        .expect("the topics have leaders");
    eprintln!("leaders per node: {led:?}; killing node {victim}, leader of {leading} partitions");
    let victim = usize::try_from(victim).expect("a broker id of 1..3");

    // Each loader is a job of its own (own group, own keeper), with offsets stored and its
    // connections and metadata warm before the kill, as a running job's are.
    let stop = Arc::new(AtomicBool::new(false));
    let killed_at: Arc<std::sync::OnceLock<Instant>> = Arc::new(std::sync::OnceLock::new());
    let loaders: Vec<_> = (0..LOADERS)
        .map(|n| {
            let keeper = keeper_with(&cluster, &[], |_| {});
            let group = unique(&format!("failover-g{n}"));
            let offsets: Vec<(TopicPartition, i64)> = topics
                .iter()
                .flat_map(|t| (0..PARTITIONS).map(move |p| (TopicPartition::new(t.as_str(), p), 1)))
                .collect();
            keeper
                .commit(&group, &offsets)
                .expect("commit before the kill");
            keeper.load(&group, &topics).expect("load before the kill");
            let (stop, killed_at, topics) = (stop.clone(), killed_at.clone(), topics.clone());
            std::thread::spawn(move || {
                let mut loads = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let started = Instant::now();
                    let result = keeper.load(&group, &topics);
                    let took = started.elapsed();
                    let after_kill = killed_at.get().map(|at| started >= *at);
                    loads.push((after_kill, took, result.map(|l| l.partitions.len())));
                    std::thread::sleep(Duration::from_millis(700));
                }
                loads
            })
        })
        .collect();

    std::thread::sleep(Duration::from_millis(500));
    kraft.node("kill-node", victim);
    let _ = killed_at.set(Instant::now());
    std::thread::sleep(LOAD_FOR);
    stop.store(true, Ordering::SeqCst);

    let mut failures = Vec::new();
    let mut slowest = Duration::ZERO;
    for (n, loader) in loaders.into_iter().enumerate() {
        let loads = loader.join().expect("loader thread");
        for (i, (after_kill, took, result)) in loads.into_iter().enumerate() {
            let when = match after_kill {
                Some(true) => "started after the kill",
                Some(false) => "running at the kill",
                None => "before the kill",
            };
            eprintln!(
                "failover: loader {n} load {i} ({when}): {} ms, {}",
                took.as_millis(),
                match &result {
                    Ok(count) => format!("ok, {count} partitions"),
                    Err(err) => format!("FAILED: {err}"),
                }
            );
            slowest = slowest.max(took);
            match result {
                Ok(count) => assert_eq!(count, 2 * PARTITIONS as usize),
                Err(err) => failures.push(format!("loader {n} load {i}: {err}")),
            }
        }
    }
    assert!(failures.is_empty(), "loads failed: {failures:#?}");
    eprintln!("failover: slowest load {} ms", slowest.as_millis());

    // No broker at all: a load fails within its deadline, naming the brokers it tried.
    for node in (1..=NODES).filter(|n| *n != victim) {
        kraft.node("kill-node", node);
    }
    let deadline_ms = SHORT_DEADLINE_MS.to_string();
    let keeper = keeper_with(
        &cluster,
        &[("default.api.timeout.ms", deadline_ms.as_str())],
        |_| {},
    );
    let group = unique("failover-dead");
    let started = Instant::now();
    let err = keeper
        .load(&group, &topics)
        .expect_err("a load with every broker dead");
    let took = started.elapsed();
    eprintln!(
        "failover: load with every broker killed failed after {} ms: {err}",
        took.as_millis()
    );
    assert!(
        took < Duration::from_millis(SHORT_DEADLINE_MS) + Duration::from_secs(3),
        "took {took:?}"
    );
    let message = err.to_string();
    let tried = message
        .split_once("brokers tried: ")
        .map(|(_, tried)| tried)
        .unwrap_or_else(|| panic!("the error names no brokers tried: {message}"));
    for port in &kraft.ports {
        assert!(tried.contains(&format!("127.0.0.1:{port}")), "{message}");
    }
    assert!(tried.contains("last cause: "), "{message}");
}

/// A keeper of the Kafka group store on the same kind of cluster, with no ZooKeeper at all.
fn kafka_store_keeper(bootstrap: &str, extra: &[(&str, &str)]) -> offsetkeeper::OffsetKeeper {
    let mut properties = vec![
        ("bootstrap.servers", bootstrap),
        ("offsetkeeper.store", "kafka"),
    ];
    properties.extend_from_slice(extra);
    offsetkeeper::OffsetKeeper::open(
        offsetkeeper::KeeperConfig::from_properties(properties).expect("config"),
    )
    .expect("open keeper")
}

/// The Kafka group store on Kafka 4's KRaft brokers: commits ride out the SIGKILL of the group
/// coordinator's node (stored once the coordinator moves, or deferred and stored by the next
/// commit), and a group held by a consumer of Kafka 4's consumer protocol (KIP-848, which
/// DescribeGroups does not show as a classic group) is refused, nothing committed over it.
#[test]
#[ignore = "needs the Kafka 4 KRaft jars: run by `gradle failoverTest`"]
fn the_kafka_store_rides_out_the_coordinators_sigkill_and_refuses_a_new_protocol_consumer() {
    use offsetkeeper::{Action, Error, Stored};

    let kraft = KraftCluster::start("kafka-store-kraft", NODES);
    let cluster = kraft.with_zookeeper("unused:1");
    let kafka = Kafka::new(&cluster);
    let topic = unique("ks-failover");
    kafka.create_replicated_topic(&topic, 4, NODES as i32);
    for partition in 0..4 {
        kafka.produce(&topic, partition, 5);
    }
    let topics = vec![topic.clone()];
    let batch = |offset: i64| -> Vec<(TopicPartition, i64)> {
        (0..4)
            .map(|p| (TopicPartition::new(topic.as_str(), p), offset))
            .collect()
    };

    // A new-protocol consumer holds one group: refused by name, nothing committed.
    let taken = unique("ks-kip848");
    let consumer = kafka.subscribed_member(
        &taken,
        &topic,
        &[("group.protocol", "consumer"), ("client.id", "kip848-job")],
    );
    let refused = kafka_store_keeper(
        &kraft.bootstrap,
        &[("offsetkeeper.ownership.wait.ms", "3000")],
    );
    let err = refused.load(&taken, &topics).unwrap_err();
    eprintln!("kafka store: a KIP-848 group: {err}");
    assert!(matches!(err, Error::GroupInUse { .. }), "{err}");
    assert!(err.to_string().contains("KIP-848"), "{err}");
    drop(refused);
    drop(consumer);
    assert_eq!(kafka.group_offsets(&taken, &topic, &[0]), vec![None]);

    // The coordinator's node is SIGKILLed between two commits.
    let group = unique("ks-failover-g");
    let keeper = kafka_store_keeper(&kraft.bootstrap, &[]);
    keeper.load(&group, &topics).expect("load");
    keeper
        .commit(&group, &batch(1))
        .expect("commit before the kill");
    let coordinator = kafka
        .leaders("__consumer_offsets")
        .first()
        .map(|(_, leader)| *leader)
        .expect("__consumer_offsets has a leader");
    eprintln!("kafka store: killing node {coordinator}, the group coordinator");
    kraft.node(
        "kill-node",
        usize::try_from(coordinator).expect("a broker id of 1..3"),
    );
    let started = Instant::now();
    let summary = keeper
        .commit(&group, &batch(2))
        .expect("commit across the kill");
    eprintln!(
        "kafka store: commit across the coordinator's kill: {} ms, {summary:?}",
        started.elapsed().as_millis()
    );
    assert!(
        started.elapsed() < Duration::from_secs(65),
        "{:?}",
        started.elapsed()
    );
    let summary = keeper
        .commit(&group, &batch(3))
        .expect("commit after the kill");
    assert!(!summary.deferred, "{summary:?}");
    drop(keeper);
    let keeper = kafka_store_keeper(&kraft.bootstrap, &[]);
    let loaded = keeper.load(&group, &topics).expect("load after the kill");
    for report in &loaded.partitions {
        assert_eq!(
            (report.stored.clone(), report.decision.action),
            (Stored::Offset(3), Action::Kept),
            "{report:?}"
        );
    }
}

/// The least offset retention Kafka takes (`offsets.retention.minutes=1`).
const OFFSETS_RETENTION: Duration = Duration::from_secs(60);
/// How long the expiry may take after the group emptied: the retention, the brokers' check
/// every second, and room for a slow machine.
const EXPIRY_DEADLINE: Duration = Duration::from_secs(150);
const EXPIRY_POLL: Duration = Duration::from_secs(2);

/// Kafka's offset expiry, said out loud by the Kafka group store: on a broker that expires an
/// empty group's offsets after a minute (`offsets.retention.minutes=1`, checked every second),
/// a job that committed and stopped loses its offsets; the next load reports every partition as
/// stored none, decided by `on.missing` (refused under `fail`, the latest offset under `latest`,
/// the earliest by default), and its WARN line says the group's offsets may have expired, the
/// refused load's too.
#[test]
#[ignore = "needs the Kafka 4 KRaft jars: run by `gradle failoverTest`"]
fn an_expired_groups_offsets_are_reported_as_missing_and_on_missing_decides() {
    use offsetkeeper::{Action, Error, PartitionRange, Stored};

    support::capture_warnings();
    let kraft = KraftCluster::start_with(
        "kafka-store-expiry",
        1,
        &[
            ("offsets.retention.minutes", "1"),
            ("offsets.retention.check.interval.ms", "1000"),
        ],
    );
    let kafka = Kafka::new(&kraft.with_zookeeper("unused:1"));
    let (topic, group) = (unique("ks-expiry"), unique("ks-expiry-g"));
    kafka.create_topic(&topic, 2);
    for partition in 0..2 {
        kafka.produce(&topic, partition, 10);
    }
    let topics = vec![topic.clone()];
    // The store's own reading of what the group committed, from a keeper that never joins it.
    let inspector = kafka_store_keeper(&kraft.bootstrap, &[("offsetkeeper.ownership", "false")]);
    let committed = || -> Vec<Stored> {
        inspector
            .inspect(&group, &topics)
            .expect("inspect the group")
            .into_iter()
            .map(|inspected| inspected.stored)
            .collect()
    };

    // A job starts, commits, and stops: its keeper leaves the group, which is then empty.
    let keeper = kafka_store_keeper(&kraft.bootstrap, &[]);
    keeper.load(&group, &topics).expect("first load");
    let committing = Instant::now();
    let summary = keeper.commit(&group, &batch(&topic, 2, 5)).expect("commit");
    assert_eq!((summary.written, summary.requests), (2, 1), "{summary:?}");
    drop(keeper);
    let left = Instant::now();
    assert_eq!(
        committed(),
        vec![Stored::Offset(5); 2],
        "right after the commit"
    );

    // The brokers remove them once the group has been empty for the retention.
    let mut last_seen = left;
    let gone = loop {
        let stored = committed();
        let at = Instant::now();
        assert!(
            stored
                .iter()
                .all(|s| matches!(s, Stored::Offset(5) | Stored::Missing)),
            "group {group}: neither the commit nor nothing: {stored:?}"
        );
        if stored.iter().all(|s| *s == Stored::Missing) {
            break at;
        }
        last_seen = at;
        assert!(
            at < left + EXPIRY_DEADLINE,
            "group {group}: its offsets are still committed {} s after the group emptied, on a broker with offsets.retention.minutes=1 and offsets.retention.check.interval.ms=1000: {stored:?}",
            at.duration_since(left).as_secs()
        );
        std::thread::sleep(EXPIRY_POLL);
    };
    let after = gone.duration_since(committing);
    eprintln!(
        "kafka store: the offsets were gone {} ms after the commit, {} ms after the group emptied (last seen {} ms after)",
        after.as_millis(),
        gone.duration_since(left).as_millis(),
        last_seen.duration_since(left).as_millis()
    );
    assert!(
        after >= OFFSETS_RETENTION,
        "the offsets were gone {after:?} after the commit, before offsets.retention.minutes=1 had passed: not an expiry"
    );

    // on.missing=fail: the load is refused, every partition named.
    let refusing = kafka_store_keeper(&kraft.bootstrap, &[("offsetkeeper.on.missing", "fail")]);
    let err = refusing
        .load(&group, &topics)
        .expect_err("a load with on.missing=fail after the expiry");
    eprintln!("kafka store: on.missing=fail after the expiry: {err}");
    let Error::PolicyViolation(refusals) = &err else {
        panic!("not a policy violation: {err}");
    };
    for partition in 0..2 {
        let refused =
            format!("{topic}-{partition}: stored none with range [0, 10] and on_missing=fail");
        assert!(refusals.contains(&refused), "{err}");
    }
    drop(refusing);

    // on.missing=latest, and the default (earliest): every partition reported as stored none,
    // initialized where the policy says, the records skipped counted.
    type Settings<'a> = &'a [(&'a str, &'a str)];
    type Row = (i32, Stored, PartitionRange, i64, Action, i64);
    let policies: [(&str, Settings, i64); 2] = [
        ("latest", &[("offsetkeeper.on.missing", "latest")], 10),
        ("earliest (the default)", &[], 0),
    ];
    for (policy, extra, chosen) in policies {
        let keeper = kafka_store_keeper(&kraft.bootstrap, extra);
        let loaded = keeper
            .load(&group, &topics)
            .unwrap_or_else(|err| panic!("load with on.missing={policy}: {err}"));
        eprint!(
            "kafka store: load after the expiry, on.missing={policy}:\n{}",
            loaded.table()
        );
        let rows: Vec<Row> = loaded
            .partitions
            .iter()
            .map(|r| {
                (
                    r.partition.partition,
                    r.stored.clone(),
                    r.range,
                    r.decision.offset,
                    r.decision.action,
                    r.decision.records_lost,
                )
            })
            .collect();
        let range = PartitionRange {
            earliest: 0,
            latest: 10,
        };
        let expected: Vec<Row> = (0..2)
            .map(|p| {
                (
                    p,
                    Stored::Missing,
                    range,
                    chosen,
                    Action::Initialized,
                    chosen,
                )
            })
            .collect();
        assert_eq!(rows, expected, "on.missing={policy}");
        assert!(loaded.stale.is_empty(), "{:?}", loaded.stale);
        assert!(
            loaded
                .partitions
                .iter()
                .all(|r| r.recreated.is_none() && r.action_text() == "initialized"),
            "{loaded:?}"
        );
        assert_eq!(loaded.offsets().count(), 2);
    }

    // Said out loud: each load that found the group's offsets gone named the expiry, the first
    // start's and the refused one's included.
    let said: Vec<String> = support::warnings()
        .into_iter()
        .filter(|line| {
            line.starts_with(&format!(
                "group {group}: Kafka holds no committed offset of the group for {topic}: a first start, or the group's offsets expired ("
            ))
        })
        .collect();
    let then = [
        "the partitions start by offsetkeeper.on.missing (earliest)",
        "offsetkeeper.on.missing=fail refuses the load",
        "the partitions start by offsetkeeper.on.missing (latest)",
        "the partitions start by offsetkeeper.on.missing (earliest)",
    ];
    assert_eq!(said.len(), then.len(), "{said:#?}");
    for (line, then) in said.iter().zip(then) {
        assert!(line.ends_with(then), "{line}");
    }

    drop(inspector);
    drop(kafka);
    drop(kraft);
}
