//! Kerberos (SASL GSSAPI) for the CLI: the engine's [`SaslProvider`] over the system's GSS-API
//! ([`gssapi`], MIT krb5 loaded at run time), decided from the same keys as the Java clients
//! (and the jar's `Kerberos.java`):
//!
//! - Kafka: `security.protocol` `SASL_PLAINTEXT`/`SASL_SSL` with `sasl.mechanism` `GSSAPI` or
//!   unset; the login is `sasl.jaas.config`, else the `KafkaClient` section of the JAAS file,
//!   else the default ticket cache; the service name is `sasl.kerberos.service.name` or the
//!   JAAS option `serviceName`.
//! - ZooKeeper: `zookeeper.sasl.mechanism=GSSAPI` (the default ticket cache, unless the JAAS
//!   file has the section), or the JAAS file's section `zookeeper.sasl.clientconfig` (default
//!   `Client`) holding `Krb5LoginModule`, unless `zookeeper.sasl.client=false`; the server
//!   principal from `zookeeper.server.principal`, `zookeeper.sasl.client.username`,
//!   `zookeeper.sasl.client.canonicalize.hostname`, `zookeeper.server.realm`.
//!
//! The JAAS file is `java.security.auth.login.config` in `--command-config`. A
//! `Krb5LoginModule` entry logs in from its ticket cache (`useTicketCache=true`, `ticketCache`,
//! default KRB5CCNAME) and then its keytab (`useKeyTab=true`, `keyTab`, `principal`); a keytab
//! login keeps its tickets in a MEMORY: cache of its own, so the user's cache is not touched.
//! krb5.conf is libkrb5's (KRB5_CONFIG).

pub mod gssapi;
pub mod jaas;
pub mod principal;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use offsetkeeper::sasl::{
    LoginFacts, SaslExchange, SaslFailure, SaslProvider, SaslProviderHandle, SaslService,
};

use gssapi::{Context, Credentials, Gssapi, LoadError, Name};
use jaas::Entry;
use principal::{realm_of, ServerName, SystemResolver};

/// The key naming the JAAS file, as the Java clients' system property.
pub const LOGIN_CONFIG: &str = "java.security.auth.login.config";
const GSSAPI: &str = "GSSAPI";
const KAFKA_SECTION: &str = "KafkaClient";
const ZOOKEEPER_SECTION: &str = "Client";

/// Where a login finds its credentials, in the order tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A ticket cache (`ticketCache`, else KRB5CCNAME's or the system's default), of
    /// `principal` when given.
    TicketCache {
        path: Option<String>,
        principal: Option<String>,
    },
    /// A keytab; the tickets go to the MEMORY: cache `cache`, this login's own.
    Keytab {
        path: String,
        principal: String,
        cache: String,
    },
}

impl Source {
    /// How messages name it.
    fn describe(&self) -> String {
        match self {
            Source::TicketCache { path: None, .. } => {
                "the default ticket cache (KRB5CCNAME, as kinit leaves it)".to_string()
            }
            Source::TicketCache {
                path: Some(path), ..
            } => format!("ticket cache {path}"),
            Source::Keytab { path, .. } => format!("keytab {path}"),
        }
    }

    fn principal(&self) -> Option<&str> {
        match self {
            Source::TicketCache { principal, .. } => principal.as_deref(),
            Source::Keytab { principal, .. } => Some(principal),
        }
    }
}

/// A service's Kerberos login: its credential sources and where they were configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    pub sources: Vec<Source>,
    /// `sasl.jaas.config` or `JAAS section 'Client' of FILE`; `None`: the default.
    pub origin: Option<String>,
}

/// One service's login and its server principal rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub login: Login,
    pub server: ServerName,
}

/// Which services use Kerberos, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub zookeeper: Option<Target>,
    pub kafka: Option<Target>,
}

/// Distinct MEMORY: cache names for the keytab logins of this process.
static CACHES: AtomicUsize = AtomicUsize::new(0);

fn memory_cache() -> String {
    format!(
        "MEMORY:offsetkeeper-{}-{}",
        std::process::id(),
        CACHES.fetch_add(1, Ordering::Relaxed)
    )
}

/// The last value of `key` (keys trimmed), as a properties file's later line wins.
fn get<'a>(properties: &'a [(String, String)], key: &str) -> Option<&'a str> {
    properties
        .iter()
        .rev()
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.as_str())
}

/// Decides Kerberos for both services from the properties, which get
/// `zookeeper.sasl.mechanism=GSSAPI` when ZooKeeper uses it, and lose the JAAS file's key (the
/// engine does not read it). `None` when neither service uses Kerberos; nothing is loaded or
/// asked here. An error says which setting is wrong or missing.
pub fn configure(properties: &mut Vec<(String, String)>) -> Result<Option<Plan>, String> {
    let file = match get(properties, LOGIN_CONFIG) {
        Some(path) => Some(JaasFile::read(path.trim())?),
        None => None,
    };
    properties.retain(|(k, _)| k.trim() != LOGIN_CONFIG);
    let kafka = kafka_target(properties, file.as_ref())?;
    let zookeeper = zookeeper_target(properties, file.as_ref())?;
    if zookeeper.is_some() {
        properties.retain(|(k, _)| k.trim() != "zookeeper.sasl.mechanism");
        properties.push(("zookeeper.sasl.mechanism".into(), GSSAPI.into()));
    }
    Ok((kafka.is_some() || zookeeper.is_some()).then_some(Plan { zookeeper, kafka }))
}

/// The JAAS file of `java.security.auth.login.config`, parsed.
struct JaasFile {
    path: String,
    sections: HashMap<String, Vec<Entry>>,
}

