//! One TCP connection to one broker: a request is written and its answer read before the next
//! (the broker answers a connection's requests in order anyway).

use std::collections::HashMap;
use std::ops::RangeInclusive;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use bytes::Bytes;
use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::{Request, StrBytes};

use super::protocol::{
    self, API_SASL_AUTHENTICATE, API_SASL_HANDSHAKE, API_VERSIONS, API_VERSIONS_NEWEST,
    SASL_AUTHENTICATE_VERSIONS, SASL_HANDSHAKE_VERSIONS, UNSUPPORTED_VERSION,
};
use super::scram::{Hash, Scram};
use super::security::{KafkaSecurity, Mechanism, SaslLogin};
use crate::sasl::{off_the_workers, LoginWatch, SaslProviderHandle, SaslService, GSSAPI};

/// A plain or TLS stream.
trait Io: AsyncRead + AsyncWrite + Unpin + Send + Sync {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync> Io for T {}

/// Answers larger than this are refused rather than allocated: 100,000 partitions of
/// ListOffsets take about 3 MB.
const MAX_ANSWER_BYTES: usize = 256 * 1024 * 1024;

/// Why a call failed: the connection is then unusable.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Malformed(#[from] protocol::Malformed),
    #[error(
        "the broker {}; offsetkeeper speaks {api} v{ours_min}-v{ours_max}, so it needs Kafka {needs} or later",
        if *.min < 0 { format!("does not offer {api}") } else { format!("answers {api} v{min}-v{max}") }
    )]
    Unsupported {
        api: &'static str,
        min: i16,
        max: i16,
        ours_min: i16,
        ours_max: i16,
        /// The first Kafka release that speaks ours.
        needs: &'static str,
    },
    #[error("ApiVersions refused with {}", protocol::error_name(*.0))]
    Refused(i16),
    /// The broker refused the SASL login, or the login could not be completed.
    #[error("{0}")]
    Authentication(String),
}

pub struct Connection {
    stream: Box<dyn Io>,
    client_id: String,
    next_correlation_id: i32,
    versions: HashMap<i16, RangeInclusive<i16>>,
}

impl Connection {
    /// Connects (with TLS when configured), asks which API versions the broker speaks, and
    /// logs in with SASL when configured.
    pub async fn open(
        address: &str,
        client_id: &str,
        security: &KafkaSecurity,
    ) -> Result<Connection, CallError> {
        Connection::open_watched(address, client_id, security, &LoginWatch::default()).await
    }

