//! `security.protocol` for offsetkeeper's Kafka connections: TLS (rustls, certificates from
//! PEM files) and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; GSSAPI through the host's
//! provider, [`crate::sasl`]), read from the keys a Java client's users already write
//! (`sasl.jaas.config`, `ssl.truststore.location`, ...) or librdkafka's (`sasl.username`,
//! `ssl.ca.location`, ...). The CLI's `migrate` checks its settings here too and hands
//! librdkafka what was resolved (`rust/cli/src/migrate.rs`), so both clients accept and refuse
//! the same settings.

use std::sync::Arc;

use super::params::{jaas_login, security_protocol, KafkaSettings};
use crate::error::{Error, Result};
use crate::sasl::{SaslProviderHandle, GSSAPI, GSSAPI_IN_THE_JAR};
use crate::tls::{client_config, endpoint_identification, keystore, pem_file, truststore, Pem};

/// How a connection authenticates.
#[derive(Clone, Default)]
pub struct KafkaSecurity {
    /// TLS, when the protocol is SSL or SASL_SSL.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The PEM `tls` was built from, for another TLS client (`migrate`'s).
    pub tls_pem: TlsPem,
    /// A password login (PLAIN, SCRAM).
    pub sasl: Option<SaslLogin>,
    /// GSSAPI through the host's provider, when the protocol is SASL_* and the mechanism
    /// GSSAPI (Kafka's default); never set together with `sasl`.
    pub gssapi: Option<SaslProviderHandle>,
}

/// The PEM of a TLS setting; `None` where none is set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsPem {
    /// The CA certificates; `None`: the platform's roots ([`crate::tls::platform_roots`]).
    pub ca: Option<Pem>,
    /// The client's certificate chain and unencrypted private key.
    pub identity: Option<Pem>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    Plain,
    ScramSha256,
    ScramSha512,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

#[derive(Clone, PartialEq, Eq)]
pub struct SaslLogin {
    pub mechanism: Mechanism,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for SaslLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} / ****", self.mechanism.name(), self.username)
    }
}

/// What SASL_* logs in with.
enum Login {
    Password(SaslLogin),
    Gssapi(SaslProviderHandle),
}

impl KafkaSecurity {
    /// The settings' security without a SASL provider: GSSAPI is refused.
    pub fn from_settings(settings: &KafkaSettings) -> Result<KafkaSecurity> {
        KafkaSecurity::from_settings_and_provider(settings, None)
    }

    /// The settings' security; `sasl.mechanism=GSSAPI` logs in through `provider`, and is
    /// refused without one.
    pub fn from_settings_and_provider(
        settings: &KafkaSettings,
        provider: Option<&SaslProviderHandle>,
    ) -> Result<KafkaSecurity> {
        // Checked in `KafkaSettings::from_params` already; read again for settings built by hand.
        let (tls, sasl) =
            security_protocol(settings.get("security.protocol").unwrap_or("PLAINTEXT"))?;
        let (tls, tls_pem) = if tls {
            let (config, pem) = tls_config(settings)?;
            (Some(config), pem)
        } else {
            (None, TlsPem::default())
        };
        let (sasl, gssapi) = match sasl.then(|| sasl_login(settings, provider)).transpose()? {
            None => (None, None),
            Some(Login::Password(login)) => (Some(login), None),
            Some(Login::Gssapi(provider)) => (None, Some(provider)),
        };
        Ok(KafkaSecurity {
            tls,
            tls_pem,
            sasl,
            gssapi,
        })
    }
}

