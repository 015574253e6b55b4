//! ZooKeeper's clock measured against this host's. A znode's `mtime` is the ZooKeeper leader's
//! clock; the record-timestamp check ([`crate::recreated`]) compares it with the brokers' record
//! timestamps, so a ZooKeeper clock minutes behind would make a live topic look re-created.
//! One write of a node this keeper owns (its unchanged data written again), timed on this host,
//! tells how far ZooKeeper's clock is from this host's, within half the round trip.

use std::time::{SystemTime, UNIX_EPOCH};

use super::{WriteOp, ZkStore};
use crate::error::{Error, Result};
use zookeeper_client as zk;

/// How far ZooKeeper's clock is ahead of this host's (negative: behind), as one write measured it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockOffset {
    /// ZooKeeper's time minus this host's, in milliseconds.
    pub offset_ms: i64,
    /// The measurement's error bound: half the write's round trip, in milliseconds.
    pub within_ms: i64,
}

impl ClockOffset {
    /// From a write sent at `sent_ms` and answered at `answered_ms` (this host's clock), which
    /// ZooKeeper stamped `mtime_ms`: the stamp against the round trip's middle.
    pub fn from_write(sent_ms: i64, mtime_ms: i64, answered_ms: i64) -> ClockOffset {
        let round_trip = answered_ms.saturating_sub(sent_ms).max(0);
        let middle = sent_ms.saturating_add(round_trip / 2);
        ClockOffset {
            offset_ms: mtime_ms.saturating_sub(middle),
            within_ms: (round_trip + 1) / 2,
        }
    }

    /// A ZooKeeper time as this host's clock would have read it.
    pub fn to_host_ms(self, zookeeper_ms: i64) -> i64 {
        zookeeper_ms.saturating_sub(self.offset_ms)
    }

    /// Whether the offset is larger than the measurement can be wrong by, and over a second:
    /// worth a WARN and a word in a verdict.
    pub fn is_notable(self) -> bool {
        self.offset_ms.abs() > 1_000 && self.offset_ms.abs() > self.within_ms
    }
}

impl std::fmt::Display for ClockOffset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (amount, way) = if self.offset_ms < 0 {
            (-self.offset_ms, "behind")
        } else {
            (self.offset_ms, "ahead of")
        };
        let seconds = amount as f64 / 1000.0;
        if way == "behind" {
            write!(
                f,
                "ZooKeeper's clock is {seconds:.1} s behind this host's (within {} ms)",
                self.within_ms
            )
        } else {
            write!(
                f,
                "ZooKeeper's clock is {seconds:.1} s ahead of this host's (within {} ms)",
                self.within_ms
            )
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl ZkStore {
    /// Measures ZooKeeper's clock with one multi that creates `path` (a node of this keeper's
    /// alone, ephemeral), writes it and deletes it: the write's mtime is ZooKeeper's time, and
    /// nothing is left behind or touched that another instance could hold.
    pub(crate) async fn measure_clock(&self, path: &str) -> Result<ClockOffset> {
        let ops = [
            WriteOp::CreateEphemeral {
                path: path.to_string(),
                data: Vec::new(),
            },
            WriteOp::SetData {
                path: path.to_string(),
                data: b"clock".to_vec(),
                version: None,
            },
            WriteOp::Delete {
                path: path.to_string(),
            },
        ];
        let (ops, acls) = (&ops, self.config.security.acls());
        let sent = now_ms();
        let results = self
            .call("clock multi-write", path, |client| async move {
                match Self::send_multi(&client, acls, ops).await {
                    Ok(results) => Ok(results),
                    Err(zk::MultiWriteError::OperationFailed { source, .. }) => Err(source),
                    Err(zk::MultiWriteError::RequestFailed { source }) => Err(source),
                }
            })
            .await?;
        let answered = now_ms();
        results
            .iter()
            .find_map(|result| match result {
                zk::MultiWriteResult::SetData { stat } => {
                    Some(ClockOffset::from_write(sent, stat.mtime, answered))
                }
                _ => None,
            })
            .ok_or_else(|| Error::Internal("the clock multi answered no write".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_is_the_stamp_against_the_round_trips_middle() {
        let behind = ClockOffset::from_write(1_000_000, 400_004, 1_000_010);
        assert_eq!(
            behind,
            ClockOffset {
                offset_ms: -600_001,
                within_ms: 5
            }
        );
        assert_eq!(behind.to_host_ms(400_000), 1_000_001);
        assert!(behind.is_notable());
        assert_eq!(
            behind.to_string(),
            "ZooKeeper's clock is 600.0 s behind this host's (within 5 ms)"
        );
        let ahead = ClockOffset::from_write(0, 2_500, 1);
        assert_eq!(ahead.offset_ms, 2_500);
        assert!(ahead.to_string().contains("2.5 s ahead of this host's"));
    }

    #[test]
    fn small_or_uncertain_offsets_are_not_notable() {
        assert!(!ClockOffset::from_write(0, 900, 0).is_notable());
        assert!(
            !ClockOffset::from_write(0, 3_000, 8_000).is_notable(),
            "a slow write cannot tell"
        );
    }
}
