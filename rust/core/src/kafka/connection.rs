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
        let tcp = TcpStream::connect(address).await?;
        tcp.set_nodelay(true)?;
        let stream: Box<dyn Io> = match &security.tls {
            None => Box::new(tcp),
            Some(config) => {
                let host = address
                    .rsplit_once(':')
                    .map_or(address, |(host, _)| host)
                    .trim_start_matches('[')
                    .trim_end_matches(']');
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
        }
        Ok(connection)
    }

    /// SaslHandshake, then the mechanism's SaslAuthenticate rounds.
    async fn log_in(&mut self, login: &SaslLogin) -> Result<(), CallError> {
        let mechanism = login.mechanism.name();
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
