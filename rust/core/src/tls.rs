//! TLS material shared by the Kafka and ZooKeeper clients: the CA certificates and the client
//! identity as PEM, from a file (`ssl.truststore.location`, `ssl.keystore.location`) or from
//! text (Kafka's in-memory PEM keys `ssl.truststore.certificates`,
//! `ssl.keystore.certificate.chain` and `ssl.keystore.key`), and the rustls configuration built
//! from them. JKS and PKCS#12 stores are read by the jar's Java side with the JVM's `KeyStore`
//! and reach the engine as that PEM text; a store path given to the engine itself is refused
//! saying what to give instead. The PEM itself is read by rustls' `pki_types`.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::{Error, Result};

/// PEM text and where it came from (a key, and a path when read from a file), for messages.
#[derive(Clone, PartialEq, Eq)]
pub struct Pem {
    pub what: String,
    pub text: String,
}

impl std::fmt::Debug for Pem {
    // The text may hold a private key: only its origin is shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PEM from {}", self.what)
    }
}

/// The CA certificates of a client's TLS settings (`prefix` is `""` for Kafka, `"zookeeper."`
/// for ZooKeeper): `ssl.truststore.certificates` (with `ssl.truststore.type` unset or `PEM`) or
/// the PEM file `ssl.truststore.location`; `None` when neither is set.
pub(crate) fn truststore(
    get: &dyn Fn(&str) -> Option<String>,
    prefix: &str,
) -> Result<Option<Pem>> {
    let type_key = format!("{prefix}ssl.truststore.type");
    let text_key = format!("{prefix}ssl.truststore.certificates");
    let file_key = format!("{prefix}ssl.truststore.location");
    store(get, &type_key, &[text_key.as_str()], &file_key)
}

/// The client identity (a certificate chain and its unencrypted private key) of a client's TLS
/// settings: `ssl.keystore.certificate.chain` with `ssl.keystore.key`, or the PEM file
/// `ssl.keystore.location` holding both; `None` when neither is set.
pub(crate) fn keystore(get: &dyn Fn(&str) -> Option<String>, prefix: &str) -> Result<Option<Pem>> {
    let type_key = format!("{prefix}ssl.keystore.type");
    let chain_key = format!("{prefix}ssl.keystore.certificate.chain");
    let key_key = format!("{prefix}ssl.keystore.key");
    let file_key = format!("{prefix}ssl.keystore.location");
    store(
        get,
        &type_key,
        &[chain_key.as_str(), key_key.as_str()],
        &file_key,
    )
}

/// A store given as PEM text (all of `text_keys`) or as a PEM file (`file_key`).
fn store(
    get: &dyn Fn(&str) -> Option<String>,
    type_key: &str,
    text_keys: &[&str],
    file_key: &str,
) -> Result<Option<Pem>> {
    let texts: Vec<(&str, String)> = text_keys
        .iter()
        .filter_map(|key| get(key).map(|text| (*key, text)))
        .collect();
    let file = get(file_key);
    let kind = get(type_key);
    if texts.is_empty() {
        let kind = kind.as_deref().unwrap_or("JKS");
        return file
            .map(|path| pem_file(file_key, &path, kind, type_key))
            .transpose();
    }
    if file.is_some() {
        return Err(Error::invalid(format!(
            "{} and {file_key} are both set; set one of them",
            text_keys.join(" / ")
        )));
    }
    if let Some(missing) = text_keys
        .iter()
        .find(|key| texts.iter().all(|(k, _)| k != *key))
    {
        return Err(Error::invalid(format!(
            "{} is set but {missing} is not; give both",
            texts[0].0
        )));
    }
    if let Some(kind) = kind.filter(|kind| !kind.trim().eq_ignore_ascii_case("PEM")) {
        return Err(Error::invalid(format!(
            "{} is PEM text but {type_key} is '{kind}'; allowed: PEM",
            text_keys.join(" / ")
        )));
    }
    Ok(Some(Pem {
        what: text_keys.join(" / "),
        text: texts
            .into_iter()
            .map(|(_, text)| text)
            .collect::<Vec<_>>()
            .join("\n"),
    }))
}

