//! Re-created topics that have no topic ID stored beside their offsets (offsets written by
//! another tool, or brokers before 2.8), told by record timestamps: see
//! [`Recreated::by_record_time`]. One ListOffsets request per leader, for the partitions whose
//! stored offset the rule can judge.

use std::collections::HashMap;
use std::time::Duration;

use crate::error::Result;
use crate::kafka::Brokers;
use crate::validate::{PartitionRange, Recreated, Stored};
use crate::TopicPartition;

/// A partition of a topic with no topic ID stored: its stored value, range, and the time its
/// offset node was last written (ZooKeeper's mtime, milliseconds since the epoch).
pub(crate) struct Unidentified<'a> {
    pub(crate) partition: &'a TopicPartition,
    pub(crate) stored: &'a Stored,
    pub(crate) range: PartitionRange,
    pub(crate) committed_at_ms: i64,
}

/// The topics among `partitions` that were re-created after their offsets were committed,
/// each with the evidence of its first such partition. A topic is re-created as a whole, so
/// one partition's evidence is enough.
pub(crate) async fn recreated_by_record_time(
    brokers: &Brokers,
    partitions: &[Unidentified<'_>],
    tolerance: Duration,
) -> Result<HashMap<String, Recreated>> {
    let tolerance_ms = i64::try_from(tolerance.as_millis()).unwrap_or(i64::MAX);
    let judged: Vec<&Unidentified> = partitions
        .iter()
        .filter(|p| Recreated::record_time_can_tell(p.stored, p.range, p.committed_at_ms))
        .collect();
    if judged.is_empty() {
        return Ok(HashMap::new());
    }
    let asked: Vec<TopicPartition> = judged.iter().map(|p| p.partition.clone()).collect();
    let times: Vec<i64> = judged
        .iter()
        .map(|p| p.committed_at_ms.saturating_add(tolerance_ms))
        .collect();
    let first_offsets = brokers.offsets_at_times(&asked, &times).await?;
    let mut found: HashMap<String, Recreated> = HashMap::new();
    for (p, first_offset) in judged.iter().zip(first_offsets) {
        let Stored::Offset(stored) = p.stored else {
            continue;
        };
        let topic = p.partition.topic.to_string();
        if found.contains_key(&topic) {
            continue;
        }
        let evidence = Recreated::by_record_time(
            p.partition.partition,
            *stored,
            p.committed_at_ms,
            tolerance,
            first_offset,
        );
        if let Some(evidence) = evidence {
            found.insert(topic, evidence);
        }
    }
    Ok(found)
}
