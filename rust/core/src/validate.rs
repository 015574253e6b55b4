//! Validation of a stored offset against a partition's current range: a pure function, so
//! every row of the decision table is unit-tested without servers.

use std::fmt;

use crate::error::{Error, Result};

/// What ZooKeeper holds for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// No znode.
    Missing,
    /// A znode whose value is not a usable offset: empty, `-1`, text, negative or overflowing.
    /// The raw bytes are kept for the report.
    Corrupt(Vec<u8>),
    /// A usable offset: the next offset to read.
    Offset(i64),
}

impl Stored {
    /// Parses a znode value: bare decimal ASCII, surrounding whitespace tolerated.
    pub fn parse(raw: &[u8]) -> Stored {
        let parsed = std::str::from_utf8(raw)
            .ok()
            .map(str::trim)
            .filter(|text| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|text| text.parse::<i64>().ok());
        match parsed {
            Some(offset) => Stored::Offset(offset),
            None => Stored::Corrupt(raw.to_vec()),
        }
    }
}

impl fmt::Display for Stored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 32;
        match self {
            Stored::Missing => f.write_str("none"),
            Stored::Offset(offset) => write!(f, "{offset}"),
            Stored::Corrupt(raw) => {
                let text = String::from_utf8_lossy(&raw[..raw.len().min(SHOWN)]);
                let more = if raw.len() > SHOWN { "..." } else { "" };
                write!(f, "corrupt {:?}{more}", text)
            }
        }
    }
}

/// The offsets a partition holds now: `earliest` is the log start, `latest` the log end
/// (the offset the next record will get).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionRange {
    pub earliest: i64,
    pub latest: i64,
}

impl PartitionRange {
    /// A range given by a caller rather than read from the brokers: `None` unless
    /// `0 <= earliest <= latest`.
    pub fn checked(earliest: i64, latest: i64) -> Option<PartitionRange> {
        (0 <= earliest && earliest <= latest).then_some(PartitionRange { earliest, latest })
    }
}

/// Where to start a partition that has no usable stored offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnMissing {
    Earliest,
    Latest,
    Fail,
}

/// What to do when the stored offset is below the earliest (retention purged it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnBelowRange {
    Earliest,
    Fail,
}

/// What to do when the stored offset is above the latest (the topic was re-created).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnAboveRange {
    Earliest,
    Latest,
    Fail,
}

/// What to do with every stored offset of a topic that was re-created: the topic ID stored
/// beside the group's offsets differs from the brokers' (Kafka 2.8 and later).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRecreated {
    Earliest,
    Latest,
    Fail,
}

/// The validation policy. The defaults keep data: every correction goes to the earliest offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub on_missing: OnMissing,
    pub on_below_range: OnBelowRange,
    pub on_above_range: OnAboveRange,
    pub on_recreated: OnRecreated,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            on_missing: OnMissing::Earliest,
            on_below_range: OnBelowRange::Earliest,
            on_above_range: OnAboveRange::Earliest,
            on_recreated: OnRecreated::Earliest,
        }
    }
}

impl OnMissing {
    /// Reads Kafka's `auto.offset.reset`, including the old consumer's `smallest`/`largest`.
    pub fn from_auto_offset_reset(value: &str) -> Result<OnMissing> {
        match value.trim().to_ascii_lowercase().as_str() {
            "earliest" | "smallest" => Ok(OnMissing::Earliest),
            "latest" | "largest" => Ok(OnMissing::Latest),
            "none" => Ok(OnMissing::Fail),
            _ => Err(Error::invalid(format!(
                "auto.offset.reset '{value}' is not allowed; allowed: earliest, latest, none, smallest, largest"
            ))),
        }
    }
}

macro_rules! policy_names {
    ($ty:ident, $what:literal, $($variant:ident = $name:literal),+) => {
        impl $ty {
            /// The policy's name, as configuration spells it.
            pub fn name(self) -> &'static str {
                match self { $($ty::$variant => $name),+ }
            }

            /// Parses the policy's name.
            pub fn parse(value: &str) -> Result<$ty> {
                match value.trim().to_ascii_lowercase().as_str() {
                    $($name => Ok($ty::$variant),)+
                    _ => Err(Error::invalid(format!(
                        concat!($what, " '{}' is not allowed; allowed: {}"),
                        value,
                        [$($name),+].join(", ")
                    ))),
                }
            }
        }
    };
}

