//! Fencing, one active instance per group, and monotonic commits, against the real cluster.

mod support;

use std::time::{Duration, Instant};

use offsetkeeper::{Error, OffsetKeeper, TopicPartition, ZkConfig};
use support::{
    cluster, expire_through, keeper_with, offset_path, unique, Cluster, Kafka, Proxy, Zk,
};

fn batch(topic: &str, offsets: &[i64]) -> Vec<(TopicPartition, i64)> {
    offsets
        .iter()
        .enumerate()
        .map(|(p, offset)| (TopicPartition::new(topic, p as i32), *offset))
        .collect()
}

fn topic_with(cluster: &Cluster, partitions: i32, records: usize) -> String {
    let kafka = Kafka::new(cluster);
    let topic = unique("rel");
    kafka.create_topic(&topic, partitions);
    for p in 0..partitions {
        kafka.produce(&topic, p, records);
    }
    topic
}

fn stored(zk: &Zk, group: &str, topic: &str, partition: i32) -> Option<String> {
    zk.get(&offset_path(group, topic, partition))
        .map(|raw| String::from_utf8_lossy(&raw).into_owned())
}

/// A keeper that reaches ZooKeeper through the proxy, with the shortest session timeout the
/// test server allows (2 ticks of 2 s).
fn through(cluster: &Cluster, proxy: &Proxy) -> OffsetKeeper {
    keeper_with(cluster, &[], |c| {
        c.zookeeper.connect = proxy.address.clone();
        c.zookeeper.session_timeout = Duration::from_secs(4);
        c.zookeeper.request_timeout = Duration::from_secs(3);
    })
}

/// A keeper that fails at once instead of waiting for another owner.
fn impatient(cluster: &Cluster) -> OffsetKeeper {
    keeper_with(cluster, &[], |c| c.ownership.wait = Some(Duration::ZERO))
}

#[test]
fn a_concurrent_writer_makes_the_commit_fail_and_nothing_is_written() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let topic = topic_with(&cluster, 3, 100);
    let group = unique("g");
    let keeper = support::keeper(&cluster);
    keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
    keeper
        .commit(&group, &batch(&topic, &[10, 10, 10]))
        .unwrap();

    // An operator's reset (here: a plain write) changes partition 1 behind the job's back.
    zk.put(&offset_path(&group, &topic, 1), b"3");
    let err = keeper
        .commit(&group, &batch(&topic, &[20, 20, 20]))
        .unwrap_err();
    let Error::CommitConflict {
        partition, detail, ..
    } = &err
    else {
        panic!("expected a conflict, got {err:?}");
    };
    assert_eq!(partition, &TopicPartition::new(&*topic, 1));
    assert!(
        detail.contains("version 0 holding 10") && detail.contains("version 1 holding 3"),
        "{err}"
    );
    assert_eq!(stored(&zk, &group, &topic, 0).as_deref(), Some("10"));
    assert_eq!(stored(&zk, &group, &topic, 1).as_deref(), Some("3"));
    assert_eq!(stored(&zk, &group, &topic, 2).as_deref(), Some("10"));
    // Still fenced: the keeper does not adopt the other writer's value by itself.
    assert!(matches!(
        keeper.commit(&group, &batch(&topic, &[30, 30, 30])),
        Err(Error::CommitConflict { .. })
    ));

    // A load takes what is stored over (a deliberate rewind), and commits go on from there,
    // below what this keeper committed before.
    let loaded = keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
    assert_eq!(
        loaded.offsets().map(|(_, o)| o).collect::<Vec<_>>(),
        [10, 3, 10]
    );
    let summary = keeper.commit(&group, &batch(&topic, &[10, 5, 10])).unwrap();
    assert_eq!((summary.written, summary.unchanged), (1, 2));
    assert_eq!(stored(&zk, &group, &topic, 1).as_deref(), Some("5"));
}

