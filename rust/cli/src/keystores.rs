//! Java keystores in `--command-config`: PKCS#12 truststores and keystores (`ssl.truststore.*`,
//! `ssl.keystore.*`, `ssl.key.password`, and the same under `zookeeper.`) are read with the
//! `p12-keystore` crate and handed to the engine as Kafka's in-memory PEM keys
//! (`ssl.truststore.certificates`, `ssl.keystore.certificate.chain`, `ssl.keystore.key`), as
//! the jar's `KeyStores.java` does with the JVM's KeyStore: the trusted certificate entries of
//! a truststore, the first private key entry (with its chain) of a keystore. A JKS store, which
//! no Rust crate reads, is refused saying how to convert it. Nothing is written anywhere.

use base64::Engine as _;
use p12_keystore::{KeyStore, KeyStoreEntry, Pkcs12ImportPolicy};

/// Why a store could not be read; names the key and the file, never a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KeystoreError(String);

/// The Java keystores of the properties (a later pair wins, as in a properties file) replaced
/// by their PEM text; PEM stores and everything else are left as they are.
pub fn to_pem(properties: &mut Vec<(String, String)>) -> Result<(), KeystoreError> {
    for prefix in ["", "zookeeper."] {
        let truststore = Store::new(prefix, "truststore");
        if let Some(store) = truststore.open(properties, None)? {
            let pem = trusted_certificates(&store, &truststore)?;
            truststore.replace(properties, &[("certificates", pem)], prefix);
        }
        let keystore = Store::new(prefix, "keystore");
        let key_password = format!("{prefix}ssl.key.password");
        if let Some(store) = keystore.open(properties, Some(&key_password))? {
            let (chain, key) = identity(&store, &keystore)?;
            keystore.replace(
                properties,
                &[("certificate.chain", chain), ("key", key)],
                prefix,
            );
        }
    }
    Ok(())
}

/// The keys of one store: `<prefix>ssl.<kind>.location`, `.type`, `.password`.
struct Store {
    location: String,
    type_key: String,
    password: String,
    base: String,
}

fn get<'a>(properties: &'a [(String, String)], key: &str) -> Option<&'a str> {
    properties
        .iter()
        .rev()
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.as_str())
}

impl Store {
    fn new(prefix: &str, kind: &str) -> Store {
        let base = format!("{prefix}ssl.{kind}.");
        Store {
            location: format!("{base}location"),
            type_key: format!("{base}type"),
            password: format!("{base}password"),
            base,
        }
    }

    /// The store as PKCS#12 when its location names a Java keystore (type PKCS12, or JKS, the
    /// Java clients' default, for a file that is PKCS#12 as Java's keystore.type.compat reads
    /// it); `None` for a PEM store, or no store. `key_password` is the keystore's key password
    /// key, the password when the store's own is not set.
    fn open(
        &self,
        properties: &[(String, String)],
        key_password: Option<&str>,
    ) -> Result<Option<KeyStore>, KeystoreError> {
        let Some(path) = get(properties, &self.location).map(str::trim) else {
            return Ok(None);
        };
        let given = get(properties, &self.type_key).map(str::trim);
        let kind = given.unwrap_or("JKS").to_ascii_uppercase();
        let what = format!("{} {path}", self.location);
        match kind.as_str() {
            "PEM" => return Ok(None),
            "PKCS12" | "JKS" => {}
            other => {
                return Err(KeystoreError(format!(
                    "{what}: {} '{other}' is not supported; allowed: PKCS12, PEM",
                    self.type_key
                )))
            }
        }
        let bytes = std::fs::read(path)
            .map_err(|err| KeystoreError(format!("{what}: cannot read it: {err}")))?;
        if let Some(java) = java_only_format(&bytes) {
            return Err(KeystoreError(format!(
                "{what} is a Java KeyStore ({java}), which only the jar reads; convert it to PKCS#12 (keytool -importkeystore -srckeystore {path} -destkeystore store.p12 -deststoretype PKCS12) and set {}=PKCS12, or give PEM",
                self.type_key
            )));
        }
        // PKCS#12 is DER: a SEQUENCE.
        if bytes.first() != Some(&0x30) {
            return Err(KeystoreError(match given {
                Some(_) => format!("{what} is not a PKCS#12 file ({}={kind})", self.type_key),
                None => format!(
                    "{what} is not a Java keystore ({} is unset: JKS, as in Kafka's clients); for a PEM file set {}=PEM",
                    self.type_key, self.type_key
                ),
            }));
        }
        let store_password = get(properties, &self.password);
        let password = store_password.or_else(|| key_password.and_then(|key| get(properties, key)));
        let (password, password_key) = match (password, store_password) {
            (Some(password), Some(_)) => (password, self.password.clone()),
            (Some(password), None) => (password, key_password.unwrap_or_default().to_string()),
            // Java reads a truststore without its password (no integrity check); PKCS#12 here
            // needs one, which may be empty.
            (None, _) if key_password.is_none() => ("", self.password.clone()),
            (None, _) => {
                return Err(KeystoreError(format!(
                "{what} is a Java keystore and {} is not set; its key cannot be read without it",
                self.password
            )))
            }
        };
        KeyStore::from_pkcs12(&bytes, password, Pkcs12ImportPolicy::Strict)
            .map(Some)
            .map_err(|err| {
                KeystoreError(match err {
                    p12_keystore::error::Error::MacError(_)
                        if store_password.is_none() && key_password.is_none() =>
                    {
                        format!(
                            "{what} (PKCS12): cannot read it without a password: set {}",
                            self.password
                        )
                    }
                    p12_keystore::error::Error::MacError(_) => format!(
                        "{what} (PKCS12): cannot read it: the password {password_key} is wrong"
                    ),
                    other => format!("{what} (PKCS12): cannot read it: {other}"),
                })
            })
    }

