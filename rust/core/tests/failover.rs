//! Broker failover on a real Kafka 4 KRaft cluster of three combined nodes, offsets in a
//! ZooKeeper of its own: the node leading most partitions is SIGKILLed while loads run, and
//! every load succeeds within the default deadline (60 s, Kafka's `default.api.timeout.ms`),
//! the ones that meet the ~9 s Kafka takes to fence the dead broker included. Then, with the
//! whole cluster killed, a load fails within its deadline naming the brokers.
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
use support::{keeper_with, unique, Ensemble, Kafka, KraftCluster};

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
