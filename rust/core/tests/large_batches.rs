//! Batches past ZooKeeper's packet limit (`jute.maxbuffer`, 1,048,575 bytes by default), against
//! the real servers: loads, reads and commits that one multi request, or its answer, could not
//! carry.

mod support;

use offsetkeeper::{Error, OffsetKeeper, Stored, TopicPartition, ZkConfig};
use support::{cluster, keeper, offset_path, unique, Kafka, Zk};

/// ZooKeeper's default `jute.maxbuffer`: the largest packet a server reads.
const JUTE_MAXBUFFER: usize = 0xfffff;

/// Bytes of one multi of `setData` for these offsets, as ZooKeeper reads it (jute encoding:
/// per op a 9-byte header, the path and data with 4-byte lengths, a 4-byte version).
fn set_data_multi_bytes(group: &str, offsets: &[(TopicPartition, i64)]) -> usize {
    offsets
        .iter()
        .map(|(tp, offset)| {
            9 + 4
                + offset_path(group, &tp.topic, tp.partition).len()
                + 4
                + offset.to_string().len()
                + 4
        })
        .sum()
}

fn batch(topics: &[String], partitions: i32, base: i64) -> Vec<(TopicPartition, i64)> {
    topics
        .iter()
        .flat_map(|topic| {
            (0..partitions).map(move |p| (TopicPartition::new(topic.as_str(), p), base + p as i64))
        })
        .collect()
}

/// What the group holds for the topics, as one map.
fn stored_values(
    keeper: &OffsetKeeper,
    group: &str,
    topics: &[String],
) -> Vec<(TopicPartition, Stored)> {
    let mut stored = keeper.stored(group, topics).unwrap();
    stored.sort_by(|a, b| a.0.cmp(&b.0));
    stored
}

#[test]
fn commits_and_reads_of_20000_partitions_pass_one_packet_and_stay_exact() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    // A commit needs no topic in Kafka: 20,000 partitions over 4 topics, ZooKeeper only.
    let group = unique("large");
    let topics: Vec<String> = (0..4).map(|i| unique(&format!("t{i}"))).collect();
    support::capture_warnings();
    let keeper =
        OffsetKeeper::open_zookeeper_only(ZkConfig::new(cluster.zookeeper.clone())).unwrap();

    let first = batch(&topics, 5_000, 1_000_000);
    assert!(set_data_multi_bytes(&group, &first) > JUTE_MAXBUFFER);
    let summary = keeper.commit(&group, &first).unwrap();
    assert_eq!(summary.written, 20_000);
    assert!(summary.requests > 1, "{summary:?}");
    // The split is said where operators look: the result's `requests` and a WARN line.
    let said = format!(
        "group {group}: committing 20000 offsets in {} multi requests: each is atomic, the batch as a whole is not",
        summary.requests
    );
    assert!(support::warnings().contains(&said), "{said}");

    // Every value read back, through the engine (multi-reads past one packet) and directly.
    let mut expected: Vec<(TopicPartition, Stored)> = first
        .iter()
        .map(|(tp, offset)| (tp.clone(), Stored::Offset(*offset)))
        .collect();
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(stored_values(&keeper, &group, &topics), expected);
    assert_eq!(
        zk.get(&offset_path(&group, &topics[3], 4_999)),
        Some(b"1004999".to_vec())
    );

    // Every offset changed: setData with versions (fencing) for all 20,000.
    // As few multis as the server takes: each as large as one packet allows (2 here, where
    // counting 64 bytes an op sent 3).
    let second = batch(&topics, 5_000, 2_000_000);
    let bytes = set_data_multi_bytes(&group, &second);
    assert!(
        bytes > JUTE_MAXBUFFER && bytes < 2 * (JUTE_MAXBUFFER - 2048),
        "{bytes}"
    );
    let summary = keeper.commit(&group, &second).unwrap();
    assert_eq!(
        (summary.written, summary.unchanged, summary.requests),
        (20_000, 0, 2)
    );
    let mut expected: Vec<(TopicPartition, Stored)> = second
        .iter()
        .map(|(tp, offset)| (tp.clone(), Stored::Offset(*offset)))
        .collect();
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(stored_values(&keeper, &group, &topics), expected);

    // One changed in a batch of 20,000: one small multi.
    let mut third = second.clone();
    third[12_345].1 += 1;
    let summary = keeper.commit(&group, &third).unwrap();
    assert_eq!(
        (summary.written, summary.unchanged, summary.requests),
        (1, 19_999, 1)
    );
    let (tp, offset) = &third[12_345];
    assert_eq!(
        zk.get(&offset_path(&group, &tp.topic, tp.partition)),
        Some(offset.to_string().into_bytes())
    );

    // Another writer changes a node of the first request: the batch's first request is
    // refused, and the second, sent with it, checks what the first writes and is refused too.
    let (tp, _) = &third[10];
    zk.put(&offset_path(&group, &tp.topic, tp.partition), b"42");
    let fifth = batch(&topics, 5_000, 4_000_000);
    let err = keeper.commit(&group, &fifth).unwrap_err();
    assert!(
        matches!(&err, Error::CommitConflict { partition, .. } if partition == tp),
        "{err}"
    );
    let (last, offset) = &third[19_999];
    assert_eq!(
        zk.get(&offset_path(&group, &last.topic, last.partition)),
        Some(offset.to_string().into_bytes()),
        "the second request must not apply when the first was refused"
    );

    // A second keeper that read nothing yet commits over all of them (fenced: it reads the
    // versions first, past one packet too).
    let other =
        OffsetKeeper::open_zookeeper_only(ZkConfig::new(cluster.zookeeper.clone())).unwrap();
    let fourth = batch(&topics, 5_000, 3_000_000);
    assert_eq!(other.commit(&group, &fourth).unwrap().written, 20_000);
    assert_eq!(
        zk.get(&offset_path(&group, &topics[0], 0)),
        Some(b"3000000".to_vec())
    );
}