impl JaasFile {
    fn read(path: &str) -> Result<JaasFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|err| format!("{LOGIN_CONFIG} {path}: cannot read it: {err}"))?;
        let sections = jaas::parse_file(&format!("{LOGIN_CONFIG} {path}"), &text)
            .map_err(|err| err.to_string())?;
        Ok(JaasFile {
            path: path.to_string(),
            sections,
        })
    }

    /// A section's entries, `None` when it has none.
    fn section(&self, name: &str) -> Option<&[Entry]> {
        self.sections
            .get(name)
            .map(Vec::as_slice)
            .filter(|entries| !entries.is_empty())
    }

    fn origin(&self, section: &str) -> String {
        format!("JAAS section '{section}' of {}", self.path)
    }
}

/// The default login: the default ticket cache's principal.
fn default_login() -> Login {
    Login {
        sources: vec![Source::TicketCache {
            path: None,
            principal: None,
        }],
        origin: None,
    }
}

/// The login of a `Krb5LoginModule` entry: its ticket cache, then its keytab, as
/// Krb5LoginModule tries them; it never prompts for a password.
fn entry_login(entry: &Entry, origin: String) -> Result<Login, String> {
    let principal = entry
        .option("principal")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(String::from);
    let mut sources = Vec::new();
    if entry.flag("useTicketCache") {
        sources.push(Source::TicketCache {
            path: entry
                .option("ticketCache")
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(String::from),
            principal: principal.clone(),
        });
    }
    if entry.flag("useKeyTab") {
        let path = entry
            .option("keyTab")
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| format!("{origin}: useKeyTab=true needs keyTab=\"<path>\""))?;
        let principal = principal.clone().ok_or_else(|| {
            format!("{origin}: useKeyTab=true needs principal=\"<name>@<REALM>\"")
        })?;
        sources.push(Source::Keytab {
            path: path.to_string(),
            principal,
            cache: memory_cache(),
        });
    }
    if sources.is_empty() {
        return Err(format!(
            "{origin}: Krb5LoginModule needs useKeyTab=true (with keyTab and principal) or useTicketCache=true; offsetkeeper never prompts for a password"
        ));
    }
    Ok(Login {
        sources,
        origin: Some(origin),
    })
}

fn kafka_target(
    properties: &[(String, String)],
    file: Option<&JaasFile>,
) -> Result<Option<Target>, String> {
    // Only the two SASL protocols: a misspelt one ("SASL_PLAIN") is the engine's to refuse,
    // naming the allowed values, not a Kerberos login to set up.
    let sasl = get(properties, "security.protocol").is_some_and(|p| {
        matches!(
            p.trim().to_ascii_uppercase().as_str(),
            "SASL_PLAINTEXT" | "SASL_SSL"
        )
    });
    if !sasl {
        return Ok(None);
    }
    // Both keys count, the last one given wins (as the engine reads them); GSSAPI is Kafka's
    // default.
    let mechanism = properties
        .iter()
        .rev()
        .find(|(k, _)| matches!(k.trim(), "sasl.mechanism" | "sasl.mechanisms"))
        .map(|(_, v)| v.trim());
    if mechanism.is_some_and(|m| !m.eq_ignore_ascii_case(GSSAPI)) {
        return Ok(None);
    }
    let (login, jaas_service) = if let Some(text) = get(properties, "sasl.jaas.config") {
        let entry = jaas::parse_inline(text).map_err(|err| err.to_string())?;
        if !entry.is_kerberos() {
            return Err(
                "sasl.jaas.config: SASL GSSAPI (Kerberos) needs com.sun.security.auth.module.Krb5LoginModule there".to_string(),
            );
        }
        (
            entry_login(&entry, "sasl.jaas.config".to_string())?,
            entry.option("serviceName").map(String::from),
        )
    } else if let Some((file, entries)) =
        file.and_then(|f| f.section(KAFKA_SECTION).map(|entries| (f, entries)))
    {
        let origin = file.origin(KAFKA_SECTION);
        let entry = entries
            .iter()
            .find(|e| e.is_kerberos())
            .ok_or_else(|| format!("{origin} has no Krb5LoginModule, which SASL GSSAPI needs"))?;
        (
            entry_login(entry, origin)?,
            entry.option("serviceName").map(String::from),
        )
    } else {
        (default_login(), None)
    };
    let service_name = service_name(jaas_service, get(properties, "sasl.kerberos.service.name"))?;
    Ok(Some(Target {
        login,
        server: ServerName::Kafka { service_name },
    }))
}

/// Kafka's `KerberosLogin.getServiceName`: the JAAS option or the config's, not two different.
fn service_name(from_jaas: Option<String>, configured: Option<&str>) -> Result<String, String> {
    if let (Some(jaas), Some(configured)) = (&from_jaas, configured) {
        if jaas != configured {
            return Err(format!(
                "Conflicting serviceName values found in JAAS and Kafka configs value in JAAS file {jaas}, value in Kafka config {configured}"
            ));
        }
    }
    from_jaas
        .as_deref()
        .or(configured)
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(String::from)
        .ok_or_else(|| {
            "No serviceName defined in either JAAS or Kafka config: set sasl.kerberos.service.name (the brokers' principal's first part, often kafka)".to_string()
        })
}