#[test]
fn a_node_created_or_deleted_by_someone_else_is_a_conflict_too() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let topic = topic_with(&cluster, 2, 10);
    let group = unique("g");
    let keeper = support::keeper(&cluster);
    keeper.load(&group, std::slice::from_ref(&topic)).unwrap(); // sees both missing
    zk.put(&offset_path(&group, &topic, 1), b"7");
    let err = keeper.commit(&group, &batch(&topic, &[1, 2])).unwrap_err();
    assert!(
        err.to_string().contains("no node") && err.to_string().contains("holding 7"),
        "{err}"
    );
    assert_eq!(stored(&zk, &group, &topic, 0), None);
    keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
    keeper.commit(&group, &batch(&topic, &[1, 8])).unwrap();

    // An operator deletes the topic's offsets while the job runs.
    let admin =
        OffsetKeeper::open_zookeeper_only(ZkConfig::new(cluster.zookeeper.clone())).unwrap();
    admin
        .delete_topics(&group, std::slice::from_ref(&topic))
        .unwrap();
    let err = keeper.commit(&group, &batch(&topic, &[2, 9])).unwrap_err();
    assert!(matches!(err, Error::CommitConflict { .. }), "{err:?}");
    assert_eq!(stored(&zk, &group, &topic, 0), None);
}

#[test]
fn with_fencing_off_the_last_writer_wins() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let topic = topic_with(&cluster, 1, 10);
    let group = unique("g");
    let keeper = keeper_with(&cluster, &[], |c| c.fencing = false);
    keeper.commit(&group, &batch(&topic, &[4])).unwrap();
    zk.put(&offset_path(&group, &topic, 0), b"9");
    let summary = keeper.commit(&group, &batch(&topic, &[5])).unwrap();
    assert_eq!(summary.written, 1);
    assert_eq!(stored(&zk, &group, &topic, 0).as_deref(), Some("5"));
    // Unchanged values send nothing without fencing.
    assert_eq!(
        keeper
            .commit(&group, &batch(&topic, &[5]))
            .unwrap()
            .requests,
        0
    );
}

#[test]
fn a_second_instance_is_refused_naming_the_owner_until_the_first_closes() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let topic = topic_with(&cluster, 2, 10);
    let group = unique("g");
    let first = support::keeper(&cluster);
    first.load(&group, std::slice::from_ref(&topic)).unwrap();

    // Kafka's old consumer layout: ids/<consumer id> and owners/<topic>/<partition>, ephemeral.
    let ids = zk.children(&format!("/consumers/{group}/ids"));
    assert_eq!(ids.len(), 1, "{ids:?}");
    let id_path = format!("/consumers/{group}/ids/{}", ids[0]);
    assert!(zk.is_ephemeral(&id_path));
    let registration = String::from_utf8(zk.get(&id_path).unwrap()).unwrap();
    assert!(
        registration.contains(&format!("\"subscription\":{{\"{topic}\":1}}"))
            && registration.contains(&format!("\"pid\":{}", std::process::id())),
        "{registration}"
    );
    // The owner nodes follow the load; the group's lock is there at once.
    let lock = format!("/consumers/{group}/lock");
    assert!(zk.is_ephemeral(&lock));
    assert_eq!(zk.get(&lock), Some(format!("{}-0", ids[0]).into_bytes()));
    assert_eq!(zk.owners(&group, &topic, 2), ["0", "1"]);
    for p in 0..2 {
        let owner = format!("/consumers/{group}/owners/{topic}/{p}");
        assert!(zk.is_ephemeral(&owner));
        assert_eq!(zk.get(&owner), Some(format!("{}-0", ids[0]).into_bytes()));
    }
    // The same keeper loads again as often as it likes.
    first.load(&group, std::slice::from_ref(&topic)).unwrap();

    let second = impatient(&cluster);
    let started = Instant::now();
    let err = second
        .load(&group, std::slice::from_ref(&topic))
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    let Error::Owned { owner, others, .. } = &err else {
        panic!("expected Owned, got {err:?}");
    };
    assert_eq!(*others, 1);
    for needle in [
        ids[0].as_str(),
        &format!("pid {}", std::process::id()),
        "since 20",
        "ZooKeeper session 0x",
    ] {
        assert!(owner.contains(needle), "{needle}: {err}");
    }
    // Nothing of the second instance stays behind.
    assert_eq!(zk.children(&format!("/consumers/{group}/ids")), ids);

    // Closing releases at once; a waiting instance then gets the partitions.
    let waiting = keeper_with(&cluster, &[], |c| {
        c.ownership.wait = Some(Duration::from_secs(20))
    });
    let closer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        drop(first);
    });
    let started = Instant::now();
    waiting.load(&group, std::slice::from_ref(&topic)).unwrap();
    let waited = started.elapsed();
    closer.join().unwrap();
    assert!(
        waited >= Duration::from_millis(1000) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
    assert!(!zk
        .children(&format!("/consumers/{group}/ids"))
        .contains(&ids[0]));
    drop(waiting);
    assert!(zk.children(&format!("/consumers/{group}/ids")).is_empty());
    assert_eq!(zk.get(&lock), None);
    assert!(zk
        .children(&format!("/consumers/{group}/owners/{topic}"))
        .is_empty());
}

