//! How offsetkeeper authenticates to ZooKeeper and which ACL the nodes it creates get. Set
//! from `zookeeper.*` properties, the same keys in the Java builder and in the CLI's
//! `--command-config`:
//!
//! | key | value |
//! |---|---|
//! | `zookeeper.auth` | `scheme:credentials`, sent as `addauth` on every session, e.g. `digest:alice:secret` |
//! | `zookeeper.acl` | `open` (default), `creator` (only the creating identity), or `scheme:id:perms[,...]` |
//! | `zookeeper.sasl.mechanism` | `DIGEST-MD5`, or `GSSAPI` (Kerberos; the jar's JVM login, [`crate::sasl`]) |
//! | `zookeeper.sasl.username`, `zookeeper.sasl.password` | the DIGEST-MD5 login |
//! | `zookeeper.sasl.client`, `.sasl.clientconfig`, `.sasl.client.username`, `.sasl.client.canonicalize.hostname`, `zookeeper.server.principal`, `.server.realm` | the Java client's Kerberos settings, read by the jar's Java side; accepted and not read here |
//! | `zookeeper.ssl.client.enable` | `true`: TLS to every server of the connect string |
//! | `zookeeper.ssl.truststore.location` + `zookeeper.ssl.truststore.type=PEM` | the CA certificates (the jar also reads `JKS` and `PKCS12` with `zookeeper.ssl.truststore.password`) |
//! | `zookeeper.ssl.keystore.location` + `zookeeper.ssl.keystore.type=PEM` | a client certificate chain and key (the jar: also `JKS`, `PKCS12`, `zookeeper.ssl.keystore.password`) |
//! | `zookeeper.ssl.truststore.certificates`; `zookeeper.ssl.keystore.certificate.chain` + `zookeeper.ssl.keystore.key` | the same as PEM text (Kafka's in-memory PEM keys, under `zookeeper.`) |
//!
//! Credentials never appear in `Debug` output or in messages.

use std::fmt;

use zookeeper_client as zk;

use crate::error::{Error, Result};
use crate::sasl::{ZkGssapi, GSSAPI, GSSAPI_IN_THE_JAR};
use crate::tls::{endpoint_identification, keystore, platform_roots_pem, truststore, Pem};

/// The Java client's Kerberos keys: the jar's Java side reads them (whether to use SASL, the
/// JAAS section, the server principal's rules); the engine only accepts them.
const JAVA_KERBEROS_KEYS: &[&str] = &[
    "zookeeper.sasl.client",
    "zookeeper.sasl.clientconfig",
    "zookeeper.sasl.client.username",
    "zookeeper.sasl.client.canonicalize.hostname",
    "zookeeper.server.principal",
    "zookeeper.server.realm",
];

/// The keys understood, for messages (and the docs check).
pub const KEYS: &str = "zookeeper.server.version, zookeeper.auth, zookeeper.acl, zookeeper.sasl.mechanism, zookeeper.sasl.username, zookeeper.sasl.password, zookeeper.sasl.client, zookeeper.sasl.clientconfig, zookeeper.sasl.client.username, zookeeper.sasl.client.canonicalize.hostname, zookeeper.server.principal, zookeeper.server.realm, zookeeper.ssl.client.enable, zookeeper.ssl.truststore.location, zookeeper.ssl.truststore.type, zookeeper.ssl.truststore.password, zookeeper.ssl.truststore.certificates, zookeeper.ssl.keystore.location, zookeeper.ssl.keystore.type, zookeeper.ssl.keystore.password, zookeeper.ssl.keystore.certificate.chain, zookeeper.ssl.keystore.key, zookeeper.ssl.endpoint.identification.algorithm";

/// TLS to ZooKeeper: the CA certificates and an optional client identity, as PEM text.
#[derive(Clone, PartialEq, Eq)]
pub struct ZkTls {
    /// `None`: the platform's CA certificates.
    pub ca: Option<Pem>,
    /// A certificate chain and its private key (one PEM text holding both).
    pub identity: Option<Pem>,
}