    /// Replaces the store's file keys with the PEM keys (`<base><suffix>`), type PEM.
    fn replace(
        &self,
        properties: &mut Vec<(String, String)>,
        pem: &[(&str, String)],
        prefix: &str,
    ) {
        let key_password = format!("{prefix}ssl.key.password");
        let gone = [
            self.location.as_str(),
            self.password.as_str(),
            self.type_key.as_str(),
            key_password.as_str(),
        ];
        let is_keystore = self.base.ends_with("keystore.");
        properties.retain(|(k, _)| {
            let k = k.trim();
            !(gone[..3].contains(&k) || (is_keystore && k == gone[3]))
        });
        for (suffix, text) in pem {
            properties.push((format!("{}{suffix}", self.base), text.clone()));
        }
        properties.push((self.type_key.clone(), "PEM".to_string()));
    }
}

/// The Java-only store format a file is in, from its magic number.
fn java_only_format(bytes: &[u8]) -> Option<&'static str> {
    match bytes.get(..4) {
        Some([0xfe, 0xed, 0xfe, 0xed]) => Some("JKS"),
        Some([0xce, 0xce, 0xce, 0xce]) => Some("JCEKS"),
        _ => None,
    }
}

/// The truststore's trusted certificate entries as PEM.
fn trusted_certificates(store: &KeyStore, keys: &Store) -> Result<String, KeystoreError> {
    let pem: String = store
        .entries()
        .filter_map(|(_, entry)| match entry {
            KeyStoreEntry::Certificate(cert) => Some(pem("CERTIFICATE", cert.as_der())),
            _ => None,
        })
        .collect();
    if pem.is_empty() {
        return Err(KeystoreError(format!(
            "{} holds no trusted certificate entry (keytool -importcert adds one)",
            keys.location
        )));
    }
    Ok(pem)
}

/// The first private key entry's certificate chain and its PKCS#8 key, as PEM.
fn identity(store: &KeyStore, keys: &Store) -> Result<(String, String), KeystoreError> {
    let (_, chain) = store.private_key_chain().ok_or_else(|| {
        KeystoreError(format!(
            "{} holds no private key entry with its certificate",
            keys.location
        ))
    })?;
    let certificates = chain
        .certs()
        .iter()
        .map(|cert| pem("CERTIFICATE", cert.as_der()))
        .collect();
    Ok((certificates, pem("PRIVATE KEY", chain.key().as_der())))
}

