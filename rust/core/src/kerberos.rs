//! What a user reads when a Kerberos login goes wrong, in the jar and the CLI alike: the words
//! are made here, from the facts each host's login knows ([`LoginFacts`]: who logs in, from
//! which krb5.conf) and what krb5.conf says (the realm's KDCs).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Who logs in, and with which krb5.conf, as the host's Kerberos login knows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoginFacts {
    /// The login as messages name it, e.g. `Kerberos login of app@EXAMPLE.COM (JAAS section
    /// 'Client', keyTab /etc/app.keytab)`; never a secret.
    pub login: String,
    /// The client principal, when the login's configuration names it.
    pub principal: Option<String>,
    /// The client principal's realm, when known (else krb5.conf's `default_realm`).
    pub realm: Option<String>,
    /// The krb5.conf the login reads.
    pub krb5_conf: Option<PathBuf>,
}

/// A login that was still waiting when the call's deadline came: names the login, the KDC
/// krb5.conf gives for its realm, and the deadline. `server` is what the login was for
/// (`ZooKeeper at zk:2181`, `broker b1:9092`).
pub fn login_unfinished(facts: Option<&LoginFacts>, server: &str, after: Duration) -> String {
    let login = facts.map_or("The Kerberos login", |f| f.login.as_str());
    let kdc = facts.map_or_else(
        || "the KDC named in krb5.conf".to_string(),
        |facts| {
            let conf = facts.krb5_conf.as_deref();
            let text = conf.and_then(|path| std::fs::read_to_string(path).ok());
            kdc_words(text.as_deref(), facts.realm.as_deref(), conf)
        },
    );
    format!(
        "{login} for {server} did not finish within {} ms: no answer from {kdc}. The servers \
         were not the ones waited for: check that the KDC is up and reachable from this host \
         (a krb5.conf without kdc_timeout lets the JVM wait 30 s for each try of each KDC)",
        after.as_millis()
    )
}

/// `the KDC at kdc1:88, kdc2:88 (realm R, krb5.conf P)`, from the text of krb5.conf.
fn kdc_words(conf_text: Option<&str>, realm: Option<&str>, conf: Option<&Path>) -> String {
    let named = conf.map_or_else(String::new, |p| format!(", krb5.conf {}", p.display()));
    let Some(text) = conf_text else {
        return format!("the KDC named in krb5.conf{named} (which could not be read)");
    };
    let realm = realm.map(str::to_string).or_else(|| default_realm(text));
    let Some(realm) = realm else {
        return format!("the KDC of the default realm{named} (krb5.conf names no default_realm)");
    };
    let kdcs = realm_kdcs(text, &realm);
    if kdcs.is_empty() {
        return format!(
            "the KDCs of realm {realm} (krb5.conf names none: found through DNS{named})"
        );
    }
    let plural = if kdcs.len() > 1 { "s" } else { "" };
    format!(
        "the KDC{plural} at {} (realm {realm}{named})",
        kdcs.join(", ")
    )
}

/// `[libdefaults] default_realm`.
fn default_realm(text: &str) -> Option<String> {
    sections(text)
        .filter(|(section, _)| *section == "libdefaults")
        .find_map(|(_, line)| value_of(line, "default_realm"))
}

/// The `kdc` entries of `[realms] REALM = { ... }`, each with port 88 when it names none.
fn realm_kdcs(text: &str, realm: &str) -> Vec<String> {
    let mut in_realm = false;
    let mut kdcs = Vec::new();
    for (section, line) in sections(text) {
        if section != "realms" {
            in_realm = false;
            continue;
        }
        if let Some((name, rest)) = line.split_once('=') {
            if rest.trim() == "{" {
                in_realm = name.trim() == realm;
                continue;
            }
        }
        if line == "}" {
            in_realm = false;
        } else if in_realm {
            if let Some(kdc) = value_of(line, "kdc") {
                // "tcp/host:port" and "udp/..." as MIT writes a transport.
                let kdc = kdc.rsplit('/').next().unwrap_or(&kdc).to_string();
                kdcs.push(if has_port(&kdc) {
                    kdc
                } else {
                    format!("{kdc}:88")
                });
            }
        }
    }
    kdcs
}

fn has_port(host: &str) -> bool {
    match host.rsplit_once(':') {
        Some((head, port)) => {
            !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && !head.ends_with(':')
        }
        None => false,
    }
}

