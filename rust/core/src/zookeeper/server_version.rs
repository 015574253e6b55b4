//! Which ZooKeeper version the servers run, so that no server is sent a request it cannot parse:
//! `Create2` in a multi needs 3.5.0, the multi-read 3.6.0. Servers before them fail the multi, or
//! close the connection (and with it, maybe, the session holding the ownership nodes).
//!
//! Learned from the `srvr` four-letter word of every server of the connect string, the lowest
//! answer winning (a rolling upgrade mixes versions), or set by `zookeeper.server.version`.

use std::fmt;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::error::{Error, Result};
use crate::tls::{client_config, Pem};

/// The property that sets the version instead of asking the servers.
pub const PROPERTY: &str = "zookeeper.server.version";

/// The default client port.
const DEFAULT_PORT: u16 = 2181;

/// A `srvr` answer is a few hundred bytes; more is not a ZooKeeper server.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// A ZooKeeper server version, `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl ServerVersion {
    pub const fn new(major: u32, minor: u32, patch: u32) -> ServerVersion {
        ServerVersion {
            major,
            minor,
            patch,
        }
    }

    /// What every server version parses: plain `Create` in multis, single reads.
    pub const CONSERVATIVE: ServerVersion = ServerVersion::new(3, 4, 0);
    /// The first with TLS: a server answering TLS is at least this.
    pub const FIRST_WITH_TLS: ServerVersion = ServerVersion::new(3, 5, 1);
    /// The first that answers a multi-read (opcode 22).
    pub const FIRST_WITH_MULTI_READ: ServerVersion = ServerVersion::new(3, 6, 0);

    /// Whether the server answers a multi-read.
    pub fn has_multi_read(self) -> bool {
        self >= ServerVersion::FIRST_WITH_MULTI_READ
    }

    /// `3.4.14`, `3.5` (patch 0), or the start of a longer text: `3.4.14-4c25d4...`.
    fn parse_prefix(text: &str) -> Option<ServerVersion> {
        let mut numbers = text[..version_text_len(text)].split('.');
        let mut next = |required: bool| match numbers.next() {
            Some(number) => number.parse::<u32>().ok(),
            None if !required => Some(0),
            None => None,
        };
        let version = ServerVersion::new(next(true)?, next(true)?, next(false)?);
        numbers.next().is_none().then_some(version)
    }

    /// The value of `zookeeper.server.version`: `major.minor[.patch]`, 3.4 or later.
    pub fn from_property(value: &str) -> Result<ServerVersion> {
        let value = value.trim();
        ServerVersion::parse_prefix(value)
            .filter(|version| {
                value.len() == version_text_len(value) && *version >= ServerVersion::CONSERVATIVE
            })
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{PROPERTY} '{value}' is not a ZooKeeper version; allowed: major.minor[.patch] of 3.4.0 or later, e.g. 3.4.14 or 3.5"
                ))
            })
    }
}

/// The length of the leading `digits.digits...` part.
fn version_text_len(text: &str) -> usize {
    text.find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len())
}

impl fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The version from a `srvr` answer (`Zookeeper version: 3.4.14-4c25d4..., built on ...`);
/// `None` for anything else, such as "srvr is not executed because it is not in the whitelist."
pub fn parse_srvr(answer: &str) -> Option<ServerVersion> {
    answer.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("Zookeeper version:")?;
        ServerVersion::parse_prefix(rest.trim())
    })
}