/// DER as a PEM block, 64 characters a line.
fn pem(label: &str, der: &[u8]) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in encoded.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// A directory of stores made by the JDK's keytool, as Java shops make them: a key pair
    /// in a PKCS#12 keystore (`client.p12`, password `store-Secret`), its certificate in a
    /// PKCS#12 truststore (`trust.p12`, `trust-Secret`) and in a JKS one (`trust.jks`).
    fn stores() -> PathBuf {
        static STORES: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        STORES.get_or_init(make_stores).clone()
    }

    fn make_stores() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ok-p12-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let keytool = |args: &[&str]| {
            let status = Command::new("keytool")
                .args(args)
                .current_dir(&dir)
                .output()
                .unwrap_or_else(|err| panic!("keytool (JDK 17) is needed on PATH: {err}"));
            assert!(status.status.success(), "keytool {args:?}: {status:?}");
        };
        keytool(&[
            "-genkeypair",
            "-alias",
            "client",
            "-keyalg",
            "EC",
            "-groupname",
            "secp256r1",
            "-dname",
            "CN=client",
            "-validity",
            "2",
            "-storetype",
            "PKCS12",
            "-keystore",
            "client.p12",
            "-storepass",
            "store-Secret",
        ]);
        keytool(&[
            "-exportcert",
            "-alias",
            "client",
            "-keystore",
            "client.p12",
            "-storepass",
            "store-Secret",
            "-file",
            "client.der",
        ]);
        for (store, kind) in [("trust.p12", "PKCS12"), ("trust.jks", "JKS")] {
            keytool(&[
                "-importcert",
                "-noprompt",
                "-alias",
                "ca",
                "-file",
                "client.der",
                "-storetype",
                kind,
                "-keystore",
                store,
                "-storepass",
                "trust-Secret",
            ]);
        }
        dir
    }

    fn path(dir: &Path, name: &str) -> String {
        dir.join(name).to_str().expect("path").to_string()
    }

    fn props(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn value<'a>(properties: &'a [(String, String)], key: &str) -> Option<&'a str> {
        get(properties, key)
    }

    #[test]
    fn pkcs12_stores_become_the_engines_pem_keys() {
        let dir = stores();
        let der = std::fs::read(dir.join("client.der")).expect("certificate");
        for prefix in ["", "zookeeper."] {
            let key = |name: &str| format!("{prefix}{name}");
            let mut properties = props(&[
                (&key("ssl.truststore.location"), &path(&dir, "trust.p12")),
                (&key("ssl.truststore.type"), "pkcs12"),
                (&key("ssl.truststore.password"), "trust-Secret"),
                (&key("ssl.keystore.location"), &path(&dir, "client.p12")),
                (&key("ssl.keystore.type"), "PKCS12"),
                (&key("ssl.keystore.password"), "store-Secret"),
                (&key("ssl.key.password"), "store-Secret"),
                ("client.id", "kept"),
            ]);
            to_pem(&mut properties).unwrap();
            let certificate = pem("CERTIFICATE", &der);
            assert_eq!(
                value(&properties, &key("ssl.truststore.certificates")),
                Some(certificate.as_str())
            );
            assert_eq!(
                value(&properties, &key("ssl.keystore.certificate.chain")),
                Some(certificate.as_str())
            );
            let private = value(&properties, &key("ssl.keystore.key")).expect("key");
            assert!(
                private.starts_with("-----BEGIN PRIVATE KEY-----\n"),
                "{private}"
            );
            for gone in [
                "ssl.truststore.location",
                "ssl.truststore.password",
                "ssl.keystore.location",
                "ssl.keystore.password",
                "ssl.key.password",
            ] {
                assert_eq!(value(&properties, &key(gone)), None, "{gone}");
            }
            assert_eq!(value(&properties, &key("ssl.truststore.type")), Some("PEM"));
            assert_eq!(value(&properties, &key("ssl.keystore.type")), Some("PEM"));
            assert_eq!(value(&properties, "client.id"), Some("kept"));
            // The engine takes the result (rustls parses the chain and key).
            let config =
                offsetkeeper::KeeperConfig::from_properties(properties.iter().cloned().chain([
                    ("zookeeper.connect".to_string(), "zk:2181".to_string()),
                    ("bootstrap.servers".to_string(), "b:9092".to_string()),
                    ("security.protocol".to_string(), "SSL".to_string()),
                    (
                        "zookeeper.ssl.client.enable".to_string(),
                        "true".to_string(),
                    ),
                ]));
            assert!(config.is_ok(), "{:?}", config.err());
        }
        // The JDK's default type (JKS, unset) reads a PKCS#12 file, as keystore.type.compat.
        let mut properties = props(&[
            ("ssl.keystore.location", &path(&dir, "client.p12")),
            ("ssl.key.password", "store-Secret"),
        ]);
        to_pem(&mut properties).unwrap();
        assert!(value(&properties, "ssl.keystore.key").is_some());
    }

    #[test]
    fn bad_stores_name_the_key_and_file_never_the_password() {
        let dir = stores();
        let pem_file = dir.join("ca.pem");
        std::fs::write(&pem_file, "-----BEGIN CERTIFICATE-----\n").expect("pem");
        let (trust, jks, client, pem_path) = (
            path(&dir, "trust.p12"),
            path(&dir, "trust.jks"),
            path(&dir, "client.p12"),
            pem_file.to_str().expect("path").to_string(),
        );
        for (pairs, needle) in [
            (
                vec![("ssl.truststore.location", trust.as_str()), ("ssl.truststore.type", "PKCS12"), ("ssl.truststore.password", "wrong-Secret")],
                format!("ssl.truststore.location {trust} (PKCS12): cannot read it: the password ssl.truststore.password is wrong"),
            ),
            (
                vec![("ssl.truststore.location", trust.as_str()), ("ssl.truststore.type", "PKCS12")],
                "cannot read it without a password: set ssl.truststore.password".to_string(),
            ),
            (
                vec![("zookeeper.ssl.keystore.location", client.as_str()), ("zookeeper.ssl.keystore.type", "PKCS12"), ("zookeeper.ssl.key.password", "wrong-Secret")],
                "the password zookeeper.ssl.key.password is wrong".to_string(),
            ),
            (
                vec![("ssl.keystore.location", client.as_str()), ("ssl.keystore.type", "PKCS12")],
                "ssl.keystore.password is not set; its key cannot be read without it".to_string(),
            ),
            (
                vec![("ssl.keystore.location", trust.as_str()), ("ssl.keystore.type", "PKCS12"), ("ssl.keystore.password", "trust-Secret")],
                "ssl.keystore.location holds no private key entry".to_string(),
            ),
            (
                vec![("ssl.truststore.location", client.as_str()), ("ssl.truststore.type", "PKCS12"), ("ssl.truststore.password", "store-Secret")],
                "ssl.truststore.location holds no trusted certificate entry".to_string(),
            ),
            (
                vec![("ssl.truststore.location", jks.as_str()), ("ssl.truststore.password", "trust-Secret")],
                format!("ssl.truststore.location {jks} is a Java KeyStore (JKS), which only the jar reads; convert it to PKCS#12"),
            ),
            (
                vec![("zookeeper.ssl.truststore.location", jks.as_str()), ("zookeeper.ssl.truststore.type", "PKCS12")],
                "zookeeper.ssl.truststore.type=PKCS12".to_string(),
            ),
            (
                vec![("ssl.truststore.location", pem_path.as_str())],
                "is not a Java keystore (ssl.truststore.type is unset: JKS, as in Kafka's clients); for a PEM file set ssl.truststore.type=PEM".to_string(),
            ),
            (
                vec![("ssl.truststore.location", pem_path.as_str()), ("ssl.truststore.type", "PKCS12")],
                "is not a PKCS#12 file (ssl.truststore.type=PKCS12)".to_string(),
            ),
            (
                vec![("ssl.truststore.location", "/nonexistent.p12"), ("ssl.truststore.type", "PKCS12")],
                "ssl.truststore.location /nonexistent.p12: cannot read it".to_string(),
            ),
            (
                vec![("ssl.truststore.location", trust.as_str()), ("ssl.truststore.type", "JCEKS-ish")],
                "ssl.truststore.type 'JCEKS-ISH' is not supported; allowed: PKCS12, PEM".to_string(),
            ),
        ] {
            let mut properties = props(&pairs);
            let before = properties.clone();
            let err = to_pem(&mut properties).unwrap_err().to_string();
            assert!(err.contains(&needle), "{needle}: {err}");
            assert!(!err.contains("Secret"), "{err}");
            assert_eq!(properties, before, "nothing changed");
        }
        // PEM stores are the engine's.
        let mut properties = props(&[
            ("ssl.truststore.location", &pem_path),
            ("ssl.truststore.type", "PEM"),
        ]);
        let before = properties.clone();
        to_pem(&mut properties).unwrap();
        assert_eq!(properties, before);
    }
}
