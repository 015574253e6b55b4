//! The pure parts of `describe`, `reset` and `import`: a partition's status (its lag is the
//! engine's `offsetkeeper::lag`), the offset a reset moves each partition to (clamped into the
//! partition's range as Kafka's tool does, except a file's offset above the log end), and the
//! check of a file's offsets against the log end.

use std::fmt;

use offsetkeeper::{validate, PartitionRange, Policy, Stored, TopicPartition};

/// What `describe` says about one partition. The one definition of the statuses: the STATUS
/// column, the Prometheus label and `describe --help`'s list ([`Status::help`]) all come from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    BelowRange,
    AboveRange,
    Missing,
    Corrupt,
    PartitionGone,
    /// The topic was re-created since the offsets were stored: decided by `describe` from what
    /// its survey found, never by [`Status::of`].
    Recreated,
}

impl Status {
    /// Every status, in the order `describe --help` lists them.
    pub const ALL: [Status; 7] = [
        Status::Ok,
        Status::BelowRange,
        Status::AboveRange,
        Status::Missing,
        Status::Corrupt,
        Status::PartitionGone,
        Status::Recreated,
    ];

    /// The status of a stored value against the partition's range, `None` when the partition
    /// no longer exists.
    pub fn of(stored: &Stored, range: Option<PartitionRange>) -> Status {
        match (stored, range) {
            (_, None) => Status::PartitionGone,
            (Stored::Missing, _) => Status::Missing,
            (Stored::Corrupt(_), _) => Status::Corrupt,
            (Stored::Offset(offset), Some(range)) if *offset < range.earliest => Status::BelowRange,
            (Stored::Offset(offset), Some(range)) if *offset > range.latest => Status::AboveRange,
            (Stored::Offset(_), Some(_)) => Status::Ok,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::BelowRange => "below range",
            Status::AboveRange => "above range",
            Status::Missing => "missing",
            Status::Corrupt => "corrupt",
            Status::PartitionGone => "partition gone",
            // The engine's name for it, which its Display of a re-creation starts with.
            Status::Recreated => offsetkeeper::Action::Recreated.name(),
        }
    }

    /// The name as a machine reads it (a Prometheus label value): snake_case.
    pub fn key(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::BelowRange => "below_range",
            Status::AboveRange => "above_range",
            Status::Missing => "missing",
            Status::Corrupt => "corrupt",
            Status::PartitionGone => "partition_gone",
            Status::Recreated => "recreated",
        }
    }

    /// What the status means, as `describe --help` says it.
    fn meaning(self) -> &'static str {
        match self {
            Status::Ok => "the stored offset is within the log (log start to log end)",
            Status::BelowRange => "below the log start (retention purged it)",
            Status::AboveRange => "above the log end (the topic re-created, for example)",
            Status::Missing => "no offset stored (no znode)",
            Status::Corrupt => "the znode holds no usable offset",
            Status::PartitionGone => "the brokers no longer have the partition",
            Status::Recreated => {
                "re-created since the offsets were stored; shown with how that was told"
            }
        }
    }

    /// `describe --help`'s list of the statuses, one a line, from [`Status::ALL`].
    pub fn help() -> String {
        let mut text = String::from("Statuses:\n");
        for status in Status::ALL {
            text.push_str(&format!("  {:<16}{}\n", status.name(), status.meaning()));
        }
        text
    }
}

/// Where a reset sends one partition, before clamping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Earliest,
    Latest,
    /// An absolute offset (`--to-offset`).
    Offset(i64),
    /// An offset a file gives for this partition (`--from-file`): above the log end it is kept,
    /// for [`check_log_end`] to refuse or allow.
    FromFile(i64),
    /// Relative to the stored offset (`--shift-by`).
    ShiftBy(i64),
    /// The broker's answer for a timestamp (`--to-datetime`, `--by-duration`): the first offset
    /// at or after it, or `None` when no record is that recent (then: the log end).
    AtTime(Option<i64>),
    /// What a job's load would choose (`--to-valid`).
    Valid(Policy),
    /// What a job's load would choose for a topic re-created since its offsets were stored.
    ValidRecreated(Policy),
}

/// Why a reset moved a partition where it did, when that is not plain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    None,
    ClampedToEarliest,
    ClampedToLatest,
    /// A file's offset above the log end, kept as asked: refused unless
    /// `--allow-beyond-log-end` ([`check_log_end`]).
    BeyondLogEnd,
    /// No record at or after the time: the log end.
    NoRecordSince,
    /// `--to-valid`: the validation action taken.
    Validated(offsetkeeper::Action),
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::None => Ok(()),
            Note::ClampedToEarliest => f.write_str("clamped to earliest"),
            Note::ClampedToLatest => f.write_str("clamped to latest"),
            Note::BeyondLogEnd => f.write_str("beyond log end"),
            Note::NoRecordSince => f.write_str("no record since; log end"),
            Note::Validated(action) => f.write_str(action.name()),
        }
    }
}

