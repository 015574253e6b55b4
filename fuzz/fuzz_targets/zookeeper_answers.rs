//! What offsetkeeper reads from ZooKeeper servers beyond offsets (those are `parse_value`): the
//! `srvr` four-letter word's answer, a topic folder's identity data, and the text of
//! `zookeeper.server.version` and of the connect string. Never a panic; a version read back is
//! the one written, an identity read is one that writes and reads back the same.
//!
//! The ZooKeeper wire protocol itself is decoded inside zookeeper-client, which has no public
//! decoder (its `proto` and `record` modules are private): not fuzzed here.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offsetkeeper::zookeeper::layout::{encode_topic_identity, parse_topic_identity};
use offsetkeeper::zookeeper::server_version::{connect_hosts, parse_srvr};
use offsetkeeper::zookeeper::ServerVersion;

fuzz_target!(|data: &[u8]| {
    if let Some(id) = parse_topic_identity(data) {
        assert!(!id.is_empty());
        assert!(id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(parse_topic_identity(&encode_topic_identity(&id)), Some(id));
    }

    let text = String::from_utf8_lossy(data);
    if let Some(version) = parse_srvr(&text) {
        let written = version.to_string();
        match ServerVersion::from_property(&written) {
            Ok(again) => assert_eq!(again, version),
            Err(_) => assert!(version < ServerVersion::CONSERVATIVE, "{written} refused"),
        }
    }
    if let Ok(version) = ServerVersion::from_property(&text) {
        assert!(version >= ServerVersion::CONSERVATIVE);
        assert_eq!(ServerVersion::from_property(&version.to_string()).ok(), Some(version));
    }
    if let Ok(hosts) = connect_hosts(&text) {
        for (host, port) in hosts {
            assert!(!host.is_empty() && port != 0);
        }
    }
});