policy_names!(
    OnMissing,
    "on_missing",
    Earliest = "earliest",
    Latest = "latest",
    Fail = "fail"
);
policy_names!(
    OnBelowRange,
    "on_below_range",
    Earliest = "earliest",
    Fail = "fail"
);
policy_names!(
    OnAboveRange,
    "on_above_range",
    Earliest = "earliest",
    Latest = "latest",
    Fail = "fail"
);
policy_names!(
    OnRecreated,
    "on_recreated",
    Earliest = "earliest",
    Latest = "latest",
    Fail = "fail"
);

/// What validation did with a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Action {
    /// The stored offset is within range and is used as it is.
    Kept = 0,
    /// Nothing was stored; the policy chose where to start.
    Initialized = 1,
    /// The stored offset was below the earliest (retention); moved up.
    ResetBelowRange = 2,
    /// The stored offset was above the latest (re-created topic); moved.
    ResetAboveRange = 3,
    /// The stored value was not an offset; the policy chose where to start.
    CorruptReplaced = 4,
    /// The topic was re-created (its ID changed): the stored offset belongs to the old topic,
    /// whatever the range says; `on_recreated` chose where to start.
    Recreated = 5,
}

impl Action {
    /// Every action, in code order.
    pub const ALL: [Action; 6] = [
        Action::Kept,
        Action::Initialized,
        Action::ResetBelowRange,
        Action::ResetAboveRange,
        Action::CorruptReplaced,
        Action::Recreated,
    ];

    /// A stable lower-case name for logs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Action::Kept => "kept",
            Action::Initialized => "initialized",
            Action::ResetBelowRange => "reset below range",
            Action::ResetAboveRange => "reset above range",
            Action::CorruptReplaced => "corrupt replaced",
            Action::Recreated => "re-created",
        }
    }
}

/// The outcome of validating one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// The offset to start reading from; always within the range.
    pub offset: i64,
    pub action: Action,
    /// Records the job will never see because of this decision: purged before they were
    /// read (below range) or skipped by starting past the earliest.
    pub records_lost: i64,
}

/// Why a `fail` policy refused a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub stored: Stored,
    pub range: PartitionRange,
    pub policy: &'static str,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stored {} with range [{}, {}] and {}=fail",
            self.stored, self.range.earliest, self.range.latest, self.policy
        )
    }
}

/// Decides where a partition starts, following the table in DESIGN.md.
pub fn validate(
    stored: &Stored,
    range: PartitionRange,
    policy: &Policy,
) -> Result<Decision, Refusal> {
    let PartitionRange { earliest, latest } = range;
    let refuse = |policy: &'static str| Refusal {
        stored: stored.clone(),
        range,
        policy,
    };
    // Saturating: a range or stored value no broker or znode gives (negative, reversed) must
    // not overflow (found by fuzzing `validate` with every i64).
    let start_at = |offset: i64, action: Action| Decision {
        offset,
        action,
        records_lost: offset.saturating_sub(earliest).max(0),
    };
    match *stored {
        Stored::Offset(offset) if (earliest..=latest).contains(&offset) => Ok(Decision {
            offset,
            action: Action::Kept,
            records_lost: 0,
        }),
        Stored::Offset(offset) if offset < earliest => match policy.on_below_range {
            OnBelowRange::Earliest => Ok(Decision {
                offset: earliest,
                action: Action::ResetBelowRange,
                records_lost: earliest.saturating_sub(offset),
            }),
            OnBelowRange::Fail => Err(refuse("on_below_range")),
        },
        Stored::Offset(_) => match policy.on_above_range {
            OnAboveRange::Earliest => Ok(start_at(earliest, Action::ResetAboveRange)),
            OnAboveRange::Latest => Ok(start_at(latest, Action::ResetAboveRange)),
            OnAboveRange::Fail => Err(refuse("on_above_range")),
        },
        Stored::Missing | Stored::Corrupt(_) => {
            let action = if *stored == Stored::Missing {
                Action::Initialized
            } else {
                Action::CorruptReplaced
            };
            match policy.on_missing {
                OnMissing::Earliest => Ok(start_at(earliest, action)),
                OnMissing::Latest => Ok(start_at(latest, action)),
                OnMissing::Fail => Err(refuse("on_missing")),
            }
        }
    }
}