fn zookeeper_target(
    properties: &[(String, String)],
    file: Option<&JaasFile>,
) -> Result<Option<Target>, String> {
    let mechanism = get(properties, "zookeeper.sasl.mechanism").map(str::trim);
    let explicit = mechanism.is_some_and(|m| m.eq_ignore_ascii_case(GSSAPI));
    if mechanism.is_some() && !explicit {
        return Ok(None);
    }
    let digest = get(properties, "zookeeper.sasl.username").is_some()
        || get(properties, "zookeeper.sasl.password").is_some();
    if !explicit && digest {
        return Ok(None); // DIGEST-MD5, read by the engine
    }
    // ZKClientConfig: Boolean.valueOf, so anything but "true" turns SASL off.
    let client = get(properties, "zookeeper.sasl.client").unwrap_or("true");
    if !client.trim().eq_ignore_ascii_case("true") {
        if explicit {
            return Err(
                "zookeeper.sasl.mechanism is GSSAPI but zookeeper.sasl.client is false".to_string(),
            );
        }
        return Ok(None);
    }
    let named = get(properties, "zookeeper.sasl.clientconfig").map(str::trim);
    let section = named.unwrap_or(ZOOKEEPER_SECTION);
    let login = match file.and_then(|f| f.section(section).map(|entries| (f, entries))) {
        Some((file, entries)) => match entries.iter().find(|e| e.is_kerberos()) {
            Some(entry) => {
                if !explicit && named.is_none() {
                    log::info!(
                        "ZooKeeper: Kerberos (SASL GSSAPI) is on, as in ZooKeeper's client, because JAAS section '{section}' of {} has Krb5LoginModule; zookeeper.sasl.client=false turns it off",
                        file.path
                    );
                }
                entry_login(entry, file.origin(section))?
            }
            None if explicit => {
                return Err(format!(
                    "zookeeper.sasl.mechanism is GSSAPI but {} has no Krb5LoginModule",
                    file.origin(section)
                ))
            }
            None => return Ok(None),
        },
        None => {
            if let Some(named) = named {
                return Err(match file {
                    Some(file) => format!(
                        "zookeeper.sasl.clientconfig names JAAS section '{named}', which {LOGIN_CONFIG} {} does not have",
                        file.path
                    ),
                    None => format!(
                        "zookeeper.sasl.clientconfig names JAAS section '{named}' but no JAAS file is given: set {LOGIN_CONFIG} in --command-config"
                    ),
                });
            }
            if !explicit {
                return Ok(None); // as ZooKeeper's client: no JAAS section, no SASL
            }
            default_login()
        }
    };
    let principal = get(properties, "zookeeper.server.principal").map(str::trim);
    if let Some(principal) = principal {
        if principal.find('/').is_none_or(|at| at == 0) {
            return Err(format!(
                "zookeeper.server.principal '{principal}' has no host part; GSSAPI needs service/host[@REALM]"
            ));
        }
    }
    let canonicalize = get(properties, "zookeeper.sasl.client.canonicalize.hostname")
        .unwrap_or("true")
        .trim()
        .eq_ignore_ascii_case("true");
    Ok(Some(Target {
        login,
        server: ServerName::ZooKeeper {
            principal: principal.map(String::from),
            username: get(properties, "zookeeper.sasl.client.username")
                .unwrap_or("zookeeper")
                .trim()
                .to_string(),
            canonicalize,
            realm: get(properties, "zookeeper.server.realm").map(|r| r.trim().to_string()),
        },
    }))
}

/// The engine's provider for a plan, over the system's GSS-API.
pub struct Provider {
    plan: Plan,
    gss: &'static Gssapi,
    /// The client principal each service's last login had, for messages when the
    /// configuration names none (the default ticket cache): an ACL refusal names it.
    used: Mutex<Used>,
}

#[derive(Default)]
struct Used {
    zookeeper: Option<String>,
    kafka: Option<String>,
}

impl Used {
    fn of(&mut self, service: SaslService) -> &mut Option<String> {
        match service {
            SaslService::ZooKeeper => &mut self.zookeeper,
            SaslService::Kafka => &mut self.kafka,
        }
    }
}

impl Provider {
    /// Loads the GSS-API library (once per process) and makes the provider.
    pub fn handle(plan: &Plan) -> Result<SaslProviderHandle, LoadError> {
        Ok(SaslProviderHandle::new(Provider {
            plan: plan.clone(),
            gss: gssapi::system()?,
            used: Mutex::default(),
        }))
    }

