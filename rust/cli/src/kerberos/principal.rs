//! The servers' Kerberos principals, derived as the Java clients derive them (and the jar's
//! `GssapiClients.java`): Kafka's `SaslChannelBuilder` and ZooKeeper's `SaslServerPrincipal`.

use std::net::IpAddr;

/// A server's principal as GSS-API takes it (a host-based service, `service@host`), and how
/// messages show it (`service/host[@REALM]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServicePrincipal {
    pub service: String,
    pub host: String,
    pub shown: String,
}

/// The rule from the host the engine connects to (and the client's realm) to the principal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerName {
    /// The service name (`sasl.kerberos.service.name`) and the host, an IP literal
    /// reverse-resolved.
    Kafka { service_name: String },
    /// `zookeeper.server.principal`, else `zookeeper.sasl.client.username` `/` the host
    /// (canonicalized unless `zookeeper.sasl.client.canonicalize.hostname=false`, an IP
    /// literal reverse-resolved); the realm is `zookeeper.server.realm`, else the client's.
    ZooKeeper {
        principal: Option<String>,
        username: String,
        canonicalize: bool,
        realm: Option<String>,
    },
}

/// Name lookups, which tests replace.
pub trait Resolver {
    /// The addresses of a name (or of an IP literal: itself).
    fn addresses(&self, host: &str) -> Result<Vec<IpAddr>, String>;
    /// The name of an address (a reverse lookup), `None` when it has none.
    fn name_of(&self, address: &IpAddr) -> Option<String>;
}

/// The system's resolver (getaddrinfo, getnameinfo), as Java's `InetAddress` asks it.
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn addresses(&self, host: &str) -> Result<Vec<IpAddr>, String> {
        dns_lookup::lookup_host(host)
            .map(Iterator::collect)
            .map_err(|err| err.to_string())
    }

    fn name_of(&self, address: &IpAddr) -> Option<String> {
        dns_lookup::lookup_addr(address).ok()
    }
}

impl ServerName {
    /// The principal of the server at `host`; `client_realm` is the client principal's realm
    /// when known. Fails when `host` does not resolve (where the rule needs it) or the
    /// configured principal is not `service/host[@REALM]`.
    pub fn of(
        &self,
        host: &str,
        client_realm: Option<&str>,
        resolver: &dyn Resolver,
    ) -> Result<ServicePrincipal, String> {
        match self {
            ServerName::Kafka { service_name } => {
                let name = if is_ip_literal(host) {
                    host_name(&address(host, resolver)?, resolver)
                } else {
                    host.to_string()
                };
                Ok(ServicePrincipal {
                    service: service_name.clone(),
                    shown: format!("{service_name}/{name}"),
                    host: name,
                })
            }
            ServerName::ZooKeeper {
                principal,
                username,
                canonicalize,
                realm,
            } => {
                let mut name = match principal {
                    Some(principal) => principal.clone(),
                    None => format!(
                        "{username}/{}",
                        zookeeper_host(host, *canonicalize, resolver)?
                    ),
                };
                if !name.contains('@') {
                    if let Some(realm) = realm.as_deref().or(client_realm) {
                        name = format!("{name}@{realm}");
                    }
                }
                // KerberosName's form in ZooKeeper: service[/host]@REALM; only service and host
                // reach GSS-API, krb5.conf maps the host to its realm.
                let bare = name.split_once('@').map_or(name.as_str(), |(bare, _)| bare);
                let realm_part = name.split_once('@').map_or("", |(_, realm)| realm);
                match bare.split_once('/') {
                    Some((service, host))
                        if !service.is_empty()
                            && !host.is_empty()
                            && !host.contains('/')
                            && !realm_part.contains(['/', '@']) =>
                    {
                        Ok(ServicePrincipal {
                            service: service.to_string(),
                            host: host.to_string(),
                            shown: name.clone(),
                        })
                    }
                    _ => Err(format!(
                        "ZooKeeper's service principal '{name}' is not of the form service/host[@REALM]"
                    )),
                }
            }
        }
    }
}