/// Why one entry of a bulk validation ([`validate_entry`]) has no decision; each message names
/// the entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// The caller's range is no partition's range: bad input.
    #[error(
        "range [{earliest}, {latest}] at index {index} is not a partition range; \
         allowed: 0 <= earliest <= latest"
    )]
    NotARange {
        index: usize,
        earliest: i64,
        latest: i64,
    },
    /// A `fail` policy refused the entry.
    #[error("entry {index}: {refusal}")]
    Refused { index: usize, refusal: Refusal },
}

/// Entry `index` of a bulk validation of caller-given values (the JVM's
/// `OffsetKeeper.validate`): the range is checked ([`PartitionRange::checked`]), then
/// [`validate`] decides.
pub fn validate_entry(
    index: usize,
    stored: &Stored,
    earliest: i64,
    latest: i64,
    policy: &Policy,
) -> Result<Decision, EntryError> {
    let range = PartitionRange::checked(earliest, latest).ok_or(EntryError::NotARange {
        index,
        earliest,
        latest,
    })?;
    validate(stored, range, policy).map_err(|refusal| EntryError::Refused { index, refusal })
}

/// How a load knew that a topic was deleted and re-created since its offsets were stored.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Recreated {
    /// The topic ID recorded beside the offsets (`stored_id`) is not the brokers' topic of
    /// that name (`current_id`): Kafka 2.8 and later, once offsetkeeper has committed.
    TopicId {
        stored_id: String,
        current_id: String,
    },
    /// No topic ID is recorded, and on every partition the rule could judge a record below the
    /// stored offset was produced after the offset was committed: every record below a
    /// committed offset was in the log before the commit, so this log is not the one the offset
    /// was committed for. `committed_at_ms` is the offset's znode modification time by this
    /// host's clock (ZooKeeper's, corrected by `zookeeper_clock_offset_ms` when that was
    /// measured); the first record of `partition` timestamped at or after
    /// `committed_at_ms + tolerance_ms` is at `first_offset`, below `stored`.
    RecordAfterCommit {
        partition: i32,
        stored: i64,
        committed_at_ms: i64,
        tolerance_ms: i64,
        first_offset: i64,
        /// ZooKeeper's clock minus this host's, when measured and over a second.
        zookeeper_clock_offset_ms: Option<i64>,
    },
}

impl Recreated {
    /// The re-creation the two IDs show: both known and different. No stored ID (data of an
    /// older offsetkeeper or tool) or no current one (brokers before 2.8) tells nothing.
    pub fn between(stored_id: Option<&str>, current_id: Option<&str>) -> Option<Recreated> {
        match (stored_id, current_id) {
            (Some(stored), Some(current)) if stored != current => Some(Recreated::TopicId {
                stored_id: stored.to_string(),
                current_id: current.to_string(),
            }),
            _ => None,
        }
    }

    /// The re-creation a record's timestamp shows, for a partition whose stored offset has no
    /// topic ID beside it: `first_offset` is the brokers' answer to "the first offset whose
    /// timestamp is at or after `committed_at_ms + tolerance`" (`None`: no such record). On the
    /// log the offset was committed for, every record below `stored` was produced before the
    /// commit, so that offset is `stored` or more, unless a producer's clock ran more than the
    /// tolerance ahead; below it, the log is a newer one.
    pub fn by_record_time(
        partition: i32,
        stored: i64,
        committed_at_ms: i64,
        tolerance: std::time::Duration,
        first_offset: Option<i64>,
    ) -> Option<Recreated> {
        match first_offset {
            Some(first_offset) if first_offset < stored => Some(Recreated::RecordAfterCommit {
                partition,
                stored,
                committed_at_ms,
                tolerance_ms: i64::try_from(tolerance.as_millis()).unwrap_or(i64::MAX),
                first_offset,
                zookeeper_clock_offset_ms: None,
            }),
            _ => None,
        }
    }

