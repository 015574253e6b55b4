//! `commit` against real ZooKeeper: one atomic multi, bare decimal values, nothing written on
//! bad input.

mod support;

use offsetkeeper::{Error, TopicPartition};
use support::{cluster, keeper, offset_path, unique, Zk};

fn batch(topic: &str, partitions: i32, offset: i64) -> Vec<(TopicPartition, i64)> {
    (0..partitions)
        .map(|p| (TopicPartition::new(topic, p), offset + p as i64))
        .collect()
}

#[test]
fn commit_creates_nodes_as_bare_decimal_and_skips_unchanged_ones() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let (group, a, b) = (unique("g"), unique("ta"), unique("tb"));
    let keeper = keeper(&cluster);

    let mut offsets = batch(&a, 3, 100);
    offsets.push((TopicPartition::new(&*b, 0), 7));
    let summary = keeper.commit(&group, &offsets).unwrap();
    assert_eq!(
        (summary.written, summary.unchanged, summary.requests),
        (4, 0, 1)
    );
    for p in 0..3 {
        assert_eq!(
            zk.get(&offset_path(&group, &a, p)),
            Some(format!("{}", 100 + p).into_bytes())
        );
    }
    assert_eq!(zk.get(&offset_path(&group, &b, 0)), Some(b"7".to_vec()));

    // Same values again: nothing to write and no request. One changed: one write.
    let summary = keeper.commit(&group, &offsets).unwrap();
    assert_eq!(
        (summary.written, summary.unchanged, summary.requests),
        (0, 4, 0)
    );
    offsets[1].1 = 555;
    let summary = keeper.commit(&group, &offsets).unwrap();
    assert_eq!((summary.written, summary.unchanged), (1, 3));
    assert_eq!(zk.get(&offset_path(&group, &a, 1)), Some(b"555".to_vec()));

    // Another writer changes a node: a batch naming it as this keeper left it still sends
    // nothing (no read per commit), and this keeper's next write to it is refused (fenced by
    // the version it last saw), leaving the other writer's value.
    zk.put(&offset_path(&group, &a, 2), b"9");
    let summary = keeper.commit(&group, &offsets).unwrap();
    assert_eq!(
        (summary.written, summary.unchanged, summary.requests),
        (0, 4, 0)
    );
    offsets[2].1 = 600;
    let err = keeper.commit(&group, &offsets).unwrap_err();
    assert!(matches!(err, Error::CommitConflict { .. }), "{err:?}");
    assert_eq!(zk.get(&offset_path(&group, &a, 2)), Some(b"9".to_vec()));
}

#[test]
fn an_empty_commit_is_a_no_op() {
    let summary = keeper(&cluster()).commit(&unique("g"), &[]).unwrap();
    assert_eq!(summary, offsetkeeper::CommitSummary::default());
}

#[test]
fn a_thousand_partition_commit_is_all_or_nothing() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let (group, topic) = (unique("g"), unique("big"));
    let keeper = keeper(&cluster);
    keeper.commit(&group, &batch(&topic, 1000, 10)).unwrap();

    // One node refuses writes: the whole batch must fail and leave every node as it was.
    let locked = offset_path(&group, &topic, 500);
    zk.make_read_only(&locked);
    let err = keeper
        .commit(&group, &batch(&topic, 1000, 5000))
        .unwrap_err();
    assert!(matches!(err, Error::ZooKeeper { .. }), "{err:?}");
    assert!(err.to_string().contains(&locked), "{err}");
    // The refusal says who the session is and what the node admits.
    assert!(
        err.to_string().contains(
            "the session is not authenticated (only world:anyone and ip entries admit it); the node's ACL is [world:anyone:READ]"
        ),
        "{err}"
    );
    for p in 0..1000 {
        assert_eq!(
            zk.get(&offset_path(&group, &topic, p)),
            Some(format!("{}", 10 + p).into_bytes()),
            "partition {p} changed"
        );
    }
}

#[test]
fn bad_input_is_refused_and_nothing_is_written() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let (group, topic) = (unique("g"), unique("t"));
    let keeper = keeper(&cluster);
    let good = (TopicPartition::new(&*topic, 0), 1);
    type Case<'a> = (&'a str, Vec<(TopicPartition, i64)>, &'static str);
    let cases: Vec<Case> = vec![
        ("", vec![good.clone()], "group name ''"),
        ("../etc", vec![good.clone()], "group name '../etc'"),
        (
            &group,
            vec![good.clone(), (TopicPartition::new("a/b", 0), 1)],
            "topic name 'a/b'",
        ),
        (
            &group,
            vec![good.clone(), (TopicPartition::new(&*topic, -1), 1)],
            "partition -1",
        ),
        (
            &group,
            vec![good.clone(), (TopicPartition::new(&*topic, 1), -5)],
            "offset -5",
        ),
        (
            &group,
            vec![good.clone(), (TopicPartition::new(&*topic, 0), 2)],
            "appears twice",
        ),
    ];
    for (group_name, offsets, needle) in cases {
        let err = keeper.commit(group_name, &offsets).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        assert!(err.to_string().contains(needle), "{needle}: {err}");
    }
    assert_eq!(zk.get(&offset_path(&group, &topic, 0)), None);
    assert_eq!(zk.get(&format!("/consumers/{group}")), None);
}

#[test]
fn load_after_commit_returns_the_committed_offsets() {
    let cluster = cluster();
    let kafka = support::Kafka::new(&cluster);
    let (group, topic) = (unique("g"), unique("roundtrip"));
    kafka.create_topic(&topic, 3);
    for p in 0..3 {
        kafka.produce(&topic, p, 10);
    }
    let keeper = keeper(&cluster);
    keeper.commit(&group, &batch(&topic, 3, 2)).unwrap();
    let loaded = keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
    let offsets: Vec<i64> = loaded.offsets().map(|(_, o)| o).collect();
    assert_eq!(offsets, vec![2, 3, 4]);
    assert_eq!(loaded.corrections().count(), 0);
}
