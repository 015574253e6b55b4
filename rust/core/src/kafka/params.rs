//! Translation of a Spark job's `kafkaParams` (Java client keys) into the settings read by
//! loads, which go over offsetkeeper's own Kafka client (`super::Brokers`, `super::security`,
//! rustls), and by the CLI's `migrate`, the one user of librdkafka (`rust/cli/src/migrate.rs`,
//! OpenSSL). The keys keep librdkafka's names and meanings; `migrate` passes the plain ones on
//! and sets the security ones from what `super::security` resolved.

use crate::error::{Error, Result};
use crate::validate::OnMissing;

/// Keys kept from the job's parameters that librdkafka understands with the same meaning as
/// the Java client; the Java client's own that offsetkeeper's client reads are also kept
/// (`JAVA_ONLY_KEYS`).
const PASSED_KEYS: &[&str] = &[
    "bootstrap.servers",
    "client.id",
    "client.dns.lookup",
    "isolation.level",
    "metadata.max.age.ms",
    "reconnect.backoff.ms",
    "reconnect.backoff.max.ms",
    "retry.backoff.ms",
    "socket.connection.setup.timeout.ms",
    "security.protocol",
    "sasl.mechanism",
    "sasl.mechanisms",
    "sasl.username",
    "sasl.password",
    "sasl.kerberos.service.name",
    "sasl.kerberos.principal",
    "sasl.kerberos.keytab",
    "sasl.oauthbearer.config",
    "ssl.ca.location",
    "ssl.ca.pem",
    "ssl.certificate.location",
    "ssl.certificate.pem",
    "ssl.key.location",
    "ssl.key.pem",
    "ssl.key.password",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.cipher.suites",
    "ssl.curves.list",
    "ssl.sigalgs.list",
    "ssl.endpoint.identification.algorithm",
];

/// Passed keys that only offsetkeeper's client reads: librdkafka (the CLI's `migrate`) gets
/// them left out, the security ones as what they resolved to.
pub const JAVA_ONLY_KEYS: &[&str] = &[
    "sasl.jaas.config",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.keystore.type",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    // librdkafka has no default.api.timeout.ms, and its request.timeout.ms is a producer's.
    "default.api.timeout.ms",
    "request.timeout.ms",
];

/// Settings for the CLI's librdkafka consumer (`migrate`), which offsetkeeper's client does
/// not read: it never commits on its own, never stores offsets and never creates a topic by
/// asking for it, and it connects to every broker it learns of at once (with sparse
/// connections, librdkafka's default, the first request after the bootstrap metadata waits out
/// a connection-suppression interval, reconnect.backoff.ms / 2).
const FIXED_SETTINGS: &[(&str, &str)] = &[
    ("enable.auto.commit", "false"),
    ("enable.auto.offset.store", "false"),
    ("allow.auto.create.topics", "false"),
    ("enable.sparse.connections", "false"),
];

/// `security.protocol`'s values, as Kafka's clients spell them; any case is accepted, as
/// Kafka's `CaseInsensitiveValidString` accepts it.
pub const SECURITY_PROTOCOLS: &[&str] = &["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];

/// What a `security.protocol` value asks for: `(tls, sasl)`. Read once in
/// [`KafkaSettings::from_params`], so that a misspelt value is refused where the configuration
/// is checked (the builder's `build()`, the CLI's start) and not first at a load.
pub fn security_protocol(value: &str) -> Result<(bool, bool)> {
    let given = value.trim();
    match given.to_ascii_uppercase().as_str() {
        "PLAINTEXT" => Ok((false, false)),
        "SSL" => Ok((true, false)),
        "SASL_PLAINTEXT" => Ok((false, true)),
        "SASL_SSL" => Ok((true, true)),
        _ => Err(Error::invalid(format!(
            "security.protocol '{given}' is not one of {}",
            SECURITY_PROTOCOLS.join(", ")
        ))),
    }
}

/// `kafkaParams` as loads read them (and, translated, the CLI's `migrate`).
#[derive(Clone, PartialEq, Eq)]
pub struct KafkaSettings {
    /// Key-value pairs in librdkafka's names, fixed settings included.
    pub settings: Vec<(String, String)>,
    /// `bootstrap.servers`, kept for messages.
    pub bootstrap: String,
    /// `auto.offset.reset` from the job's parameters, if it set one.
    pub auto_offset_reset: Option<OnMissing>,
}

impl std::fmt::Debug for KafkaSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown: Vec<(&str, String)> = self
            .settings
            .iter()
            .map(|(key, value)| (key.as_str(), shown_value(key, value)))
            .collect();
        f.debug_struct("KafkaSettings")
            .field("settings", &shown)
            .field("auto_offset_reset", &self.auto_offset_reset)
            .finish()
    }
}