    /// Whether a partition's stored value is one [`by_record_time`](Self::by_record_time) can
    /// judge and needs to: an offset with records below it in the log (above `earliest`) and
    /// not past its end (an offset above `latest` is above range, decided as such), written at
    /// a known time.
    pub fn record_time_can_tell(
        stored: &Stored,
        range: PartitionRange,
        committed_at_ms: i64,
    ) -> bool {
        matches!(stored, Stored::Offset(offset) if *offset > range.earliest && *offset <= range.latest)
            && committed_at_ms > 0
    }
}

/// Milliseconds since the epoch as `2024-05-01T12:00:00.123Z`.
fn utc_millis(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map_or_else(|_| format!("{ms} ms since the epoch"), |at| at.to_string())
}

impl fmt::Display for Recreated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Recreated::TopicId {
                stored_id,
                current_id,
            } => write!(f, "re-created (id {stored_id} -> {current_id})"),
            Recreated::RecordAfterCommit {
                partition,
                stored,
                committed_at_ms,
                tolerance_ms,
                first_offset,
                zookeeper_clock_offset_ms,
            } => {
                write!(
                    f,
                    "re-created (no topic ID stored; partition {partition}'s offset {stored} was committed at {}, yet its record at offset {first_offset} is timestamped at or after {}, {} s later",
                    utc_millis(*committed_at_ms),
                    utc_millis(committed_at_ms.saturating_add(*tolerance_ms)),
                    tolerance_ms / 1000
                )?;
                if let Some(offset) = zookeeper_clock_offset_ms {
                    let way = if *offset < 0 { "behind" } else { "ahead of" };
                    write!(
                        f,
                        "; the commit time is corrected for ZooKeeper's clock, measured {:.1} s {way} this host's",
                        offset.unsigned_abs() as f64 / 1000.0
                    )?;
                }
                f.write_str(")")
            }
        }
    }
}

