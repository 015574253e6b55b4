//! Property tests of the pure parts (proptest, in CI with `cargo test`): validation always
//! starts an existing partition within its range and never returns a partition that does not
//! exist; stored values round-trip; parameter translation never panics nor leaks a secret.

use std::collections::HashMap;

use proptest::prelude::*;

use crate::kafka::KafkaSettings;
use crate::load::decide;
use crate::validate::{
    validate, Action, OnAboveRange, OnBelowRange, OnMissing, PartitionRange, Policy, Stored,
};
use crate::zookeeper::layout::encode_offset;
use crate::TopicPartition;

fn stored() -> impl Strategy<Value = Stored> {
    prop_oneof![
        Just(Stored::Missing),
        proptest::collection::vec(any::<u8>(), 0..24).prop_map(|raw| Stored::parse(&raw)),
        (0..=i64::MAX).prop_map(Stored::Offset),
        (0i64..2_000).prop_map(Stored::Offset),
    ]
}

fn range() -> impl Strategy<Value = PartitionRange> {
    prop_oneof![
        (0i64..1_000, 0i64..1_000).prop_map(|(earliest, width)| PartitionRange {
            earliest,
            latest: earliest + width,
        }),
        (0..=i64::MAX / 2, 0..=i64::MAX / 2).prop_map(|(earliest, width)| PartitionRange {
            earliest,
            latest: earliest + width,
        }),
    ]
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        prop_oneof![
            Just(OnMissing::Earliest),
            Just(OnMissing::Latest),
            Just(OnMissing::Fail)
        ],
        prop_oneof![Just(OnBelowRange::Earliest), Just(OnBelowRange::Fail)],
        prop_oneof![
            Just(OnAboveRange::Earliest),
            Just(OnAboveRange::Latest),
            Just(OnAboveRange::Fail)
        ],
    )
        .prop_map(|(on_missing, on_below_range, on_above_range)| Policy {
            on_missing,
            on_below_range,
            on_above_range,
            ..Policy::default()
        })
}

fn never_fails(policy: &Policy) -> bool {
    policy.on_missing != OnMissing::Fail
        && policy.on_below_range != OnBelowRange::Fail
        && policy.on_above_range != OnAboveRange::Fail
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn validate_starts_within_the_range_or_refuses_by_a_fail_policy(
        stored in stored(), range in range(), policy in policy()
    ) {
        match validate(&stored, range, &policy) {
            Ok(decision) => {
                prop_assert!(range.earliest <= decision.offset && decision.offset <= range.latest);
                prop_assert!(decision.records_lost >= 0);
                if let Stored::Offset(offset) = stored {
                    if (range.earliest..=range.latest).contains(&offset) {
                        prop_assert_eq!(decision.action, Action::Kept);
                        prop_assert_eq!(decision.offset, offset);
                        prop_assert_eq!(decision.records_lost, 0);
                    }
                }
            }
            Err(refusal) => {
                prop_assert!(!never_fails(&policy), "refused without a fail policy: {refusal}");
                prop_assert!(refusal.policy.ends_with("range") || refusal.policy == "on_missing");
            }
        }
        if never_fails(&policy) {
            prop_assert!(validate(&stored, range, &policy).is_ok());
        }
    }

    #[test]
    fn a_load_decides_every_existing_partition_and_nothing_else(
        existing in proptest::collection::btree_map((0i32..40, 0u8..3), range(), 0..30),
        stored in proptest::collection::btree_map((0i32..60, 0u8..4), stored(), 0..60),
        policy in policy(),
    ) {
        let topic = |t: u8| format!("t{t}");
        let existing: Vec<(TopicPartition, PartitionRange)> = existing
            .into_iter()
            .map(|((p, t), range)| (TopicPartition::new(topic(t), p), range))
            .collect();
        let stored: HashMap<TopicPartition, Stored> = stored
            .into_iter()
            .map(|((p, t), value)| (TopicPartition::new(topic(t), p), value))
            .collect();
        match decide(&existing, &stored, &HashMap::new(), &policy) {
            Ok(reports) => {
                prop_assert_eq!(reports.len(), existing.len());
                for (report, (partition, range)) in reports.iter().zip(&existing) {
                    prop_assert_eq!(&report.partition, partition);
                    prop_assert_eq!(report.range, *range);
                    prop_assert!(range.earliest <= report.decision.offset);
                    prop_assert!(report.decision.offset <= range.latest);
                    let expected = stored.get(partition).cloned().unwrap_or(Stored::Missing);
                    prop_assert_eq!(&report.stored, &expected);
                }
            }
            Err(refusals) => {
                prop_assert!(!never_fails(&policy));
                prop_assert!(!refusals.is_empty() && refusals.len() <= existing.len());
                for refusal in &refusals {
                    prop_assert!(
                        existing.iter().any(|(tp, _)| refusal.starts_with(&format!("{tp}: "))),
                        "refusal of a partition that does not exist: {}", refusal
                    );
                }
            }
        }
    }

    #[test]
    fn stored_values_round_trip_and_parsing_never_panics(
        offset in 0..=i64::MAX, raw in proptest::collection::vec(any::<u8>(), 0..40),
        pad in "[ \t\r\n]{0,3}"
    ) {
        prop_assert_eq!(Stored::parse(&encode_offset(offset)), Stored::Offset(offset));
        let padded = format!("{pad}{offset}{pad}");
        prop_assert_eq!(Stored::parse(padded.as_bytes()), Stored::Offset(offset));
        match Stored::parse(&raw) {
            Stored::Offset(value) => {
                prop_assert!(value >= 0);
                let text = std::str::from_utf8(&raw).map(str::trim).unwrap_or("");
                prop_assert!(!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()));
            }
            Stored::Corrupt(kept) => prop_assert_eq!(kept, raw),
            Stored::Missing => prop_assert!(false, "parse never says missing"),
        }
    }

    #[test]
    fn parameter_translation_never_panics_nor_shows_a_secret(
        params in proptest::collection::vec(
            (prop_oneof![
                Just("bootstrap.servers".to_string()),
                Just("sasl.password".to_string()),
                Just("ssl.key.password".to_string()),
                Just("sasl.jaas.config".to_string()),
                Just("auto.offset.reset".to_string()),
                Just("isolation.level".to_string()),
                Just("sasl.mechanism".to_string()),
                "[a-z.]{0,20}",
            ], "[ -~]{0,20}"),
            0..8,
        )
    ) {
        if let Ok(settings) = KafkaSettings::from_params(params.iter().map(|(k, v)| (k, v))) {
            prop_assert!(!settings.bootstrap.is_empty());
            let shown = format!("{settings:?}");
            for (key, value) in &settings.settings {
                if crate::kafka::params::is_secret_key(key) {
                    let masked = format!("({key:?}, \"****\")");
                    prop_assert!(shown.contains(&masked), "{} not masked in {}", key, shown);
                    if value != "****" {
                        let pair = format!("({key:?}, {value:?})");
                        prop_assert!(!shown.contains(&pair), "{} shown in {}", key, shown);
                    }
                }
            }
        }
    }
}