#[test]
fn the_group_lock_refuses_a_second_instance_whatever_topics_it_loads() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let (orders, payments) = (topic_with(&cluster, 1, 10), topic_with(&cluster, 1, 10));
    let group = unique("g");
    let first = support::keeper(&cluster);
    first.load(&group, std::slice::from_ref(&orders)).unwrap();
    let err = impatient(&cluster)
        .load(&group, std::slice::from_ref(&payments))
        .unwrap_err();
    let Error::Owned { owner, .. } = &err else {
        panic!("expected Owned, got {err:?}");
    };
    let ids = zk.children(&format!("/consumers/{group}/ids"));
    assert_eq!(
        ids.len(),
        1,
        "nothing of the second instance stays: {ids:?}"
    );
    assert!(owner.contains(&ids[0]), "{err}");
    assert!(zk
        .children(&format!("/consumers/{group}/owners/{payments}"))
        .is_empty());
}

#[test]
fn a_commit_writes_nothing_when_the_loads_owner_nodes_could_not_be_created() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let topic = topic_with(&cluster, 2, 10);
    let group = unique("g");
    // The lock and the registration can be created; the topic's owner nodes cannot.
    zk.put(&format!("/consumers/{group}/ids"), b"");
    let owners = format!("/consumers/{group}/owners/{topic}");
    zk.put(&owners, b"");
    zk.make_read_only(&owners);
    let keeper = support::keeper(&cluster);
    // The lock decides; the owner nodes follow the load, and fail.
    keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
    let err = keeper.commit(&group, &batch(&topic, &[5, 5])).unwrap_err();
    assert!(
        matches!(err, Error::ZooKeeper { .. }) && err.to_string().contains(&owners),
        "{err:?}"
    );
    assert_eq!(stored(&zk, &group, &topic, 0), None);
    assert_eq!(stored(&zk, &group, &topic, 1), None);
}

#[test]
fn ownership_off_registers_nothing() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let topic = topic_with(&cluster, 1, 10);
    let group = unique("g");
    let holder = support::keeper(&cluster);
    holder.load(&group, std::slice::from_ref(&topic)).unwrap();
    let free = keeper_with(&cluster, &[], |c| c.ownership.enabled = false);
    free.load(&group, std::slice::from_ref(&topic)).unwrap();
    assert_eq!(zk.children(&format!("/consumers/{group}/ids")).len(), 1);
}

/// Commits until the commit is not deferred: while the keeper's connection is down (until its
/// client connects again, within about a second of the network healing) a commit is deferred
/// within 250 ms. Up to 15 s.
fn past_reconnect(
    keeper: &offsetkeeper::OffsetKeeper,
    group: &str,
    offsets: &[(offsetkeeper::TopicPartition, i64)],
) -> offsetkeeper::Result<offsetkeeper::CommitSummary> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        match keeper.commit(group, offsets) {
            Ok(summary) if summary.deferred && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

#[test]
fn session_expiry_is_recovered_at_the_next_commit_and_ownership_taken_again() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let topic = topic_with(&cluster, 2, 10);
    let group = unique("g");
    let proxy = Proxy::to(&cluster.zookeeper);
    let keeper = through(&cluster, &proxy);
    keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
    keeper.commit(&group, &batch(&topic, &[1, 1])).unwrap();
    let before = keeper.zookeeper_session().unwrap().id();

    expire_through(&proxy, &zk, &group);

    let written = past_reconnect(&keeper, &group, &batch(&topic, &[2, 2])).unwrap();
    assert!(!written.deferred, "{written:?}");
    assert_eq!(stored(&zk, &group, &topic, 1).as_deref(), Some("2"));
    assert_ne!(keeper.zookeeper_session().unwrap().id(), before);
    assert_eq!(zk.children(&format!("/consumers/{group}/ids")).len(), 1);
    assert_eq!(
        zk.children(&format!("/consumers/{group}/owners/{topic}")),
        ["0", "1"]
    );
}