fn sasl_login(settings: &KafkaSettings, provider: Option<&SaslProviderHandle>) -> Result<Login> {
    // GSSAPI is the default, as in Kafka's clients.
    let given = settings.get("sasl.mechanisms").unwrap_or(GSSAPI).trim();
    let mechanism = match (given.to_ascii_uppercase().as_str(), provider) {
        ("PLAIN", _) => Mechanism::Plain,
        ("SCRAM-SHA-256", _) => Mechanism::ScramSha256,
        ("SCRAM-SHA-512", _) => Mechanism::ScramSha512,
        // The host's JAAS login holds the Kerberos settings: no username or password here.
        (GSSAPI, Some(provider)) => return Ok(Login::Gssapi(provider.clone())),
        (_, Some(_)) => {
            return Err(Error::invalid(format!(
                "sasl.mechanism '{given}' is not supported; allowed: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI"
            )))
        }
        (_, None) => {
            return Err(Error::invalid(format!(
                "sasl.mechanism '{given}' is not supported; allowed: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; {GSSAPI_IN_THE_JAR}"
            )))
        }
    };
    let from_jaas = settings.get("sasl.jaas.config").map(jaas_login);
    let username = settings
        .get("sasl.username")
        .map(str::to_string)
        .or_else(|| from_jaas.as_ref().and_then(|(u, _)| u.clone()));
    let password = settings
        .get("sasl.password")
        .map(str::to_string)
        .or_else(|| from_jaas.as_ref().and_then(|(_, p)| p.clone()));
    match (username, password) {
        (Some(username), Some(password)) if !username.is_empty() => Ok(Login::Password(SaslLogin {
            mechanism,
            username,
            password,
        })),
        _ => Err(Error::invalid(format!(
            "SASL {} needs a username and a password: sasl.jaas.config with username=\"...\" password=\"...\", or sasl.username and sasl.password",
            mechanism.name()
        ))),
    }
}