/// The servers of a connect string, `host:port[,host:port...][/chroot]` with `[ipv6]:port`,
/// the port 2181 when left out, and the `tcp://` or `tcp+tls://` prefixes zookeeper-client
/// takes.
pub fn connect_hosts(connect: &str) -> Result<Vec<(String, u16)>> {
    let bad = |entry: &str| {
        Error::invalid(format!(
            "ZooKeeper connect string entry '{entry}' is not host[:port] or [ipv6][:port]"
        ))
    };
    let mut hosts = Vec::new();
    for entry in connect.split(',') {
        let entry = entry.trim();
        let address = entry
            .strip_prefix("tcp://")
            .or_else(|| entry.strip_prefix("tcp+tls://"))
            .unwrap_or(entry);
        // The chroot follows the last server; no host or port holds a '/'.
        let address = address.split('/').next().unwrap_or_default();
        let (host, port) = match address.strip_prefix('[') {
            Some(bracketed) => {
                let (host, rest) = bracketed.split_once(']').ok_or_else(|| bad(entry))?;
                match rest {
                    "" => (host, None),
                    _ => (
                        host,
                        Some(rest.strip_prefix(':').ok_or_else(|| bad(entry))?),
                    ),
                }
            }
            None => match address.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (address, None),
            },
        };
        let port = match port {
            None | Some("") => DEFAULT_PORT,
            Some(port) => port
                .parse::<u16>()
                .ok()
                .filter(|port| *port != 0)
                .ok_or_else(|| bad(entry))?,
        };
        if host.is_empty() {
            return Err(bad(entry));
        }
        hosts.push((host.to_string(), port));
    }
    Ok(hosts)
}

/// TLS for `srvr`, with the CA certificates and client identity of the session's TLS (the
/// platform's CA certificates without a truststore). ZooKeeper's Netty server answers
/// four-letter words after the handshake.
pub fn tls_connector(
    ca: Option<&Pem>,
    identity: Option<&Pem>,
) -> Result<tokio_rustls::TlsConnector> {
    let config = client_config(ca, identity)?;
    Ok(tokio_rustls::TlsConnector::from(config))
}

/// Asks one server `srvr`, over TLS when given; its answer, read to the end.
async fn srvr(
    host: &str,
    port: u16,
    tls: Option<&tokio_rustls::TlsConnector>,
) -> std::io::Result<String> {
    let tcp = tokio::net::TcpStream::connect((host, port)).await?;
    let answer = match tls {
        None => ask(tcp).await?,
        Some(tls) => {
            let name = rustls::pki_types::ServerName::try_from(host.to_string())
                .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidInput, err))?;
            ask(tls.connect(name, tcp).await?).await?
        }
    };
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

async fn ask<S: AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut stream: S,
) -> std::io::Result<Vec<u8>> {
    stream.write_all(b"srvr").await?;
    stream.flush().await?;
    let mut answer = Vec::new();
    match stream.take(MAX_ANSWER_BYTES).read_to_end(&mut answer).await {
        // The server closes TLS without close_notify after answering.
        Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof && !answer.is_empty() => {}
        other => {
            other?;
        }
    }
    Ok(answer)
}

/// What the servers of a connect string said to `srvr`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    /// The lowest version answered; `None` when no server told its version.
    pub lowest: Option<ServerVersion>,
    /// Per server that did not tell its version: `host:port` and why, for the warning.
    pub silent: Vec<(String, String)>,
}

/// Asks every server of the connect string for its version, all at once, each within
/// `timeout`; over TLS when `tls` is given (see [`tls_connector`]).
pub async fn detect(
    connect: &str,
    timeout: Duration,
    tls: Option<&tokio_rustls::TlsConnector>,
) -> Result<Detected> {
    let hosts = connect_hosts(connect)?;
    let answers = futures::future::join_all(hosts.iter().map(|(host, port)| async move {
        let answer = match tokio::time::timeout(timeout, srvr(host, *port, tls)).await {
            Ok(Ok(answer)) => match parse_srvr(&answer) {
                Some(version) => Ok(version),
                None => Err(format!("answered {:?}", first_line(&answer))),
            },
            Ok(Err(err)) => Err(err.to_string()),
            Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
        };
        (format_host(host, *port), answer)
    }))
    .await;
    let mut detected = Detected {
        lowest: None,
        silent: Vec::new(),
    };
    for (host, answer) in answers {
        match answer {
            Ok(version) => {
                log::debug!("ZooKeeper at {host} runs {version}");
                detected.lowest = Some(detected.lowest.map_or(version, |low| low.min(version)));
            }
            Err(why) => detected.silent.push((host, why)),
        }
    }
    Ok(detected)
}

fn first_line(answer: &str) -> &str {
    let line = answer.lines().next().unwrap_or_default().trim();
    line.get(..200).unwrap_or(line)
}