/// `ssl.endpoint.identification.algorithm` (under `key`): unset or `https`, as both clients
/// always check that the server's certificate names the host asked.
pub(crate) fn endpoint_identification(key: &str, value: Option<&str>) -> Result<()> {
    match value {
        None => Ok(()),
        Some(v) if v.trim().eq_ignore_ascii_case("https") => Ok(()),
        Some(other) => Err(Error::invalid(format!(
            "{key} '{other}' is not supported; allowed: https (the server's certificate must name the host asked)"
        ))),
    }
}

/// A rustls client configuration trusting `ca` (the platform's CA certificates when `None`)
/// and presenting `identity` when given.
pub(crate) fn client_config(
    ca: Option<&Pem>,
    identity: Option<&Pem>,
) -> Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    match ca {
        Some(ca) => {
            for cert in certificates(&ca.what, ca.text.as_bytes())? {
                roots.add(cert).map_err(|err| {
                    Error::invalid(format!("{}: a certificate is not usable: {err}", ca.what))
                })?;
            }
            if roots.is_empty() {
                return Err(Error::invalid(format!(
                    "{} holds no certificate; give the CA certificates in PEM",
                    ca.what
                )));
            }
        }
        None => {
            // A root rustls cannot use (an old or odd certificate) is left out, as the
            // platform's other TLS clients leave it out.
            roots.add_parsable_certificates(platform_roots()?);
        }
    }
    // The provider named, not the process default: that one panics when a second provider
    // is compiled in anywhere in the program.
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| Error::Internal(format!("TLS setup: {err}")))?
        .with_root_certificates(roots);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some(identity) => {
            let key = private_key(&identity.what, identity.text.as_bytes())?.ok_or_else(|| {
                Error::invalid(format!(
                    "{} holds no unencrypted private key; give the key and its certificate chain in PEM",
                    identity.what
                ))
            })?;
            let chain = certificates(&identity.what, identity.text.as_bytes())?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|err| Error::invalid(format!("{}: {err}", identity.what)))?
        }
    };
    Ok(Arc::new(config))
}

/// The platform's trusted CA certificates, for a connection given no truststore: the files
/// `SSL_CERT_FILE` / `SSL_CERT_DIR` name, else the system's bundle wherever this Linux keeps it
/// (Debian, RHEL, Amazon Linux, Alpine, ...). None found is an error naming where it looked.
pub fn platform_roots() -> Result<Vec<CertificateDer<'static>>> {
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

/// The platform's trusted CA certificates as PEM text, for clients that take PEM.
pub fn platform_roots_pem() -> Result<String> {
    use base64::Engine as _;
    let mut pem = String::new();
    for cert in platform_roots()? {
        let encoded = base64::engine::general_purpose::STANDARD.encode(cert.as_ref());
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        for line in encoded.as_bytes().chunks(64) {
            pem.push_str(&String::from_utf8_lossy(line));
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
    }
    Ok(pem)
}

/// The X.509 certificates in PEM text; `what` names it in errors (a key and a path).
pub(crate) fn certificates(what: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<_, _>>()
        .map_err(|err| Error::invalid(format!("{what}: not PEM: {err}")))
}

/// The first unencrypted private key (PKCS#8, PKCS#1 or SEC1) in PEM text; `None` when it
/// holds none.
pub(crate) fn private_key(what: &str, pem: &[u8]) -> Result<Option<PrivateKeyDer<'static>>> {
    match PrivateKeyDer::from_pem_slice(pem) {
        Ok(key) => Ok(Some(key)),
        Err(pem::Error::NoItemsFound) => Ok(None),
        Err(err) => Err(Error::invalid(format!("{what}: not PEM: {err}"))),
    }
}

