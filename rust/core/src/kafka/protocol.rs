//! The three Kafka requests a load needs, in the broker's wire format: ApiVersions (v0),
//! Metadata (v1-v8) and ListOffsets (v1-v5). Only non-flexible versions, so no tagged fields;
//! every broker since Kafka 0.10.1 answers them, Kafka 4 included (0.10.0 has ListOffsets v0
//! only, without timestamps, and is refused with a message saying so).
//!
//! Metadata before v4 (brokers before 0.11) cannot ask the broker not to create a topic it is
//! asked about: on such a broker with `auto.create.topics.enable=true` a load of a missing topic
//! creates it, as Spark's own 0.10 consumer does.

use std::collections::HashMap;
use std::ops::RangeInclusive;

pub const API_LIST_OFFSETS: i16 = 2;
pub const API_METADATA: i16 = 3;
pub const API_SASL_HANDSHAKE: i16 = 17;
pub const API_VERSIONS: i16 = 18;
pub const API_SASL_AUTHENTICATE: i16 = 36;

pub const METADATA_VERSIONS: RangeInclusive<i16> = 1..=8;
pub const LIST_OFFSETS_VERSIONS: RangeInclusive<i16> = 1..=5;

/// The first Kafka release that answers the versions offsetkeeper speaks of an API, for the
/// message when a broker does not.
pub fn first_release_for(api_key: i16) -> &'static str {
    match api_key {
        API_METADATA | API_LIST_OFFSETS => "0.10.1",
        // SaslHandshake v1 and SaslAuthenticate (KIP-152).
        _ => "1.0",
    }
}

/// ListOffsets timestamps with a special meaning.
pub const EARLIEST: i64 = -2;
pub const LATEST: i64 = -1;

/// A response that does not parse: a broker bug or not a Kafka broker.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed response: {0}")]
pub struct Malformed(pub String);

type Parsed<T> = std::result::Result<T, Malformed>;

/// Big-endian request encoding.
#[derive(Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn i8(&mut self, v: i8) -> &mut Self {
        self.buf.push(v as u8);
        self
    }
    pub fn i16(&mut self, v: i16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.i8(v as i8)
    }
    /// A string of at most `i16::MAX` bytes (topic names are at most 249).
    pub fn string(&mut self, v: &str) -> &mut Self {
        let len = v.len().min(i16::MAX as usize);
        self.i16(len as i16);
        self.buf.extend_from_slice(&v.as_bytes()[..len]);
        self
    }
    pub fn array_len(&mut self, len: usize) -> &mut Self {
        self.i32(i32::try_from(len).unwrap_or(i32::MAX))
    }
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.array_len(v.len());
        self.buf.extend_from_slice(v);
        self
    }
}

/// Big-endian response decoding; every read is bounds-checked.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    fn take(&mut self, n: usize) -> Parsed<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|end| *end <= self.buf.len());
        let end = end.ok_or_else(|| {
            Malformed(format!(
                "needs {n} more byte(s) at {} of {}",
                self.pos,
                self.buf.len()
            ))
        })?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self) -> Parsed<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub fn i8(&mut self) -> Parsed<i8> {
        Ok(i8::from_be_bytes(self.array()?))
    }
    pub fn i16(&mut self) -> Parsed<i16> {
        Ok(i16::from_be_bytes(self.array()?))
    }
    pub fn i32(&mut self) -> Parsed<i32> {
        Ok(i32::from_be_bytes(self.array()?))
    }
    pub fn i64(&mut self) -> Parsed<i64> {
        Ok(i64::from_be_bytes(self.array()?))
    }
    pub fn bool(&mut self) -> Parsed<bool> {
        Ok(self.i8()? != 0)
    }

    pub fn nullable_string(&mut self) -> Parsed<Option<String>> {
        let len = self.i16()?;
        if len < 0 {
            return Ok(None);
        }
        let bytes = self.take(len as usize)?;
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| Malformed("a string is not UTF-8".into()))
    }

    pub fn string(&mut self) -> Parsed<String> {
        self.nullable_string()?
            .ok_or_else(|| Malformed("a required string is null".into()))
    }

    /// An array's elements, each read by `element`; a null array is empty.
    pub fn array_of<T>(
        &mut self,
        mut element: impl FnMut(&mut Self) -> Parsed<T>,
    ) -> Parsed<Vec<T>> {
        let len = self.i32()?;
        if len < 0 {
            return Ok(Vec::new());
        }
        // Every element takes at least one byte: a length beyond the buffer is a lie.
        if len as usize > self.buf.len() - self.pos {
            return Err(Malformed(format!(
                "array of {len} in {} byte(s)",
                self.buf.len() - self.pos
            )));
        }
        (0..len).map(|_| element(self)).collect()
    }

    pub fn bytes(&mut self) -> Parsed<Vec<u8>> {
        let len = self.i32()?;
        if len < 0 {
            return Ok(Vec::new());
        }
        Ok(self.take(len as usize)?.to_vec())
    }

    pub fn skip_i32_array(&mut self) -> Parsed<()> {
        let len = self.i32()?;
        if len > 0 {
            self.take(len as usize * 4)?;
        }
        Ok(())
    }
}