/// The ACL of every node offsetkeeper creates (offset folders and nodes, ownership nodes).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AclPolicy {
    /// `world:anyone` may do everything: ZooKeeper's default, and what Kafka's old consumer did.
    #[default]
    Open,
    /// Only the identities the creating session authenticated as (`auth` scheme); needs
    /// `zookeeper.auth` or SASL (DIGEST-MD5 or GSSAPI).
    Creator,
    /// An explicit list of `(scheme, id, permissions)`.
    List(Vec<zk::Acl>),
}

/// A SASL DIGEST-MD5 login.
#[derive(Clone, PartialEq, Eq)]
pub struct SaslLogin {
    pub username: String,
    pub password: String,
}

/// ZooKeeper authentication and ACLs.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ZkSecurity {
    /// `(scheme, credentials)` sent with `addauth` on every session.
    pub auth: Vec<(String, String)>,
    pub acl: AclPolicy,
    /// SASL DIGEST-MD5.
    pub sasl: Option<SaslLogin>,
    /// SASL GSSAPI through the host's provider, which the keeper gets from its configuration
    /// ([`KeeperConfig::sasl_provider`](crate::KeeperConfig::sasl_provider)); never set
    /// together with `sasl`.
    pub gssapi: bool,
    pub tls: Option<ZkTls>,
}

impl ZkSecurity {
    /// Whether a session authenticates at all: `zookeeper.auth`, or SASL of either kind.
    pub(crate) fn sends_credentials(&self) -> bool {
        !self.auth.is_empty() || self.sasl.is_some() || self.gssapi
    }

    /// The identities a session presents, as ZooKeeper's ACLs name them (no secret);
    /// `principal`: the Kerberos principal of a GSSAPI login, when known.
    pub(crate) fn identity_words(&self, principal: Option<&str>) -> String {
        let mut ids: Vec<String> = self
            .auth
            .iter()
            .map(|(scheme, credentials)| match scheme.as_str() {
                "digest" => format!(
                    "digest:{}:… (zookeeper.auth)",
                    credentials.split(':').next().unwrap_or("")
                ),
                other => format!("{other} (zookeeper.auth)"),
            })
            .collect();
        if let Some(login) = &self.sasl {
            ids.push(format!("sasl:{} (DIGEST-MD5)", login.username));
        }
        if self.gssapi {
            const REMOVED: &str = "when it removes the host and realm: \
                kerberos.removeHostFromPrincipal, kerberos.removeRealmFromPrincipal, as Cloudera \
                sets them";
            ids.push(match principal {
                Some(principal) => {
                    let short = principal.split(['/', '@']).next().unwrap_or(principal);
                    format!("sasl:{principal} (GSSAPI; ZooKeeper names it sasl:{short} {REMOVED})")
                }
                None => format!(
                    "sasl:<the ticket cache's principal> (GSSAPI; ZooKeeper names it by the \
                     principal's first part {REMOVED})"
                ),
            });
        }
        if ids.is_empty() {
            "not authenticated (only world:anyone and ip entries admit it)".to_string()
        } else {
            format!("authenticated as {}", ids.join(", "))
        }
    }
}

impl fmt::Debug for ZkSecurity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth: Vec<String> = self
            .auth
            .iter()
            .map(|(scheme, _)| format!("{scheme}:****"))
            .collect();
        f.debug_struct("ZkSecurity")
            .field("auth", &auth)
            .field("acl", &self.acl)
            .field(
                "sasl",
                &match &self.sasl {
                    Some(login) => Some(format!("DIGEST-MD5 {} / ****", login.username)),
                    None if self.gssapi => Some(GSSAPI.to_string()),
                    None => None,
                },
            )
            .field(
                "tls",
                &self.tls.as_ref().map(|tls| {
                    format!(
                        "ca: {}, client identity: {}",
                        if tls.ca.is_some() { "given" } else { "system" },
                        if tls.identity.is_some() {
                            "****"
                        } else {
                            "none"
                        }
                    )
                }),
            )
            .finish()
    }
}

