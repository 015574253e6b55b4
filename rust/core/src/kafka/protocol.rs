//! The Kafka requests offsetkeeper sends (ApiVersions, Metadata, ListOffsets, SaslHandshake,
//! SaslAuthenticate), encoded and decoded by the `kafka-protocol` crate (codecs generated from
//! Kafka's own message schemas, flexible versions included). This module only fills the
//! requests, frames them with their header and turns the answers into what the engine needs.
//!
//! Every API is spoken at the highest version both sides know: ours is every version the crate
//! knows from the floor below, theirs is what the broker's ApiVersions answer says. The floor is
//! Metadata v1 and ListOffsets v1, which every broker since Kafka 0.10.1 answers (0.10.0 has
//! ListOffsets v0 only, without timestamps, and is refused with a message saying so).
//!
//! Metadata v10 and later (Kafka 2.8+) carry each topic's ID (KIP-516): a topic deleted and
//! created again under the same name has a new one.
//!
//! Metadata before v4 (brokers before 0.11) cannot ask the broker not to create a topic it is
//! asked about: on such a broker with `auto.create.topics.enable=true` a load of a missing topic
//! creates it, as Spark's own 0.10 consumer does.

use std::collections::HashMap;
use std::ops::RangeInclusive;

use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, BrokerId, ListOffsetsRequest,
    ListOffsetsResponse, MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Message, Request, StrBytes};

pub const API_LIST_OFFSETS: i16 = ApiKey::ListOffsets as i16;
pub const API_METADATA: i16 = ApiKey::Metadata as i16;
pub const API_SASL_HANDSHAKE: i16 = ApiKey::SaslHandshake as i16;
pub const API_VERSIONS: i16 = ApiKey::ApiVersions as i16;
pub const API_SASL_AUTHENTICATE: i16 = ApiKey::SaslAuthenticate as i16;

pub const METADATA_VERSIONS: RangeInclusive<i16> = 1..=MetadataRequest::VERSIONS.max;
pub const LIST_OFFSETS_VERSIONS: RangeInclusive<i16> = 1..=ListOffsetsRequest::VERSIONS.max;
/// SaslHandshake v1 hands the SASL bytes to SaslAuthenticate (KIP-152).
pub const SASL_HANDSHAKE_VERSIONS: RangeInclusive<i16> = 1..=1;
pub const SASL_AUTHENTICATE_VERSIONS: RangeInclusive<i16> =
    0..=kafka_protocol::messages::SaslAuthenticateRequest::VERSIONS.max;
/// The first Metadata version that carries topic IDs.
pub const METADATA_TOPIC_ID_VERSION: i16 = 10;

