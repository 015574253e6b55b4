//! `security.protocol` for offsetkeeper's Kafka connections: TLS (rustls, certificates from
//! PEM files) and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), read from the keys a Java
//! client's users already write (`sasl.jaas.config`, `ssl.truststore.location`, ...) or
//! librdkafka's (`sasl.username`, `ssl.ca.location`, ...). The CLI's `migrate` checks its
//! settings here too and hands librdkafka what was resolved (`rust/cli/src/migrate.rs`), so
//! both clients accept and refuse the same settings.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::params::{jaas_login, KafkaSettings};
use crate::error::{Error, Result};
use crate::pem::{certificates, pem_file, private_key};

/// How a connection authenticates.
#[derive(Clone, Default)]
pub struct KafkaSecurity {
    /// TLS, when the protocol is SSL or SASL_SSL.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The checked PEM files `tls` was built from, for another TLS client (`migrate`'s).
    pub tls_files: TlsFiles,
    pub sasl: Option<SaslLogin>,
}

/// The PEM files of a TLS setting; `None` where none is set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// The CA certificates (`ssl.ca.location` or `ssl.truststore.location`); `None`: the
    /// platform's roots ([`platform_roots`]).
    pub ca: Option<PathBuf>,
    /// The client's certificate chain and unencrypted private key (`ssl.keystore.location`).
    pub keystore: Option<PathBuf>,
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

impl KafkaSecurity {
    pub fn from_settings(settings: &KafkaSettings) -> Result<KafkaSecurity> {
        let given = settings
            .get("security.protocol")
            .unwrap_or("PLAINTEXT")
            .trim();
        let (tls, sasl) = match given.to_ascii_uppercase().as_str() {
            "PLAINTEXT" => (false, false),
            "SSL" => (true, false),
            "SASL_PLAINTEXT" => (false, true),
            "SASL_SSL" => (true, true),
            _ => {
                return Err(Error::invalid(format!(
                    "security.protocol '{given}' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
                )))
            }
        };
        let (tls, tls_files) = if tls {
            let (config, files) = tls_config(settings)?;
            (Some(config), files)
        } else {
            (None, TlsFiles::default())
        };
        Ok(KafkaSecurity {
            tls,
            tls_files,
            sasl: if sasl {
                Some(sasl_login(settings)?)
            } else {
                None
            },
        })
    }
}