/// ZooKeeper's host for its principal (`SaslServerPrincipal.getServerPrincipal`): the host as
/// given, or (canonicalizing) its canonical name unless that is only its address; an IP literal
/// reverse-resolved.
fn zookeeper_host(
    host: &str,
    canonicalize: bool,
    resolver: &dyn Resolver,
) -> Result<String, String> {
    if !canonicalize && !is_ip_literal(host) {
        return Ok(host.to_string());
    }
    let address = address(host, resolver)?;
    // InetAddress.getHostName: a name keeps its text, an IP literal is reverse-resolved.
    let mut name = if is_ip_literal(host) {
        host_name(&address, resolver)
    } else {
        host.to_string()
    };
    if canonicalize {
        let canonical = host_name(&address, resolver);
        if canonical != address.to_string() {
            name = canonical;
        }
    }
    Ok(name)
}

/// `InetAddress.getByName`: the first address, IPv4 before IPv6 (Java's default).
fn address(host: &str, resolver: &dyn Resolver) -> Result<IpAddr, String> {
    let bare = unbracketed(host);
    if let Ok(literal) = bare.parse::<IpAddr>() {
        return Ok(literal);
    }
    let addresses = resolver
        .addresses(bare)
        .map_err(|why| format!("cannot resolve {host}: {why}"))?;
    addresses
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addresses.first())
        .copied()
        .ok_or_else(|| format!("cannot resolve {host}: no address"))
}

/// `InetAddress.getHostName` of an address made from an IP literal, and
/// `getCanonicalHostName`: the reverse lookup's name if that name resolves back to the
/// address, else the address's text.
fn host_name(address: &IpAddr, resolver: &dyn Resolver) -> String {
    match resolver.name_of(address) {
        Some(name)
            if resolver
                .addresses(&name)
                .is_ok_and(|back| back.contains(address)) =>
        {
            name
        }
        _ => address.to_string(),
    }
}