/// `key = value` on one line, the value unquoted.
fn value_of(line: &str, key: &str) -> Option<String> {
    let (name, value) = line.split_once('=')?;
    (name.trim() == key).then(|| value.trim().trim_matches('"').to_string())
}

/// The meaningful lines of krb5.conf with the `[section]` each is in; comments left out.
fn sections(text: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut section = "";
    text.lines().filter_map(move |raw| {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            return None;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim();
            return None;
        }
        Some((section, line))
    })
}

/// Where a login's ticket cache is and what it holds, in words: `the ticket cache
/// /tmp/krb5cc_1000 (KRB5CCNAME) holds a TGT of app@EXAMPLE.COM that expired at
/// 2026-12-06T05:00:00Z`. `configured`: the cache the login names (JAAS `ticketCache`), else
/// KRB5CCNAME, else the default `/tmp/krb5cc_<uid>`, as both MIT's library and the JVM look.
pub fn ticket_cache_words(configured: Option<&str>) -> String {
    let (name, whence) = match configured {
        Some(name) => (name.to_string(), ""),
        None => match std::env::var("KRB5CCNAME") {
            Ok(name) if !name.is_empty() => (name, " (KRB5CCNAME)"),
            _ => (default_cache(), " (the default: KRB5CCNAME is not set)"),
        },
    };
    let path = match name.split_once(':') {
        Some(("FILE", path)) => path.to_string(),
        Some((kind, _)) if kind.len() > 1 && !kind.contains('/') => {
            return format!("the ticket cache {name}{whence}, a {kind} cache, which offsetkeeper cannot look into");
        }
        _ => name.clone(),
    };
    let state = match std::fs::read(&path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => "does not exist".to_string(),
        Err(err) => format!("cannot be read ({err})"),
        Ok(bytes) => match read_ticket_cache(&bytes) {
            None => "is empty or not a ticket cache".to_string(),
            Some(cache) => cache.state(now_secs()),
        },
    };
    format!("the ticket cache {path}{whence} {state}")
}

/// MIT's and the JVM's default cache: `/tmp/krb5cc_<uid>`.
fn default_cache() -> String {
    // The uid as /proc gives it for this process; no libc call for so little.
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().next().map(str::to_string))
        })
        .unwrap_or_else(|| "<uid>".to_string());
    format!("/tmp/krb5cc_{uid}")
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// What a ticket cache file holds: its default principal and its TGTs' end times.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TicketCache {
    principal: String,
    /// End times (seconds since the epoch) of the `krbtgt/...` tickets.
    tgt_ends: Vec<i64>,
}

impl TicketCache {
    fn state(&self, now: i64) -> String {
        let at = |secs: i64| {
            jiff::Timestamp::from_second(secs)
                .map_or_else(|_| format!("{secs} s"), |t| t.to_string())
        };
        match self.tgt_ends.iter().max() {
            None => format!("holds no TGT (of {}): kinit puts one there", self.principal),
            Some(end) if *end <= now => format!(
                "holds a TGT of {} that expired at {}: kinit (or k5start) renews it",
                self.principal,
                at(*end)
            ),
            Some(end) => format!("holds a TGT of {} valid until {}", self.principal, at(*end)),
        }
    }
}

/// Reads a FILE ticket cache (MIT's format, versions 3 and 4: big-endian); `None` when the
/// bytes are not one. Only what the words need: the default principal and the TGTs' end times.
fn read_ticket_cache(bytes: &[u8]) -> Option<TicketCache> {
    let mut r = Reader { bytes, at: 0 };
    let version = r.u16()?;
    if version != 0x0503 && version != 0x0504 {
        return None;
    }
    if version == 0x0504 {
        let header = r.u16()? as usize;
        r.skip(header)?;
    }
    let principal = r.principal()?;
    let mut tgt_ends = Vec::new();
    while r.at < bytes.len() {
        let _client = r.principal()?;
        let server = r.principal()?;
        let _enctype = r.u16()?;
        if version == 0x0503 {
            r.u16()?; // version 3 writes the key's type twice
        }
        r.data()?; // key
        let (_auth, _start, end, _renew) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
        r.skip(1 + 4)?; // is_skey, flags
        for _ in 0..r.u32()? {
            r.u16()?;
            r.data()?; // addresses
        }
        for _ in 0..r.u32()? {
            r.u16()?;
            r.data()?; // authdata
        }
        r.data()?; // ticket
        r.data()?; // second ticket
                   // Configuration entries (X-CACHECONF:) are not tickets.
        if server.starts_with("krbtgt/") {
            tgt_ends.push(i64::from(end));
        }
    }
    Some(TicketCache {
        principal,
        tgt_ends,
    })
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.at.checked_add(n)?;
        let taken = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(taken)
    }

    fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn data(&mut self) -> Option<&[u8]> {
        let len = self.u32()? as usize;
        self.take(len)
    }

    /// `name/components@REALM`.
    fn principal(&mut self) -> Option<String> {
        let _name_type = self.u32()?;
        let count = self.u32()?;
        let realm = String::from_utf8_lossy(self.data()?).into_owned();
        let mut parts = Vec::new();
        for _ in 0..count.min(64) {
            parts.push(String::from_utf8_lossy(self.data()?).into_owned());
        }
        Some(format!("{}@{realm}", parts.join("/")))
    }
}