    fn used(&self) -> std::sync::MutexGuard<'_, Used> {
        // Only messages are at stake: a panic elsewhere leaves the principals usable.
        self.used.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SaslProvider for Provider {
    fn start(
        &self,
        service: SaslService,
        host: &str,
    ) -> Result<Box<dyn SaslExchange>, SaslFailure> {
        let (name, target) = match service {
            SaslService::ZooKeeper => ("ZooKeeper", &self.plan.zookeeper),
            SaslService::Kafka => ("Kafka", &self.plan.kafka),
        };
        let target = target
            .as_ref()
            .ok_or_else(|| SaslFailure(format!("Kerberos is not configured for {name} here")))?;
        let exchange = Exchange::start(self.gss, name, target, host)?;
        *self.used().of(service) = Some(exchange.authzid.clone());
        Ok(Box::new(exchange))
    }

    fn login_facts(&self, service: SaslService) -> Option<LoginFacts> {
        let target = match service {
            SaslService::ZooKeeper => self.plan.zookeeper.as_ref(),
            SaslService::Kafka => self.plan.kafka.as_ref(),
        }?;
        let used = self.used().of(service).clone();
        Some(login_facts(&target.login, used.as_deref()))
    }
}

/// Who logs in, as messages name it: the principal the login's configuration names, else the
/// one its last login had (`used`: the default ticket cache's), else none.
fn login_facts(login: &Login, used: Option<&str>) -> LoginFacts {
    let principal = login.sources.iter().find_map(Source::principal).or(used);
    let mut words = String::from("Kerberos login");
    if let Some(principal) = principal {
        words.push_str(&format!(" of {principal}"));
    }
    let sources: Vec<String> = login.sources.iter().map(Source::describe).collect();
    let origin = login.origin.as_deref().unwrap_or("the default login");
    words.push_str(&format!(" ({origin}, {})", sources.join(", then ")));
    LoginFacts {
        login: words,
        principal: principal.map(str::to_string),
        realm: principal.and_then(realm_of).map(str::to_string),
        // libkrb5 reads KRB5_CONFIG (a list: its first file), else its default.
        krb5_conf: Some(std::path::PathBuf::from(
            std::env::var("KRB5_CONFIG")
                .ok()
                .and_then(|list| list.split(':').next().map(str::to_string))
                .filter(|first| !first.is_empty())
                .unwrap_or_else(|| "/etc/krb5.conf".to_string()),
        )),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// gss_init_sec_context rounds.
    Context,
    /// RFC 4752's security layer: the server's wrapped offer is next.
    SecurityLayer,
    Complete,
}

/// One SASL GSSAPI exchange (RFC 4752), as Java's GSSAPI SaslClient runs it: the context
/// with mutual authentication, then "no security layer" chosen from the server's offer.
struct Exchange {
    context: Context<'static>,
    credentials: Credentials<'static>,
    target: Name<'static>,
    /// Who authenticates to whom, for messages.
    what: String,
    /// The authorization id sent with the layer choice: the client principal, as Java does.
    authzid: String,
    initial: Option<Vec<u8>>,
    stage: Stage,
}

impl Exchange {
    /// Credentials, the server's principal and the first token (the AP-REQ): this may ask
    /// the KDC.
    fn start(
        gss: &'static Gssapi,
        name: &str,
        target: &Target,
        host: &str,
    ) -> Result<Exchange, SaslFailure> {
        let configured = target.login.sources.iter().find_map(Source::principal);
        // Who fails to authenticate to whom before the login gives the client principal: the
        // configured one, the server's principal in its realm.
        let before = || {
            let of = configured.map(|p| format!(" of {p}")).unwrap_or_default();
            let server = target
                .server
                .of(host, configured.and_then(realm_of), &SystemResolver)
                .map_or_else(|_| format!("at {host}"), |p| format!("as {}", p.shown));
            format!("Kerberos authentication{of} to {name} {server}")
        };
        let (credentials, client) = acquire(gss, &target.login)
            .map_err(|why| SaslFailure(format!("{} failed: {why}", before())))?;
        let server = target
            .server
            .of(host, realm_of(&client), &SystemResolver)
            .map_err(|why| {
                SaslFailure(format!(
                    "Kerberos authentication of {client} to {name} at {host} failed: {why}"
                ))
            })?;
        let what = format!(
            "Kerberos authentication of {client} to {name} as {}",
            server.shown
        );
        let failed = |status: gssapi::Status| SaslFailure(format!("{what} failed: {status}"));
        let target_name = gss
            .service_name(&server.service, &server.host)
            .map_err(failed)?;
        let mut context = Context::new(gss);
        let initial = context
            .step(&credentials, &target_name, &[])
            .map_err(failed)?;
        let stage = if context.is_established() {
            Stage::SecurityLayer
        } else {
            Stage::Context
        };
        Ok(Exchange {
            context,
            credentials,
            target: target_name,
            what,
            authzid: client,
            initial: Some(initial),
            stage,
        })
    }

    fn failure(&self, why: impl std::fmt::Display) -> SaslFailure {
        SaslFailure(format!("{} failed: {why}", self.what))
    }
}

/// The credentials of the first source that has them, with their principal; the reasons of
/// all when none has. MIT acquires a ticket cache's credentials without looking at its TGT's
/// end: asking their principal is what finds an expired one, so that counts as the source's
/// failure too, and the next source (a keytab) is tried, as Krb5LoginModule does.
fn acquire(gss: &'static Gssapi, login: &Login) -> Result<(Credentials<'static>, String), String> {
    let mut reasons = Vec::new();
    for source in &login.sources {
        let acquired = acquire_from(gss, source).and_then(|credentials| {
            let principal = credentials
                .principal()
                .map_err(|status| status.to_string())?;
            Ok((credentials, principal))
        });
        match acquired {
            Ok(acquired) => return Ok(acquired),
            Err(why) => reasons.push(unusable(login.origin.as_deref(), source, &why)),
        }
    }
    Err(reasons.join("; "))
}

/// Why a source gave no credentials, in the words of docs/errors.md: `[origin: ]no usable
/// credentials in <source>: <MIT's reason>`, and for a ticket cache where it is and what it
/// holds (its principal, its TGT's end), in the words the jar uses:
/// `(the ticket cache /tmp/cc (KRB5CCNAME) holds a TGT of app@R that expired at ...)`.
fn unusable(origin: Option<&str>, source: &Source, reason: &str) -> String {
    let mut why = format!("no usable credentials in {}: {reason}", source.describe());
    if let Source::TicketCache { path, .. } = source {
        let cache = offsetkeeper::kerberos::ticket_cache_words(path.as_deref());
        why.push_str(&format!(" ({cache})"));
    }
    match origin {
        Some(origin) => format!("{origin}: {why}"),
        None => why,
    }
}

/// A source's credentials, or MIT's reason (the ticket cache's words are added by [`unusable`]).
fn acquire_from(gss: &'static Gssapi, source: &Source) -> Result<Credentials<'static>, String> {
    let name = source
        .principal()
        .map(|p| gss.user_name(p))
        .transpose()
        .map_err(|status| format!("the principal: {status}"))?;
    match source {
        Source::TicketCache { path: None, .. } => gss
            .credentials(name.as_ref(), &[])
            .map_err(|err| err.to_string()),
        Source::TicketCache {
            path: Some(path), ..
        } => gss
            .credentials(name.as_ref(), &[("ccache", &file_name(path))])
            .map_err(|err| err.to_string()),
        Source::Keytab {
            path,
            cache,
            principal,
        } => {
            // MIT says only "No credentials cache found" (of the empty MEMORY: cache) when the
            // keytab is missing or lacks the key: the file is checked first, the rest said.
            std::fs::File::open(file_path(path)).map_err(|err| format!("cannot read it: {err}"))?;
            gss.credentials(
                name.as_ref(),
                &[("client_keytab", &file_name(path)), ("ccache", cache)],
            )
            .map_err(|err| format!("it has no usable key of {principal} ({err})"))
        }
    }
}

/// A path as krb5 names a file: Java takes paths (`FILE:` allowed), krb5 `TYPE:residual`.
fn file_name(path: &str) -> String {
    format!("FILE:{}", file_path(path))
}

/// A Java path without its optional `FILE:`.
fn file_path(path: &str) -> &str {
    match path.get(..5) {
        Some(prefix) if prefix.eq_ignore_ascii_case("FILE:") => &path[5..],
        _ => path,
    }
}

impl SaslExchange for Exchange {
    fn initial(&mut self) -> Result<Vec<u8>, SaslFailure> {
        self.initial
            .take()
            .ok_or_else(|| self.failure("the initial token was already taken"))
    }

    fn evaluate(&mut self, challenge: &[u8]) -> Result<Vec<u8>, SaslFailure> {
        match self.stage {
            Stage::Context => {
                let token = self
                    .context
                    .step(&self.credentials, &self.target, challenge)
                    .map_err(|status| self.failure(status))?;
                if self.context.is_established() {
                    self.stage = Stage::SecurityLayer;
                }
                Ok(token)
            }
            Stage::SecurityLayer => {
                let offer = self
                    .context
                    .unwrap(challenge)
                    .map_err(|status| self.failure(status))?;
                let reply =
                    security_layer_reply(&offer, &self.authzid).map_err(|why| self.failure(why))?;
                let wrapped = self
                    .context
                    .wrap(&reply)
                    .map_err(|status| self.failure(status))?;
                self.stage = Stage::Complete;
                Ok(wrapped)
            }
            Stage::Complete => Err(self.failure("the exchange is already complete")),
        }
    }

    fn is_complete(&self) -> bool {
        self.stage == Stage::Complete
    }
}

/// RFC 4752 3.1: the server offers layers (a bit mask) and a maximum message size; the client
/// takes "no security layer" (bit 1), the only one offsetkeeper needs on an authenticated
/// connection, and sends its choice, a size of 0 and the authorization id.
fn security_layer_reply(offer: &[u8], authzid: &str) -> Result<Vec<u8>, String> {
    const NO_SECURITY_LAYER: u8 = 1;
    let [layers, _, _, _] = offer else {
        return Err(format!(
            "the server's security layer offer has {} bytes, not 4",
            offer.len()
        ));
    };
    if layers & NO_SECURITY_LAYER == 0 {
        // Java's words for it.
        return Err("No common protection layer between client and server".to_string());
    }
    let mut reply = vec![NO_SECURITY_LAYER, 0, 0, 0];
    reply.extend_from_slice(authzid.as_bytes());
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn plan(pairs: &[(&str, &str)]) -> Result<Option<Plan>, String> {
        configure(&mut props(pairs))
    }

    fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("ok-krb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }

    #[test]
    fn kafka_uses_kerberos_as_its_java_client_does() {
        // SASL with GSSAPI, or no mechanism (Kafka's default), with the default ticket cache.
        for mechanism in [None, Some("gssapi")] {
            let mut pairs = vec![
                ("security.protocol", "sasl_plaintext"),
                ("sasl.kerberos.service.name", "kafka"),
            ];
            if let Some(m) = mechanism {
                pairs.push(("sasl.mechanism", m));
            }
            let plan = plan(&pairs).unwrap().expect("Kerberos");
            assert_eq!(plan.zookeeper, None);
            let kafka = plan.kafka.expect("Kafka");
            assert_eq!(
                kafka.server,
                ServerName::Kafka {
                    service_name: "kafka".into()
                }
            );
            assert_eq!(
                kafka.login.sources,
                [Source::TicketCache {
                    path: None,
                    principal: None
                }]
            );
        }
        // Not SASL, or another mechanism (the last key given wins): no Kerberos. A misspelt
        // protocol neither: the engine refuses it by name.
        for pairs in [
            vec![("security.protocol", "SSL")],
            vec![("security.protocol", "SASL_PLAIN")],
            vec![],
            vec![
                ("security.protocol", "SASL_SSL"),
                ("sasl.mechanism", "GSSAPI"),
                ("sasl.mechanisms", "SCRAM-SHA-512"),
            ],
        ] {
            assert_eq!(plan(&pairs), Ok(None), "{pairs:?}");
        }
    }

    #[test]
    fn a_keytab_in_sasl_jaas_config_logs_in_to_a_memory_cache_of_its_own() {
        let jaas = r#"com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="/k/spark.keytab" principal="spark@EXAMPLE.COM" serviceName="kafka";"#;
        let kafka = plan(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.jaas.config", jaas),
        ])
        .unwrap()
        .and_then(|p| p.kafka)
        .expect("Kafka");
        assert_eq!(kafka.login.origin.as_deref(), Some("sasl.jaas.config"));
        let [Source::Keytab {
            path,
            principal,
            cache,
        }] = &kafka.login.sources[..]
        else {
            panic!("{:?}", kafka.login.sources)
        };
        assert_eq!(
            (path.as_str(), principal.as_str()),
            ("/k/spark.keytab", "spark@EXAMPLE.COM")
        );
        assert!(cache.starts_with("MEMORY:offsetkeeper-"), "{cache}");
        // Another login has another cache.
        let other = plan(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.jaas.config", jaas),
        ])
        .unwrap()
        .and_then(|p| p.kafka)
        .expect("Kafka");
        assert_ne!(other.login, kafka.login);
        // Cache then keytab, as Krb5LoginModule tries them.
        let both = plan(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.kerberos.service.name", "kafka"),
            (
                "sasl.jaas.config",
                r#"com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true ticketCache="/tmp/cc" useKeyTab=true keyTab="k" principal="p@R";"#,
            ),
        ])
        .unwrap()
        .and_then(|p| p.kafka)
        .expect("Kafka");
        assert!(matches!(
            &both.login.sources[..],
            [Source::TicketCache { path: Some(p), principal: Some(_) }, Source::Keytab { .. }] if p == "/tmp/cc"
        ));
    }

    #[test]
    fn incomplete_or_conflicting_kafka_settings_are_refused_by_name() {
        let krb5 = "com.sun.security.auth.module.Krb5LoginModule required";
        for (pairs, needle) in [
            (
                vec![("security.protocol", "SASL_PLAINTEXT")],
                "No serviceName defined in either JAAS or Kafka config",
            ),
            (
                vec![
                    ("security.protocol", "SASL_PLAINTEXT"),
                    ("sasl.kerberos.service.name", "kafka"),
                    (
                        "sasl.jaas.config",
                        &format!("{krb5} serviceName=other useTicketCache=true;"),
                    ),
                ],
                "Conflicting serviceName values found in JAAS and Kafka configs",
            ),
            (
                vec![
                    ("security.protocol", "SASL_PLAINTEXT"),
                    ("sasl.kerberos.service.name", "kafka"),
                    (
                        "sasl.jaas.config",
                        &format!("{krb5} useKeyTab=true principal=\"p@R\";"),
                    ),
                ],
                "sasl.jaas.config: useKeyTab=true needs keyTab=",
            ),
            (
                vec![
                    ("security.protocol", "SASL_PLAINTEXT"),
                    ("sasl.kerberos.service.name", "kafka"),
                    (
                        "sasl.jaas.config",
                        &format!("{krb5} useKeyTab=true keyTab=\"k\";"),
                    ),
                ],
                "sasl.jaas.config: useKeyTab=true needs principal=",
            ),
            (
                vec![
                    ("security.protocol", "SASL_PLAINTEXT"),
                    ("sasl.kerberos.service.name", "kafka"),
                    ("sasl.jaas.config", &format!("{krb5};")),
                ],
                "offsetkeeper never prompts for a password",
            ),
            (
                vec![
                    ("security.protocol", "SASL_PLAINTEXT"),
                    ("sasl.kerberos.service.name", "kafka"),
                    (
                        "sasl.jaas.config",
                        r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="Secret-1";"#,
                    ),
                ],
                "needs com.sun.security.auth.module.Krb5LoginModule",
            ),
            (
                vec![
                    ("security.protocol", "SASL_PLAINTEXT"),
                    (
                        "sasl.jaas.config",
                        "x.Krb5LoginModule required password=Secret-1 y;",
                    ),
                ],
                "sasl.jaas.config: entry 1: option 2: name=value is expected",
            ),
        ] {
            let err = plan(&pairs).unwrap_err();
            assert!(err.contains(needle), "{needle}: {err}");
            assert!(!err.contains("Secret"), "{err}");
        }
    }

    #[test]
    fn zookeeper_uses_kerberos_as_its_java_client_does() {
        let file = temp_file(
            "client-jaas.conf",
            r#"Client {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true keyTab="/k/zk-client.keytab" principal="spark@EXAMPLE.COM";
};
Other {
  com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true;
};
Digest {
  org.apache.zookeeper.server.auth.DigestLoginModule required username="u" password="p";
};
KafkaClient {
  com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true principal="k@EXAMPLE.COM";
};
"#,
        );
        let path = file.to_str().expect("path");
        // The JAAS file's Client section turns Kerberos on; the key is consumed and the
        // engine's mechanism key set.
        let mut properties = props(&[(LOGIN_CONFIG, path), ("zookeeper.server.realm", "ZK.REALM")]);
        let plan = configure(&mut properties).unwrap().expect("Kerberos");
        assert_eq!(
            properties,
            props(&[
                ("zookeeper.server.realm", "ZK.REALM"),
                ("zookeeper.sasl.mechanism", "GSSAPI")
            ])
        );
        let zookeeper = plan.zookeeper.expect("ZooKeeper");
        assert_eq!(
            zookeeper.login.origin,
            Some(format!("JAAS section 'Client' of {path}"))
        );
        assert!(
            matches!(&zookeeper.login.sources[..], [Source::Keytab { principal, .. }] if principal == "spark@EXAMPLE.COM")
        );
        assert_eq!(
            zookeeper.server,
            ServerName::ZooKeeper {
                principal: None,
                username: "zookeeper".into(),
                canonicalize: true,
                realm: Some("ZK.REALM".into())
            }
        );
        assert_eq!(plan.kafka, None, "no SASL for Kafka");
        // The KafkaClient section serves Kafka.
        let kafka = configure(&mut props(&[
            (LOGIN_CONFIG, path),
            ("zookeeper.sasl.client", "false"),
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.kerberos.service.name", "kafka"),
        ]))
        .unwrap()
        .expect("Kerberos");
        assert_eq!(kafka.zookeeper, None);
        assert_eq!(
            kafka.kafka.expect("Kafka").login.sources,
            [Source::TicketCache {
                path: None,
                principal: Some("k@EXAMPLE.COM".into())
            }]
        );
        // A named section, the server settings.
        let named = configure(&mut props(&[
            (LOGIN_CONFIG, path),
            ("zookeeper.sasl.clientconfig", "Other"),
            ("zookeeper.sasl.client.username", "zk"),
            ("zookeeper.sasl.client.canonicalize.hostname", "false"),
            ("zookeeper.server.principal", "zk/quorum@R"),
        ]))
        .unwrap()
        .and_then(|p| p.zookeeper)
        .expect("ZooKeeper");
        assert_eq!(
            named.server,
            ServerName::ZooKeeper {
                principal: Some("zk/quorum@R".into()),
                username: "zk".into(),
                canonicalize: false,
                realm: None
            }
        );
        // zookeeper.sasl.mechanism=GSSAPI without a section: the default ticket cache.
        let explicit = plan_of(&[("zookeeper.sasl.mechanism", "GSSAPI")]);
        assert_eq!(explicit.login, default_login());
        // No Kerberos: a section without Krb5LoginModule, DIGEST-MD5, sasl.client=false, no
        // JAAS file, another mechanism.
        for pairs in [
            vec![
                (LOGIN_CONFIG, path),
                ("zookeeper.sasl.clientconfig", "Digest"),
            ],
            vec![
                (LOGIN_CONFIG, path),
                ("zookeeper.sasl.username", "u"),
                ("zookeeper.sasl.password", "p"),
            ],
            vec![(LOGIN_CONFIG, path), ("zookeeper.sasl.client", "no")],
            vec![("zookeeper.server.principal", "zk/h")],
            vec![("zookeeper.sasl.mechanism", "DIGEST-MD5")],
        ] {
            let mut properties = props(&pairs);
            assert_eq!(configure(&mut properties), Ok(None), "{pairs:?}");
            assert!(properties.iter().all(|(k, _)| k != LOGIN_CONFIG));
        }
        std::fs::remove_file(file).expect("clean up");
    }

