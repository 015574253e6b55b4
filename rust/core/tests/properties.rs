//! Commit-then-load, as a property against the real cluster: whatever was committed comes
//! back by the next load whenever it is within the partition's range; otherwise the load
//! starts within the range, following the policy.

mod support;

use once_cell::sync::Lazy;
use proptest::prelude::*;

use offsetkeeper::{Action, TopicPartition};
use support::{cluster, keeper, unique, Kafka};

/// A topic whose partitions 1 and 3 lost their first 20 records to retention: ranges
/// [0, 60], [20, 60], [0, 60], [20, 60].
static TOPIC: Lazy<String> = Lazy::new(|| {
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let topic = unique("prop");
    kafka.create_topic(&topic, 4);
    for p in 0..4 {
        kafka.produce(&topic, p, 60);
    }
    kafka.delete_records(&topic, 1, 20);
    kafka.delete_records(&topic, 3, 20);
    topic
});

const RANGES: [(i64, i64); 4] = [(0, 60), (20, 60), (0, 60), (20, 60)];

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn commit_then_load_returns_what_was_committed_when_in_range(
        offsets in proptest::array::uniform4(0i64..90),
        again in proptest::option::of(proptest::array::uniform4(0i64..90)),
    ) {
        let cluster = cluster();
        let topic = TOPIC.clone();
        let group = unique("g");
        let batch = |offsets: [i64; 4]| -> Vec<(TopicPartition, i64)> {
            offsets.iter().enumerate()
                .map(|(p, o)| (TopicPartition::new(&*topic, p as i32), *o))
                .collect()
        };
        let committer = keeper(&cluster);
        committer.commit(&group, &batch(offsets)).unwrap();
        // A second batch by the same keeper: monotonic, so lower offsets are left out.
        let mut expected = offsets;
        if let Some(again) = again {
            committer.commit(&group, &batch(again)).unwrap();
            for p in 0..4 {
                expected[p] = expected[p].max(again[p]);
            }
        }
        for loaded in [
            committer.load(&group, std::slice::from_ref(&topic)).unwrap(),
            {
                drop(committer);
                keeper(&cluster).load(&group, std::slice::from_ref(&topic)).unwrap()
            },
        ] {
            prop_assert_eq!(loaded.partitions.len(), 4);
            for (p, report) in loaded.partitions.iter().enumerate() {
                let (earliest, latest) = RANGES[p];
                let offset = report.decision.offset;
                prop_assert!(earliest <= offset && offset <= latest);
                if (earliest..=latest).contains(&expected[p]) {
                    prop_assert_eq!(offset, expected[p]);
                    prop_assert_eq!(report.decision.action, Action::Kept);
                } else {
                    // The default policy: earliest, below range or above.
                    prop_assert_eq!(offset, earliest);
                }
            }
        }
    }
}