/// TLS from the Java client's keys (`ssl.truststore.*`, `ssl.keystore.*`, see [`crate::tls`])
/// or librdkafka's `ssl.ca.location`, which wins over the truststore as in librdkafka.
fn tls_config(settings: &KafkaSettings) -> Result<(Arc<rustls::ClientConfig>, TlsPem)> {
    endpoint_identification(
        "ssl.endpoint.identification.algorithm",
        settings.get("ssl.endpoint.identification.algorithm"),
    )?;
    let get = |key: &str| settings.get(key).map(str::to_string);
    let ca = match settings.get("ssl.ca.location") {
        Some(path) => Some(pem_file(
            "ssl.ca.location",
            path,
            "PEM",
            "ssl.truststore.type",
        )?),
        None => truststore(&get, "")?,
    };
    let identity = keystore(&get, "")?;
    let config = client_config(ca.as_ref(), identity.as_ref())?;
    Ok((config, TlsPem { ca, identity }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> KafkaSettings {
        let mut all = vec![("bootstrap.servers", "b:1")];
        all.extend_from_slice(pairs);
        KafkaSettings::from_params(all).unwrap()
    }

    #[test]
    fn jaas_configs_as_java_users_write_them() {
        let (u, p) = jaas_login(
            r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="pa\"ss";"#,
        );
        assert_eq!(
            (u.as_deref(), p.as_deref()),
            (Some("alice"), Some("pa\"ss"))
        );
        let security = KafkaSecurity::from_settings(&settings(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            (
                "sasl.jaas.config",
                r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="bob" password="Secret-1";"#,
            ),
        ]))
        .unwrap();
        let login = security.sasl.expect("a password login");
        assert!(security.gssapi.is_none());
        assert_eq!(login.mechanism, Mechanism::ScramSha512);
        assert_eq!(
            (login.username.as_str(), login.password.as_str()),
            ("bob", "Secret-1")
        );
        assert!(!format!("{login:?}").contains("Secret-1"));
    }

    #[test]
    fn bad_security_settings_are_refused_by_name() {
        for (pairs, needle) in [
            (
                vec![
                    ("security.protocol", "SASL_PLAINTEXT"),
                    ("sasl.mechanism", "GSSAPI"),
                ],
                "sasl.mechanism 'GSSAPI' is not supported; allowed: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; GSSAPI (Kerberos) works in the jar, through the JVM's Kerberos login",
            ),
            (
                // GSSAPI is the default mechanism, as in Kafka's clients.
                vec![("security.protocol", "SASL_SSL")],
                "sasl.mechanism 'GSSAPI' is not supported",
            ),
            (
                vec![
                    ("security.protocol", "SASL_PLAINTEXT"),
                    ("sasl.mechanism", "PLAIN"),
                ],
                "needs a username and a password",
            ),
            (
                vec![
                    ("security.protocol", "SSL"),
                    ("ssl.truststore.location", "/nonexistent.pem"),
                    ("ssl.truststore.type", "PEM"),
                ],
                "cannot read it",
            ),
            (
                vec![
                    ("security.protocol", "SSL"),
                    ("ssl.endpoint.identification.algorithm", ""),
                ],
                "ssl.endpoint.identification.algorithm ''",
            ),
        ] {
            let err = KafkaSecurity::from_settings(&settings(&pairs))
                .err()
                .expect("refused")
                .to_string();
            assert!(err.contains(needle), "{needle}: {err}");
        }
    }

    #[test]
    fn gssapi_is_accepted_with_a_provider_and_needs_no_password() {
        use crate::sasl::fake::{FakeProvider, Script};
        let (provider, _) = FakeProvider::handle(Script::new(Ok(b""), &[]));
        for pairs in [
            vec![("security.protocol", "SASL_PLAINTEXT")],
            vec![
                ("security.protocol", "sasl_plaintext"),
                ("sasl.mechanism", "gssapi"),
                ("sasl.kerberos.service.name", "kafka"),
            ],
        ] {
            let security =
                KafkaSecurity::from_settings_and_provider(&settings(&pairs), Some(&provider))
                    .unwrap();
            assert_eq!(security.gssapi.as_ref(), Some(&provider), "{pairs:?}");
            assert!(security.sasl.is_none() && security.tls.is_none());
        }
        // The password mechanisms are unchanged, and others still refused.
        let security = KafkaSecurity::from_settings_and_provider(
            &settings(&[
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", "PLAIN"),
                ("sasl.username", "u"),
                ("sasl.password", "p"),
            ]),
            Some(&provider),
        )
        .unwrap();
        assert!(security.sasl.is_some() && security.gssapi.is_none());
        let err = KafkaSecurity::from_settings_and_provider(
            &settings(&[
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", "OAUTHBEARER"),
            ]),
            Some(&provider),
        )
        .err()
        .expect("refused")
        .to_string();
        assert!(
            err.contains("'OAUTHBEARER' is not supported; allowed: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI"),
            "{err}"
        );
        // Without SASL in the protocol, the provider is not used.
        let security =
            KafkaSecurity::from_settings_and_provider(&settings(&[]), Some(&provider)).unwrap();
        assert!(security.gssapi.is_none());
    }

    #[test]
    fn a_jks_truststore_is_refused_saying_what_to_give_instead() {
        let dir = std::env::temp_dir().join(format!("ok-jks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let jks = dir.join("truststore.jks");
        std::fs::write(&jks, [0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2]).unwrap();
        let path = jks.to_str().unwrap();
        for kind in [None, Some("PEM")] {
            let mut pairs = vec![
                ("security.protocol", "SSL"),
                ("ssl.truststore.location", path),
            ];
            if let Some(kind) = kind {
                pairs.push(("ssl.truststore.type", kind));
            }
            let err = KafkaSecurity::from_settings(&settings(&pairs))
                .err()
                .expect("refused")
                .to_string();
            assert!(
                err.contains("Java KeyStore (JKS)") && err.contains("PEM"),
                "{err}"
            );
        }
        let err = KafkaSecurity::from_settings(&settings(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.location", path),
            ("ssl.truststore.type", "PKCS12"),
        ]))
        .err()
        .expect("refused")
        .to_string();
        assert!(err.contains("Java KeyStore"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