fn unbracketed(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// A dotted IPv4 address, or anything with a colon (an IPv6 one; names have none).
pub fn is_ip_literal(host: &str) -> bool {
    let h = unbracketed(host);
    if h.contains(':') {
        return true;
    }
    let parts: Vec<&str> = h.split('.').collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|p| (1..=3).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The realm of a principal `name@REALM`.
pub fn realm_of(principal: &str) -> Option<&str> {
    principal.rsplit_once('@').map(|(_, realm)| realm)
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A resolver of fixed answers.
    pub struct Fixed {
        pub forward: HashMap<&'static str, Vec<IpAddr>>,
        pub reverse: HashMap<IpAddr, &'static str>,
    }

    impl Resolver for Fixed {
        fn addresses(&self, host: &str) -> Result<Vec<IpAddr>, String> {
            self.forward
                .get(host)
                .cloned()
                .ok_or_else(|| "Name or service not known".to_string())
        }

        fn name_of(&self, address: &IpAddr) -> Option<String> {
            self.reverse.get(address).map(|name| name.to_string())
        }
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// zk1 is 10.0.0.1 (whose name is zk1.example.com, which resolves back), zk2's address
    /// has no name, 10.0.0.3's name does not resolve back, and zk4 has an IPv6 address first.
    pub fn resolver() -> Fixed {
        Fixed {
            forward: HashMap::from([
                ("zk1", vec![ip("10.0.0.1")]),
                ("zk1.example.com", vec![ip("10.0.0.1")]),
                ("zk2", vec![ip("10.0.0.2")]),
                ("zk4", vec![ip("fd00::4"), ip("10.0.0.4")]),
                ("zk4.example.com", vec![ip("10.0.0.4")]),
            ]),
            reverse: HashMap::from([
                (ip("10.0.0.1"), "zk1.example.com"),
                (ip("10.0.0.3"), "liar.example.com"),
                (ip("10.0.0.4"), "zk4.example.com"),
            ]),
        }
    }

    fn zookeeper(canonicalize: bool) -> ServerName {
        ServerName::ZooKeeper {
            principal: None,
            username: "zookeeper".into(),
            canonicalize,
            realm: None,
        }
    }

    #[test]
    fn zookeeper_principals_follow_saslserverprincipal() {
        let r = resolver();
        let shown = |rule: &ServerName, host: &str, realm: Option<&str>| {
            rule.of(host, realm, &r).map(|p| p.shown)
        };
        let canonical = zookeeper(true);
        for (host, expected) in [
            ("zk1", "zookeeper/zk1.example.com@EXAMPLE.COM"),
            // No name for the address: the host as given.
            ("zk2", "zookeeper/zk2@EXAMPLE.COM"),
            // IPv4 first, as Java.
            ("zk4", "zookeeper/zk4.example.com@EXAMPLE.COM"),
            ("10.0.0.1", "zookeeper/zk1.example.com@EXAMPLE.COM"),
            // A reverse name that does not resolve back is not taken.
            ("10.0.0.3", "zookeeper/10.0.0.3@EXAMPLE.COM"),
            ("10.0.0.2", "zookeeper/10.0.0.2@EXAMPLE.COM"),
        ] {
            assert_eq!(
                shown(&canonical, host, Some("EXAMPLE.COM")).as_deref(),
                Ok(expected),
                "{host}"
            );
        }
        let as_given = zookeeper(false);
        assert_eq!(
            shown(&as_given, "zk1", None).as_deref(),
            Ok("zookeeper/zk1"),
            "no realm known: none shown"
        );
        // Not canonicalizing, an IP literal is still reverse-resolved.
        assert_eq!(
            shown(&as_given, "10.0.0.1", Some("R")).as_deref(),
            Ok("zookeeper/zk1.example.com@R")
        );
        let err = shown(&canonical, "nowhere", None).unwrap_err();
        assert!(err.contains("cannot resolve nowhere"), "{err}");
        let p = canonical.of("zk1", Some("EXAMPLE.COM"), &r).unwrap();
        assert_eq!(
            (p.service.as_str(), p.host.as_str()),
            ("zookeeper", "zk1.example.com")
        );
    }

    #[test]
    fn the_zookeeper_settings_name_the_principal_or_its_parts() {
        let r = resolver();
        let rule =
            |principal: Option<&str>, username: &str, realm: Option<&str>| ServerName::ZooKeeper {
                principal: principal.map(String::from),
                username: username.into(),
                canonicalize: false,
                realm: realm.map(String::from),
            };
        let p = rule(Some("zk/quorum.example.com"), "zookeeper", None)
            .of("zk1", Some("CLIENT.REALM"), &r)
            .unwrap();
        assert_eq!(
            (p.service.as_str(), p.host.as_str(), p.shown.as_str()),
            (
                "zk",
                "quorum.example.com",
                "zk/quorum.example.com@CLIENT.REALM"
            )
        );
        let p = rule(Some("zk/q@SERVER.REALM"), "zookeeper", Some("OTHER"))
            .of("zk1", Some("CLIENT.REALM"), &r)
            .unwrap();
        assert_eq!(p.shown, "zk/q@SERVER.REALM");
        let p = rule(None, "zkserver", Some("SERVER.REALM"))
            .of("zk2", Some("CLIENT.REALM"), &r)
            .unwrap();
        assert_eq!(p.shown, "zkserver/zk2@SERVER.REALM");
        let err = rule(Some("zookeeper@R"), "zookeeper", None)
            .of("zk1", None, &r)
            .unwrap_err();
        assert!(
            err.contains("'zookeeper@R' is not of the form service/host[@REALM]"),
            "{err}"
        );
    }

    #[test]
    fn kafka_principals_are_the_service_and_the_host_an_ip_reverse_resolved() {
        let r = resolver();
        let rule = ServerName::Kafka {
            service_name: "kafka".into(),
        };
        for (host, service_host, shown) in [
            (
                "broker1.example.com",
                "broker1.example.com",
                "kafka/broker1.example.com",
            ),
            ("zk2", "zk2", "kafka/zk2"),
            ("10.0.0.1", "zk1.example.com", "kafka/zk1.example.com"),
            ("10.0.0.2", "10.0.0.2", "kafka/10.0.0.2"),
            ("fd00::9", "fd00::9", "kafka/fd00::9"),
        ] {
            let p = rule.of(host, Some("EXAMPLE.COM"), &r).unwrap();
            assert_eq!(
                (p.service.as_str(), p.host.as_str(), p.shown.as_str()),
                ("kafka", service_host, shown)
            );
        }
    }

    #[test]
    fn ip_literals_and_realms() {
        for literal in ["127.0.0.1", "[::1]", "fe80::1", "1.2.3.4"] {
            assert!(is_ip_literal(literal), "{literal}");
        }
        for name in ["localhost", "1.2.3", "host.1.2.3", "1234.1.1.1", "a.b.c.d"] {
            assert!(!is_ip_literal(name), "{name}");
        }
        assert_eq!(realm_of("spark/h@EXAMPLE.COM"), Some("EXAMPLE.COM"));
        assert_eq!(realm_of("spark"), None);
    }
}
