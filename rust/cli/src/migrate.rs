//! Kafka consumer groups (`__consumer_offsets`) for `migrate`, through librdkafka (built with
//! a static OpenSSL for TLS and SCRAM). Only this tool links librdkafka: loads ask the brokers
//! over the engine's own connections (rustls), which need no consumer group. The job's
//! settings are checked as loads check them, and the security settings loads resolved are
//! handed to librdkafka in its names, so `migrate` accepts and refuses what loads do.

use std::collections::HashMap;
use std::time::Duration;

use offsetkeeper::kafka::params::JAVA_ONLY_KEYS;
use offsetkeeper::kafka::security::KafkaSecurity;
use offsetkeeper::names::check_name;
use offsetkeeper::tls::platform_roots_pem;
use offsetkeeper::{check_commit, KafkaSettings, TopicPartition};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::{Offset, TopicPartitionList};

use crate::Failure;

/// Why a consumer-group call failed. Secrets of the settings never appear in a message.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    /// Bad input (names, offsets), refused before anything is sent.
    #[error(transparent)]
    Invalid(#[from] offsetkeeper::Error),

    /// librdkafka refused the client settings.
    #[error("invalid argument: Kafka client settings were refused: {0}")]
    Settings(String),

    /// The brokers did not answer within the timeout.
    #[error("Kafka at {bootstrap} did not answer {operation} within {} ms", .after.as_millis())]
    Timeout {
        bootstrap: String,
        operation: &'static str,
        after: Duration,
    },

    /// The group has members: the brokers take commits from outside only for an empty group.
    #[error("Kafka {operation} failed (bootstrap.servers={bootstrap}): group '{group}' has {members} active member(s) (state {state}); stop its consumers first")]
    ActiveGroup {
        operation: &'static str,
        bootstrap: String,
        group: String,
        members: usize,
        state: String,
    },

    /// A broker or librdkafka reported an error.
    #[error("Kafka {operation} failed (bootstrap.servers={bootstrap}): {message}")]
    Kafka {
        operation: &'static str,
        bootstrap: String,
        message: String,
    },
}

impl From<GroupError> for Failure {
    fn from(err: GroupError) -> Failure {
        Failure::failed(err.to_string())
    }
}

/// Reads and commits the offsets of Kafka consumer groups, as a consumer outside the group
/// does: it never subscribes or joins. Every call is bounded by the timeout.
pub struct ConsumerGroups {
    settings: KafkaSettings,
    /// librdkafka's settings, `group.id` left out.
    config: ClientConfig,
    timeout: Duration,
}

impl ConsumerGroups {
    /// Refuses the settings loads refuse, with the same message, before anything is sent.
    pub fn new(settings: KafkaSettings, timeout: Duration) -> Result<ConsumerGroups, GroupError> {
        let config = librdkafka_config(&settings)?;
        Ok(ConsumerGroups {
            settings,
            config,
            timeout,
        })
    }

    /// The offsets the group committed for the partitions, in the order given; `None` where it
    /// committed none.
    pub fn committed(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, Option<i64>)>, GroupError> {
        const OPERATION: &str = "fetch group offsets";
        check_name("group", group)?;
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        let consumer = self.consumer(group)?;
        let mut request = TopicPartitionList::with_capacity(partitions.len());
        for tp in partitions {
            request.add_partition(&tp.topic, tp.partition);
        }
        let reply = consumer
            .committed_offsets(request, self.timeout)
            .map_err(|err| self.error(OPERATION, None, err))?;
        let mut committed: HashMap<TopicPartition, Option<i64>> = HashMap::new();
        for element in reply.elements() {
            let tp = TopicPartition::new(element.topic(), element.partition());
            if let Err(err) = element.error() {
                return Err(self.error(OPERATION, Some(&tp), err));
            }
            let offset = match element.offset() {
                Offset::Offset(offset) if offset >= 0 => Some(offset),
                _ => None,
            };
            committed.insert(tp, offset);
        }
        Ok(partitions
            .iter()
            .map(|tp| (tp.clone(), committed.get(tp).copied().flatten()))
            .collect())
    }