    /// [`open`](Self::open), with `watch` set while the SASL provider (a Kerberos login) is
    /// being waited for, so that a caller whose deadline comes first can say so.
    pub(crate) async fn open_watched(
        address: &str,
        client_id: &str,
        security: &KafkaSecurity,
        watch: &LoginWatch,
    ) -> Result<Connection, CallError> {
        let tcp = TcpStream::connect(address).await?;
        tcp.set_nodelay(true)?;
        let stream: Box<dyn Io> = match &security.tls {
            None => Box::new(tcp),
            Some(config) => {
                let host = host_of(address);
                let name =
                    rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|_| {
                        CallError::Authentication(format!("'{host}' is not a TLS server name"))
                    })?;
                let connector = tokio_rustls::TlsConnector::from(config.clone());
                let tls = connector.connect(name, tcp).await.map_err(|err| {
                    CallError::Authentication(format!("TLS handshake with {address} failed: {err}"))
                })?;
                Box::new(tls)
            }
        };
        let mut connection = Connection {
            stream,
            client_id: client_id.to_string(),
            next_correlation_id: 0,
            versions: HashMap::new(),
        };
        connection.versions = connection.api_versions().await?;
        if let Some(login) = &security.sasl {
            connection.log_in(login).await?;
        } else if let Some(provider) = &security.gssapi {
            connection
                .log_in_gssapi(provider, host_of(address), watch)
                .await?;
        }
        Ok(connection)
    }

    /// SaslHandshake: whether the broker enables `mechanism` here.
    async fn handshake(&mut self, mechanism: &'static str) -> Result<(), CallError> {
        let version = self.version("SaslHandshake", API_SASL_HANDSHAKE, SASL_HANDSHAKE_VERSIONS)?;
        let mut request = SaslHandshakeRequest::default();
        request.mechanism = StrBytes::from_static_str(mechanism);
        let answer = self.call(version, &request).await?;
        if answer.error_code != 0 {
            let enabled: Vec<&str> = answer.mechanisms.iter().map(|m| m.as_str()).collect();
            return Err(CallError::Authentication(format!(
                "the broker does not enable SASL {mechanism} here; it enables {}",
                enabled.join(", ")
            )));
        }
        Ok(())
    }

    /// SaslHandshake, then the mechanism's SaslAuthenticate rounds.
    async fn log_in(&mut self, login: &SaslLogin) -> Result<(), CallError> {
        let mechanism = login.mechanism.name();
        self.handshake(mechanism).await?;
        let refused = |why: String| {
            CallError::Authentication(format!(
                "SASL {mechanism} login of user '{}' failed: {why}",
                login.username
            ))
        };
        match login.mechanism {
            Mechanism::Plain => {
                let message = format!("\0{}\0{}", login.username, login.password);
                self.authenticate(message.as_bytes())
                    .await
                    .map_err(refused)?;
            }
            Mechanism::ScramSha256 | Mechanism::ScramSha512 => {
                let hash = if login.mechanism == Mechanism::ScramSha256 {
                    Hash::Sha256
                } else {
                    Hash::Sha512
                };
                let mut scram =
                    Scram::new(hash, &login.username, &login.password).map_err(refused)?;
                let server_first = self
                    .authenticate(&scram.client_first())
                    .await
                    .map_err(refused)?;
                let proof = scram.client_final(&server_first).map_err(refused)?;
                let server_final = self.authenticate(&proof).await.map_err(refused)?;
                scram.verify_server(&server_final).map_err(refused)?;
            }
        }
        Ok(())
    }

    /// SaslHandshake, then SaslAuthenticate rounds of the provider's exchange with `host`
    /// until the client is complete. The broker answers the client's last message too
    /// (GSSAPI: empty, after the security layer's choice), and that answer is read as well.
    async fn log_in_gssapi(
        &mut self,
        provider: &SaslProviderHandle,
        host: &str,
        watch: &LoginWatch,
    ) -> Result<(), CallError> {
        self.handshake(GSSAPI).await?;
        let failed =
            |why: String| CallError::Authentication(format!("SASL {GSSAPI} login failed: {why}"));
        let (provider, host) = (provider.clone(), host.to_string());
        watch.started();
        let (mut exchange, mut token) = off_the_workers(move || {
            let mut exchange = provider.0.start(SaslService::Kafka, &host)?;
            let token = exchange.initial()?;
            Ok((exchange, token))
        })
        .await
        .map_err(|failure| failed(failure.0))?;
        watch.ended();
        loop {
            let answer = self.authenticate(&token).await.map_err(failed)?;
            if exchange.is_complete() {
                return Ok(());
            }
            watch.started();
            (exchange, token) = off_the_workers(move || {
                let token = exchange.evaluate(&answer)?;
                Ok((exchange, token))
            })
            .await
            .map_err(|failure| failed(failure.0))?;
            watch.ended();
        }
    }

    /// One SaslAuthenticate round: the server's bytes, or why it refused.
    async fn authenticate(&mut self, bytes: &[u8]) -> Result<Vec<u8>, String> {
        let version = self
            .version(
                "SaslAuthenticate",
                API_SASL_AUTHENTICATE,
                SASL_AUTHENTICATE_VERSIONS,
            )
            .map_err(|err| err.to_string())?;
        let mut request = SaslAuthenticateRequest::default();
        request.auth_bytes = Bytes::copy_from_slice(bytes);
        let answer = self
            .call(version, &request)
            .await
            .map_err(|err| err.to_string())?;
        if answer.error_code != 0 {
            return Err(format!(
                "{} ({})",
                protocol::error_name(answer.error_code),
                answer.error_message.as_deref().unwrap_or_default()
            ));
        }
        Ok(answer.auth_bytes.to_vec())
    }

    /// ApiVersions at the newest version we know; a broker that does not know it answers in v0
    /// with UNSUPPORTED_VERSION (and, from Kafka 2.4, the versions it knows), and is asked
    /// again at the newest version both know (v0 from brokers before 2.4).
    async fn api_versions(&mut self) -> Result<HashMap<i16, RangeInclusive<i16>>, CallError> {
        let request = protocol::api_versions_request();
        let mut version = API_VERSIONS_NEWEST;
        loop {
            let body = self.exchange(&request, version).await?;
            let answer = protocol::parse_api_versions(version, body)?;
            match answer.error_code {
                0 => return Ok(protocol::api_ranges(&answer)),
                UNSUPPORTED_VERSION if version > 0 => {
                    let theirs = protocol::api_ranges(&answer).remove(&API_VERSIONS);
                    version = theirs
                        .and_then(|theirs| protocol::pick_version(&(0..=version - 1), &theirs))
                        .unwrap_or(0);
                }
                code => return Err(CallError::Refused(code)),
            }
        }
    }

    /// The highest version of `api_key` both sides speak.
    pub fn version(
        &self,
        api: &'static str,
        api_key: i16,
        ours: RangeInclusive<i16>,
    ) -> Result<i16, CallError> {
        let theirs = self.versions.get(&api_key).cloned();
        let picked = theirs
            .as_ref()
            .and_then(|theirs| protocol::pick_version(&ours, theirs));
        picked.ok_or(CallError::Unsupported {
            api,
            min: theirs.as_ref().map_or(-1, |t| *t.start()),
            max: theirs.as_ref().map_or(-1, |t| *t.end()),
            ours_min: *ours.start(),
            ours_max: *ours.end(),
            needs: protocol::first_release_for(api_key),
        })
    }

    /// Sends one request at `version` and decodes its answer.
    pub async fn call<R: Request>(
        &mut self,
        version: i16,
        request: &R,
    ) -> Result<R::Response, CallError> {
        let body = self.exchange(request, version).await?;
        Ok(protocol::decode(version, body)?)
    }

    /// Sends one request and returns the answer's body (after its header).
    async fn exchange<R: Request>(
        &mut self,
        request: &R,
        version: i16,
    ) -> Result<Bytes, CallError> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let frame = protocol::frame(request, version, correlation_id, &self.client_id)?;
        self.stream.write_all(&frame).await?;

        let size = self.stream.read_i32().await?;
        let size = usize::try_from(size)
            .ok()
            .filter(|size| (4..=MAX_ANSWER_BYTES).contains(size))
            .ok_or_else(|| protocol::Malformed(format!("answer size {size}")))?;
        let mut answer = vec![0u8; size];
        self.stream.read_exact(&mut answer).await?;
        let (answered, body) = protocol::split_header::<R::Response>(version, Bytes::from(answer))?;
        if answered != correlation_id {
            return Err(protocol::Malformed(format!(
                "answer to request {answered} where {correlation_id} was expected"
            ))
            .into());
        }
        Ok(body)
    }
}