    fn plan_of(pairs: &[(&str, &str)]) -> Target {
        plan(pairs)
            .unwrap()
            .and_then(|p| p.zookeeper)
            .expect("ZooKeeper")
    }

    #[test]
    fn bad_zookeeper_settings_are_refused_by_name() {
        let file = temp_file(
            "digest-jaas.conf",
            "Client {\n org.apache.zookeeper.server.auth.DigestLoginModule required username=\"u\" password=\"Secret-1\";\n};\n",
        );
        let path = file.to_str().expect("path");
        let broken = temp_file(
            "broken-jaas.conf",
            "Client {\n x.Krb5LoginModule required password=Secret-2 y;\n};\n",
        );
        let broken = broken.to_str().expect("path");
        for (pairs, needle) in [
            (
                vec![("zookeeper.sasl.mechanism", "GSSAPI"), ("zookeeper.sasl.client", "false")],
                "zookeeper.sasl.mechanism is GSSAPI but zookeeper.sasl.client is false",
            ),
            (
                vec![("zookeeper.sasl.clientconfig", "Client")],
                "names JAAS section 'Client' but no JAAS file is given: set java.security.auth.login.config",
            ),
            (
                vec![(LOGIN_CONFIG, path), ("zookeeper.sasl.clientconfig", "Missing")],
                "names JAAS section 'Missing', which java.security.auth.login.config",
            ),
            (
                vec![(LOGIN_CONFIG, path), ("zookeeper.sasl.mechanism", "GSSAPI")],
                "has no Krb5LoginModule",
            ),
            (
                vec![("zookeeper.sasl.mechanism", "GSSAPI"), ("zookeeper.server.principal", "zookeeper")],
                "zookeeper.server.principal 'zookeeper' has no host part",
            ),
            (
                vec![(LOGIN_CONFIG, "/nonexistent/jaas.conf")],
                "java.security.auth.login.config /nonexistent/jaas.conf: cannot read it",
            ),
            (
                vec![(LOGIN_CONFIG, broken)],
                "line 2: option 2: name=value is expected",
            ),
        ] {
            let err = plan(&pairs).unwrap_err();
            assert!(err.contains(needle), "{needle}: {err}");
            assert!(!err.contains("Secret"), "{err}");
        }
        for done in [path, broken] {
            std::fs::remove_file(done).expect("clean up");
        }
    }

