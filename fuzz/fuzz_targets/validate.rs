//! `validate` and `validate_recreated` over every input: they never panic, and for a real
//! partition (0 <= earliest <= latest) and a real stored value (not negative) they start within
//! the range and count no negative loss; `validate` keeps an offset in range and refuses only
//! through a `fail` policy; `validate_recreated` moves every stored value (whatever the range
//! says), refuses only through `on_recreated=fail`, and treats nothing stored as `validate` does.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use offsetkeeper::{
    validate, validate_recreated, Action, OnAboveRange, OnBelowRange, OnMissing, OnRecreated,
    PartitionRange, Policy, Stored,
};

#[derive(Arbitrary, Debug)]
struct Input {
    kind: u8,
    stored: i64,
    raw: Vec<u8>,
    earliest: i64,
    latest: i64,
    on_missing: u8,
    on_below_range: u8,
    on_above_range: u8,
    on_recreated: u8,
    recreated: bool,
}

fuzz_target!(|input: Input| {
    let stored = match input.kind % 3 {
        0 => Stored::Missing,
        1 => Stored::parse(&input.raw),
        _ => Stored::Offset(input.stored),
    };
    let policy = Policy {
        on_missing: [OnMissing::Earliest, OnMissing::Latest, OnMissing::Fail]
            [usize::from(input.on_missing % 3)],
        on_below_range: [OnBelowRange::Earliest, OnBelowRange::Fail]
            [usize::from(input.on_below_range % 2)],
        on_above_range: [OnAboveRange::Earliest, OnAboveRange::Latest, OnAboveRange::Fail]
            [usize::from(input.on_above_range % 3)],
        on_recreated: [OnRecreated::Earliest, OnRecreated::Latest, OnRecreated::Fail]
            [usize::from(input.on_recreated % 3)],
    };
    let range = PartitionRange {
        earliest: input.earliest,
        latest: input.latest,
    };
    let decided = if input.recreated {
        validate_recreated(&stored, range, &policy)
    } else {
        validate(&stored, range, &policy)
    };

    let real_range = 0 <= range.earliest && range.earliest <= range.latest;
    let real_stored = !matches!(stored, Stored::Offset(o) if o < 0);
    if !(real_range && real_stored) {
        return;
    }
    if input.recreated && stored != Stored::Missing {
        match decided {
            Ok(decision) => {
                assert!(range.earliest <= decision.offset && decision.offset <= range.latest);
                assert!(decision.records_lost >= 0);
                assert_eq!(decision.action, Action::Recreated);
            }
            Err(refusal) => {
                assert_eq!(policy.on_recreated, OnRecreated::Fail);
                assert_eq!(refusal.policy, "on_recreated");
            }
        }
        return;
    }
    if input.recreated {
        assert_eq!(decided, validate(&stored, range, &policy));
    }
    match decided {
        Ok(decision) => {
            assert!(range.earliest <= decision.offset && decision.offset <= range.latest);
            assert!(decision.records_lost >= 0);
            if let Stored::Offset(o) = stored {
                if (range.earliest..=range.latest).contains(&o) {
                    assert_eq!(decision.action, Action::Kept);
                    assert_eq!(decision.offset, o);
                }
            }
        }
        Err(_) => assert!(
            policy.on_missing == OnMissing::Fail
                || policy.on_below_range == OnBelowRange::Fail
                || policy.on_above_range == OnAboveRange::Fail
        ),
    }
});
