//! Re-created topics that have no topic ID stored beside their offsets (offsets written by
//! another tool, or brokers before 2.8), told by record timestamps: see
//! [`Recreated::by_record_time`]. One ListOffsets request per leader, for the partitions whose
//! stored offset the rule can judge.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::error::Result;
use crate::kafka::Brokers;
use crate::validate::{PartitionRange, Recreated, Stored};
use crate::zookeeper::clock::ClockOffset;
use crate::TopicPartition;

/// A partition of a topic with no topic ID stored: its stored value, range, and the time its
/// offset was last written (ZooKeeper's mtime, or the commit's metadata, milliseconds since the
/// epoch).
pub(crate) struct Unidentified<'a> {
    pub(crate) partition: &'a TopicPartition,
    pub(crate) stored: &'a Stored,
    pub(crate) range: PartitionRange,
    pub(crate) committed_at_ms: i64,
}

/// What the record timestamps showed for one topic: the partitions with evidence of a newer log
/// and those the rule judged without finding any.
#[derive(Default)]
struct TopicEvidence {
    evidence: Vec<Recreated>,
    without: Vec<i32>,
}

/// The topics among `partitions` (of `group`) that were re-created after their offsets were
/// committed, each with the evidence of its first partition.
///
/// A re-creation restarts every partition's log, so a topic counts as re-created only when
/// every partition the rule can judge (stored offset in `(earliest, latest]`) shows a record
/// below its stored offset stamped after its commit plus `tolerance` (a partition whose stored
/// offset is above its log end is decided as above range, and does not count against it).
/// Evidence on some partitions only comes from producers' clocks (a record stamped in the
/// future), not a re-creation: it is logged at WARN and changes nothing.
///
/// `zookeeper_clock`, when measured, turns the commit times (ZooKeeper's clock) into this
/// host's, so that a ZooKeeper clock behind the brokers' does not make a live topic look
/// re-created.
pub(crate) async fn recreated_by_record_time(
    brokers: &Brokers,
    group: &str,
    partitions: &[Unidentified<'_>],
    tolerance: Duration,
    zookeeper_clock: Option<ClockOffset>,
) -> Result<HashMap<String, Recreated>> {
    let tolerance_ms = i64::try_from(tolerance.as_millis()).unwrap_or(i64::MAX);
    // Only an offset the measurement can tell from its error, over a second: the host's clock
    // stands for the brokers' (both on NTP), ZooKeeper's is the one found off.
    let zookeeper_clock = zookeeper_clock.filter(|clock| clock.is_notable());
    let judged: Vec<&Unidentified> = partitions
        .iter()
        .filter(|p| Recreated::record_time_can_tell(p.stored, p.range, p.committed_at_ms))
        .collect();
    if judged.is_empty() {
        return Ok(HashMap::new());
    }
    let committed_at = |p: &Unidentified| match zookeeper_clock {
        Some(clock) => clock.to_host_ms(p.committed_at_ms),
        None => p.committed_at_ms,
    };
    let asked: Vec<TopicPartition> = judged.iter().map(|p| p.partition.clone()).collect();
    let times: Vec<i64> = judged
        .iter()
        .map(|p| committed_at(p).saturating_add(tolerance_ms).max(0))
        .collect();
    let first_offsets = brokers.offsets_at_times(&asked, &times).await?;
    let noted_clock = zookeeper_clock
        .filter(|clock| clock.is_notable())
        .map(|clock| clock.offset_ms);
    let mut each = Vec::with_capacity(judged.len());
    for (p, first_offset) in judged.iter().zip(first_offsets) {
        let Stored::Offset(stored) = p.stored else {
            continue;
        };
        let evidence = Recreated::by_record_time(
            p.partition.partition,
            *stored,
            committed_at(p),
            tolerance,
            first_offset,
        )
        .map(|evidence| match evidence {
            Recreated::RecordAfterCommit {
                partition,
                stored,
                committed_at_ms,
                tolerance_ms,
                first_offset,
                ..
            } => Recreated::RecordAfterCommit {
                partition,
                stored,
                committed_at_ms,
                tolerance_ms,
                first_offset,
                zookeeper_clock_offset_ms: noted_clock,
            },
            other => other,
        });
        each.push((p.partition, evidence));
    }
    Ok(topics_recreated(group, each))
}

/// Each judged partition's evidence (`None`: none found) to the topics re-created: those whose
/// every judged partition shows evidence. Evidence on some partitions only is logged at WARN.
fn topics_recreated(
    group: &str,
    each: Vec<(&TopicPartition, Option<Recreated>)>,
) -> HashMap<String, Recreated> {
    let mut topics: BTreeMap<&str, TopicEvidence> = BTreeMap::new();
    for (partition, evidence) in each {
        let topic = topics.entry(&partition.topic).or_default();
        match evidence {
            Some(evidence) => topic.evidence.push(evidence),
            None => topic.without.push(partition.partition),
        }
    }
    let mut found = HashMap::new();
    for (topic, TopicEvidence { evidence, without }) in topics {
        let Some(first) = evidence.into_iter().next() else {
            continue;
        };
        if without.is_empty() {
            found.insert(topic.to_string(), first);
        } else {
            log::warn!(
                "group {group}: topic {topic} not taken for re-created, every stored offset kept: {}, but partition(s) {} show no record below the stored offset stamped after the commit, and a re-created topic restarts every partition's log. A producer's clock ahead (records stamped in the future) explains it; `message.timestamp.type=LogAppendTime` on the topic stops that",
                evidence_text(&first),
                numbers(&without)
            );
        }
    }
    found
}

/// The evidence without the `re-created (...)` wrapping, for a line that says it is not one.
fn evidence_text(evidence: &Recreated) -> String {
    let text = evidence.to_string();
    text.strip_prefix("re-created (no topic ID stored; ")
        .and_then(|rest| rest.strip_suffix(')'))
        .map_or(text.clone(), str::to_string)
}

/// `0, 1, 3`, and how many more past ten.
fn numbers(partitions: &[i32]) -> String {
    let shown: Vec<String> = partitions.iter().take(10).map(i32::to_string).collect();
    let more = partitions.len().saturating_sub(10);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(partition: i32) -> Option<Recreated> {
        Recreated::by_record_time(partition, 180, 0, Duration::from_secs(300), Some(150))
    }

    #[test]
    fn a_topic_is_recreated_only_when_every_judged_partition_shows_it() {
        let tp = |topic: &str, p| TopicPartition::new(topic, p);
        let (a0, a1, a2, a3) = (tp("a", 0), tp("a", 1), tp("a", 2), tp("a", 3));
        let (b0, b1) = (tp("b", 0), tp("b", 1));
        let found = topics_recreated(
            "g",
            vec![
                // One future-stamped record on one partition of four: not a re-creation.
                (&a0, None),
                (&a1, None),
                (&a2, evidence(2)),
                (&a3, None),
                // Every partition's log is newer than its commit: re-created.
                (&b0, evidence(0)),
                (&b1, evidence(1)),
            ],
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found.get("b"), evidence(0).as_ref());
        assert!(topics_recreated("g", vec![(&a0, None), (&a1, None)]).is_empty());
    }

    #[test]
    fn evidence_reads_as_a_clause_in_the_warning() {
        let evidence = Recreated::by_record_time(2, 180, 0, Duration::from_secs(300), Some(150))
            .expect("a record below the stored offset");
        assert_eq!(
            evidence_text(&evidence),
            "partition 2's offset 180 was committed at 1970-01-01T00:00:00Z, yet its record at offset 150 is timestamped at or after 1970-01-01T00:05:00Z, 300 s later"
        );
        assert_eq!(numbers(&[0, 1, 3]), "0, 1, 3");
        assert_eq!(
            numbers(&(0..12).collect::<Vec<_>>()),
            "0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 2 more"
        );
    }
}