    #[test]
    fn the_security_layer_reply_takes_no_layer_and_names_the_client() {
        assert_eq!(
            security_layer_reply(&[0x07, 0x01, 0x00, 0x00], "spark@EXAMPLE.COM").unwrap(),
            [&[1u8, 0, 0, 0][..], b"spark@EXAMPLE.COM"].concat()
        );
        assert_eq!(
            security_layer_reply(&[0x06, 0, 0, 0], "x").unwrap_err(),
            "No common protection layer between client and server"
        );
        assert!(security_layer_reply(&[1, 0, 0], "x")
            .unwrap_err()
            .contains("has 3 bytes, not 4"));
    }

    /// A ticket cache file in MIT's format (version 4) whose default principal is `principal`
    /// with one TGT ending at `end` (seconds since the epoch), as kinit leaves one.
    fn ticket_cache(principal: &str, end: u32) -> Vec<u8> {
        fn data(out: &mut Vec<u8>, bytes: &[u8]) {
            out.extend((bytes.len() as u32).to_be_bytes());
            out.extend(bytes);
        }
        fn name(out: &mut Vec<u8>, principal: &str) {
            let (parts, realm) = principal.rsplit_once('@').expect("name@REALM");
            let parts: Vec<&str> = parts.split('/').collect();
            out.extend(1u32.to_be_bytes());
            out.extend((parts.len() as u32).to_be_bytes());
            data(out, realm.as_bytes());
            for part in parts {
                data(out, part.as_bytes());
            }
        }
        let realm = principal.rsplit_once('@').expect("name@REALM").1;
        let mut out = vec![0x05, 0x04, 0, 12, 0, 1, 0, 8];
        out.extend([0u8; 8]);
        name(&mut out, principal);
        name(&mut out, principal);
        name(&mut out, &format!("krbtgt/{realm}@{realm}"));
        out.extend(18u16.to_be_bytes());
        data(&mut out, &[7; 32]);
        for time in [1, 1, end, 0] {
            out.extend(time.to_be_bytes());
        }
        out.push(0);
        out.extend([0u8; 12]); // flags, no addresses, no authdata
        data(&mut out, b"ticket");
        data(&mut out, b"");
        out
    }