/// A PEM file's text: JKS and PKCS#12 stores, which the engine cannot read, are refused saying
/// what to give instead.
pub(crate) fn pem_file(key: &str, path: &str, kind: &str, type_key: &str) -> Result<Pem> {
    let path = PathBuf::from(path.trim());
    let head = std::fs::read(&path)
        .map(|bytes| bytes.into_iter().take(4).collect::<Vec<u8>>())
        .map_err(|err| {
            Error::invalid(format!("{key} {}: cannot read it: {err}", path.display()))
        })?;
    let is_jks = head == [0xfe, 0xed, 0xfe, 0xed] || kind.eq_ignore_ascii_case("JKS");
    if is_jks {
        return Err(Error::invalid(format!(
            "{key} {} is a Java KeyStore (JKS), which only the jar reads (through the JVM's KeyStore); here give the same certificates as a PEM file and set {type_key}=PEM (keytool -exportcert -rfc, or openssl pkcs12 -nokeys on a PKCS#12 export)",
            path.display()
        )));
    }
    if !kind.eq_ignore_ascii_case("PEM") {
        return Err(Error::invalid(format!(
            "{key} {} has {type_key}={kind}; allowed here: PEM (the jar also reads JKS and PKCS12; convert a PKCS#12 store with openssl pkcs12 -nodes)",
            path.display()
        )));
    }
    let text = std::fs::read_to_string(&path).map_err(|err| {
        Error::invalid(format!(
            "{key} {}: cannot read it as text: {err}",
            path.display()
        ))
    })?;
    Ok(Pem {
        what: format!("{key} {}", path.display()),
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |key: &str| map.get(key).cloned()
    }

    #[test]
    fn pem_text_keys_give_the_stores_without_files() {
        let get = lookup(&[
            ("zookeeper.ssl.truststore.certificates", "CA"),
            ("zookeeper.ssl.keystore.certificate.chain", "CHAIN"),
            ("zookeeper.ssl.keystore.key", "KEY"),
            ("zookeeper.ssl.keystore.type", "pem"),
        ]);
        let ca = truststore(&get, "zookeeper.").unwrap().unwrap();
        assert_eq!(ca.text, "CA");
        let identity = keystore(&get, "zookeeper.").unwrap().unwrap();
        assert_eq!(identity.text, "CHAIN\nKEY");
        assert_eq!(
            format!("{identity:?}"),
            "PEM from zookeeper.ssl.keystore.certificate.chain / zookeeper.ssl.keystore.key"
        );
        assert_eq!(truststore(&lookup(&[]), "").unwrap(), None);
    }

    #[test]
    fn half_a_store_or_two_sources_or_another_type_are_refused_by_name() {
        let both = lookup(&[
            ("ssl.truststore.certificates", "CA"),
            ("ssl.truststore.location", "/ca.pem"),
        ]);
        let message = truststore(&both, "").unwrap_err().to_string();
        assert!(message.contains("are both set"), "{message}");

        let half = lookup(&[("ssl.keystore.certificate.chain", "CHAIN")]);
        let message = keystore(&half, "").unwrap_err().to_string();
        assert!(message.contains("ssl.keystore.key is not"), "{message}");

        let jks = lookup(&[
            ("ssl.truststore.certificates", "CA"),
            ("ssl.truststore.type", "JKS"),
        ]);
        let message = truststore(&jks, "").unwrap_err().to_string();
        assert!(message.contains("'JKS'; allowed: PEM"), "{message}");
    }

    #[test]
    fn endpoint_identification_is_https_or_unset() {
        assert!(endpoint_identification("k", None).is_ok());
        assert!(endpoint_identification("k", Some("HTTPS")).is_ok());
        let message = endpoint_identification("k", Some(""))
            .unwrap_err()
            .to_string();
        assert!(message.contains("k ''"), "{message}");
    }
}