/// One partition of a reset plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub partition: TopicPartition,
    pub stored: Stored,
    pub range: PartitionRange,
    pub new_offset: i64,
    pub note: Note,
}

impl Planned {
    /// New minus stored; `None` when nothing usable was stored.
    pub fn delta(&self) -> Option<i64> {
        delta(&self.stored, self.new_offset)
    }

    /// The new offset when it is above the log end.
    pub fn beyond_log_end(&self) -> Option<BeyondLogEnd> {
        beyond_log_end(&self.partition, self.new_offset, self.range)
    }
}

/// An offset asked for above its partition's log end. Once the log grows past it, a job started
/// there skips the records produced up to it, without a word: the load finds it in range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{partition}: offset {offset} is above the log end {} (log start {})", .range.latest, .range.earliest)]
pub struct BeyondLogEnd {
    pub partition: TopicPartition,
    pub offset: i64,
    pub range: PartitionRange,
}

/// The check of one offset of a file against its partition's range.
pub fn beyond_log_end(
    partition: &TopicPartition,
    offset: i64,
    range: PartitionRange,
) -> Option<BeyondLogEnd> {
    (offset > range.latest).then(|| BeyondLogEnd {
        partition: partition.clone(),
        offset,
        range,
    })
}

/// A command refused because offsets it was asked to write are above their log end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{command} refused, nothing written: {} offset(s) above the log end: {}; a job started above \
     the log end skips the records produced up to its offset once the log grows there: give \
     offsets within [log start, log end], or --allow-beyond-log-end to write them as asked",
    .beyond.len(),
    joined(.beyond)
)]
pub struct LogEndRefusal {
    pub command: &'static str,
    pub beyond: Vec<BeyondLogEnd>,
}

fn joined(beyond: &[BeyondLogEnd]) -> String {
    let shown: Vec<String> = beyond.iter().map(ToString::to_string).collect();
    shown.join("; ")
}

/// Offsets above their log end refuse the whole command, unless `allowed`: then they are
/// returned, for a WARN each.
pub fn check_log_end(
    command: &'static str,
    beyond: Vec<BeyondLogEnd>,
    allowed: bool,
) -> Result<Vec<BeyondLogEnd>, LogEndRefusal> {
    if beyond.is_empty() || allowed {
        Ok(beyond)
    } else {
        Err(LogEndRefusal { command, beyond })
    }
}

/// New minus stored; `None` when nothing usable was stored.
pub fn delta(stored: &Stored, new_offset: i64) -> Option<i64> {
    match stored {
        Stored::Offset(offset) => new_offset.checked_sub(*offset),
        _ => None,
    }
}

/// The offset a reset moves a partition to, clamped into [earliest, latest], except a file's
/// offset (`--from-file`) above the log end, which stays there with [`Note::BeyondLogEnd`] for
/// [`check_log_end`] to refuse or allow. An error (the
/// message names the partition) when the target needs a stored offset that is not there, or
/// a `fail` policy of `--to-valid` applies.
pub fn plan(
    partition: &TopicPartition,
    stored: &Stored,
    range: PartitionRange,
    target: Target,
) -> Result<Planned, String> {
    let planned = |new_offset: i64, note: Note| Planned {
        partition: partition.clone(),
        stored: stored.clone(),
        range,
        new_offset,
        note,
    };
    let (new_offset, note) = match target {
        Target::Earliest => (range.earliest, Note::None),
        Target::Latest => (range.latest, Note::None),
        Target::Offset(offset) => clamp(offset, range),
        Target::FromFile(offset) => explicit(offset, range),
        Target::ShiftBy(shift) => match stored {
            Stored::Offset(offset) => clamp(offset.saturating_add(shift), range),
            other => {
                return Err(format!(
                    "cannot shift {partition}: its stored offset is {other}"
                ))
            }
        },
        Target::AtTime(Some(offset)) => clamp(offset, range),
        Target::AtTime(None) => (range.latest, Note::NoRecordSince),
        Target::Valid(policy) | Target::ValidRecreated(policy) => {
            let decision = match target {
                Target::ValidRecreated(_) => {
                    offsetkeeper::validate_recreated(stored, range, &policy)
                }
                _ => validate(stored, range, &policy),
            }
            .map_err(|refusal| format!("{partition}: {refusal}"))?;
            (decision.offset, Note::Validated(decision.action))
        }
    };
    Ok(planned(new_offset, note))
}