/// The request header (v1): api key, version, correlation id, client id.
pub fn request_header(api_key: i16, version: i16, correlation_id: i32, client_id: &str) -> Writer {
    let mut w = Writer::default();
    w.i16(api_key)
        .i16(version)
        .i32(correlation_id)
        .string(client_id);
    w
}

/// ApiVersions v0 answer: the version range of every API the broker supports.
pub fn parse_api_versions(body: &[u8]) -> Parsed<Result<HashMap<i16, RangeInclusive<i16>>, i16>> {
    let mut r = Reader::new(body);
    let error = r.i16()?;
    let apis = r.array_of(|r| Ok((r.i16()?, r.i16()?..=r.i16()?)))?;
    if error != 0 {
        return Ok(Err(error));
    }
    Ok(Ok(apis.into_iter().collect()))
}

/// SaslHandshake v1 answer: the error code and the mechanisms the broker enables.
pub fn parse_sasl_handshake(body: &[u8]) -> Parsed<(i16, Vec<String>)> {
    let mut r = Reader::new(body);
    Ok((r.i16()?, r.array_of(|r| r.string())?))
}

/// SaslAuthenticate v0/v1 answer: the error code and message, and the server's SASL bytes.
pub fn parse_sasl_authenticate(body: &[u8]) -> Parsed<(i16, Option<String>, Vec<u8>)> {
    let mut r = Reader::new(body);
    Ok((r.i16()?, r.nullable_string()?, r.bytes()?))
}

