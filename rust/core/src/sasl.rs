//! SASL mechanisms the engine does not implement itself (GSSAPI), supplied by its host: the
//! jar hands over its JVM's Kerberos login ([`KeeperConfig::sasl_provider`]). The engine drives
//! the exchanges: for Kafka in `kafka::connection`, for ZooKeeper through the vendored client's
//! external mechanism ([`ZkGssapi`]).
//!
//! [`KeeperConfig::sasl_provider`]: crate::KeeperConfig::sasl_provider

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

pub use crate::kerberos::LoginFacts;

use tokio::runtime::{Handle, RuntimeFlavor};
use zookeeper_client as zk;

/// The one externally supplied mechanism.
pub(crate) const GSSAPI: &str = "GSSAPI";

/// What the message refusing GSSAPI without a provider adds.
pub(crate) const GSSAPI_IN_THE_JAR: &str =
    "GSSAPI (Kerberos) works in the jar, through the JVM's Kerberos login";

/// Which server an exchange authenticates to; the provider applies that client's principal rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslService {
    ZooKeeper,
    Kafka,
}

/// A SASL mechanism the engine does not implement itself (GSSAPI), supplied by its host (the jar's JVM).
pub trait SaslProvider: Send + Sync {
    /// Begins one exchange with the server at `host` (the host as the connect string or the broker address names it).
    /// May block (it may ask a KDC); the engine calls it inside tokio::task::block_in_place.
    fn start(&self, service: SaslService, host: &str)
        -> Result<Box<dyn SaslExchange>, SaslFailure>;

    /// Who logs in for `service` and with which krb5.conf: the facts of the message of a login
    /// that does not finish by the call's deadline. `None`: not known.
    fn login_facts(&self, _service: SaslService) -> Option<LoginFacts> {
        None
    }
}

/// Whether a provider call is under way: set before each call, cleared when it returns, and
/// left set when the caller gave up waiting (its deadline came first), so that the deadline's
/// error can say the Kerberos login was what it waited for.
#[derive(Clone, Default)]
pub(crate) struct LoginWatch(Arc<AtomicBool>);

impl LoginWatch {
    pub(crate) fn started(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub(crate) fn ended(&self) {
        self.0.store(false, Ordering::SeqCst);
    }

    /// A provider call began and has not returned.
    pub(crate) fn waiting(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

pub trait SaslExchange: Send {
    /// The client's first message (GSSAPI: the AP-REQ).
    fn initial(&mut self) -> Result<Vec<u8>, SaslFailure>;
    /// The client's answer to a server challenge.
    fn evaluate(&mut self, challenge: &[u8]) -> Result<Vec<u8>, SaslFailure>;
    /// Whether the client has sent its last message.
    fn is_complete(&self) -> bool;
}

/// Why an exchange failed, in words fit for a user (never a secret), e.g. the Kerberos reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SaslFailure(pub String);

/// A provider as configuration holds it: cloned freely, equal when it is the same provider.
#[derive(Clone)]
pub struct SaslProviderHandle(pub Arc<dyn SaslProvider>);

impl SaslProviderHandle {
    pub fn new(provider: impl SaslProvider + 'static) -> SaslProviderHandle {
        SaslProviderHandle(Arc::new(provider))
    }
}

impl fmt::Debug for SaslProviderHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SaslProviderHandle")
    }
}

impl PartialEq for SaslProviderHandle {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SaslProviderHandle {}

/// Runs a provider call, which may block, without stalling the other tasks of a multi-threaded
/// runtime's worker; on a current-thread runtime (where `block_in_place` panics) it runs as is.
pub(crate) fn blocking<T>(call: impl FnOnce() -> T) -> T {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(call)
        }
        _ => call(),
    }
}

/// Runs a provider call, which may block (a KDC that does not answer), on tokio's blocking
/// pool: the awaiting future stays cancellable, so the caller's deadline ends the call on time
/// while the provider finishes in the background.
pub(crate) async fn off_the_workers<T: Send + 'static>(
    call: impl FnOnce() -> Result<T, SaslFailure> + Send + 'static,
) -> Result<T, SaslFailure> {
    tokio::task::spawn_blocking(call)
        .await
        .unwrap_or_else(|err| Err(SaslFailure(format!("the SASL provider failed: {err}"))))
}

/// The vendored ZooKeeper client's external mechanism over a provider. The client reports
/// every failure of it as `AuthFailed` (which ends the connect at once); the reason is kept
/// here for the engine's message.
#[derive(Clone)]
pub(crate) struct ZkGssapi {
    provider: SaslProviderHandle,
    last_failure: Arc<Mutex<Option<SaslFailure>>>,
    watch: LoginWatch,
}