/// The first Kafka release that answers the versions offsetkeeper speaks of an API, for the
/// message when a broker does not.
pub fn first_release_for(api_key: i16) -> &'static str {
    match api_key {
        API_METADATA | API_LIST_OFFSETS => "0.10.1",
        // The group coordinator's requests of the Kafka store: OffsetFetch v2, OffsetCommit v2,
        // FindCoordinator v0, the membership APIs at the versions spoken (0.10.2).
        k if k == ApiKey::OffsetFetch as i16
            || k == ApiKey::OffsetCommit as i16
            || k == ApiKey::FindCoordinator as i16
            || k == ApiKey::JoinGroup as i16
            || k == ApiKey::SyncGroup as i16
            || k == ApiKey::Heartbeat as i16
            || k == ApiKey::LeaveGroup as i16
            || k == ApiKey::DescribeGroups as i16 =>
        {
            "0.10.2"
        }
        // OffsetDelete (KIP-496).
        k if k == ApiKey::OffsetDelete as i16 => "2.4",
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

/// One request as sent on the wire: its size, its header (of the version the API and version
/// call for) and its body.
pub fn frame<R: Request>(
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: &str,
) -> Parsed<Vec<u8>> {
    let mut header = RequestHeader::default();
    header.request_api_key = R::KEY;
    header.request_api_version = version;
    header.correlation_id = correlation_id;
    header.client_id = Some(StrBytes::from_string(client_id.to_string()));
    let mut buf = BytesMut::with_capacity(64);
    buf.extend_from_slice(&[0; 4]);
    let encoded = header
        .encode(&mut buf, R::header_version(version))
        .and_then(|()| request.encode(&mut buf, version));
    encoded.map_err(|err| {
        Malformed(format!(
            "cannot encode {:?} v{version}: {err}",
            ApiKey::try_from(R::KEY).ok()
        ))
    })?;
    let size = i32::try_from(buf.len() - 4)
        .map_err(|_| Malformed(format!("request of {} bytes", buf.len())))?;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    Ok(buf.to_vec())
}

/// The response header of `R` at `version`: its correlation id, the body after it.
pub fn split_header<R: HeaderVersion>(version: i16, mut answer: Bytes) -> Parsed<(i32, Bytes)> {
    let header = ResponseHeader::decode(&mut answer, R::header_version(version))
        .map_err(|err| Malformed(format!("response header: {err}")))?;
    Ok((header.correlation_id, answer))
}

/// The body of `R` at `version`.
pub fn decode<R: Decodable>(version: i16, mut body: Bytes) -> Parsed<R> {
    R::decode(&mut body, version).map_err(|err| Malformed(format!("{err}")))
}

/// The ApiVersions request offsetkeeper sends first on each connection, at the newest version
/// the crate knows; v3+ names the client (KIP-511).
pub fn api_versions_request() -> ApiVersionsRequest {
    let mut request = ApiVersionsRequest::default();
    request.client_software_name = StrBytes::from_static_str("offsetkeeper");
    request.client_software_version = StrBytes::from_static_str(env!("CARGO_PKG_VERSION"));
    request
}

pub const API_VERSIONS_NEWEST: i16 = ApiVersionsRequest::VERSIONS.max;
/// The error a broker answers an ApiVersions version it does not know with, in a v0 body that
/// (from Kafka 2.4) lists the versions it knows.
pub const UNSUPPORTED_VERSION: i16 = 35;

/// The ApiVersions answer to a request of `version`: a broker that does not know that version
/// answers in v0, with UNSUPPORTED_VERSION (every version starts with the error code).
pub fn parse_api_versions(version: i16, body: Bytes) -> Parsed<ApiVersionsResponse> {
    let unsupported = body.get(..2) == Some(&UNSUPPORTED_VERSION.to_be_bytes()[..]);
    decode(if unsupported { 0 } else { version }, body)
}

/// The version range of each API a broker speaks.
pub fn api_ranges(answer: &ApiVersionsResponse) -> HashMap<i16, RangeInclusive<i16>> {
    answer
        .api_keys
        .iter()
        .map(|api| (api.api_key, api.min_version..=api.max_version))
        .collect()
}

/// Metadata request: the named topics, or every topic with `None`. It never creates a topic
/// (v4+; older brokers have no such flag).
pub fn metadata_request(version: i16, topics: Option<&[String]>) -> MetadataRequest {
    let mut request = MetadataRequest::default();
    request.topics = topics.map(|topics| {
        topics
            .iter()
            .map(|topic| {
                let mut asked = MetadataRequestTopic::default();
                asked.name = Some(TopicName(StrBytes::from_string(topic.clone())));
                asked
            })
            .collect()
    });
    if version >= 4 {
        request.allow_auto_topic_creation = false;
    }
    request
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
    /// The topic's ID (KIP-516) in Kafka's own text form (URL-safe base64, as `kafka-topics
    /// --describe` prints it); `None` from brokers before 2.8 or Metadata before v10.
    pub topic_id: Option<String>,
    pub is_internal: bool,
    pub partitions: Vec<PartitionMetadata>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    pub brokers: Vec<BrokerAddress>,
    pub topics: Vec<TopicMetadata>,
}

/// A topic ID as Kafka writes it; the all-zero ID means none.
pub fn topic_id_text(id: &[u8; 16]) -> Option<String> {
    (id != &[0; 16]).then(|| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id))
}