impl ZkSecurity {
    /// Reads the `zookeeper.*` properties (other keys are not looked at). An unknown
    /// `zookeeper.*` key or a bad value is an error naming it, never its secret.
    pub fn from_properties<K, V>(properties: impl IntoIterator<Item = (K, V)>) -> Result<ZkSecurity>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut security = ZkSecurity::default();
        let (mut mechanism, mut username, mut password) = (None, None, None);
        let mut ssl: std::collections::HashMap<String, String> = Default::default();
        for (key, value) in properties {
            let (key, value) = (key.as_ref().trim(), value.as_ref());
            match key {
                "zookeeper.auth" => {
                    let (scheme, credentials) = value
                        .split_once(':')
                        .filter(|(scheme, credentials)| !scheme.is_empty() && !credentials.is_empty())
                        .ok_or_else(|| {
                            Error::invalid(
                                "zookeeper.auth is not scheme:credentials (for example digest:user:password)",
                            )
                        })?;
                    security
                        .auth
                        .push((scheme.trim().to_string(), credentials.to_string()));
                }
                "zookeeper.acl" => security.acl = parse_acl(value)?,
                // Not security: read by `ZkConfig::apply_properties`.
                super::server_version::PROPERTY => {}
                "zookeeper.sasl.mechanism" => mechanism = Some(value.trim().to_string()),
                "zookeeper.sasl.username" => username = Some(value.to_string()),
                "zookeeper.sasl.password" => password = Some(value.to_string()),
                key if JAVA_KERBEROS_KEYS.contains(&key) => {}
                "zookeeper.connect" => {
                    return Err(Error::invalid(
                        "zookeeper.connect is the connect string, not a security setting: give it as the builder's zookeeper(...) or the CLI's --zookeeper",
                    ))
                }
                // Read by the jar's Java side, which opens JKS and PKCS#12 stores; the engine's
                // PEM needs none (as Kafka's client ignores them for PEM).
                "zookeeper.ssl.truststore.password" | "zookeeper.ssl.keystore.password" => {}
                "zookeeper.ssl.client.enable"
                | "zookeeper.ssl.truststore.location"
                | "zookeeper.ssl.truststore.type"
                | "zookeeper.ssl.truststore.certificates"
                | "zookeeper.ssl.keystore.location"
                | "zookeeper.ssl.keystore.type"
                | "zookeeper.ssl.keystore.certificate.chain"
                | "zookeeper.ssl.keystore.key"
                | "zookeeper.ssl.endpoint.identification.algorithm" => {
                    ssl.insert(key.to_string(), value.trim().to_string());
                }
                other if other.starts_with("zookeeper.") => {
                    return Err(Error::invalid(format!(
                        "'{other}' is not a ZooKeeper setting offsetkeeper knows; allowed: {KEYS}"
                    )))
                }
                _ => {}
            }
        }
        let upper = mechanism.as_deref().map(str::to_ascii_uppercase);
        match (upper.as_deref(), username, password) {
            (None, None, None) => {}
            // Whether the keeper has a provider for it is checked when it is opened.
            (Some(GSSAPI), None, None) => security.gssapi = true,
            (Some(GSSAPI), _, _) => {
                return Err(Error::invalid(
                    "zookeeper.sasl.mechanism=GSSAPI takes no zookeeper.sasl.username or zookeeper.sasl.password: the JVM's Kerberos login (JAAS) authenticates",
                ))
            }
            (None | Some("DIGEST-MD5"), Some(username), Some(password)) if !username.is_empty() => {
                security.sasl = Some(SaslLogin { username, password });
            }
            (Some(other), _, _) if other != "DIGEST-MD5" => {
                let given = mechanism.as_deref().unwrap_or(other);
                return Err(Error::invalid(format!(
                    "zookeeper.sasl.mechanism '{given}' is not supported; allowed: DIGEST-MD5, GSSAPI (in the jar, through the JVM's Kerberos login)"
                )));
            }
            _ => {
                return Err(Error::invalid(
                    "ZooKeeper SASL needs both zookeeper.sasl.username and zookeeper.sasl.password",
                ))
            }
        }
        security.tls = tls_settings(&ssl)?;
        if security.acl == AclPolicy::Creator
            && security.auth.is_empty()
            && security.sasl.is_none()
            && !security.gssapi
        {
            return Err(Error::invalid(
                "zookeeper.acl=creator needs an identity: set zookeeper.auth, zookeeper.sasl.username/password, or zookeeper.sasl.mechanism=GSSAPI",
            ));
        }
        Ok(security)
    }

    /// The values that must never appear in a message or a log line.
    pub fn secrets(&self) -> Vec<&str> {
        let mut secrets: Vec<&str> = self.auth.iter().map(|(_, c)| c.as_str()).collect();
        if let Some(login) = &self.sasl {
            secrets.push(&login.password);
        }
        secrets.retain(|secret| !secret.is_empty());
        secrets
    }

    /// The ACL list for created nodes.
    pub(crate) fn acls(&self) -> zk::Acls<'_> {
        match &self.acl {
            AclPolicy::Open => zk::Acls::anyone_all(),
            AclPolicy::Creator => zk::Acls::creator_all(),
            AclPolicy::List(list) => zk::Acls::new(list),
        }
    }

    /// Adds the credentials to a session being opened; `gssapi` is the provider's mechanism,
    /// which GSSAPI needs.
    pub(crate) fn apply(
        &self,
        mut connector: zk::Connector,
        gssapi: Option<&ZkGssapi>,
    ) -> Result<zk::Connector> {
        if let Some(tls) = &self.tls {
            let mut options = zk::TlsOptions::new();
            if let Some(ca) = &tls.ca {
                options = options
                    .with_pem_ca(&ca.text)
                    .map_err(|err| Error::invalid(format!("{}: {err}", ca.what)))?;
            } else {
                // No truststore: the platform's roots, as for Kafka (zookeeper-client takes PEM).
                options = options.with_pem_ca(&platform_roots_pem()?).map_err(|err| {
                    Error::invalid(format!("the system's CA certificates: {err}"))
                })?;
            }
            if let Some(identity) = &tls.identity {
                options = options
                    .with_pem_identity(&identity.text, &identity.text)
                    .map_err(|_| {
                        Error::invalid(format!(
                            "{}: no certificate chain with an unencrypted private key in it",
                            identity.what
                        ))
                    })?;
            }
            connector = connector.with_tls(options);
        }
        for (scheme, credentials) in &self.auth {
            connector = connector.with_auth(scheme, credentials.as_bytes());
        }
        if let Some(login) = &self.sasl {
            connector = connector.with_sasl(zk::SaslOptions::digest_md5(
                login.username.clone(),
                login.password.clone(),
            ));
        }
        if self.gssapi {
            let mechanism = gssapi.ok_or_else(gssapi_without_provider)?;
            connector = connector.with_sasl(mechanism.options());
        }
        Ok(connector)
    }
}

