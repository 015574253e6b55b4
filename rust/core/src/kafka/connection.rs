//! One TCP connection to one broker: a request is written and its answer read before the next
//! (the broker answers a connection's requests in order anyway).

use std::collections::HashMap;
use std::ops::RangeInclusive;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::protocol::{self, API_VERSIONS};

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
    #[error("the broker answers {api} v{min}-v{max}; offsetkeeper speaks v{ours_min}-v{ours_max}")]
    Unsupported {
        api: &'static str,
        min: i16,
        max: i16,
        ours_min: i16,
        ours_max: i16,
    },
    #[error("ApiVersions refused with {}", protocol::error_name(*.0))]
    Refused(i16),
}

pub struct Connection {
    stream: TcpStream,
    client_id: String,
    next_correlation_id: i32,
    versions: HashMap<i16, RangeInclusive<i16>>,
}

impl Connection {
    /// Connects and asks which API versions the broker speaks.
    pub async fn open(address: &str, client_id: &str) -> Result<Connection, CallError> {
        let stream = TcpStream::connect(address).await?;
        stream.set_nodelay(true)?;
        let mut connection = Connection {
            stream,
            client_id: client_id.to_string(),
            next_correlation_id: 0,
            versions: HashMap::new(),
        };
        let answer = connection.call(API_VERSIONS, 0, &[]).await?;
        connection.versions = protocol::parse_api_versions(&answer)?.map_err(CallError::Refused)?;
        Ok(connection)
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
        })
    }

    /// Sends one request and returns the answer's body (after the correlation id).
    pub async fn call(
        &mut self,
        api_key: i16,
        version: i16,
        body: &[u8],
    ) -> Result<Vec<u8>, CallError> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let header = protocol::request_header(api_key, version, correlation_id, &self.client_id);
        let size = header.buf.len() + body.len();
        let mut frame = Vec::with_capacity(4 + size);
        frame.extend_from_slice(&(size as i32).to_be_bytes());
        frame.extend_from_slice(&header.buf);
        frame.extend_from_slice(body);
        self.stream.write_all(&frame).await?;

        let size = self.stream.read_i32().await?;
        let size = usize::try_from(size)
            .ok()
            .filter(|size| (4..=MAX_ANSWER_BYTES).contains(size))
            .ok_or_else(|| protocol::Malformed(format!("answer size {size}")))?;
        let mut answer = vec![0u8; size];
        self.stream.read_exact(&mut answer).await?;
        let answered = i32::from_be_bytes([answer[0], answer[1], answer[2], answer[3]]);
        if answered != correlation_id {
            return Err(protocol::Malformed(format!(
                "answer to request {answered} where {correlation_id} was expected"
            ))
            .into());
        }
        answer.drain(..4);
        Ok(answer)
    }
}