pub fn parse_metadata(answer: MetadataResponse) -> Metadata {
    let brokers = answer
        .brokers
        .into_iter()
        .map(|broker| BrokerAddress {
            node_id: broker.node_id.0,
            host: broker.host.to_string(),
            port: broker.port,
        })
        .collect();
    let topics = answer
        .topics
        .into_iter()
        .map(|topic| TopicMetadata {
            error: topic.error_code,
            name: topic
                .name
                .map(|name| name.0.to_string())
                .unwrap_or_default(),
            topic_id: topic_id_text(topic.topic_id.as_bytes()),
            is_internal: topic.is_internal,
            partitions: topic
                .partitions
                .into_iter()
                .map(|partition| PartitionMetadata {
                    error: partition.error_code,
                    partition: partition.partition_index,
                    leader: partition.leader_id.0,
                })
                .collect(),
        })
        .collect();
    Metadata { brokers, topics }
}

/// ListOffsets request: for each (topic, [(partition, timestamp)]) the offset at the
/// partition's timestamp (or [`EARLIEST`] / [`LATEST`]). `timeout_ms` bounds the broker's wait
/// on tiered storage (v10+).
pub fn list_offsets_request(
    version: i16,
    read_committed: bool,
    topics: &[(&str, Vec<(i32, i64)>)],
    timeout_ms: i32,
) -> ListOffsetsRequest {
    let mut request = ListOffsetsRequest::default();
    request.replica_id = BrokerId(-1); // a consumer
    if version >= 2 {
        // v1 (before 0.11) has no isolation level: those brokers have no transactions.
        request.isolation_level = i8::from(read_committed);
    }
    if version >= 10 {
        request.timeout_ms = timeout_ms;
    }
    request.topics = topics
        .iter()
        .map(|(topic, partitions)| {
            let mut asked = ListOffsetsTopic::default();
            asked.name = TopicName(StrBytes::from_string(topic.to_string()));
            asked.partitions = partitions
                .iter()
                .map(|(partition, timestamp)| {
                    let mut p = ListOffsetsPartition::default();
                    p.partition_index = *partition;
                    p.timestamp = *timestamp;
                    p
                })
                .collect();
            asked
        })
        .collect();
    request
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedOffset {
    pub partition: i32,
    pub error: i16,
    /// -1 when no record has a timestamp at or after the one asked.
    pub offset: i64,
}

/// One topic of a ListOffsets answer, its partitions in the answer's order.
#[derive(Debug)]
pub struct ListedTopic {
    pub name: String,
    pub partitions: Vec<ListedOffset>,
}

pub fn parse_list_offsets(answer: ListOffsetsResponse) -> Vec<ListedTopic> {
    answer
        .topics
        .into_iter()
        .map(|topic| ListedTopic {
            name: topic.name.0.to_string(),
            partitions: topic
                .partitions
                .into_iter()
                .map(|p| ListedOffset {
                    partition: p.partition_index,
                    error: p.error_code,
                    offset: p.offset,
                })
                .collect(),
        })
        .collect()
}

/// The error of a timestamp lookup in a log whose format has no timestamps (before 0.10).
pub const UNSUPPORTED_FOR_MESSAGE_FORMAT: i16 = 43;

/// Error codes a request may meet while leadership moves or a topic is being created: the
/// request is worth sending again after fresh metadata.
pub fn is_retriable(code: i16) -> bool {
    matches!(code, 3 | 5 | 6 | 7 | 13 | 14 | 15 | 19 | 20 | 74 | 75 | 78)
}

/// The broker's name for an error code (`UNKNOWN_TOPIC_OR_PARTITION`), for messages.
pub fn error_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        None => "NONE".to_string(),
        Some(ResponseError::Unknown(_)) => "UNEXPECTED_ERROR".to_string(),
        Some(error) => {
            // The crate names errors in CamelCase; Kafka's own names are SCREAMING_SNAKE.
            let camel = format!("{error:?}");
            let mut name = String::with_capacity(camel.len() + 8);
            for (i, c) in camel.chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    name.push('_');
                }
                name.push(c.to_ascii_uppercase());
            }
            name
        }
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
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::list_offsets_response::{
        ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
    };
    use kafka_protocol::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
    use kafka_protocol::messages::SaslHandshakeResponse;

    const ID: [u8; 16] = [7; 16];

    fn encoded<M: Encodable>(message: &M, version: i16) -> Bytes {
        let mut buf = BytesMut::new();
        message.encode(&mut buf, version).unwrap();
        buf.freeze()
    }

    /// A Metadata answer as a broker of `version` sends it.
    fn metadata_answer(version: i16) -> Bytes {
        let mut answer = MetadataResponse::default();
        let mut broker = MetadataResponseBroker::default();
        broker.node_id = BrokerId(0);
        broker.host = StrBytes::from_static_str("localhost");
        broker.port = 9092;
        answer.brokers.push(broker);
        let mut clicks = MetadataResponseTopic::default();
        clicks.name = Some(TopicName(StrBytes::from_static_str("clicks")));
        if version >= METADATA_TOPIC_ID_VERSION {
            clicks.topic_id = uuid::Uuid::from_bytes(ID);
        }
        for (partition, leader) in [(0, 0), (1, -1)] {
            let mut p = MetadataResponsePartition::default();
            p.error_code = if leader < 0 { 5 } else { 0 };
            p.partition_index = partition;
            p.leader_id = BrokerId(leader);
            clicks.partitions.push(p);
        }
        answer.topics.push(clicks);
        let mut gone = MetadataResponseTopic::default();
        gone.error_code = 3;
        gone.name = Some(TopicName(StrBytes::from_static_str("gone")));
        answer.topics.push(gone);
        encoded(&answer, version)
    }

    #[test]
    fn metadata_answers_of_every_supported_version_parse_with_topic_ids_from_v10() {
        for version in METADATA_VERSIONS {
            let parsed = parse_metadata(decode(version, metadata_answer(version)).unwrap());
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
            let expected_id = (version >= 10).then(|| "BwcHBwcHBwcHBwcHBwcHBw".to_string());
            assert_eq!(parsed.topics[0].topic_id, expected_id, "v{version}");
            assert_eq!(
                (parsed.topics[1].error, parsed.topics[1].name.as_str()),
                (3, "gone")
            );
        }
    }

    #[test]
    fn list_offsets_answers_of_every_supported_version_parse() {
        for version in LIST_OFFSETS_VERSIONS {
            let mut answer = ListOffsetsResponse::default();
            let mut topic = ListOffsetsTopicResponse::default();
            topic.name = TopicName(StrBytes::from_static_str("clicks"));
            for (partition, error, offset) in [(0, 0i16, 42i64), (1, 6, -1)] {
                let mut p = ListOffsetsPartitionResponse::default();
                p.partition_index = partition;
                p.error_code = error;
                p.offset = offset;
                topic.partitions.push(p);
            }
            answer.topics.push(topic);
            let topics = parse_list_offsets(decode(version, encoded(&answer, version)).unwrap());
            assert_eq!(topics.len(), 1);
            assert_eq!(topics[0].name, "clicks");
            let parsed = &topics[0].partitions;
            assert_eq!(parsed.len(), 2);
            assert_eq!(
                (parsed[0].partition, parsed[0].error, parsed[0].offset),
                (0, 0, 42),
                "v{version}"
            );
            assert_eq!((parsed[1].partition, parsed[1].error), (1, 6));
        }
    }

    #[test]
    fn truncated_answers_are_malformed_not_panics() {
        let full = metadata_answer(12);
        for cut in 0..full.len() {
            assert!(
                decode::<MetadataResponse>(12, full.slice(..cut)).is_err(),
                "cut at {cut}"
            );
        }
        assert!(split_header::<MetadataResponse>(12, Bytes::from_static(&[0, 0])).is_err());
    }

    /// The layouts old brokers (0.10.1 to 0.11) expect, byte by byte, and the flexible ones.
    #[test]
    fn requests_are_encoded_as_each_version_expects() {
        let topics = vec!["t".to_string()];
        // Metadata v1-v3: no allow_auto_topic_creation; all topics is a null array.
        for version in 1..=3 {
            let request = metadata_request(version, Some(&topics));
            assert_eq!(encoded(&request, version)[..], [0, 0, 0, 1, 0, 1, b't']);
            let all = metadata_request(version, None);
            assert_eq!(encoded(&all, version)[..], [0xff; 4]);
        }
        let v4 = metadata_request(4, Some(&topics));
        assert_eq!(encoded(&v4, 4)[..], [0, 0, 0, 1, 0, 1, b't', 0]);
        // v8: plus include cluster / topic authorized operations.
        let v8 = metadata_request(8, Some(&topics));
        assert_eq!(encoded(&v8, 8)[..], [0, 0, 0, 1, 0, 1, b't', 0, 0, 0]);
        // v10 (flexible): compact array (len + 1), topic id, compact string, tagged fields.
        let v10 = encoded(&metadata_request(10, Some(&topics)), 10);
        let mut expected = vec![2];
        expected.extend_from_slice(&[0; 16]);
        expected.extend_from_slice(&[2, b't', 0, 0, 0, 0, 0]);
        assert_eq!(v10[..], expected[..]);

        // ListOffsets v1: replica id, no isolation level; one timestamp per partition.
        let request = list_offsets_request(1, true, &[("t", vec![(7, EARLIEST)])], 30_000);
        let mut expected = Vec::new();
        expected.extend_from_slice(&(-1i32).to_be_bytes());
        expected.extend_from_slice(&1i32.to_be_bytes());
        expected.extend_from_slice(&[0, 1, b't']);
        expected.extend_from_slice(&1i32.to_be_bytes());
        expected.extend_from_slice(&7i32.to_be_bytes());
        expected.extend_from_slice(&(-2i64).to_be_bytes());
        assert_eq!(encoded(&request, 1)[..], expected[..]);
        // v5: plus isolation level and the current leader epoch (unknown, -1).
        let request = list_offsets_request(5, false, &[("t", vec![(7, LATEST)])], 30_000);
        let v5 = encoded(&request, 5);
        assert_eq!(v5[4], 0, "read_uncommitted");
        assert_eq!(v5[v5.len() - 12..v5.len() - 8], (-1i32).to_be_bytes());
        // Every version the crate knows encodes (v10 carries the timeout).
        for version in LIST_OFFSETS_VERSIONS {
            let request = list_offsets_request(version, true, &[("t", vec![(7, LATEST)])], 1000);
            assert!(!encoded(&request, version).is_empty());
        }
    }

    #[test]
    fn a_frame_has_its_size_and_the_header_of_its_version() {
        let request = metadata_request(1, None);
        let v1 = frame(&request, 1, 9, "ok").unwrap();
        // size, api key 3, version 1, correlation id 9, client id "ok", null topics
        let mut expected = vec![0, 0, 0, 16, 0, 3, 0, 1, 0, 0, 0, 9, 0, 2, b'o', b'k'];
        expected.extend_from_slice(&[0xff; 4]);
        assert_eq!(v1, expected);
        // v9+: header v2, with its (empty) tagged fields after the client id.
        let v12 = frame(&metadata_request(12, None), 12, 9, "ok").unwrap();
        assert_eq!(v12[14..17], [b'o', b'k', 0]);
    }

    #[test]
    fn an_api_versions_answer_in_v0_after_unsupported_version_is_read_as_v0() {
        let mut answer = ApiVersionsResponse::default();
        answer.error_code = UNSUPPORTED_VERSION;
        let mut api = ApiVersion::default();
        api.api_key = API_VERSIONS;
        api.max_version = 2;
        answer.api_keys.push(api);
        let parsed = parse_api_versions(API_VERSIONS_NEWEST, encoded(&answer, 0)).unwrap();
        assert_eq!(parsed.error_code, UNSUPPORTED_VERSION);
        assert_eq!(api_ranges(&parsed)[&API_VERSIONS], 0..=2);
        answer.error_code = 0;
        let newest = encoded(&answer, API_VERSIONS_NEWEST);
        let parsed = parse_api_versions(API_VERSIONS_NEWEST, newest).unwrap();
        assert_eq!(parsed.error_code, 0);
    }

    /// `before`, then an array length claiming `claim` elements (as a flexible version's varint
    /// of `claim + 1` when `compact`), then 8 bytes that are not elements.
    fn claiming(before: &[u8], claim: u32, compact: bool) -> Bytes {
        let mut body = BytesMut::from(before);
        if compact {
            let mut n = claim + 1;
            while n >= 0x80 {
                body.extend_from_slice(&[(n as u8) | 0x80]);
                n >>= 7;
            }
            body.extend_from_slice(&[n as u8]);
        } else {
            body.extend_from_slice(&claim.to_be_bytes());
        }
        body.extend_from_slice(&[0; 8]);
        body.freeze()
    }

    /// A peer claiming 2^31-1 elements in 8 bytes: the decoder must not reserve memory for the
    /// claim (kafka-protocol 0.18 did, which aborts the process; vendor/README.md).
    #[test]
    fn answers_claiming_more_elements_than_they_hold_are_malformed_not_aborts() {
        const CLAIM: u32 = i32::MAX as u32;
        // Metadata v1 with no broker, controller 0 and one topic "t" whose partitions claim.
        let nested = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, b't', 0];
        let cases: Vec<(&str, Parsed<()>)> = vec![
            (
                "Metadata v1 brokers",
                decode::<MetadataResponse>(1, claiming(&[], CLAIM, false)).map(drop),
            ),
            (
                "Metadata v1 partitions",
                decode::<MetadataResponse>(1, claiming(&nested, CLAIM, false)).map(drop),
            ),
            (
                "Metadata v12 brokers",
                decode::<MetadataResponse>(12, claiming(&[0; 4], CLAIM, true)).map(drop),
            ),
            (
                "ListOffsets v1 topics",
                decode::<ListOffsetsResponse>(1, claiming(&[], CLAIM, false)).map(drop),
            ),
            (
                "ListOffsets v10 topics",
                decode::<ListOffsetsResponse>(10, claiming(&[0; 4], CLAIM, true)).map(drop),
            ),
            (
                "ApiVersions v0 api keys",
                parse_api_versions(0, claiming(&[0; 2], CLAIM, false)).map(drop),
            ),
            (
                "ApiVersions v4 api keys",
                parse_api_versions(4, claiming(&[0; 2], CLAIM, true)).map(drop),
            ),
            (
                "SaslHandshake v1 mechanisms",
                decode::<SaslHandshakeResponse>(1, claiming(&[0; 2], CLAIM, false)).map(drop),
            ),
        ];
        for (what, parsed) in cases {
            let err = parsed.expect_err(what).to_string();
            assert!(
                err.contains("Array length 2147483647 exceeds the 8 bytes remaining"),
                "{what}: {err}"
            );
        }
    }

    #[test]
    fn error_codes_have_kafkas_names() {
        assert_eq!(error_name(3), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(error_name(6), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(error_name(29), "TOPIC_AUTHORIZATION_FAILED");
        assert_eq!(error_name(58), "SASL_AUTHENTICATION_FAILED");
        assert_eq!(error_name(-1), "UNKNOWN_SERVER_ERROR");
        assert_eq!(error_name(9999), "UNEXPECTED_ERROR");
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
        // Kafka 3.9: Metadata v0-v12, flexible and with topic ids.
        assert_eq!(pick_version(&METADATA_VERSIONS, &(0..=12)), Some(12));
    }
}