    /// Commits offsets for the group. Refused while the group has an active member (checked
    /// first), and for the bad input [`offsetkeeper::OffsetKeeper::commit`] refuses.
    pub fn commit(&self, group: &str, offsets: &[(TopicPartition, i64)]) -> Result<(), GroupError> {
        const OPERATION: &str = "commit group offsets";
        check_commit(group, offsets)?;
        if offsets.is_empty() {
            return Ok(());
        }
        let consumer = self.consumer(group)?;
        let groups = consumer
            .fetch_group_list(Some(group), self.timeout)
            .map_err(|err| self.error("describe group", None, err))?;
        if let Some(info) = groups.groups().iter().find(|g| g.name() == group) {
            if !info.members().is_empty() {
                return Err(GroupError::ActiveGroup {
                    operation: OPERATION,
                    bootstrap: self.settings.bootstrap.clone(),
                    group: group.to_string(),
                    members: info.members().len(),
                    state: info.state().to_string(),
                });
            }
        }
        let mut request = TopicPartitionList::with_capacity(offsets.len());
        for (tp, offset) in offsets {
            request
                .add_partition_offset(&tp.topic, tp.partition, Offset::Offset(*offset))
                .map_err(|err| self.error(OPERATION, Some(tp), err))?;
        }
        consumer
            .commit(&request, CommitMode::Sync)
            .map_err(|err| self.error(OPERATION, None, err))
    }

    /// A consumer with the job's settings and `group.id`, which never subscribes.
    fn consumer(&self, group: &str) -> Result<BaseConsumer, GroupError> {
        let mut config = self.config.clone();
        config.set("group.id", group);
        config
            .create()
            .map_err(|err| GroupError::Settings(self.settings.redact(&err.to_string())))
    }

    fn error(
        &self,
        operation: &'static str,
        at: Option<&TopicPartition>,
        err: KafkaError,
    ) -> GroupError {
        if err.rdkafka_error_code() == Some(RDKafkaErrorCode::OperationTimedOut) {
            return GroupError::Timeout {
                bootstrap: self.settings.bootstrap.clone(),
                operation,
                after: self.timeout,
            };
        }
        let message = self.settings.redact(&err.to_string());
        GroupError::Kafka {
            operation,
            bootstrap: self.settings.bootstrap.clone(),
            message: match at {
                Some(tp) => format!("{tp}: {message}"),
                None => message,
            },
        }
    }
}

/// Keys librdkafka gets from what loads resolved ([`librdkafka_config`]), not as given: it
/// reads no `sasl.jaas.config`, and its `ssl.keystore.location` is a PKCS#12 store where
/// loads read PEM.
const RESOLVED_KEYS: &[&str] = &[
    "security.protocol",
    "sasl.mechanisms",
    "sasl.username",
    "sasl.password",
    "ssl.ca.location",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.endpoint.identification.algorithm",
];