/// A file's offset: moved up to the log start as Kafka's tool does (no record below it is left
/// to read), kept above the log end for the caller to refuse or allow.
fn explicit(offset: i64, range: PartitionRange) -> (i64, Note) {
    if offset > range.latest {
        (offset, Note::BeyondLogEnd)
    } else {
        clamp(offset, range)
    }
}

/// The offset moved into the range, and whether it had to be.
fn clamp(offset: i64, range: PartitionRange) -> (i64, Note) {
    if offset < range.earliest {
        (range.earliest, Note::ClampedToEarliest)
    } else if offset > range.latest {
        (range.latest, Note::ClampedToLatest)
    } else {
        (offset, Note::None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use offsetkeeper::{lag, Action, OnAboveRange, OnBelowRange, OnMissing};

    const RANGE: PartitionRange = PartitionRange {
        earliest: 100,
        latest: 200,
    };

    fn tp() -> TopicPartition {
        TopicPartition::new("t", 0)
    }

    fn go(stored: Stored, target: Target) -> Result<(i64, Note), String> {
        plan(&tp(), &stored, RANGE, target).map(|p| (p.new_offset, p.note))
    }

    #[test]
    fn statuses_and_lag() {
        let corrupt = Stored::Corrupt(b"x".to_vec());
        for (stored, range, status, lag_) in [
            (Stored::Offset(150), Some(RANGE), Status::Ok, Some(50)),
            (Stored::Offset(100), Some(RANGE), Status::Ok, Some(100)),
            (Stored::Offset(200), Some(RANGE), Status::Ok, Some(0)),
            (
                Stored::Offset(99),
                Some(RANGE),
                Status::BelowRange,
                Some(101),
            ),
            (
                Stored::Offset(250),
                Some(RANGE),
                Status::AboveRange,
                Some(-50),
            ),
            (Stored::Missing, Some(RANGE), Status::Missing, None),
            (corrupt.clone(), Some(RANGE), Status::Corrupt, None),
            (Stored::Offset(5), None, Status::PartitionGone, None),
            (corrupt, None, Status::PartitionGone, None),
        ] {
            assert_eq!(Status::of(&stored, range), status, "{stored:?}");
            assert_eq!(lag(&stored, range), lag_, "{stored:?}");
        }
        assert_eq!(Status::PartitionGone.name(), "partition gone");
        assert_eq!(Status::BelowRange.name(), "below range");
        // The key is the name in snake_case without hyphens, for label values.
        for status in Status::ALL {
            assert_eq!(
                status.key(),
                status.name().replace(' ', "_").replace('-', "")
            );
            assert!(Status::help().contains(&format!("  {:<16}", status.name())));
        }
        // describe shows a re-created topic's status as the engine's Display of it.
        let recreated = offsetkeeper::Recreated::between(Some("a"), Some("b")).expect("IDs differ");
        assert!(recreated.to_string().starts_with(Status::Recreated.name()));
    }

    #[test]
    fn absolute_targets_are_clamped_into_the_range() {
        let stored = Stored::Offset(150);
        assert_eq!(go(stored.clone(), Target::Earliest), Ok((100, Note::None)));
        assert_eq!(go(stored.clone(), Target::Latest), Ok((200, Note::None)));
        assert_eq!(
            go(stored.clone(), Target::Offset(120)),
            Ok((120, Note::None))
        );
        assert_eq!(
            go(stored.clone(), Target::Offset(5)),
            Ok((100, Note::ClampedToEarliest))
        );
        assert_eq!(
            go(stored.clone(), Target::Offset(999)),
            Ok((200, Note::ClampedToLatest))
        );
        assert_eq!(
            go(Stored::Missing, Target::Offset(150)),
            Ok((150, Note::None))
        );
    }

    #[test]
    fn shifts_move_from_the_stored_offset_and_are_clamped() {
        assert_eq!(
            go(Stored::Offset(150), Target::ShiftBy(-20)),
            Ok((130, Note::None))
        );
        assert_eq!(
            go(Stored::Offset(150), Target::ShiftBy(30)),
            Ok((180, Note::None))
        );
        assert_eq!(
            go(Stored::Offset(150), Target::ShiftBy(-500)),
            Ok((100, Note::ClampedToEarliest))
        );
        assert_eq!(
            go(Stored::Offset(150), Target::ShiftBy(i64::MAX)),
            Ok((200, Note::ClampedToLatest))
        );
        // From out of range: the shift applies to the stored value, then clamps.
        assert_eq!(
            go(Stored::Offset(500), Target::ShiftBy(-310)),
            Ok((190, Note::None))
        );
        for stored in [Stored::Missing, Stored::Corrupt(b"-1".to_vec())] {
            let message = go(stored, Target::ShiftBy(1)).unwrap_err();
            assert!(message.contains("cannot shift t-0"), "{message}");
        }
    }

    #[test]
    fn time_targets_use_the_brokers_answer_or_the_log_end() {
        assert_eq!(
            go(Stored::Offset(150), Target::AtTime(Some(170))),
            Ok((170, Note::None))
        );
        assert_eq!(
            go(Stored::Missing, Target::AtTime(None)),
            Ok((200, Note::NoRecordSince))
        );
        assert_eq!(
            go(Stored::Offset(150), Target::AtTime(Some(50))),
            Ok((100, Note::ClampedToEarliest))
        );
    }

    #[test]
    fn to_valid_applies_the_policy_like_a_load() {
        let keep = Policy::default();
        assert_eq!(
            go(Stored::Offset(150), Target::Valid(keep)),
            Ok((150, Note::Validated(Action::Kept)))
        );
        assert_eq!(
            go(Stored::Offset(5), Target::Valid(keep)),
            Ok((100, Note::Validated(Action::ResetBelowRange)))
        );
        let latest = Policy {
            on_missing: OnMissing::Latest,
            on_below_range: OnBelowRange::Earliest,
            on_above_range: OnAboveRange::Latest,
            ..Policy::default()
        };
        assert_eq!(
            go(Stored::Missing, Target::Valid(latest)),
            Ok((200, Note::Validated(Action::Initialized)))
        );
        assert_eq!(
            go(Stored::Offset(900), Target::Valid(latest)),
            Ok((200, Note::Validated(Action::ResetAboveRange)))
        );
        let fail = Policy {
            on_missing: OnMissing::Fail,
            ..keep
        };
        let message = go(Stored::Missing, Target::Valid(fail)).unwrap_err();
        assert!(
            message.contains("t-0") && message.contains("on_missing=fail"),
            "{message}"
        );
    }

    #[test]
    fn offsets_above_the_log_end_refuse_the_command_unless_allowed() {
        assert_eq!(beyond_log_end(&tp(), 200, RANGE), None);
        assert_eq!(beyond_log_end(&tp(), 0, RANGE), None);
        let above = beyond_log_end(&tp(), 201, RANGE).expect("above");
        assert_eq!(
            above.to_string(),
            "t-0: offset 201 is above the log end 200 (log start 100)"
        );
        // A file's offset: up to the log start, kept above the log end for the check.
        let stored = Stored::Offset(150);
        assert_eq!(
            go(stored.clone(), Target::FromFile(5)),
            Ok((100, Note::ClampedToEarliest))
        );
        assert_eq!(
            go(stored.clone(), Target::FromFile(200)),
            Ok((200, Note::None))
        );
        assert_eq!(
            go(stored.clone(), Target::FromFile(999)),
            Ok((999, Note::BeyondLogEnd))
        );
        let planned = plan(&tp(), &Stored::Missing, RANGE, Target::FromFile(250)).expect("planned");
        assert_eq!(planned.beyond_log_end().map(|b| b.offset), Some(250));
        let clamped = plan(&tp(), &stored, RANGE, Target::Offset(250)).expect("planned");
        assert_eq!(clamped.beyond_log_end(), None);
        assert_eq!(Note::BeyondLogEnd.to_string(), "beyond log end");

        assert_eq!(check_log_end("import", Vec::new(), false), Ok(Vec::new()));
        assert_eq!(
            check_log_end("import", vec![above.clone()], true),
            Ok(vec![above.clone()])
        );
        let other = beyond_log_end(&TopicPartition::new("u", 3), 120, RANGE_50).expect("above");
        let refusal = check_log_end("import", vec![above, other], false).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "import refused, nothing written: 2 offset(s) above the log end: t-0: offset 201 is \
             above the log end 200 (log start 100); u-3: offset 120 is above the log end 50 (log \
             start 0); a job started above the log end skips the records produced up to its \
             offset once the log grows there: give offsets within [log start, log end], or \
             --allow-beyond-log-end to write them as asked"
        );
    }

    const RANGE_50: PartitionRange = PartitionRange {
        earliest: 0,
        latest: 50,
    };

    #[test]
    fn deltas_need_a_stored_offset() {
        assert_eq!(delta(&Stored::Offset(150), 100), Some(-50));
        assert_eq!(delta(&Stored::Missing, 100), None);
        assert_eq!(delta(&Stored::Corrupt(vec![]), 100), None);
    }
}