impl KafkaSettings {
    /// Translates the job's parameters. `bootstrap.servers` is required; unknown and Java-only
    /// keys are dropped with a DEBUG line naming the key, never its value.
    pub fn from_params<K, V>(params: impl IntoIterator<Item = (K, V)>) -> Result<KafkaSettings>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut settings: Vec<(String, String)> = Vec::new();
        let mut auto_offset_reset = None;
        for (key, value) in params {
            let (key, value) = (key.as_ref().trim(), value.as_ref());
            if key == "auto.offset.reset" {
                auto_offset_reset = Some(OnMissing::from_auto_offset_reset(value)?);
            } else if PASSED_KEYS.contains(&key) || JAVA_ONLY_KEYS.contains(&key) {
                if key == "security.protocol" {
                    security_protocol(value)?;
                }
                // Java's key is `sasl.mechanism`; librdkafka's canonical one is `sasl.mechanisms`.
                let key = if key == "sasl.mechanism" {
                    "sasl.mechanisms"
                } else {
                    key
                };
                settings.retain(|(existing, _)| existing != key);
                settings.push((key.to_string(), value.to_string()));
            } else {
                log::debug!(
                    "kafkaParams: '{key}' has no meaning for offsetkeeper's Kafka client; dropped"
                );
            }
        }
        let bootstrap = settings
            .iter()
            .find(|(key, _)| key == "bootstrap.servers")
            .map(|(_, value)| value.trim().to_string())
            .filter(|value| !value.is_empty())
            .ok_or_else(|| {
                Error::invalid(
                    "kafkaParams has no bootstrap.servers; expected host:port[,host:port...]",
                )
            })?;
        if !settings.iter().any(|(key, _)| key == "isolation.level") {
            // Spark's consumer reads uncommitted records; librdkafka defaults to read_committed,
            // which would make "latest" the last stable offset. offsetkeeper's client reads
            // uncommitted unless told otherwise too; the key says so to both clients.
            settings.push(("isolation.level".into(), "read_uncommitted".into()));
        }
        settings.extend(
            FIXED_SETTINGS
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string())),
        );
        Ok(KafkaSettings {
            settings,
            bootstrap,
            auto_offset_reset,
        })
    }

    /// The value of a passed key, if the job set it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The values that must never appear in a message or a log line.
    pub fn secret_values(&self) -> impl Iterator<Item = &str> {
        self.settings
            .iter()
            .filter(|(key, value)| is_secret_key(key) && !value.is_empty())
            .map(|(_, value)| value.as_str())
    }

    /// Replaces every secret value found in a message with `****`, the password inside a
    /// `sasl.jaas.config` too.
    pub fn redact(&self, message: &str) -> String {
        let jaas_password = self
            .get("sasl.jaas.config")
            .and_then(|config| jaas_login(config).1)
            .filter(|password| !password.is_empty());
        self.secret_values()
            .chain(jaas_password.as_deref())
            .fold(message.to_string(), |text, secret| {
                text.replace(secret, "****")
            })
    }
}

/// `username` and `password` of a JAAS line such as
/// `org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";`
pub(crate) fn jaas_login(config: &str) -> (Option<String>, Option<String>) {
    let value = |name: &str| {
        let start = config.find(&format!("{name}=\""))? + name.len() + 2;
        let rest = &config[start..];
        let mut out = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.push(chars.next()?),
                '"' => return Some(out),
                c => out.push(c),
            }
        }
        None
    };
    (value("username"), value("password"))
}

