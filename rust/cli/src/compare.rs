//! The pure part of `compare`: how a partition's offset in ZooKeeper and its offset in Kafka's
//! group store relate, in the words of the VERDICT column (which `compare --help` and
//! docs/cli.md list; keep them stable, scripts may match them).

use std::fmt;

use offsetkeeper::{PartitionRange, Stored};

use crate::plan::Status;

/// How the two stores' offsets of one partition relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Equal,
    /// Kafka's offset is this many below ZooKeeper's.
    KafkaBehind(i64),
    /// ZooKeeper's offset is this many below Kafka's.
    ZooKeeperBehind(i64),
    OnlyInZooKeeper,
    OnlyInKafka,
    Neither,
}

impl Verdict {
    /// From the offset each store holds; `None` where it holds none (or a value that is not
    /// one, which a job's load treats as none).
    pub fn of(zookeeper: Option<i64>, kafka: Option<i64>) -> Verdict {
        match (zookeeper, kafka) {
            (Some(z), Some(k)) if z == k => Verdict::Equal,
            (Some(z), Some(k)) if k < z => Verdict::KafkaBehind(z.saturating_sub(k)),
            (Some(z), Some(k)) => Verdict::ZooKeeperBehind(k.saturating_sub(z)),
            (Some(_), None) => Verdict::OnlyInZooKeeper,
            (None, Some(_)) => Verdict::OnlyInKafka,
            (None, None) => Verdict::Neither,
        }
    }

    /// Whether the stores agree on the partition: the same offset, or none in either (a load
    /// from either store would start it alike). Exit status 0 needs this of every partition.
    pub fn agrees(self) -> bool {
        matches!(self, Verdict::Equal | Verdict::Neither)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Equal => f.write_str("equal"),
            Verdict::KafkaBehind(n) => write!(f, "kafka behind by {n}"),
            Verdict::ZooKeeperBehind(n) => write!(f, "zookeeper behind by {n}"),
            Verdict::OnlyInZooKeeper => f.write_str("only in zookeeper"),
            Verdict::OnlyInKafka => f.write_str("only in kafka"),
            Verdict::Neither => f.write_str("neither"),
        }
    }
}

/// The VERDICT column: the verdict, then where a stored offset is not within the partition's
/// range `below range`, `above range` or `partition gone` (describe's names), after the store's
/// name unless every offset stored for the partition is out of range the same way.
pub fn verdict_text(
    zookeeper: Option<i64>,
    kafka: Option<i64>,
    range: Option<PartitionRange>,
) -> String {
    let verdict = Verdict::of(zookeeper, kafka);
    let out_of_range = |offset: Option<i64>| -> Option<&'static str> {
        let status = Status::of(&Stored::Offset(offset?), range);
        (status != Status::Ok).then_some(status.name())
    };
    let (z, k) = (out_of_range(zookeeper), out_of_range(kafka));
    let note = match (z, k) {
        (None, None) => None,
        (Some(both), Some(other)) if both == other => Some(both.to_string()),
        // One store holds an offset: naming it would say nothing more.
        (Some(only), None) if kafka.is_none() => Some(only.to_string()),
        (None, Some(only)) if zookeeper.is_none() => Some(only.to_string()),
        _ => Some(
            [
                z.map(|n| format!("zookeeper {n}")),
                k.map(|n| format!("kafka {n}")),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", "),
        ),
    };
    match note {
        Some(note) => format!("{verdict}, {note}"),
        None => verdict.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RANGE: Option<PartitionRange> = Some(PartitionRange {
        earliest: 10,
        latest: 100,
    });

    #[test]
    fn verdicts() {
        for (zookeeper, kafka, text, agrees) in [
            (Some(50), Some(50), "equal", true),
            (Some(50), Some(47), "kafka behind by 3", false),
            (Some(47), Some(50), "zookeeper behind by 3", false),
            (Some(50), None, "only in zookeeper", false),
            (None, Some(50), "only in kafka", false),
            (None, None, "neither", true),
        ] {
            let verdict = Verdict::of(zookeeper, kafka);
            assert_eq!(verdict.to_string(), text);
            assert_eq!(verdict.agrees(), agrees, "{text}");
            assert_eq!(verdict_text(zookeeper, kafka, RANGE), text);
        }
    }

    #[test]
    fn offsets_outside_the_range_are_noted() {
        for (zookeeper, kafka, range, text) in [
            (Some(5), Some(5), RANGE, "equal, below range"),
            (Some(101), Some(101), RANGE, "equal, above range"),
            (Some(10), Some(100), RANGE, "zookeeper behind by 90"),
            (
                Some(50),
                Some(5),
                RANGE,
                "kafka behind by 45, kafka below range",
            ),
            (
                Some(200),
                Some(5),
                RANGE,
                "kafka behind by 195, zookeeper above range, kafka below range",
            ),
            (
                Some(5),
                Some(7),
                RANGE,
                "zookeeper behind by 2, below range",
            ),
            (Some(5), None, RANGE, "only in zookeeper, below range"),
            (None, Some(500), RANGE, "only in kafka, above range"),
            (Some(5), Some(5), None, "equal, partition gone"),
            (Some(5), None, None, "only in zookeeper, partition gone"),
            (None, None, None, "neither"),
        ] {
            assert_eq!(verdict_text(zookeeper, kafka, range), text);
        }
    }
}