impl ZkGssapi {
    pub(crate) fn new(provider: SaslProviderHandle) -> ZkGssapi {
        ZkGssapi {
            provider,
            last_failure: Arc::default(),
            watch: LoginWatch::default(),
        }
    }

    pub(crate) fn options(&self) -> zk::SaslOptions {
        zk::SaslOptions::external(Arc::new(self.clone()))
    }

    /// Forgets the last failure: a new session is being opened.
    pub(crate) fn forget_failure(&self) {
        *self.slot() = None;
        self.watch.ended();
    }

    /// The message for a connect whose deadline came while the provider was still logging in,
    /// else `None`.
    pub(crate) fn unfinished_login(
        &self,
        server: &str,
        after: std::time::Duration,
    ) -> Option<String> {
        self.watch.waiting().then(|| {
            let facts = self.provider.0.login_facts(SaslService::ZooKeeper);
            crate::kerberos::login_unfinished(facts.as_ref(), server, after)
        })
    }

    /// The Kerberos principal the login names, when its configuration does.
    pub(crate) fn principal(&self) -> Option<String> {
        self.provider
            .0
            .login_facts(SaslService::ZooKeeper)
            .and_then(|facts| facts.principal)
    }

    /// A provider call, watched.
    fn watched<T>(&self, call: impl FnOnce() -> T) -> T {
        self.watch.started();
        let result = blocking(call);
        self.watch.ended();
        result
    }

    /// Why the provider failed last, if it did since [`forget_failure`](Self::forget_failure).
    pub(crate) fn last_failure(&self) -> Option<SaslFailure> {
        self.slot().clone()
    }