/// The refusal of `zookeeper.sasl.mechanism=GSSAPI` by a keeper without a SASL provider.
pub(crate) fn gssapi_without_provider() -> Error {
    Error::invalid(format!(
        "zookeeper.sasl.mechanism '{GSSAPI}' is not supported; allowed: DIGEST-MD5; {GSSAPI_IN_THE_JAR}"
    ))
}

/// TLS from the `zookeeper.ssl.*` keys (Kafka's names for its own ZooKeeper client).
fn tls_settings(ssl: &std::collections::HashMap<String, String>) -> Result<Option<ZkTls>> {
    let enabled = match ssl.get("zookeeper.ssl.client.enable").map(String::as_str) {
        None => false,
        Some(v) if v.eq_ignore_ascii_case("true") => true,
        Some(v) if v.eq_ignore_ascii_case("false") => false,
        Some(other) => {
            return Err(Error::invalid(format!(
                "zookeeper.ssl.client.enable '{other}' is not true or false"
            )))
        }
    };
    if !enabled {
        if let Some(key) = ssl.keys().find(|k| *k != "zookeeper.ssl.client.enable") {
            return Err(Error::invalid(format!(
                "'{key}' is set but zookeeper.ssl.client.enable is not true"
            )));
        }
        return Ok(None);
    }
    endpoint_identification(
        "zookeeper.ssl.endpoint.identification.algorithm",
        ssl.get("zookeeper.ssl.endpoint.identification.algorithm")
            .map(String::as_str),
    )?;
    let get = |key: &str| ssl.get(key).cloned();
    Ok(Some(ZkTls {
        ca: truststore(&get, "zookeeper.")?,
        identity: keystore(&get, "zookeeper.")?,
    }))
}