fn format_host(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRVR_3_4_14: &str = "Zookeeper version: 3.4.14-4c25d480e66aadd371de8bd2fd8da255ac140bcf, built on 03/06/2019 16:18 GMT\nLatency min/avg/max: 0/0/0\nReceived: 1\nSent: 0\nConnections: 1\nOutstanding: 0\nZxid: 0x0\nMode: standalone\nNode count: 4\n";
    const SRVR_3_5_10: &str = "Zookeeper version: 3.5.10-2c3d9c3ae5c0ca39b0b7ddc64ef2a8ea3f2bcd7c, built on 05/23/2022 08:43 GMT\nLatency min/avg/max: 0/0.0/0\nReceived: 1\nSent: 0\nConnections: 1\nOutstanding: 0\nZxid: 0x0\nMode: standalone\nNode count: 5\n";
    const SRVR_3_9_3: &str = "Zookeeper version: 3.9.3-c26634f34490bb0ea7a09cc51e05ede3b4e320ee, built on 2024-10-17 23:21 UTC\nLatency min/avg/max: 0/0.0/0\nReceived: 1\nSent: 0\nConnections: 1\nOutstanding: 0\nZxid: 0x0\nMode: standalone\nNode count: 5\n";

    #[test]
    fn srvr_answers_are_parsed() {
        assert_eq!(parse_srvr(SRVR_3_4_14), Some(ServerVersion::new(3, 4, 14)));
        assert_eq!(parse_srvr(SRVR_3_5_10), Some(ServerVersion::new(3, 5, 10)));
        assert_eq!(parse_srvr(SRVR_3_9_3), Some(ServerVersion::new(3, 9, 3)));
        assert!(!ServerVersion::new(3, 5, 10).has_multi_read());
        assert!(ServerVersion::new(3, 9, 3).has_multi_read());
    }

    #[test]
    fn refusals_and_garbage_are_no_version() {
        for answer in [
            "srvr is not executed because it is not in the whitelist.\n",
            "",
            "Zookeeper version: \n",
            "Zookeeper version: banana, built on never\n",
            "HTTP/1.1 400 Bad Request\r\n\r\n",
            "\u{0}\u{1}\u{ff}garbage",
        ] {
            assert_eq!(parse_srvr(answer), None, "{answer:?}");
        }
    }

    #[test]
    fn the_property_takes_two_or_three_numbers() {
        assert_eq!(
            ServerVersion::from_property(" 3.4.14 ").unwrap(),
            ServerVersion::new(3, 4, 14)
        );
        assert_eq!(
            ServerVersion::from_property("3.5").unwrap(),
            ServerVersion::new(3, 5, 0)
        );
        for bad in [
            "",
            "3",
            "3.4.14-abc",
            "3.4.14.1",
            "x.y",
            "3.3.6",
            "3..4",
            "latest",
        ] {
            let err = ServerVersion::from_property(bad).unwrap_err().to_string();
            assert!(
                err.contains(PROPERTY) && err.contains("allowed: major.minor[.patch]"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn connect_strings_give_their_hosts() {
        let hosts = |connect: &str| connect_hosts(connect).unwrap();
        assert_eq!(hosts("zk1:2182"), [("zk1".to_string(), 2182)]);
        assert_eq!(
            hosts("zk1, zk2:2183 ,10.0.0.3:2184/kafka/chroot"),
            [
                ("zk1".to_string(), 2181),
                ("zk2".to_string(), 2183),
                ("10.0.0.3".to_string(), 2184)
            ]
        );
        assert_eq!(
            hosts("[::1]:2185,[fe80::1],[::2]/chroot"),
            [
                ("::1".to_string(), 2185),
                ("fe80::1".to_string(), 2181),
                ("::2".to_string(), 2181)
            ]
        );
        assert_eq!(
            hosts("tcp://a:1,tcp+tls://b:2/c"),
            [("a".to_string(), 1), ("b".to_string(), 2)]
        );
        for bad in [
            "zk1:abc", "zk1:0", ":2181", "[::1", "[::1]x", "a,,b", "zk:70000",
        ] {
            assert!(connect_hosts(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hosts_print_as_given() {
        assert_eq!(format_host("::1", 2181), "[::1]:2181");
        assert_eq!(format_host("zk1", 2181), "zk1:2181");
    }
}