/// What ZooKeeper says when it requires an authenticated session and the client sent no
/// credentials (`sessionRequireClientSASLAuth`, `enforce.auth.enabled`).
pub const ZOOKEEPER_REQUIRES_SASL: &str = "ZooKeeper requires an authenticated (SASL) session \
     and this one sent no credentials. For Kerberos, the JVM's JAAS configuration \
     (java.security.auth.login.config; for the CLI, a line with that key in --command-config) \
     needs a `Client` section with com.sun.security.auth.module.Krb5LoginModule (useKeyTab=true \
     keyTab=... principal=..., or useTicketCache=true), and zookeeper.sasl.client must not be \
     false; for DIGEST-MD5, set zookeeper.sasl.username and zookeeper.sasl.password";

#[cfg(test)]
mod tests {
    use super::*;

    /// A version 4 ticket cache of `app@R` with one ticket for each `(server, end time)`.
    fn cache(tickets: &[(&str, u32)]) -> Vec<u8> {
        cache_of_version(4, tickets)
    }

    /// A ticket cache of version 3 (as Kerby writes) or 4 (as MIT writes).
    fn cache_of_version(version: u8, tickets: &[(&str, u32)]) -> Vec<u8> {
        fn data(out: &mut Vec<u8>, bytes: &[u8]) {
            out.extend((bytes.len() as u32).to_be_bytes());
            out.extend(bytes);
        }
        fn principal(out: &mut Vec<u8>, name: &str) {
            let (parts, realm) = name.rsplit_once('@').unwrap();
            let parts: Vec<&str> = parts.split('/').collect();
            out.extend(1u32.to_be_bytes());
            out.extend((parts.len() as u32).to_be_bytes());
            data(out, realm.as_bytes());
            for part in parts {
                data(out, part.as_bytes());
            }
        }
        let mut out = vec![0x05, version];
        if version == 4 {
            out.extend([0, 12, 0, 1, 0, 8]);
            out.extend([0u8; 8]);
        }
        principal(&mut out, "app@R");
        for (server, end) in tickets {
            principal(&mut out, "app@R");
            principal(&mut out, server);
            out.extend(18u16.to_be_bytes());
            if version == 3 {
                out.extend(18u16.to_be_bytes());
            }
            data(&mut out, &[7; 32]);
            for time in [1, 1, *end, 0] {
                out.extend(u32::to_be_bytes(time));
            }
            out.push(0);
            out.extend(0u32.to_be_bytes());
            out.extend(0u32.to_be_bytes());
            out.extend(0u32.to_be_bytes());
            data(&mut out, b"ticket");
            data(&mut out, b"");
        }
        out
    }

    #[test]
    fn a_ticket_caches_principal_and_tgt_end_are_read() {
        let expired = read_ticket_cache(&cache(&[
            ("X-CACHECONF:/krb5_ccache_conf_data/pa_type/krbtgt/R@R", 0),
            ("krbtgt/R@R", 1_700_000_000),
            ("zookeeper/localhost@R", 1_800_000_000),
        ]))
        .unwrap();
        assert_eq!(expired.principal, "app@R");
        assert_eq!(expired.tgt_ends, vec![1_700_000_000]);
        assert_eq!(
            expired.state(1_750_000_000),
            "holds a TGT of app@R that expired at 2023-11-14T22:13:20Z: kinit (or k5start) renews it"
        );
        assert_eq!(
            expired.state(1_600_000_000),
            "holds a TGT of app@R valid until 2023-11-14T22:13:20Z"
        );
        let kerby =
            read_ticket_cache(&cache_of_version(3, &[("krbtgt/R@R", 1_700_000_000)])).unwrap();
        assert_eq!(kerby.tgt_ends, vec![1_700_000_000], "version 3");
        let none = read_ticket_cache(&cache(&[])).unwrap();
        assert_eq!(
            none.state(0),
            "holds no TGT (of app@R): kinit puts one there"
        );
        assert_eq!(read_ticket_cache(b""), None);
        assert_eq!(read_ticket_cache(b"\x05\x04\x00"), None);
        let mut cut = cache(&[("krbtgt/R@R", 5)]);
        cut.truncate(cut.len() - 3);
        assert_eq!(
            read_ticket_cache(&cut),
            None,
            "a truncated cache is no cache"
        );
    }