fn sasl_login(settings: &KafkaSettings) -> Result<SaslLogin> {
    let given = settings.get("sasl.mechanisms").unwrap_or("GSSAPI").trim();
    let mechanism = match given.to_ascii_uppercase().as_str() {
        "PLAIN" => Mechanism::Plain,
        "SCRAM-SHA-256" => Mechanism::ScramSha256,
        "SCRAM-SHA-512" => Mechanism::ScramSha512,
        _ => {
            return Err(Error::invalid(format!(
                "sasl.mechanism '{given}' is not supported; allowed: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"
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
        (Some(username), Some(password)) if !username.is_empty() => Ok(SaslLogin {
            mechanism,
            username,
            password,
        }),
        _ => Err(Error::invalid(format!(
            "SASL {} needs a username and a password: sasl.jaas.config with username=\"...\" password=\"...\", or sasl.username and sasl.password",
            mechanism.name()
        ))),
    }
}

/// The platform's trusted CA certificates, for a connection given no truststore: the files
/// `SSL_CERT_FILE` / `SSL_CERT_DIR` name, else the system's bundle wherever this Linux keeps it
/// (Debian, RHEL, Amazon Linux, Alpine, ...). None found is an error naming where it looked.
pub fn platform_roots() -> Result<Vec<rustls::pki_types::CertificateDer<'static>>> {
    let found = rustls_native_certs::load_native_certs();
    if found.certs.is_empty() {
        let why = found
            .errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        return Err(Error::invalid(format!(
            "no truststore is set and no CA certificate was found on this system (SSL_CERT_FILE, SSL_CERT_DIR, or the system's CA bundle){}; set the truststore location to a PEM file of the CA certificates",
            if why.is_empty() { String::new() } else { format!(": {why}") }
        )));
    }
    Ok(found.certs)
}

fn tls_config(settings: &KafkaSettings) -> Result<(Arc<rustls::ClientConfig>, TlsFiles)> {
    match settings.get("ssl.endpoint.identification.algorithm") {
        None => {}
        Some(v) if v.eq_ignore_ascii_case("https") => {}
        Some(other) => {
            return Err(Error::invalid(format!(
                "ssl.endpoint.identification.algorithm '{other}' is not supported; allowed: https (the broker's certificate must name the host asked)"
            )))
        }
    }
    let mut roots = rustls::RootCertStore::empty();
    let ca = settings
        .get("ssl.ca.location")
        .map(|path| ("ssl.ca.location", path, "PEM"))
        .or_else(|| {
            settings.get("ssl.truststore.location").map(|path| {
                (
                    "ssl.truststore.location",
                    path,
                    settings.get("ssl.truststore.type").unwrap_or("JKS"),
                )
            })
        });
    let mut files = TlsFiles::default();
    match ca {
        Some((key, path, kind)) => {
            let path = pem_file(key, path, kind, "ssl.truststore.type")?;
            files.ca = Some(path.clone());
            let what = format!("{key} {}", path.display());
            for cert in certificates(&what, &read_file(key, &path)?)? {
                roots.add(cert).map_err(|err| {
                    Error::invalid(format!(
                        "{key} {}: a certificate is not usable: {err}",
                        path.display()
                    ))
                })?;
            }
            if roots.is_empty() {
                return Err(Error::invalid(format!(
                    "{key} {} holds no certificate; give the CA certificates in PEM",
                    path.display()
                )));
            }
        }
        None => {
            // The platform's roots, as the Java client uses the JVM's.
            for cert in platform_roots()? {
                // A root rustls cannot use (an old or odd certificate) is left out, as the
                // platform's other TLS clients leave it out.
                let _ = roots.add(cert);
            }
        }
    }
    // The provider named, not the process default: that one panics when a second provider
    // is compiled in anywhere in the program.
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| Error::Internal(format!("TLS setup: {err}")))?
        .with_root_certificates(roots);
    let config = match settings.get("ssl.keystore.location") {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let kind = settings.get("ssl.keystore.type").unwrap_or("JKS");
            let path = pem_file("ssl.keystore.location", path, kind, "ssl.keystore.type")?;
            let what = format!("ssl.keystore.location {}", path.display());
            let pem = read_file("ssl.keystore.location", &path)?;
            let certs = certificates(&what, &pem)?;
            let key = private_key(&what, &pem)?
            .ok_or_else(|| {
                Error::invalid(format!(
                    "ssl.keystore.location {} holds no unencrypted private key; give the key and its certificate chain in PEM",
                    path.display()
                ))
            })?;
            let config = builder.with_client_auth_cert(certs, key).map_err(|err| {
                Error::invalid(format!("ssl.keystore.location {}: {err}", path.display()))
            })?;
            files.keystore = Some(path);
            config
        }
    };
    Ok((Arc::new(config), files))
}

fn read_file(key: &str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|err| Error::invalid(format!("{key} {}: cannot read it: {err}", path.display())))
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
        let login = sasl_login(&settings(&[
            ("sasl.mechanism", "SCRAM-SHA-512"),
            (
                "sasl.jaas.config",
                r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="bob" password="Secret-1";"#,
            ),
        ]))
        .unwrap();
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
                vec![("security.protocol", "TLS")],
                "security.protocol 'TLS'",
            ),
            (
                vec![
                    ("security.protocol", "SASL_PLAINTEXT"),
                    ("sasl.mechanism", "GSSAPI"),
                ],
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