/// The host of `host:port` or `[v6]:port`, as the address names it (an IP literal stays one).
fn host_of(address: &str) -> &str {
    address
        .rsplit_once(':')
        .map_or(address, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Anything answering on a Kafka port that claims 2^31-1 elements gets an error naming the
    /// claim, not an allocation of it (which aborts the process; vendor/README.md).
    #[test]
    fn a_peer_claiming_billions_of_elements_gets_an_error_not_an_abort() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap().to_string();
            let peer = tokio::spawn(async move {
                let (mut socket, _) = listener.accept().await.unwrap();
                let size = socket.read_i32().await.unwrap();
                let mut request = vec![0; usize::try_from(size).unwrap()];
                socket.read_exact(&mut request).await.unwrap();
                // ApiVersions v4: the request's correlation id, error code NONE, then a compact
                // array length of 2^31 (2^31-1 api keys) and 8 bytes.
                let mut answer = request[4..8].to_vec();
                answer.extend_from_slice(&[0, 0, 0x80, 0x80, 0x80, 0x80, 0x08]);
                answer.extend_from_slice(&[0; 8]);
                socket.write_i32(answer.len() as i32).await.unwrap();
                socket.write_all(&answer).await.unwrap();
                socket
            });
            let opened = Connection::open(&address, "test", &KafkaSecurity::default()).await;
            let err = opened.err().expect("a malformed answer");
            assert!(matches!(err, CallError::Malformed(_)), "{err}");
            assert!(
                err.to_string()
                    .contains("Array length 2147483647 exceeds the 8 bytes remaining"),
                "{err}"
            );
            drop(peer.await.unwrap());
        });
    }

    mod gssapi {
        use super::*;
        use crate::kafka::{Brokers, KafkaSettings};
        use crate::sasl::fake::{FakeProvider, Script};
        use crate::sasl::SaslService;
        use bytes::BytesMut;
        use kafka_protocol::messages::api_versions_response::ApiVersion;
        use kafka_protocol::messages::{
            ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader,
            SaslAuthenticateResponse, SaslHandshakeResponse,
        };
        use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};
        use tokio::net::TcpListener;

        /// The broker's answer to one SaslAuthenticate request: its bytes, or an error code
        /// and message.
        type Answer = Result<&'static [u8], (i16, &'static str)>;

        /// The broker's SaslAuthenticate rounds: the client bytes expected, the answer.
        type Rounds = Vec<(&'static [u8], Answer)>;

        /// A broker answering ApiVersions, SaslHandshake (GSSAPI only) and SaslAuthenticate
        /// rounds `(expected client bytes, answer)`, until the client hangs up; it returns
        /// the API keys of the requests it answered, in order.
        async fn broker(rounds: Rounds) -> (String, tokio::task::JoinHandle<Vec<i16>>) {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap().to_string();
            let task = tokio::spawn(async move {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut rounds = rounds.into_iter();
                let mut answered = Vec::new();
                while let Ok(size) = socket.read_i32().await {
                    let mut request = vec![0; usize::try_from(size).unwrap()];
                    socket.read_exact(&mut request).await.unwrap();
                    let api_key = i16::from_be_bytes([request[0], request[1]]);
                    let version = i16::from_be_bytes([request[2], request[3]]);
                    let mut request = Bytes::from(request);
                    let header = |request: &mut Bytes, header_version| {
                        RequestHeader::decode(request, header_version)
                            .unwrap()
                            .correlation_id
                    };
                    let answer = match api_key {
                        API_VERSIONS => {
                            let id =
                                header(&mut request, ApiVersionsRequest::header_version(version));
                            let mut answer = ApiVersionsResponse::default();
                            for (key, max) in [
                                (API_VERSIONS, 3),
                                (API_SASL_HANDSHAKE, 1),
                                (API_SASL_AUTHENTICATE, 2),
                            ] {
                                let mut api = ApiVersion::default();
                                api.api_key = key;
                                api.max_version = max;
                                answer.api_keys.push(api);
                            }
                            frame_answer(id, &answer, version)
                        }
                        API_SASL_HANDSHAKE => {
                            let id =
                                header(&mut request, SaslHandshakeRequest::header_version(version));
                            let asked =
                                SaslHandshakeRequest::decode(&mut request, version).unwrap();
                            let mut answer = SaslHandshakeResponse::default();
                            answer.mechanisms = vec![StrBytes::from_static_str("GSSAPI")];
                            if asked.mechanism.as_str() != "GSSAPI" {
                                answer.error_code = 33;
                            }
                            frame_answer(id, &answer, version)
                        }
                        API_SASL_AUTHENTICATE => {
                            let id = header(
                                &mut request,
                                SaslAuthenticateRequest::header_version(version),
                            );
                            let asked =
                                SaslAuthenticateRequest::decode(&mut request, version).unwrap();
                            let (expected, reply) = rounds.next().expect("a scripted round");
                            assert_eq!(asked.auth_bytes.as_ref(), expected);
                            let mut answer = SaslAuthenticateResponse::default();
                            match reply {
                                Ok(bytes) => answer.auth_bytes = Bytes::from_static(bytes),
                                Err((code, message)) => {
                                    answer.error_code = code;
                                    answer.error_message = Some(StrBytes::from_static_str(message));
                                }
                            }
                            frame_answer(id, &answer, version)
                        }
                        other => panic!("unexpected API {other}"),
                    };
                    answered.push(api_key);
                    socket.write_all(&answer).await.unwrap();
                }
                assert!(rounds.next().is_none(), "rounds left");
                answered
            });
            (address, task)
        }

        /// An answer as a broker sends it: size, header, body.
        fn frame_answer<M: Encodable + HeaderVersion>(
            correlation_id: i32,
            message: &M,
            version: i16,
        ) -> Vec<u8> {
            let mut header = ResponseHeader::default();
            header.correlation_id = correlation_id;
            let mut buf = BytesMut::new();
            buf.extend_from_slice(&[0; 4]);
            header.encode(&mut buf, M::header_version(version)).unwrap();
            message.encode(&mut buf, version).unwrap();
            let size = i32::try_from(buf.len() - 4).unwrap();
            buf[..4].copy_from_slice(&size.to_be_bytes());
            buf.to_vec()
        }

        /// The engine's runtime is multi-threaded: provider calls go through `block_in_place`.
        fn runtime() -> tokio::runtime::Runtime {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap()
        }

        fn security(provider: &crate::sasl::SaslProviderHandle) -> KafkaSecurity {
            let settings = KafkaSettings::from_params([
                ("bootstrap.servers", "b:1"),
                ("security.protocol", "SASL_PLAINTEXT"),
            ])
            .unwrap();
            KafkaSecurity::from_settings_and_provider(&settings, Some(provider)).unwrap()
        }

        /// Without mutual authentication (Kafka's default) the broker answers the AP-REQ with
        /// its wrapped offer; with it, with the AP-REP first, which the client answers with an
        /// empty token. Either way the broker's empty answer to the client's last message is
        /// read, so the next request gets its own answer.
        #[test]
        fn the_exchange_runs_until_the_client_is_complete_and_the_last_answer_is_read() {
            let exchanges: [(Script, Rounds); 2] = [
                (
                    Script::new(Ok(b"ap-req"), &[(b"offer", Ok(b"layer"))]),
                    vec![(b"ap-req", Ok(b"offer")), (b"layer", Ok(b""))],
                ),
                (
                    Script::new(
                        Ok(b"ap-req"),
                        &[(b"ap-rep", Ok(b"")), (b"offer", Ok(b"layer"))],
                    ),
                    vec![
                        (b"ap-req", Ok(b"ap-rep")),
                        (b"", Ok(b"offer")),
                        (b"layer", Ok(b"")),
                    ],
                ),
            ];
            for (script, rounds) in exchanges {
                let sasl_rounds = rounds.len();
                runtime().block_on(async {
                    let (address, broker) = broker(rounds).await;
                    let (handle, provider) = FakeProvider::handle(script);
                    let mut connection = Connection::open(&address, "test", &security(&handle))
                        .await
                        .unwrap();
                    let version = connection
                        .version("ApiVersions", API_VERSIONS, 0..=3)
                        .unwrap();
                    let again = connection
                        .call(version, &protocol::api_versions_request())
                        .await
                        .unwrap();
                    assert_eq!(again.error_code, 0);
                    drop(connection);
                    let answered = broker.await.unwrap();
                    let mut expected = vec![API_VERSIONS, API_SASL_HANDSHAKE];
                    expected.extend(std::iter::repeat_n(API_SASL_AUTHENTICATE, sasl_rounds));
                    expected.push(API_VERSIONS);
                    assert_eq!(answered, expected);
                    assert_eq!(
                        provider.started(),
                        [(SaslService::Kafka, "127.0.0.1".to_string())]
                    );
                });
            }
        }

        #[test]
        fn a_provider_failure_or_a_broker_refusal_is_a_clear_login_error() {
            let cases: [(Script, Rounds, &str); 3] = [
                (
                    Script::new(Err("Server not found in Kerberos database (7)"), &[]),
                    vec![],
                    "SASL GSSAPI login failed: Server not found in Kerberos database (7)",
                ),
                (
                    Script::new(
                        Ok(b"ap-req"),
                        &[(b"offer", Err("No common protection layer between client and server"))],
                    ),
                    vec![(b"ap-req", Ok(b"offer"))],
                    "SASL GSSAPI login failed: No common protection layer between client and server",
                ),
                (
                    Script::new(Ok(b"ap-req"), &[]),
                    vec![(b"ap-req", Err((58, "Authentication failed during authentication due to invalid credentials with SASL mechanism GSSAPI")))],
                    "SASL GSSAPI login failed: SASL_AUTHENTICATION_FAILED (Authentication failed during",
                ),
            ];
            for (script, rounds, needle) in cases {
                runtime().block_on(async {
                    let (address, broker) = broker(rounds).await;
                    let (handle, _) = FakeProvider::handle(script);
                    let err = Connection::open(&address, "test", &security(&handle))
                        .await
                        .err()
                        .expect("refused");
                    assert!(matches!(err, CallError::Authentication(_)), "{err}");
                    assert!(err.to_string().contains(needle), "{err}");
                    broker.await.unwrap();
                });
            }
        }

        /// Through the engine's Kafka client: the error names the broker, GSSAPI and why, at
        /// once (no retries until the deadline).
        #[test]
        fn a_failed_login_is_a_kafka_error_naming_the_broker_and_the_reason() {
            runtime().block_on(async {
                let (address, broker) = broker(vec![]).await;
                let (handle, _) =
                    FakeProvider::handle(Script::new(Err("Clock skew too great (37)"), &[]));
                let settings = KafkaSettings::from_params([
                    ("bootstrap.servers", address.as_str()),
                    ("security.protocol", "SASL_PLAINTEXT"),
                ])
                .unwrap();
                let brokers = Brokers::with_sasl_provider(
                    settings,
                    Some(std::time::Duration::from_secs(20)),
                    Some(&handle),
                )
                .unwrap();
                let started = std::time::Instant::now();
                let err = brokers.topics().await.unwrap_err();
                assert!(started.elapsed() < std::time::Duration::from_secs(10));
                let message = err.to_string();
                assert!(matches!(err, crate::Error::Kafka { .. }), "{message}");
                assert!(
                    message.contains(&format!(
                        "broker {address}: SASL GSSAPI login failed: Clock skew too great (37)"
                    )),
                    "{message}"
                );
                broker.await.unwrap();
            });
        }

        /// A provider that blocks past the deadline (a KDC that does not answer) does not hold
        /// the call: it ends at the deadline.
        #[test]
        fn a_stalled_login_ends_at_the_deadline() {
            runtime().block_on(async {
                let (address, broker) = broker(vec![]).await;
                let (handle, _) = FakeProvider::stalling(
                    Script::new(Ok(b"ap-req"), &[]),
                    std::time::Duration::from_secs(4),
                );
                let settings = KafkaSettings::from_params([
                    ("bootstrap.servers", address.as_str()),
                    ("security.protocol", "SASL_PLAINTEXT"),
                ])
                .unwrap();
                let brokers = Brokers::with_sasl_provider(
                    settings,
                    Some(std::time::Duration::from_secs(1)),
                    Some(&handle),
                )
                .unwrap();
                let started = std::time::Instant::now();
                let err = brokers.topics().await.unwrap_err();
                assert!(
                    started.elapsed() < std::time::Duration::from_millis(2500),
                    "{err}"
                );
                // The login, not the broker, is what the deadline waited for.
                assert!(
                    err.to_string().contains(&format!(
                        "broker {address}: The Kerberos login for broker {address} did not finish within "
                    )),
                    "{err}"
                );
                drop(brokers);
                broker.await.unwrap();
            });
        }
    }

    #[test]
    fn a_broker_too_old_is_refused_naming_what_it_offers_and_the_release_needed() {
        let old = CallError::Unsupported {
            api: "ListOffsets",
            min: 0,
            max: 0,
            ours_min: 1,
            ours_max: 5,
            needs: protocol::first_release_for(protocol::API_LIST_OFFSETS),
        };
        assert_eq!(
            old.to_string(),
            "the broker answers ListOffsets v0-v0; offsetkeeper speaks ListOffsets v1-v5, \
             so it needs Kafka 0.10.1 or later"
        );
        let missing = CallError::Unsupported {
            api: "SaslHandshake",
            min: -1,
            max: -1,
            ours_min: 1,
            ours_max: 1,
            needs: protocol::first_release_for(protocol::API_SASL_HANDSHAKE),
        };
        assert!(missing
            .to_string()
            .starts_with("the broker does not offer SaslHandshake;"));
        assert!(missing.to_string().ends_with("needs Kafka 1.0 or later"));
    }
}