    fn failed(&self, failure: SaslFailure) -> zk::Error {
        *self.slot() = Some(failure);
        zk::Error::AuthFailed
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<SaslFailure>> {
        self.last_failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl zk::ExternalSaslMechanism for ZkGssapi {
    fn name(&self) -> &str {
        GSSAPI
    }

    fn start(&self, host: &str) -> Result<Box<dyn zk::ExternalSaslExchange>, zk::Error> {
        let exchange = self
            .watched(|| self.provider.0.start(SaslService::ZooKeeper, host))
            .map_err(|failure| self.failed(failure))?;
        Ok(Box::new(ZkExchange {
            exchange,
            mechanism: self.clone(),
        }))
    }
}

struct ZkExchange {
    exchange: Box<dyn SaslExchange>,
    mechanism: ZkGssapi,
}

impl zk::ExternalSaslExchange for ZkExchange {
    fn initial(&mut self) -> Result<Vec<u8>, zk::Error> {
        let mechanism = &self.mechanism;
        let exchange = &mut self.exchange;
        mechanism
            .watched(|| exchange.initial())
            .map_err(|failure| mechanism.failed(failure))
    }

    fn step(&mut self, challenge: &[u8]) -> Result<Option<Vec<u8>>, zk::Error> {
        // A server token after the client's last message needs no answer.
        if self.exchange.is_complete() {
            return Ok(None);
        }
        let mechanism = &self.mechanism;
        let exchange = &mut self.exchange;
        mechanism
            .watched(|| exchange.evaluate(challenge))
            .map(Some)
            .map_err(|failure| mechanism.failed(failure))
    }
}

/// A scripted provider for tests: its exchanges answer challenges from a fixed list.
#[cfg(test)]
pub(crate) mod fake {
    use super::*;

    /// A token the provider gives, or why it fails.
    pub(crate) type Step = Result<&'static [u8], &'static str>;

    /// An expected challenge and the provider's answer.
    type Round = (Vec<u8>, Result<Vec<u8>, SaslFailure>);

    /// One exchange's script: `(expected challenge, answer)` pairs after the initial token; a
    /// failure in place of the initial token or of an answer.
    #[derive(Clone)]
    pub(crate) struct Script {
        initial: Result<Vec<u8>, SaslFailure>,
        rounds: Vec<Round>,
    }

    impl Script {
        pub(crate) fn new(initial: Step, rounds: &[(&'static [u8], Step)]) -> Script {
            let owned = |step: Step| {
                step.map(<[u8]>::to_vec)
                    .map_err(|why| SaslFailure(why.to_string()))
            };
            Script {
                initial: owned(initial),
                rounds: rounds
                    .iter()
                    .map(|(challenge, answer)| (challenge.to_vec(), owned(*answer)))
                    .collect(),
            }
        }
    }

    /// Records the `(service, host)` of every `start`.
    pub(crate) struct FakeProvider {
        pub(crate) script: Script,
        pub(crate) started: Mutex<Vec<(SaslService, String)>>,
        /// How long `start` blocks first, as a login whose KDC does not answer.
        pub(crate) stall: std::time::Duration,
    }

    impl FakeProvider {
        pub(crate) fn handle(script: Script) -> (SaslProviderHandle, Arc<FakeProvider>) {
            FakeProvider::stalling(script, std::time::Duration::ZERO)
        }

        pub(crate) fn stalling(
            script: Script,
            stall: std::time::Duration,
        ) -> (SaslProviderHandle, Arc<FakeProvider>) {
            let provider = Arc::new(FakeProvider {
                script,
                started: Mutex::default(),
                stall,
            });
            (SaslProviderHandle(provider.clone()), provider)
        }

        pub(crate) fn started(&self) -> Vec<(SaslService, String)> {
            self.started
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        }
    }

    impl SaslProvider for FakeProvider {
        fn start(
            &self,
            service: SaslService,
            host: &str,
        ) -> Result<Box<dyn SaslExchange>, SaslFailure> {
            self.started
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((service, host.to_string()));
            std::thread::sleep(self.stall);
            Ok(Box::new(FakeExchange {
                script: self.script.clone(),
                round: 0,
            }))
        }
    }

    struct FakeExchange {
        script: Script,
        round: usize,
    }

    impl SaslExchange for FakeExchange {
        fn initial(&mut self) -> Result<Vec<u8>, SaslFailure> {
            self.script.initial.clone()
        }

        fn evaluate(&mut self, challenge: &[u8]) -> Result<Vec<u8>, SaslFailure> {
            let (expected, answer) = self
                .script
                .rounds
                .get(self.round)
                .ok_or_else(|| SaslFailure("no more rounds".into()))?;
            if challenge != expected.as_slice() {
                return Err(SaslFailure(format!(
                    "unexpected challenge {challenge:?} in round {}",
                    self.round
                )));
            }
            self.round += 1;
            answer.clone()
        }

        fn is_complete(&self) -> bool {
            self.script.initial.is_ok() && self.round == self.script.rounds.len()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::{FakeProvider, Script};
    use super::*;
    use zk::ExternalSaslMechanism as _;

    #[test]
    fn handles_are_equal_when_they_hold_the_same_provider() {
        let (a, _) = FakeProvider::handle(Script::new(Ok(b"ap-req"), &[]));
        let (b, _) = FakeProvider::handle(Script::new(Ok(b"ap-req"), &[]));
        assert_eq!(a, a.clone());
        assert_ne!(a, b);
        assert_eq!(format!("{a:?}"), "SaslProviderHandle");
    }

    #[test]
    fn the_zookeeper_exchange_answers_until_complete_then_nothing() {
        let (handle, provider) =
            FakeProvider::handle(Script::new(Ok(b"ap-req"), &[(b"offer", Ok(b"layer"))]));
        let mechanism = ZkGssapi::new(handle);
        let mut exchange = mechanism.start("zk1").unwrap();
        assert_eq!(exchange.initial().unwrap(), b"ap-req");
        assert_eq!(exchange.step(b"offer").unwrap(), Some(b"layer".to_vec()));
        assert_eq!(exchange.step(b"").unwrap(), None);
        assert_eq!(
            provider.started(),
            [(SaslService::ZooKeeper, "zk1".to_string())]
        );
        assert_eq!(mechanism.last_failure(), None);
    }

    /// On a multi-threaded runtime the provider runs inside `block_in_place`, anywhere else
    /// directly; a failure is `AuthFailed` (terminal for the client) with the reason kept.
    #[test]
    fn a_zookeeper_failure_is_auth_failed_with_the_reason_kept_on_any_runtime() {
        let failing = Script::new(
            Ok(b"ap-req"),
            &[(b"offer", Err("Clock skew too great (37)"))],
        );
        let run = |runtime: tokio::runtime::Runtime| {
            let (handle, _) = FakeProvider::handle(failing.clone());
            let mechanism = ZkGssapi::new(handle);
            let err = runtime.block_on(async {
                let mechanism = mechanism.clone();
                tokio::spawn(async move {
                    let mut exchange = mechanism.start("zk1")?;
                    exchange.initial()?;
                    exchange.step(b"offer")
                })
                .await
                .unwrap()
                .unwrap_err()
            });
            assert_eq!(err, zk::Error::AuthFailed);
            assert_eq!(
                mechanism.last_failure(),
                Some(SaslFailure("Clock skew too great (37)".into()))
            );
            mechanism.forget_failure();
            assert_eq!(mechanism.last_failure(), None);
        };
        run(tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap());
        run(tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap());
    }
}
