//! The translation of a job's `kafkaParams` into the engine's Kafka settings (librdkafka's key names), and the policy names:
//! never a panic; a translation that succeeds has bootstrap servers, the fixed settings and an
//! isolation level; secret values are masked in Debug output and redacted from messages.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use offsetkeeper::kafka::params::is_secret_key;
use offsetkeeper::{KafkaSettings, OnAboveRange, OnBelowRange, OnMissing};

const KEYS: &[&str] = &[
    "bootstrap.servers",
    "auto.offset.reset",
    "isolation.level",
    "sasl.mechanism",
    "sasl.password",
    "ssl.key.password",
    "sasl.jaas.config",
    "security.protocol",
    "group.id",
    "enable.auto.commit",
];

#[derive(Arbitrary, Debug)]
enum Key {
    Known(u8),
    Other(String),
}

fuzz_target!(|params: Vec<(Key, String)>| {
    let pairs: Vec<(String, String)> = params
        .into_iter()
        .map(|(key, value)| match key {
            Key::Known(i) => (KEYS[usize::from(i) % KEYS.len()].to_string(), value),
            Key::Other(key) => (key, value),
        })
        .collect();
    for (_, value) in &pairs {
        let _ = OnMissing::from_auto_offset_reset(value);
        let _ = OnMissing::parse(value);
        let _ = OnBelowRange::parse(value);
        let _ = OnAboveRange::parse(value);
    }
    let Ok(settings) = KafkaSettings::from_params(pairs.iter().map(|(k, v)| (k, v))) else {
        return;
    };
    assert!(!settings.bootstrap.trim().is_empty());
    let has = |key: &str| settings.settings.iter().any(|(k, _)| k == key);
    assert!(has("isolation.level") && has("enable.auto.commit"));
    assert!(!has("group.id") && !has("sasl.mechanism"));

    let shown = format!("{settings:?}");
    for (key, value) in &settings.settings {
        if is_secret_key(key) {
            assert!(shown.contains(&format!("({key:?}, \"****\")")), "{key} not masked");
            if value != "****" {
                assert!(!shown.contains(&format!("({key:?}, {value:?})")), "{key} shown");
            }
        }
    }
    for secret in settings.secret_values() {
        if !"****".contains(secret) {
            let redacted = settings.redact(&format!("failed <{secret}>"));
            assert!(!redacted.contains(&format!("<{secret}>")), "{secret} not redacted");
        }
    }
});