    #[test]
    fn ticket_cache_words_name_the_file_and_its_state() {
        let dir = std::env::temp_dir().join(format!("ccache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("cc");
        std::fs::write(&file, cache(&[("krbtgt/R@R", 1_000)])).unwrap();
        let name = format!("FILE:{}", file.display());
        assert_eq!(
            ticket_cache_words(Some(&name)),
            format!(
                "the ticket cache {} holds a TGT of app@R that expired at 1970-01-01T00:16:40Z: kinit (or k5start) renews it",
                file.display()
            )
        );
        std::fs::write(&file, b"").unwrap();
        assert!(ticket_cache_words(file.to_str()).ends_with(" is empty or not a ticket cache"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            ticket_cache_words(Some("/nonexistent/cc")).ends_with("/nonexistent/cc does not exist")
        );
        assert!(ticket_cache_words(Some("KEYRING:persistent:1000")).contains("a KEYRING cache"));
    }

    const CONF: &str = "\
[libdefaults]
  default_realm = EXAMPLE.COM
  # kdc_timeout = 3s
[realms]
  EXAMPLE.COM = {
    kdc = kdc1.example.com
    kdc = tcp/kdc2.example.com:750
    admin_server = kdc1.example.com
  }
  OTHER.ORG = {
    kdc = 127.0.0.1:6088
  }
  DNS.ONLY = {
    admin_server = a
  }
";

    #[test]
    fn the_realms_kdcs_come_from_krb5_conf() {
        let conf = Path::new("/etc/krb5.conf");
        assert_eq!(
            kdc_words(Some(CONF), None, Some(conf)),
            "the KDCs at kdc1.example.com:88, kdc2.example.com:750 (realm EXAMPLE.COM, krb5.conf /etc/krb5.conf)"
        );
        assert_eq!(
            kdc_words(Some(CONF), Some("OTHER.ORG"), Some(conf)),
            "the KDC at 127.0.0.1:6088 (realm OTHER.ORG, krb5.conf /etc/krb5.conf)"
        );
        assert!(kdc_words(Some(CONF), Some("DNS.ONLY"), None).contains("found through DNS"));
        assert!(kdc_words(None, Some("X"), Some(conf)).contains("could not be read"));
        assert!(kdc_words(Some("[realms]\n"), None, None).contains("no default_realm"));
    }

    #[test]
    fn an_unfinished_login_names_the_login_the_kdc_and_the_deadline() {
        let dir = std::env::temp_dir().join(format!("krb5-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("krb5.conf");
        std::fs::write(&path, CONF).unwrap();
        let facts = LoginFacts {
            login: "Kerberos login of app@OTHER.ORG (JAAS section 'Client', keyTab /k)".into(),
            principal: Some("app@OTHER.ORG".into()),
            realm: Some("OTHER.ORG".into()),
            krb5_conf: Some(path.clone()),
        };
        let text = login_unfinished(
            Some(&facts),
            "ZooKeeper at zk:2181",
            Duration::from_millis(9_999),
        );
        assert!(
            text.starts_with(&format!(
                "Kerberos login of app@OTHER.ORG (JAAS section 'Client', keyTab /k) for ZooKeeper at zk:2181 \
                 did not finish within 9999 ms: no answer from the KDC at 127.0.0.1:6088 (realm OTHER.ORG, krb5.conf {})",
                path.display()
            )),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let unknown = login_unfinished(None, "broker b:9092", Duration::from_secs(3));
        assert!(unknown.starts_with("The Kerberos login for broker b:9092 did not finish within 3000 ms: no answer from the KDC named in krb5.conf"), "{unknown}");
    }
}