    #[test]
    fn an_expired_ticket_cache_is_named_with_its_principal_and_end() {
        let cache = temp_file("expired-cc", "");
        std::fs::write(&cache, ticket_cache("app@EXAMPLE.COM", 1_000)).expect("write");
        let path = cache.display().to_string();
        let source = Source::TicketCache {
            path: Some(path.clone()),
            principal: None,
        };
        // MIT's words when gss_inquire_cred finds the TGT expired.
        assert_eq!(
            unusable(
                Some("sasl.jaas.config"),
                &source,
                "The referenced credential has expired"
            ),
            format!(
                "sasl.jaas.config: no usable credentials in ticket cache {path}: The referenced credential has expired \
                 (the ticket cache {path} holds a TGT of app@EXAMPLE.COM that expired at 1970-01-01T00:16:40Z: kinit (or k5start) renews it)"
            )
        );
        std::fs::remove_file(&cache).expect("clean up");
        assert_eq!(
            unusable(None, &source, "No Kerberos credentials available"),
            format!(
                "no usable credentials in ticket cache {path}: No Kerberos credentials available \
                 (the ticket cache {path} does not exist)"
            )
        );
        // A keytab's reason is its own: no ticket cache is named.
        let keytab = Source::Keytab {
            path: "/k/app.keytab".into(),
            principal: "app@R".into(),
            cache: "MEMORY:x".into(),
        };
        assert_eq!(
            unusable(None, &keytab, "cannot read it: No such file or directory (os error 2)"),
            "no usable credentials in keytab /k/app.keytab: cannot read it: No such file or directory (os error 2)"
        );
    }