/// Whether a configuration key holds a secret (password, key, credentials).
pub fn is_secret_key(key: &str) -> bool {
    let key = key.trim().to_ascii_lowercase();
    // `scheme:credentials`, for ZooKeeper's addauth.
    key == "zookeeper.auth"
        || [
            "password",
            "secret",
            "jaas",
            "oauthbearer.config",
            "key.pem",
            "keystore.key",
            "keytab",
        ]
        .iter()
        .any(|marker| key.contains(marker))
}

/// A value as messages and `toString` show it: `****` for a secret ([`is_secret_key`]), a count
/// for certificates given as PEM text (they run to kilobytes), else the value.
pub fn shown_value(key: &str, value: &str) -> String {
    if is_secret_key(key) {
        "****".to_string()
    } else if key.ends_with("truststore.certificates") || key.ends_with("certificate.chain") {
        let count = value.matches("-----BEGIN CERTIFICATE-----").count();
        format!("({count} certificates in PEM)")
    } else {
        value.to_string()
    }
}

/// Key/value pairs as Java's `Map.toString` shows them, `{key=value, other=value}`, with the
/// value of every secret key ([`is_secret_key`]) shown as `****`: what a keeper's `toString`
/// may print.
pub fn masked_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> String
where
    K: AsRef<str>,
    V: AsRef<str>,
{
    let shown: Vec<String> = pairs
        .into_iter()
        .map(|(key, value)| {
            let key = key.as_ref();
            format!("{key}={}", shown_value(key, value.as_ref()))
        })
        .collect();
    format!("{{{}}}", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_pairs_hide_secret_values_only() {
        assert_eq!(masked_pairs(Vec::<(&str, &str)>::new()), "{}");
        assert_eq!(
            masked_pairs([
                ("zookeeper.connect", "zk:2181"),
                ("zookeeper.auth", "digest:alice:secret"),
                ("ssl.keystore.password", "pw"),
            ]),
            "{zookeeper.connect=zk:2181, zookeeper.auth=****, ssl.keystore.password=****}"
        );
    }

    fn setting<'a>(settings: &'a KafkaSettings, key: &str) -> Option<&'a str> {
        settings
            .settings
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn spark_params_are_translated() {
        let settings = KafkaSettings::from_params([
            ("bootstrap.servers", "b1:9092,b2:9092"),
            (
                "key.deserializer",
                "org.apache.kafka.common.serialization.StringDeserializer",
            ),
            (
                "value.deserializer",
                "org.apache.kafka.common.serialization.StringDeserializer",
            ),
            ("group.id", "spark-job"),
            ("auto.offset.reset", "latest"),
            ("enable.auto.commit", "true"),
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("client.id", "job-1"),
        ])
        .unwrap();
        assert_eq!(settings.bootstrap, "b1:9092,b2:9092");
        assert_eq!(settings.auto_offset_reset, Some(OnMissing::Latest));
        assert_eq!(setting(&settings, "security.protocol"), Some("SASL_SSL"));
        assert_eq!(setting(&settings, "sasl.mechanisms"), Some("SCRAM-SHA-512"));
        assert_eq!(setting(&settings, "client.id"), Some("job-1"));
        assert_eq!(
            setting(&settings, "isolation.level"),
            Some("read_uncommitted")
        );
        assert_eq!(setting(&settings, "enable.auto.commit"), Some("false"));
        for dropped in [
            "key.deserializer",
            "value.deserializer",
            "group.id",
            "sasl.mechanism",
        ] {
            assert_eq!(setting(&settings, dropped), None, "{dropped}");
        }
    }

    #[test]
    fn the_jobs_isolation_level_is_kept() {
        let settings = KafkaSettings::from_params([
            ("bootstrap.servers", "b:9092"),
            ("isolation.level", "read_committed"),
        ])
        .unwrap();
        assert_eq!(
            setting(&settings, "isolation.level"),
            Some("read_committed")
        );
        assert_eq!(settings.auto_offset_reset, None);
    }

    #[test]
    fn old_consumer_reset_names_are_understood() {
        for (value, expected) in [
            ("smallest", OnMissing::Earliest),
            ("largest", OnMissing::Latest),
            ("none", OnMissing::Fail),
        ] {
            let settings = KafkaSettings::from_params([
                ("bootstrap.servers", "b:1"),
                ("auto.offset.reset", value),
            ])
            .unwrap();
            assert_eq!(settings.auto_offset_reset, Some(expected));
        }
    }

    #[test]
    fn missing_bootstrap_and_bad_reset_are_errors_naming_the_value() {
        let message = KafkaSettings::from_params([("client.id", "x")])
            .unwrap_err()
            .to_string();
        assert!(message.contains("bootstrap.servers"), "{message}");
        let message = KafkaSettings::from_params([
            ("bootstrap.servers", "b:1"),
            ("auto.offset.reset", "oldest"),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            message.contains("'oldest'") && message.contains("earliest"),
            "{message}"
        );
        assert!(KafkaSettings::from_params([("bootstrap.servers", " ")]).is_err());
    }

    #[test]
    fn a_misspelt_security_protocol_is_refused_when_the_params_are_read() {
        for bad in ["SASL_PLAIN", "plaintxt", "TLS", ""] {
            let message = KafkaSettings::from_params([
                ("bootstrap.servers", "b:1"),
                ("security.protocol", bad),
                ("sasl.password", "hunter2-secret"),
            ])
            .unwrap_err()
            .to_string();
            assert_eq!(
                message,
                format!(
                    "invalid argument: security.protocol '{bad}' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
                )
            );
        }
        // Kafka's clients take any case, and whitespace around the value.
        for good in ["PLAINTEXT", "ssl", " Sasl_Plaintext ", "sasl_ssl"] {
            let settings = KafkaSettings::from_params([
                ("bootstrap.servers", "b:1"),
                ("security.protocol", good),
            ])
            .unwrap();
            assert_eq!(setting(&settings, "security.protocol"), Some(good));
        }
        assert_eq!(security_protocol("sasl_ssl").unwrap(), (true, true));
        assert_eq!(security_protocol(" SSL").unwrap(), (true, false));
    }

    #[test]
    fn secrets_are_masked_in_debug_and_redacted_from_messages() {
        let settings = KafkaSettings::from_params([
            ("bootstrap.servers", "b:1"),
            ("sasl.username", "alice"),
            ("sasl.password", "hunter2-secret"),
            ("ssl.key.password", "k3y-pass"),
        ])
        .unwrap();
        let debug = format!("{settings:?}");
        assert!(
            !debug.contains("hunter2-secret") && !debug.contains("k3y-pass"),
            "{debug}"
        );
        assert!(debug.contains("alice"));
        let redacted = settings.redact("bad value hunter2-secret for sasl.password");
        assert_eq!(redacted, "bad value **** for sasl.password");
        assert!(is_secret_key("sasl.jaas.config"));
        let jaas = KafkaSettings::from_params([
            ("bootstrap.servers", "b:1"),
            (
                "sasl.jaas.config",
                r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="Jaas-Pw-1";"#,
            ),
        ])
        .unwrap();
        assert_eq!(jaas.redact("refused Jaas-Pw-1 for u"), "refused **** for u");
        assert!(is_secret_key("ssl.truststore.password"));
        assert!(is_secret_key("ssl.keystore.key"));
        assert!(is_secret_key("zookeeper.ssl.keystore.key"));
        assert!(!is_secret_key("bootstrap.servers"));
    }

    #[test]
    fn certificates_in_pem_text_are_shown_as_a_count() {
        let pem = "-----BEGIN CERTIFICATE-----\nAA\n-----END CERTIFICATE-----\n";
        let shown = masked_pairs([
            ("ssl.truststore.certificates", format!("{pem}{pem}")),
            (
                "ssl.keystore.key",
                "-----BEGIN PRIVATE KEY-----".to_string(),
            ),
        ]);
        assert_eq!(
            shown,
            "{ssl.truststore.certificates=(2 certificates in PEM), ssl.keystore.key=****}"
        );
    }
}