/// Metadata request: the named topics, or every topic with `None` (a null array, v1+). From v4
/// on it never creates a topic.
pub fn metadata_request(version: i16, topics: Option<&[String]>) -> Writer {
    let mut w = Writer::default();
    match topics {
        Some(topics) => {
            w.array_len(topics.len());
            for topic in topics {
                w.string(topic);
            }
        }
        None => {
            w.i32(-1);
        }
    }
    if version >= 4 {
        w.bool(false); // allow_auto_topic_creation
    }
    if version >= 8 {
        w.bool(false).bool(false); // include cluster / topic authorized operations
    }
    w
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerAddress {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    pub error: i16,
    pub partition: i32,
    /// -1 when the partition has no leader now.
    pub leader: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    pub error: i16,
    pub name: String,
    pub is_internal: bool,
    pub partitions: Vec<PartitionMetadata>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    pub brokers: Vec<BrokerAddress>,
    pub topics: Vec<TopicMetadata>,
}

pub fn parse_metadata(version: i16, body: &[u8]) -> Parsed<Metadata> {
    let mut r = Reader::new(body);
    if version >= 3 {
        r.i32()?; // throttle_time_ms
    }
    let brokers = r.array_of(|r| {
        let broker = BrokerAddress {
            node_id: r.i32()?,
            host: r.string()?,
            port: r.i32()?,
        };
        r.nullable_string()?; // rack
        Ok(broker)
    })?;
    if version >= 2 {
        r.nullable_string()?; // cluster_id
    }
    r.i32()?; // controller_id
    let topics = r.array_of(|r| {
        let error = r.i16()?;
        let name = r.string()?;
        let is_internal = r.bool()?;
        let partitions = r.array_of(|r| {
            let partition = PartitionMetadata {
                error: r.i16()?,
                partition: r.i32()?,
                leader: r.i32()?,
            };
            if version >= 7 {
                r.i32()?; // leader_epoch
            }
            r.skip_i32_array()?; // replica_nodes
            r.skip_i32_array()?; // isr_nodes
            if version >= 5 {
                r.skip_i32_array()?; // offline_replicas
            }
            Ok(partition)
        })?;
        if version >= 8 {
            r.i32()?; // topic_authorized_operations
        }
        Ok(TopicMetadata {
            error,
            name,
            is_internal,
            partitions,
        })
    })?;
    if version >= 8 {
        r.i32()?; // cluster_authorized_operations
    }
    Ok(Metadata { brokers, topics })
}

/// ListOffsets request: for each (topic, partitions) the offset at `timestamp` (or
/// [`EARLIEST`] / [`LATEST`]).
pub fn list_offsets_request(
    version: i16,
    read_committed: bool,
    topics: &[(&str, Vec<i32>)],
    timestamp: i64,
) -> Writer {
    let mut w = Writer::default();
    w.i32(-1); // replica_id: a consumer
    if version >= 2 {
        // v1 (before 0.11) has no isolation level: those brokers have no transactions.
        w.i8(read_committed as i8);
    }
    w.array_len(topics.len());
    for (topic, partitions) in topics {
        w.string(topic).array_len(partitions.len());
        for partition in partitions {
            w.i32(*partition);
            if version >= 4 {
                w.i32(-1); // current_leader_epoch: unknown
            }
            w.i64(timestamp);
        }
    }
    w
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedOffset {
    pub topic: String,
    pub partition: i32,
    pub error: i16,
    /// -1 when no record has a timestamp at or after the one asked.
    pub offset: i64,
}

pub fn parse_list_offsets(version: i16, body: &[u8]) -> Parsed<Vec<ListedOffset>> {
    let mut r = Reader::new(body);
    if version >= 2 {
        r.i32()?; // throttle_time_ms
    }
    let topics = r.array_of(|r| {
        let topic = r.string()?;
        let partitions = r.array_of(|r| {
            let partition = r.i32()?;
            let error = r.i16()?;
            r.i64()?; // timestamp
            let offset = r.i64()?;
            if version >= 4 {
                r.i32()?; // leader_epoch
            }
            Ok((partition, error, offset))
        })?;
        Ok((topic, partitions))
    })?;
    Ok(topics
        .into_iter()
        .flat_map(|(topic, partitions)| {
            partitions
                .into_iter()
                .map(move |(partition, error, offset)| ListedOffset {
                    topic: topic.clone(),
                    partition,
                    error,
                    offset,
                })
        })
        .collect())
}

/// Error codes a request may meet while leadership moves or a topic is being created: the
/// request is worth sending again after fresh metadata.
pub fn is_retriable(code: i16) -> bool {
    matches!(code, 3 | 5 | 6 | 7 | 13 | 14 | 15 | 19 | 20 | 74 | 75 | 78)
}

/// The broker's name for an error code, for messages.
pub fn error_name(code: i16) -> &'static str {
    match code {
        -1 => "UNKNOWN_SERVER_ERROR",
        1 => "OFFSET_OUT_OF_RANGE",
        3 => "UNKNOWN_TOPIC_OR_PARTITION",
        5 => "LEADER_NOT_AVAILABLE",
        6 => "NOT_LEADER_OR_FOLLOWER",
        7 => "REQUEST_TIMED_OUT",
        13 => "NETWORK_EXCEPTION",
        14 => "COORDINATOR_LOAD_IN_PROGRESS",
        15 => "COORDINATOR_NOT_AVAILABLE",
        19 => "NOT_ENOUGH_REPLICAS",
        20 => "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        29 => "TOPIC_AUTHORIZATION_FAILED",
        31 => "CLUSTER_AUTHORIZATION_FAILED",
        35 => "UNSUPPORTED_VERSION",
        42 => "INVALID_REQUEST",
        43 => "UNSUPPORTED_FOR_MESSAGE_FORMAT",
        58 => "SASL_AUTHENTICATION_FAILED",
        74 => "FENCED_LEADER_EPOCH",
        75 => "UNKNOWN_LEADER_EPOCH",
        78 => "OFFSET_NOT_AVAILABLE",
        _ => "UNEXPECTED_ERROR",
    }
}

/// The highest version both sides speak.
pub fn pick_version(ours: &RangeInclusive<i16>, theirs: &RangeInclusive<i16>) -> Option<i16> {
    let high = (*ours.end()).min(*theirs.end());
    let low = (*ours.start()).max(*theirs.start());
    (low <= high).then_some(high)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Metadata answer as a broker of `version` sends it.
    fn metadata_answer(version: i16) -> Vec<u8> {
        let mut w = Writer::default();
        if version >= 3 {
            w.i32(0); // throttle
        }
        w.array_len(1).i32(0).string("localhost").i32(9092).i16(-1); // brokers, null rack
        if version >= 2 {
            w.string("cluster-id");
        }
        w.i32(0); // controller
        w.array_len(2);
        w.i16(0).string("clicks").bool(false).array_len(2);
        for (partition, leader) in [(0, 0), (1, -1)] {
            w.i16(if leader < 0 { 5 } else { 0 })
                .i32(partition)
                .i32(leader);
            if version >= 7 {
                w.i32(3);
            }
            w.array_len(1).i32(0).array_len(1).i32(0);
            if version >= 5 {
                w.array_len(0);
            }
        }
        if version >= 8 {
            w.i32(i32::MIN);
        }
        w.i16(3).string("gone").bool(false).array_len(0);
        if version >= 8 {
            w.i32(i32::MIN);
            w.i32(i32::MIN);
        }
        w.buf
    }

    #[test]
    fn metadata_answers_of_every_supported_version_parse() {
        for version in METADATA_VERSIONS {
            let parsed = parse_metadata(version, &metadata_answer(version)).unwrap();
            assert_eq!(parsed.brokers[0].host, "localhost");
            assert_eq!(parsed.topics[0].name, "clicks");
            assert_eq!(
                parsed.topics[0].partitions,
                vec![
                    PartitionMetadata {
                        error: 0,
                        partition: 0,
                        leader: 0
                    },
                    PartitionMetadata {
                        error: 5,
                        partition: 1,
                        leader: -1
                    },
                ],
                "v{version}"
            );
            assert_eq!(
                (parsed.topics[1].error, parsed.topics[1].name.as_str()),
                (3, "gone")
            );
        }
    }

    #[test]
    fn list_offsets_answers_of_every_supported_version_parse() {
        for version in LIST_OFFSETS_VERSIONS {
            let mut w = Writer::default();
            if version >= 2 {
                w.i32(0); // throttle
            }
            w.array_len(1).string("clicks").array_len(2);
            for (partition, error, offset) in [(0, 0i16, 42i64), (1, 6, -1)] {
                w.i32(partition).i16(error).i64(-1).i64(offset);
                if version >= 4 {
                    w.i32(0);
                }
            }
            let parsed = parse_list_offsets(version, &w.buf).unwrap();
            assert_eq!(parsed.len(), 2);
            assert_eq!(
                (parsed[0].partition, parsed[0].error, parsed[0].offset),
                (0, 0, 42)
            );
            assert_eq!((parsed[1].partition, parsed[1].error), (1, 6));
        }
    }

    #[test]
    fn truncated_and_lying_answers_are_malformed_not_panics() {
        let full = metadata_answer(8);
        for cut in 0..full.len() {
            assert!(parse_metadata(8, &full[..cut]).is_err(), "cut at {cut}");
        }
        let mut w = Writer::default();
        w.i32(0).i32(i32::MAX); // throttle, then an array claiming 2^31 topics
        assert!(parse_list_offsets(5, &w.buf).is_err());
        assert!(parse_api_versions(&[0, 0, 0x7f, 0xff, 0xff, 0xff]).is_err());
    }

    #[test]
    fn requests_are_encoded_as_the_broker_expects() {
        let topics = vec![("t".to_string())];
        assert_eq!(
            metadata_request(8, Some(&topics)).buf,
            [0, 0, 0, 1, 0, 1, b't', 0, 0, 0]
        );
        assert_eq!(metadata_request(4, None).buf, [0xff, 0xff, 0xff, 0xff, 0]);
        let request = list_offsets_request(5, false, &[("t", vec![7])], LATEST);
        let mut expected = Writer::default();
        expected
            .i32(-1)
            .i8(0)
            .i32(1)
            .string("t")
            .i32(1)
            .i32(7)
            .i32(-1)
            .i64(-1);
        assert_eq!(request.buf, expected.buf);
    }

    /// The layouts of the versions brokers before 0.11 answer, byte by byte.
    #[test]
    fn old_versions_have_their_own_layout() {
        let topics = vec![("t".to_string())];
        // Metadata v1-v3: no allow_auto_topic_creation; all topics is a null array.
        for version in 1..=3 {
            assert_eq!(
                metadata_request(version, Some(&topics)).buf,
                [0, 0, 0, 1, 0, 1, b't']
            );
            assert_eq!(metadata_request(version, None).buf, [0xff; 4]);
        }
        assert_eq!(
            metadata_request(4, Some(&topics)).buf,
            [0, 0, 0, 1, 0, 1, b't', 0]
        );
        // Metadata v1 answer: brokers (with rack), controller, topics; no throttle, no cluster id.
        let mut v1 = Writer::default();
        v1.array_len(1)
            .i32(7)
            .string("b7")
            .i32(9092)
            .string("rack-a");
        v1.i32(7);
        v1.array_len(1).i16(0).string("t").bool(false).array_len(1);
        v1.i16(0)
            .i32(0)
            .i32(7)
            .array_len(1)
            .i32(7)
            .array_len(1)
            .i32(7);
        let parsed = parse_metadata(1, &v1.buf).unwrap();
        assert_eq!(
            parsed.brokers,
            vec![BrokerAddress {
                node_id: 7,
                host: "b7".into(),
                port: 9092
            }]
        );
        assert_eq!(parsed.topics[0].partitions[0].leader, 7);
        assert!(parse_metadata(2, &v1.buf).is_err(), "v2 has a cluster id");
        // v2 adds the cluster id after the brokers; v3 the throttle time in front.
        let mut v2 = Writer::default();
        v2.array_len(0).string("cid").i32(-1).array_len(0);
        assert!(parse_metadata(2, &v2.buf).unwrap().brokers.is_empty());
        let mut v3 = Writer::default();
        v3.i32(0).buf.extend_from_slice(&v2.buf);
        assert!(parse_metadata(3, &v3.buf).unwrap().topics.is_empty());
        // ListOffsets v1: replica id, no isolation level; one timestamp per partition.
        let request = list_offsets_request(1, true, &[("t", vec![7])], EARLIEST);
        let mut expected = Writer::default();
        expected.i32(-1).i32(1).string("t").i32(1).i32(7).i64(-2);
        assert_eq!(request.buf, expected.buf);
        let mut answer = Writer::default();
        answer.array_len(1).string("t").array_len(1);
        answer.i32(7).i16(0).i64(-1).i64(42);
        let parsed = parse_list_offsets(1, &answer.buf).unwrap();
        assert_eq!((parsed[0].partition, parsed[0].offset), (7, 42));
    }

    #[test]
    fn versions_are_negotiated_to_the_highest_common_one() {
        assert_eq!(pick_version(&(4..=8), &(0..=12)), Some(8));
        assert_eq!(pick_version(&(4..=8), &(0..=5)), Some(5));
        assert_eq!(pick_version(&(4..=8), &(0..=3)), None);
        // Kafka 0.10.0: Metadata v0-v1, ListOffsets v0 only.
        assert_eq!(pick_version(&METADATA_VERSIONS, &(0..=1)), Some(1));
        assert_eq!(pick_version(&LIST_OFFSETS_VERSIONS, &(0..=0)), None);
        // Kafka 0.10.2: Metadata v0-v2, ListOffsets v0-v1.
        assert_eq!(pick_version(&METADATA_VERSIONS, &(0..=2)), Some(2));
        assert_eq!(pick_version(&LIST_OFFSETS_VERSIONS, &(0..=1)), Some(1));
        assert_eq!(pick_version(&(2..=5), &(1..=10)), Some(5));
    }
}