    #[test]
    fn the_default_ticket_cache_is_named_as_krb5ccname_gives_it() {
        // KRB5CCNAME is the process's: only its words' form is checked here, not its value.
        let words = unusable(
            None,
            &Source::TicketCache {
                path: None,
                principal: None,
            },
            "The referenced credential has expired",
        );
        assert!(
            words.starts_with(
                "no usable credentials in the default ticket cache (KRB5CCNAME, as kinit leaves it): \
                 The referenced credential has expired (the ticket cache "
            ),
            "{words}"
        );
        assert!(words.ends_with(')'), "{words}");
    }

    #[test]
    fn the_login_is_named_by_the_principal_it_used_when_none_is_configured() {
        // The CLI's default login names no principal: an ACL refusal names the one used.
        let facts = login_facts(&default_login(), Some("app@EXAMPLE.COM"));
        assert_eq!(facts.principal.as_deref(), Some("app@EXAMPLE.COM"));
        assert_eq!(facts.realm.as_deref(), Some("EXAMPLE.COM"));
        assert_eq!(
            facts.login,
            "Kerberos login of app@EXAMPLE.COM (the default login, the default ticket cache (KRB5CCNAME, as kinit leaves it))"
        );
        // Before any login: none to name.
        let facts = login_facts(&default_login(), None);
        assert_eq!(facts.principal, None);
        assert!(facts
            .login
            .starts_with("Kerberos login (the default login, "));
        // A configured principal wins over the cache's.
        let login = Login {
            sources: vec![Source::TicketCache {
                path: Some("/tmp/cc".into()),
                principal: Some("spark@R".into()),
            }],
            origin: Some("sasl.jaas.config".into()),
        };
        let facts = login_facts(&login, Some("other@R"));
        assert_eq!(facts.principal.as_deref(), Some("spark@R"));
        assert_eq!(
            facts.login,
            "Kerberos login of spark@R (sasl.jaas.config, ticket cache /tmp/cc)"
        );
    }

    #[test]
    fn java_paths_become_krb5_file_names() {
        assert_eq!(file_name("/tmp/krb5cc_1000"), "FILE:/tmp/krb5cc_1000");
        assert_eq!(file_name("FILE:/tmp/x"), "FILE:/tmp/x");
        assert_eq!(file_name("file:/tmp/x"), "FILE:/tmp/x");
        assert_eq!(file_path("FILE:/tmp/x"), "/tmp/x");
        assert_eq!(file_name("spark.keytab"), "FILE:spark.keytab");
    }
}
