//! Lag, one definition for the Java and Scala APIs and the CLI's `describe`: as Kafka's
//! `kafka-consumer-groups` computes it, the log end offset minus the committed offset.

use crate::validate::{PartitionRange, Stored};

/// `range.latest - offset` when a usable offset is stored: the records the group has yet to
/// read, negative when the stored offset is above the log end (a re-created topic, which the
/// next load corrects). `None`, "unknown" (`kafka-consumer-groups` prints `-`), when nothing
/// usable is stored (missing or corrupt) or the partition no longer exists (no range).
pub fn lag(stored: &Stored, range: Option<PartitionRange>) -> Option<i64> {
    match (stored, range) {
        (Stored::Offset(offset), Some(range)) => Some(range.latest - offset),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_end_minus_committed_else_unknown() {
        let range = Some(PartitionRange {
            earliest: 100,
            latest: 200,
        });
        let corrupt = Stored::Corrupt(b"x".to_vec());
        for (stored, range, expected) in [
            (Stored::Offset(150), range, Some(50)),
            (Stored::Offset(200), range, Some(0)),
            // Below the log start: still log end minus committed, as Kafka's tool shows it.
            (Stored::Offset(40), range, Some(160)),
            (Stored::Offset(250), range, Some(-50)),
            // Nothing committed: unknown, not "everything left in the log".
            (Stored::Missing, range, None),
            (corrupt, range, None),
            (Stored::Offset(5), None, None),
        ] {
            assert_eq!(lag(&stored, range), expected, "{stored:?} {range:?}");
        }
    }
}