/// librdkafka's settings for the job's. The keys only the Java client knows are left out;
/// the security settings are checked by the engine (the errors loads give) and set from what
/// it resolved: the protocol, the SASL login (from `sasl.jaas.config` too), the CA file (the
/// platform's roots, as loads trust them, when none is set), the PEM keystore as certificate
/// and key, and host name verification.
fn librdkafka_config(settings: &KafkaSettings) -> Result<ClientConfig, GroupError> {
    let security = KafkaSecurity::from_settings(settings)?;
    let mut config = ClientConfig::new();
    for (key, value) in &settings.settings {
        let key = key.as_str();
        if !JAVA_ONLY_KEYS.contains(&key) && !RESOLVED_KEYS.contains(&key) {
            config.set(key, value);
        }
    }
    let protocol = match (security.tls.is_some(), security.sasl.is_some()) {
        (false, false) => "PLAINTEXT",
        (true, false) => "SSL",
        (false, true) => "SASL_PLAINTEXT",
        (true, true) => "SASL_SSL",
    };
    config.set("security.protocol", protocol);
    if let Some(login) = &security.sasl {
        config
            .set("sasl.mechanisms", login.mechanism.name())
            .set("sasl.username", &login.username)
            .set("sasl.password", &login.password);
    }
    if security.tls.is_some() {
        config.set("ssl.endpoint.identification.algorithm", "https");
        // As text: the engine has read and checked the files (or the jar's stores) already.
        // librdkafka with a static OpenSSL would look in a fixed list of paths and miss
        // SSL_CERT_FILE / SSL_CERT_DIR: given the platform's roots, it trusts what loads trust.
        match &security.tls_pem.ca {
            Some(ca) => config.set("ssl.ca.pem", &ca.text),
            None => config.set("ssl.ca.pem", platform_roots_pem()?),
        };
        if let Some(identity) = &security.tls_pem.identity {
            // One PEM text holds both; OpenSSL skips the blocks of the other kind.
            config
                .set("ssl.certificate.pem", &identity.text)
                .set("ssl.key.pem", &identity.text);
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups() -> ConsumerGroups {
        let settings = KafkaSettings::from_params([
            ("bootstrap.servers", "127.0.0.1:1"),
            ("sasl.password", "hunter2-secret"),
        ])
        .expect("settings");
        ConsumerGroups::new(settings, Duration::from_millis(200)).expect("accepted")
    }

    #[test]
    fn bad_input_is_refused_before_anything_is_sent() {
        let groups = groups();
        let tp = TopicPartition::new("orders", 0);
        let message = groups.commit("g", &[(tp.clone(), -1)]).unwrap_err();
        assert!(matches!(message, GroupError::Invalid(_)), "{message}");
        assert!(message.to_string().contains("offset -1"), "{message}");
        let message = groups.commit("g", &[(tp.clone(), 1), (tp.clone(), 2)]);
        assert!(message.unwrap_err().to_string().contains("twice"));
        let message = groups.committed("bad/group", &[tp]).unwrap_err();
        assert!(message.to_string().contains("bad/group"), "{message}");
        assert!(groups
            .committed("g", &[])
            .expect("nothing asked")
            .is_empty());
        assert!(groups.commit("g", &[]).is_ok());
    }

    #[test]
    fn settings_loads_refuse_are_refused_with_the_same_message_and_no_secret() {
        let dir = std::env::temp_dir().join(format!("ok-migrate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let store = dir.join("client.p12");
        std::fs::write(&store, [0x30, 0x82, 0, 0]).expect("store");
        let store = store.to_str().expect("path");
        // A bad protocol never gets this far: reading the settings refuses it.
        let message = KafkaSettings::from_params([
            ("bootstrap.servers", "127.0.0.1:1"),
            ("security.protocol", "NOT-A-PROTOCOL"),
        ])
        .expect_err("refused")
        .to_string();
        assert!(
            message.contains("security.protocol 'NOT-A-PROTOCOL' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
            "{message}"
        );
        for (pairs, needle) in [
            (
                vec![("security.protocol", "SASL_SSL"), ("sasl.mechanism", "GSSAPI")],
                "sasl.mechanism 'GSSAPI' is not supported; allowed: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512",
            ),
            (
                vec![
                    ("security.protocol", "SSL"),
                    ("ssl.truststore.location", store),
                    ("ssl.truststore.type", "PKCS12"),
                    ("ssl.truststore.password", "hunter2-secret"),
                ],
                "has ssl.truststore.type=PKCS12; allowed here: PEM",
            ),
        ] {
            let mut all = vec![
                ("bootstrap.servers", "127.0.0.1:1"),
                ("sasl.password", "hunter2-secret"),
            ];
            all.extend(pairs);
            let settings = KafkaSettings::from_params(all).expect("settings");
            let loads = KafkaSecurity::from_settings(&settings)
                .err()
                .expect("loads refuse it")
                .to_string();
            let err = ConsumerGroups::new(settings, Duration::from_millis(200))
                .err()
                .expect("migrate refuses it");
            let message = err.to_string();
            assert!(matches!(err, GroupError::Invalid(_)), "{message}");
            assert_eq!(message, loads);
            assert!(message.contains(needle), "{needle}: {message}");
            assert!(!message.contains("hunter2-secret"), "{message}");
        }
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn a_java_clients_sasl_settings_become_librdkafkas() {
        let settings = KafkaSettings::from_params([
            ("bootstrap.servers", "127.0.0.1:1"),
            ("security.protocol", "sasl_plaintext"),
            ("sasl.mechanism", "scram-sha-512"),
            (
                "sasl.jaas.config",
                r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="Pw-1";"#,
            ),
            ("client.id", "job-1"),
        ])
        .expect("settings");
        let config = librdkafka_config(&settings).expect("accepted");
        for (key, value) in [
            ("security.protocol", Some("SASL_PLAINTEXT")),
            ("sasl.mechanisms", Some("SCRAM-SHA-512")),
            ("sasl.username", Some("alice")),
            ("sasl.password", Some("Pw-1")),
            ("client.id", Some("job-1")),
            ("sasl.jaas.config", None),
            ("ssl.ca.location", None),
        ] {
            assert_eq!(config.get(key), value, "{key}");
        }
        let plain =
            KafkaSettings::from_params([("bootstrap.servers", "127.0.0.1:1")]).expect("settings");
        let config = librdkafka_config(&plain).expect("accepted");
        assert_eq!(config.get("security.protocol"), Some("PLAINTEXT"));
        assert_eq!(config.get("sasl.mechanisms"), None);
    }
}