#[test]
fn a_read_whose_answer_passes_one_packet_is_read_whole() {
    // 4,000 nodes of 300 bytes each (an operator's JSON, not offsets): the request of one
    // multi-read is about 0.4 MB, its answer about 1.5 MB.
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let group = unique("bulky");
    let topic = unique("t");
    let keeper =
        OffsetKeeper::open_zookeeper_only(ZkConfig::new(cluster.zookeeper.clone())).unwrap();
    keeper
        .commit(&group, &batch(std::slice::from_ref(&topic), 4_000, 7))
        .unwrap();
    let bulky = format!("{{\"offset\":7,\"note\":\"{}\"}}", "x".repeat(270));
    assert!(4_000 * (bulky.len() + 81) > JUTE_MAXBUFFER);
    for p in 0..4_000 {
        zk.put(&offset_path(&group, &topic, p), bulky.as_bytes());
    }
    let stored = keeper.stored(&group, std::slice::from_ref(&topic)).unwrap();
    assert_eq!(stored.len(), 4_000);
    assert!(
        stored
            .iter()
            .all(|(_, s)| matches!(s, Stored::Corrupt(raw) if raw.len() == bulky.len())),
        "{:?}",
        &stored[..2]
    );
}

#[test]
fn a_load_and_commit_of_partitions_with_long_names_pass_one_packet() {
    // Names of 200 characters make each offset path ~430 bytes: 2 x 1,250 partitions read,
    // owned and committed are well past one packet, with few partitions for the broker.
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let group = unique(&"g".repeat(180));
    let topics: Vec<String> = (0..2)
        .map(|i| unique(&format!("{}{i}", "t".repeat(180))))
        .collect();
    for topic in &topics {
        kafka.create_topic(topic, 1_250);
    }
    let offsets: Vec<(TopicPartition, i64)> = batch(&topics, 1_250, 0)
        .into_iter()
        .map(|(tp, _)| (tp, 0))
        .collect();
    assert!(set_data_multi_bytes(&group, &offsets) > JUTE_MAXBUFFER);

    let keeper = keeper(&cluster);
    let loaded = keeper.load(&group, &topics).unwrap();
    assert_eq!(loaded.partitions.len(), 2_500);
    // Ownership past one packet: every partition has its owner node.
    let zk = Zk::new(&cluster);
    for topic in &topics {
        assert_eq!(zk.owners(&group, topic, 1_250).len(), 1_250);
    }
    // The topics are empty: every offset is 0. Commit 0s (nothing stored yet: creates), then
    // load again and see them.
    let summary = keeper.commit(&group, &offsets).unwrap();
    assert_eq!(summary.written, 2_500);
    assert!(summary.requests > 1, "{summary:?}");
    let again = keeper.load(&group, &topics).unwrap();
    assert!(
        again
            .partitions
            .iter()
            .all(|r| r.stored == Stored::Offset(0) && r.decision.offset == 0),
        "{:?}",
        &again.partitions[..2]
    );
    drop(keeper);

    // A second keeper takes the group with its lock; the owner nodes follow in the background,
    // in several requests. Closing waits for them, then removes them all.
    let second = keeper_logged(&cluster);
    second.load(&group, &topics).unwrap();
    drop(second);
    let refused: Vec<String> = support::warnings()
        .into_iter()
        .filter(|line| line.contains("closing could not remove"))
        .collect();
    assert!(refused.is_empty(), "{refused:?}");
    for topic in &topics {
        kafka.delete_topic(topic);
    }
}

/// A keeper, with this binary's WARNs captured (see [`support::warnings`]).
fn keeper_logged(cluster: &support::Cluster) -> OffsetKeeper {
    support::capture_warnings();
    keeper(cluster)
}
