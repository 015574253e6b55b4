//! A broker's answers, decoded the way the engine decodes them (`offsetkeeper::kafka::protocol`,
//! over the patched `kafka-protocol` codecs) and turned into what the engine uses: ApiVersions,
//! Metadata, ListOffsets, SaslHandshake and SaslAuthenticate, each at every version the engine
//! may negotiate, with the response header in front. Whatever the bytes, decoding is an `Err`
//! or a value, never a panic or an abort (a claim of more elements than bytes must not be
//! reserved for), and what the engine reads from a value holds together.
//!
//! The input: byte 0 picks the answer, byte 1 its version within the engine's range, the rest
//! is the answer as it follows the 4-byte size on the wire (response header, then body).
//! Mirrors `Connection::exchange` and its callers, which take a socket and cannot be called
//! here; the SCRAM exchange's parsing of the server's messages is private to the engine.
#![no_main]

use std::ops::RangeInclusive;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiVersionsResponse, ListOffsetsResponse, MetadataResponse, SaslAuthenticateResponse,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};
use libfuzzer_sys::fuzz_target;
use offsetkeeper::kafka::protocol::{
    self, API_LIST_OFFSETS, API_METADATA, API_SASL_AUTHENTICATE, API_SASL_HANDSHAKE,
    API_VERSIONS, API_VERSIONS_NEWEST, LIST_OFFSETS_VERSIONS, METADATA_TOPIC_ID_VERSION,
    METADATA_VERSIONS, SASL_AUTHENTICATE_VERSIONS, SASL_HANDSHAKE_VERSIONS, UNSUPPORTED_VERSION,
};

/// The version `pick` chooses within `range`.
fn version_in(range: RangeInclusive<i16>, pick: u8) -> i16 {
    let count = i32::from(*range.end()) - i32::from(*range.start()) + 1;
    let offset = i32::from(pick) % count;
    *range.start() + i16::try_from(offset).expect("the ranges are small")
}

/// What the engine's `exchange` does with an answer before its body is decoded: a size it
/// accepts (at least the correlation id), then the header of `R` at `version`.
fn body_of<R: HeaderVersion>(version: i16, answer: &[u8]) -> Option<Bytes> {
    if answer.len() < 4 {
        return None;
    }
    let (_correlation_id, body) =
        protocol::split_header::<R>(version, Bytes::copy_from_slice(answer)).ok()?;
    Some(body)
}

/// A decoded body encodes again at its version, and what that gives decodes, without a panic.
/// Not asserted equal: the codec keeps unknown tagged fields with a tag past i32::MAX as a
/// negative tag and writes them back in another order, so such an answer comes back different
/// (or not at all); the engine never encodes an answer, so that is no concern of its.
fn round_trips<R: Decodable + Encodable>(version: i16, value: &R) {
    let mut buf = BytesMut::new();
    if value.encode(&mut buf, version).is_ok() {
        let _ = protocol::decode::<R>(version, buf.freeze());
    }
}

/// The engine's names for error codes, for any code a broker sends.
fn named(code: i16) {
    let name = protocol::error_name(code);
    assert!(!name.is_empty());
    let _ = protocol::is_retriable(code);
}

fuzz_target!(|data: &[u8]| {
    let [which, pick, answer @ ..] = data else {
        return;
    };
    match which % 5 {
        0 => {
            // ApiVersions: asked at the newest version, then lower after UNSUPPORTED_VERSION.
            let version = version_in(0..=API_VERSIONS_NEWEST, *pick);
            let Some(body) = body_of::<ApiVersionsResponse>(version, answer) else {
                return;
            };
            let Ok(parsed) = protocol::parse_api_versions(version, body) else {
                return;
            };
            named(parsed.error_code);
            let ranges = protocol::api_ranges(&parsed);
            for (ours, key) in [
                (METADATA_VERSIONS, API_METADATA),
                (LIST_OFFSETS_VERSIONS, API_LIST_OFFSETS),
                (SASL_HANDSHAKE_VERSIONS, API_SASL_HANDSHAKE),
                (SASL_AUTHENTICATE_VERSIONS, API_SASL_AUTHENTICATE),
            ] {
                if let Some(theirs) = ranges.get(&key) {
                    if let Some(picked) = protocol::pick_version(&ours, theirs) {
                        assert!(ours.contains(&picked) && theirs.contains(&picked));
                    }
                }
                let _ = protocol::first_release_for(key);
            }
            if parsed.error_code == UNSUPPORTED_VERSION && version > 0 {
                if let Some(theirs) = ranges.get(&API_VERSIONS) {
                    if let Some(next) = protocol::pick_version(&(0..=version - 1), theirs) {
                        assert!((0..version).contains(&next));
                    }
                }
            } else {
                round_trips(version, &parsed);
            }
        }
        1 => {
            let version = version_in(METADATA_VERSIONS, *pick);
            let Some(body) = body_of::<MetadataResponse>(version, answer) else {
                return;
            };
            let Ok(decoded) = protocol::decode::<MetadataResponse>(version, body) else {
                return;
            };
            round_trips(version, &decoded);
            let metadata = protocol::parse_metadata(decoded);
            for topic in &metadata.topics {
                named(topic.error);
                if version < METADATA_TOPIC_ID_VERSION {
                    assert_eq!(topic.topic_id, None, "v{version} carries no topic id");
                }
                if let Some(id) = &topic.topic_id {
                    // 16 bytes in URL-safe base64 without padding.
                    assert_eq!(id.len(), 22);
                    assert!(id
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
                }
                for partition in &topic.partitions {
                    named(partition.error);
                }
            }
        }
        2 => {
            let version = version_in(LIST_OFFSETS_VERSIONS, *pick);
            let Some(body) = body_of::<ListOffsetsResponse>(version, answer) else {
                return;
            };
            let Ok(decoded) = protocol::decode::<ListOffsetsResponse>(version, body) else {
                return;
            };
            round_trips(version, &decoded);
            let partitions: usize = decoded.topics.iter().map(|t| t.partitions.len()).sum();
            let listed = protocol::parse_list_offsets(decoded);
            assert_eq!(listed.iter().map(|t| t.partitions.len()).sum::<usize>(), partitions);
            for offset in listed.iter().flat_map(|t| &t.partitions) {
                named(offset.error);
            }
        }
        3 => {
            let version = version_in(SASL_HANDSHAKE_VERSIONS, *pick);
            let Some(body) = body_of::<SaslHandshakeResponse>(version, answer) else {
                return;
            };
            let Ok(decoded) = protocol::decode::<SaslHandshakeResponse>(version, body) else {
                return;
            };
            round_trips(version, &decoded);
            named(decoded.error_code);
            let enabled: Vec<&str> = decoded.mechanisms.iter().map(|m| m.as_str()).collect();
            let _ = enabled.join(", ");
        }
        _ => {
            let version = version_in(SASL_AUTHENTICATE_VERSIONS, *pick);
            let Some(body) = body_of::<SaslAuthenticateResponse>(version, answer) else {
                return;
            };
            let Ok(decoded) = protocol::decode::<SaslAuthenticateResponse>(version, body) else {
                return;
            };
            round_trips(version, &decoded);
            named(decoded.error_code);
            let _ = decoded.error_message.as_deref().unwrap_or_default();
            let _ = decoded.auth_bytes.to_vec();
        }
    }
});