#[test]
fn a_zombie_whose_session_expired_cannot_overwrite_its_successor() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let topic = topic_with(&cluster, 2, 100);
    let group = unique("g");
    let proxy = Proxy::to(&cluster.zookeeper);
    let zombie = through(&cluster, &proxy);
    zombie.load(&group, std::slice::from_ref(&topic)).unwrap();
    zombie.commit(&group, &batch(&topic, &[10, 10])).unwrap();

    // The zombie's session expires (a network partition, a long GC pause); a new driver starts.
    expire_through(&proxy, &zk, &group);
    let successor = impatient(&cluster);
    successor
        .load(&group, std::slice::from_ref(&topic))
        .unwrap();

    // Before the successor commits: the zombie's commit is refused by ownership.
    let err = past_reconnect(&zombie, &group, &batch(&topic, &[50, 50])).unwrap_err();
    assert!(
        matches!(&err, Error::CommitConflict { detail, .. } if detail.contains("owns the partition")),
        "{err:?}"
    );
    successor.commit(&group, &batch(&topic, &[20, 20])).unwrap();
    drop(successor);
    // After the successor committed and went: refused by the versions.
    let err = zombie
        .commit(&group, &batch(&topic, &[60, 60]))
        .unwrap_err();
    assert!(matches!(err, Error::CommitConflict { .. }), "{err:?}");
    assert_eq!(stored(&zk, &group, &topic, 0).as_deref(), Some("20"));
    assert_eq!(stored(&zk, &group, &topic, 1).as_deref(), Some("20"));
}

#[test]
fn commits_never_go_below_what_the_keeper_committed() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let topic = topic_with(&cluster, 2, 500);
    let group = unique("g");
    let keeper = support::keeper(&cluster);
    keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
    keeper.commit(&group, &batch(&topic, &[200, 200])).unwrap();
    // A batch that finished late: partition 0 is behind, partition 1 ahead.
    let summary = keeper.commit(&group, &batch(&topic, &[100, 300])).unwrap();
    assert_eq!(
        (summary.written, summary.unchanged, summary.skipped),
        (1, 0, 1)
    );
    assert_eq!(stored(&zk, &group, &topic, 0).as_deref(), Some("200"));
    assert_eq!(stored(&zk, &group, &topic, 1).as_deref(), Some("300"));
    // All below: nothing is sent at all.
    let summary = keeper.commit(&group, &batch(&topic, &[1, 2])).unwrap();
    assert_eq!((summary.skipped, summary.requests), (2, 0));

    // A deliberate rewind: the CLI's reset, then a load.
    let admin =
        OffsetKeeper::open_zookeeper_only(ZkConfig::new(cluster.zookeeper.clone())).unwrap();
    admin.commit(&group, &batch(&topic, &[50, 50])).unwrap();
    keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
    let summary = keeper.commit(&group, &batch(&topic, &[60, 60])).unwrap();
    assert_eq!((summary.written, summary.skipped), (2, 0));

    // Monotonic off: an older batch moves the offset back.
    let lax = keeper_with(&cluster, &[], |c| {
        c.monotonic = false;
        c.ownership.enabled = false;
    });
    lax.commit(&group, &batch(&topic, &[70, 70])).unwrap();
    lax.commit(&group, &batch(&topic, &[65, 65])).unwrap();
    assert_eq!(stored(&zk, &group, &topic, 0).as_deref(), Some("65"));
}

#[test]
fn threads_of_one_keeper_never_conflict_with_each_other() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let topic = topic_with(&cluster, 4, 10);
    let group = unique("g");
    let keeper = support::keeper(&cluster);
    keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (keeper, topic, group) = (&keeper, &topic, &group);
            scope.spawn(move || {
                for round in 1..=20i64 {
                    let all: Vec<(TopicPartition, i64)> = (0..4)
                        .map(|p| (TopicPartition::new(topic.as_str(), p), round * 10 + t))
                        .collect();
                    keeper.commit(group, &all).unwrap();
                    if round % 5 == 0 {
                        keeper.load(group, std::slice::from_ref(topic)).unwrap();
                    }
                }
            });
        }
    });
    for p in 0..4 {
        let value: i64 = stored(&zk, &group, &topic, p).unwrap().parse().unwrap();
        assert!((200..=203).contains(&value), "{value}");
    }
}
