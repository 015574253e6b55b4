//! The metadata string offsetkeeper commits beside each offset in Kafka's group store: the
//! topic's ID (so that a topic re-created and refilled past the offset is caught, as the topic
//! folder's ID catches it on ZooKeeper) and when the offset was committed (for the record-time
//! rule where no ID is known). Offsets committed by anyone else (a Kafka consumer, Spark's
//! `commitAsync`, `kafka-consumer-groups`) carry other metadata, usually empty: they are read as
//! offsets without an ID or a time, never as corrupt.

use serde::{Deserialize, Serialize};

/// What offsetkeeper's metadata says of one committed offset.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CommitMetadata {
    /// The format's version: 1.
    offsetkeeper: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) topic_id: Option<String>,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub(crate) committed_at: i64,
}

impl CommitMetadata {
    pub(crate) fn new(topic_id: Option<String>, committed_at: i64) -> CommitMetadata {
        CommitMetadata {
            offsetkeeper: 1,
            topic_id,
            committed_at,
        }
    }

    /// The metadata of an offset as read back: offsetkeeper's own, or nothing known.
    pub(crate) fn parse(metadata: &str) -> CommitMetadata {
        // An object only: serde would read a struct from an array too.
        Some(metadata)
            .filter(|m| m.trim_start().starts_with('{'))
            .and_then(|m| serde_json::from_str::<CommitMetadata>(m).ok())
            .filter(|m| m.offsetkeeper >= 1)
            .unwrap_or_default()
    }

    /// The string committed (JSON, 83 bytes: far below the brokers' 4096-byte
    /// `offset.metadata.max.bytes`).
    pub(crate) fn text(&self) -> String {
        // Strings and integers: serializing cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsetkeepers_metadata_reads_back_and_anyone_elses_is_nothing_known() {
        let written = CommitMetadata::new(Some("AbC-12".into()), 1_700_000_000_000);
        assert_eq!(CommitMetadata::parse(&written.text()), written);
        for foreign in [
            "",
            "spark",
            "{}",
            "{\"offsetkeeper\":0}",
            "[1]",
            "{\"topic_id\":\"x\"}",
        ] {
            assert_eq!(
                CommitMetadata::parse(foreign),
                CommitMetadata::default(),
                "{foreign}"
            );
        }
    }
}