/// Decides where a partition of a re-created topic starts: a stored offset (or a corrupt
/// value) belongs to the old topic, so `on_recreated` decides whatever the range says; a
/// partition with nothing stored follows [`validate`].
pub fn validate_recreated(
    stored: &Stored,
    range: PartitionRange,
    policy: &Policy,
) -> Result<Decision, Refusal> {
    if *stored == Stored::Missing {
        return validate(stored, range, policy);
    }
    let PartitionRange { earliest, latest } = range;
    let start_at = |offset: i64| Decision {
        offset,
        action: Action::Recreated,
        records_lost: offset.saturating_sub(earliest).max(0),
    };
    match policy.on_recreated {
        OnRecreated::Earliest => Ok(start_at(earliest)),
        OnRecreated::Latest => Ok(start_at(latest)),
        OnRecreated::Fail => Err(Refusal {
            stored: stored.clone(),
            range,
            policy: "on_recreated",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RANGE: PartitionRange = PartitionRange {
        earliest: 100,
        latest: 200,
    };

    fn policy(on_missing: OnMissing, on_below: OnBelowRange, on_above: OnAboveRange) -> Policy {
        Policy {
            on_missing,
            on_below_range: on_below,
            on_above_range: on_above,
            ..Policy::default()
        }
    }

    fn decide(stored: Stored, policy: Policy) -> Result<Decision, Refusal> {
        validate(&stored, RANGE, &policy)
    }

    fn decision(offset: i64, action: Action, records_lost: i64) -> Result<Decision, Refusal> {
        Ok(Decision {
            offset,
            action,
            records_lost,
        })
    }

    #[test]
    fn extreme_values_never_overflow() {
        let range = PartitionRange {
            earliest: i64::MAX - 1,
            latest: i64::MAX,
        };
        let decision = validate(&Stored::Offset(i64::MIN), range, &Policy::default()).unwrap();
        assert_eq!(decision.records_lost, i64::MAX);
        let reversed = PartitionRange {
            earliest: 5,
            latest: i64::MIN,
        };
        let policy = Policy {
            on_missing: OnMissing::Latest,
            ..Policy::default()
        };
        assert_eq!(
            validate(&Stored::Missing, reversed, &policy)
                .unwrap()
                .records_lost,
            0
        );
    }

    #[test]
    fn in_range_is_kept_including_both_edges() {
        for offset in [100, 150, 200] {
            assert_eq!(
                decide(Stored::Offset(offset), Policy::default()),
                decision(offset, Action::Kept, 0)
            );
        }
    }

    #[test]
    fn missing_follows_on_missing() {
        let p = |m| policy(m, OnBelowRange::Fail, OnAboveRange::Fail);
        assert_eq!(
            decide(Stored::Missing, p(OnMissing::Earliest)),
            decision(100, Action::Initialized, 0)
        );
        assert_eq!(
            decide(Stored::Missing, p(OnMissing::Latest)),
            decision(200, Action::Initialized, 100)
        );
        let refusal = decide(Stored::Missing, p(OnMissing::Fail)).unwrap_err();
        assert_eq!(refusal.policy, "on_missing");
    }

    #[test]
    fn corrupt_follows_on_missing_and_keeps_raw_bytes() {
        let raw = b"garbage".to_vec();
        assert_eq!(
            decide(Stored::Corrupt(raw.clone()), Policy::default()),
            decision(100, Action::CorruptReplaced, 0)
        );
        let p = policy(OnMissing::Latest, OnBelowRange::Fail, OnAboveRange::Fail);
        assert_eq!(
            decide(Stored::Corrupt(raw.clone()), p),
            decision(200, Action::CorruptReplaced, 100)
        );
        let p = policy(
            OnMissing::Fail,
            OnBelowRange::Earliest,
            OnAboveRange::Earliest,
        );
        let refusal = decide(Stored::Corrupt(raw), p).unwrap_err();
        assert!(refusal.to_string().contains("garbage"), "{refusal}");
    }

    #[test]
    fn below_range_moves_to_earliest_and_counts_purged_records() {
        assert_eq!(
            decide(Stored::Offset(40), Policy::default()),
            decision(100, Action::ResetBelowRange, 60)
        );
        assert_eq!(
            decide(Stored::Offset(99), Policy::default()),
            decision(100, Action::ResetBelowRange, 1)
        );
        let p = policy(
            OnMissing::Earliest,
            OnBelowRange::Fail,
            OnAboveRange::Earliest,
        );
        assert_eq!(
            decide(Stored::Offset(40), p).unwrap_err().policy,
            "on_below_range"
        );
    }

    #[test]
    fn above_range_follows_on_above_range() {
        assert_eq!(
            decide(Stored::Offset(201), Policy::default()),
            decision(100, Action::ResetAboveRange, 0)
        );
        let p = |a| policy(OnMissing::Earliest, OnBelowRange::Earliest, a);
        assert_eq!(
            decide(Stored::Offset(5000), p(OnAboveRange::Latest)),
            decision(200, Action::ResetAboveRange, 100)
        );
        assert_eq!(
            decide(Stored::Offset(5000), p(OnAboveRange::Fail))
                .unwrap_err()
                .policy,
            "on_above_range"
        );
    }

    #[test]
    fn recreated_follows_on_recreated_whatever_the_range_says() {
        let with = |on_recreated| Policy {
            on_recreated,
            ..Policy::default()
        };
        // Within the range (the case plain validation keeps), below and above it alike.
        for offset in [150, 100, 200, 40, 5000] {
            assert_eq!(
                validate_recreated(&Stored::Offset(offset), RANGE, &Policy::default()),
                decision(100, Action::Recreated, 0),
                "{offset}"
            );
            assert_eq!(
                validate_recreated(&Stored::Offset(offset), RANGE, &with(OnRecreated::Latest)),
                decision(200, Action::Recreated, 100),
                "{offset}"
            );
            let refusal =
                validate_recreated(&Stored::Offset(offset), RANGE, &with(OnRecreated::Fail))
                    .unwrap_err();
            assert_eq!(refusal.policy, "on_recreated");
        }
        assert_eq!(
            validate_recreated(&Stored::Corrupt(b"x".to_vec()), RANGE, &Policy::default()),
            decision(100, Action::Recreated, 0)
        );
        // Nothing stored: nothing of the old topic to distrust.
        assert_eq!(
            validate_recreated(&Stored::Missing, RANGE, &with(OnRecreated::Fail)),
            decision(100, Action::Initialized, 0)
        );
    }

    #[test]
    fn recreated_by_record_time_only_when_a_record_below_the_stored_offset_is_newer() {
        let tolerance = std::time::Duration::from_secs(300);
        let committed = 1_700_000_000_000;
        let r = Recreated::by_record_time(3, 50, committed, tolerance, Some(12)).unwrap();
        assert_eq!(
            r.to_string(),
            "re-created (no topic ID stored; partition 3's offset 50 was committed at 2023-11-14T22:13:20Z, yet its record at offset 12 is timestamped at or after 2023-11-14T22:18:20Z, 300 s later)"
        );
        // The same log: the first such record is at or after the stored offset, or none is.
        assert_eq!(
            Recreated::by_record_time(3, 50, committed, tolerance, Some(50)),
            None
        );
        assert_eq!(
            Recreated::by_record_time(3, 50, committed, tolerance, Some(90)),
            None
        );
        assert_eq!(
            Recreated::by_record_time(3, 50, committed, tolerance, None),
            None
        );
        let can = |stored, earliest, latest, at| {
            Recreated::record_time_can_tell(&stored, PartitionRange { earliest, latest }, at)
        };
        assert!(can(Stored::Offset(50), 0, 80, committed));
        assert!(can(Stored::Offset(80), 0, 80, committed));
        assert!(
            !can(Stored::Offset(50), 50, 80, committed),
            "nothing below it to skip"
        );
        assert!(
            !can(Stored::Offset(90), 0, 80, committed),
            "above range: decided as such"
        );
        assert!(!can(Stored::Missing, 0, 80, committed));
        assert!(!can(Stored::Corrupt(b"x".to_vec()), 0, 80, committed));
        assert!(!can(Stored::Offset(50), 0, 80, 0), "no commit time");
    }

    #[test]
    fn recreated_only_when_both_ids_are_known_and_differ() {
        let r = Recreated::between(Some("A"), Some("B")).unwrap();
        assert_eq!(r.to_string(), "re-created (id A -> B)");
        assert_eq!(Recreated::between(Some("A"), Some("A")), None);
        assert_eq!(Recreated::between(None, Some("B")), None);
        assert_eq!(Recreated::between(Some("A"), None), None);
    }

    #[test]
    fn empty_partition_where_earliest_equals_latest() {
        let empty = PartitionRange {
            earliest: 7,
            latest: 7,
        };
        let d = |s| validate(&s, empty, &Policy::default());
        assert_eq!(d(Stored::Offset(7)), decision(7, Action::Kept, 0));
        assert_eq!(
            d(Stored::Offset(3)),
            decision(7, Action::ResetBelowRange, 4)
        );
        assert_eq!(
            d(Stored::Offset(8)),
            decision(7, Action::ResetAboveRange, 0)
        );
        assert_eq!(d(Stored::Missing), decision(7, Action::Initialized, 0));
    }

    #[test]
    fn parse_accepts_bare_decimal_with_whitespace() {
        assert_eq!(Stored::parse(b"42"), Stored::Offset(42));
        assert_eq!(Stored::parse(b" 42\n"), Stored::Offset(42));
        assert_eq!(Stored::parse(b"0"), Stored::Offset(0));
        assert_eq!(
            Stored::parse(b"9223372036854775807"),
            Stored::Offset(i64::MAX)
        );
    }

    #[test]
    fn parse_reports_everything_else_as_corrupt_with_raw_bytes() {
        for raw in [
            &b""[..],
            b"  ",
            b"-1",
            b"-5",
            b"+5",
            b"abc",
            b"12abc",
            b"1 2",
            b"9223372036854775808",
            b"99999999999999999999999",
            b"\xff\xfe",
            b"{\"offset\":5}",
        ] {
            assert_eq!(Stored::parse(raw), Stored::Corrupt(raw.to_vec()), "{raw:?}");
        }
    }

    #[test]
    fn stored_display_shows_raw_corrupt_text_shortened() {
        assert_eq!(Stored::Missing.to_string(), "none");
        assert_eq!(Stored::Offset(9).to_string(), "9");
        assert_eq!(Stored::Corrupt(b"x".to_vec()).to_string(), "corrupt \"x\"");
        let long = Stored::Corrupt(vec![b'a'; 100]).to_string();
        assert!(long.ends_with("...") && long.len() < 60, "{long}");
    }

    #[test]
    fn auto_offset_reset_values() {
        assert_eq!(
            OnMissing::from_auto_offset_reset("smallest").unwrap(),
            OnMissing::Earliest
        );
        assert_eq!(
            OnMissing::from_auto_offset_reset("LATEST").unwrap(),
            OnMissing::Latest
        );
        assert_eq!(
            OnMissing::from_auto_offset_reset("largest").unwrap(),
            OnMissing::Latest
        );
        assert_eq!(
            OnMissing::from_auto_offset_reset("none").unwrap(),
            OnMissing::Fail
        );
        let message = OnMissing::from_auto_offset_reset("begin")
            .unwrap_err()
            .to_string();
        assert!(message.contains("'begin'") && message.contains("earliest"));
    }

    #[test]
    fn policy_names_round_trip() {
        for p in [OnMissing::Earliest, OnMissing::Latest, OnMissing::Fail] {
            assert_eq!(OnMissing::parse(p.name()).unwrap(), p);
        }
        for p in [OnBelowRange::Earliest, OnBelowRange::Fail] {
            assert_eq!(OnBelowRange::parse(p.name()).unwrap(), p);
        }
        for p in [
            OnAboveRange::Earliest,
            OnAboveRange::Latest,
            OnAboveRange::Fail,
        ] {
            assert_eq!(OnAboveRange::parse(p.name()).unwrap(), p);
        }
        for p in [
            OnRecreated::Earliest,
            OnRecreated::Latest,
            OnRecreated::Fail,
        ] {
            assert_eq!(OnRecreated::parse(p.name()).unwrap(), p);
        }
        let message = OnBelowRange::parse("latest").unwrap_err().to_string();
        assert!(
            message.contains("'latest'") && message.contains("earliest, fail"),
            "{message}"
        );
    }

    #[test]
    fn a_caller_range_is_checked_before_the_decision() {
        assert_eq!(
            PartitionRange::checked(0, 0),
            Some(PartitionRange {
                earliest: 0,
                latest: 0
            })
        );
        assert_eq!(PartitionRange::checked(-1, 5), None);
        assert_eq!(PartitionRange::checked(5, 2), None);
        let policy = Policy::default();
        assert_eq!(
            validate_entry(3, &Stored::Offset(1), 5, 2, &policy)
                .unwrap_err()
                .to_string(),
            "range [5, 2] at index 3 is not a partition range; allowed: 0 <= earliest <= latest"
        );
        assert_eq!(
            validate_entry(0, &Stored::Offset(1), 0, 2, &policy),
            Ok(Decision {
                offset: 1,
                action: Action::Kept,
                records_lost: 0
            })
        );
        let fail = Policy {
            on_missing: OnMissing::Fail,
            ..Policy::default()
        };
        assert_eq!(
            validate_entry(2, &Stored::Missing, 0, 2, &fail)
                .unwrap_err()
                .to_string(),
            "entry 2: stored none with range [0, 2] and on_missing=fail"
        );
    }
}