/// `open`, `creator`, or `scheme:id:perms[,scheme:id:perms...]` with perms from `crwda`
/// (`digest` ids hold a colon: `digest:alice:HASH=:rw`).
fn parse_acl(value: &str) -> Result<AclPolicy> {
    match value.trim() {
        "open" => return Ok(AclPolicy::Open),
        "creator" => return Ok(AclPolicy::Creator),
        _ => {}
    }
    let mut acls = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = || {
            Error::invalid(format!(
                "zookeeper.acl entry '{entry}' is not scheme:id:perms (perms from crwda, e.g. world:anyone:r); allowed: open, creator, or a comma-separated list"
            ))
        };
        let (rest, perms) = entry.rsplit_once(':').ok_or_else(bad)?;
        let (scheme, id) = rest.split_once(':').ok_or_else(bad)?;
        if scheme.is_empty() || id.is_empty() || perms.is_empty() {
            return Err(bad());
        }
        let mut permission = zk::Permission::NONE;
        for letter in perms.chars() {
            permission = permission
                | match letter {
                    'r' => zk::Permission::READ,
                    'w' => zk::Permission::WRITE,
                    'c' => zk::Permission::CREATE,
                    'd' => zk::Permission::DELETE,
                    'a' => zk::Permission::ADMIN,
                    _ => return Err(bad()),
                };
        }
        acls.push(zk::Acl::new(permission, zk::AuthId::new(scheme, id)));
    }
    if acls.is_empty() {
        return Err(Error::invalid(
            "zookeeper.acl is empty; allowed: open, creator, or scheme:id:perms[,...]",
        ));
    }
    Ok(AclPolicy::List(acls))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_are_read_and_secrets_masked() {
        let security = ZkSecurity::from_properties([
            ("zookeeper.auth", "digest:alice:S3cret-pw"),
            ("zookeeper.acl", "creator"),
            ("zookeeper.sasl.username", "bob"),
            ("zookeeper.sasl.password", "Bobs-pw"),
            ("bootstrap.servers", "b:9092"),
        ])
        .unwrap();
        assert_eq!(
            security.auth,
            [("digest".to_string(), "alice:S3cret-pw".to_string())]
        );
        assert_eq!(security.acl, AclPolicy::Creator);
        let debug = format!("{security:?}");
        assert!(
            !debug.contains("S3cret") && !debug.contains("Bobs-pw"),
            "{debug}"
        );
        assert!(
            debug.contains("digest:****") && debug.contains("bob"),
            "{debug}"
        );
        assert_eq!(security.secrets(), ["alice:S3cret-pw", "Bobs-pw"]);
    }

    /// `zookeeper.sasl.mechanism=GSSAPI` is read here; whether the keeper has a provider for
    /// it is checked when it is opened (`ZkStore::with_sasl_provider`). The Java client's
    /// Kerberos keys are accepted and left to the jar's Java side.
    #[test]
    fn gssapi_and_the_java_clients_kerberos_keys_are_accepted() {
        let security = ZkSecurity::from_properties([
            ("zookeeper.sasl.mechanism", "gssapi"),
            ("zookeeper.acl", "creator"),
            ("zookeeper.sasl.client", "true"),
            ("zookeeper.sasl.clientconfig", "Client"),
            ("zookeeper.sasl.client.username", "zookeeper"),
            ("zookeeper.sasl.client.canonicalize.hostname", "false"),
            ("zookeeper.server.principal", "zookeeper/zk1@EXAMPLE.COM"),
            ("zookeeper.server.realm", "EXAMPLE.COM"),
        ])
        .unwrap();
        assert!(security.gssapi && security.sasl.is_none());
        assert_eq!(security.acl, AclPolicy::Creator);
        assert!(security.secrets().is_empty());
        assert!(format!("{security:?}").contains("sasl: Some(\"GSSAPI\")"));
        // The keys alone change nothing (`zookeeper.sasl.client=false` is for Java to decide).
        let security = ZkSecurity::from_properties([
            ("zookeeper.sasl.client", "false"),
            ("zookeeper.server.principal", "zookeeper/zk1"),
        ])
        .unwrap();
        assert_eq!(security, ZkSecurity::default());
        let err = ZkSecurity::from_properties([("zookeeper.sasl.user", "x")])
            .unwrap_err()
            .to_string();
        for key in JAVA_KERBEROS_KEYS {
            assert!(err.contains(key), "{key}: {err}");
        }
    }

    #[test]
    fn acl_lists_are_parsed() {
        let AclPolicy::List(acls) =
            parse_acl("digest:alice:Hx9/sWB0+Kc=:crwda, world:anyone:r").unwrap()
        else {
            panic!("a list");
        };
        assert_eq!(
            (acls[0].scheme(), acls[0].id()),
            ("digest", "alice:Hx9/sWB0+Kc=")
        );
        assert_eq!(acls[0].permission(), zk::Permission::ALL);
        assert_eq!((acls[1].scheme(), acls[1].id()), ("world", "anyone"));
        assert_eq!(acls[1].permission(), zk::Permission::READ);
    }

    #[test]
    fn bad_values_are_errors_naming_the_key_not_the_secret() {
        for (properties, needle) in [
            (
                vec![("zookeeper.acl", "world:anyone:rx")],
                "entry 'world:anyone:rx'",
            ),
            (vec![("zookeeper.acl", "anyone")], "entry 'anyone'"),
            (vec![("zookeeper.acl", " , ")], "zookeeper.acl is empty"),
            (vec![("zookeeper.acl", "creator")], "needs an identity"),
            (
                vec![("zookeeper.auth", "Secret-no-scheme")],
                "scheme:credentials",
            ),
            (
                vec![("zookeeper.sasl.password", "Secret-pw")],
                "both zookeeper.sasl.username",
            ),
            (
                vec![
                    ("zookeeper.sasl.mechanism", "GSSAPI"),
                    ("zookeeper.sasl.username", "u"),
                    ("zookeeper.sasl.password", "Secret-pw"),
                ],
                "GSSAPI takes no zookeeper.sasl.username or zookeeper.sasl.password",
            ),
            (
                vec![("zookeeper.sasl.mechanism", "PLAIN")],
                "'PLAIN' is not supported; allowed: DIGEST-MD5, GSSAPI (in the jar",
            ),
            (
                vec![("zookeeper.sasl.clientconfig.section", "Client")],
                "'zookeeper.sasl.clientconfig.section' is not a ZooKeeper setting",
            ),
            (
                vec![("zookeeper.ssl.keystore.location", "/k.jks")],
                "zookeeper.ssl.client.enable is not true",
            ),
            (
                vec![
                    ("zookeeper.ssl.client.enable", "true"),
                    ("zookeeper.ssl.truststore.location", "/nonexistent"),
                ],
                "cannot read it",
            ),
            (
                vec![("zookeeper.sasl.user", "x")],
                "'zookeeper.sasl.user' is not a ZooKeeper setting",
            ),
            (
                vec![("zookeeper.connect", "z:2181")],
                "zookeeper.connect is the connect string",
            ),
        ] {
            let err = ZkSecurity::from_properties(properties)
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{needle}: {err}");
            assert!(!err.contains("Secret"), "{err}");
        }
    }
}
