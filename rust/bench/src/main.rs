//! F, the benchmark's protocol floor: the requests offsetkeeper needs, sent straight from Rust,
//! with no engine, no validation, no ownership, no JNI and no logging. Kafka requests use the
//! engine's wire encoding and connection (`offsetkeeper::kafka::{protocol, connection}`) with
//! nothing around them; ZooKeeper requests use `zookeeper-client` directly.
//!
//! A load is one Metadata request for all the topics, then at the same time one ZooKeeper
//! multi-read of every partition's znode and, per side (earliest, latest), one ListOffsets per
//! leader, the two sides on two connections. A commit is one ZooKeeper multi of `setData`s, for
//! exactly the changed offsets. A multi past ZooKeeper's packet limit (1 MB) is sent as several,
//! all in flight at once.
//!
//! The Java harness (tests/bench) starts this program once and drives it over stdin, one
//! command a line; each answer is one line `ok NANOS COUNT` (time measured here, around the
//! requests only) or `error MESSAGE`.
//!
//! ```text
//! offsetkeeper-floor ZK_CONNECT BOOTSTRAP
//! load cold|warm GROUP TOPIC[,TOPIC...]    cold: new ZooKeeper session and Kafka connections, timed
//! commit GROUP VALUE TOPIC:N[,TOPIC:N...]  partitions 0..N-1 of each topic set to VALUE
//! commit-one GROUP TOPIC PARTITION VALUE   one partition set to VALUE
//! quit
//! ```

use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::time::{Duration, Instant};

use offsetkeeper::kafka::connection::Connection;
use offsetkeeper::kafka::protocol::{
    self, API_LIST_OFFSETS, API_METADATA, EARLIEST, LATEST, LIST_OFFSETS_VERSIONS,
    METADATA_VERSIONS,
};
use offsetkeeper::kafka::security::KafkaSecurity;
use offsetkeeper::zookeeper::{server_version, ServerVersion};
use tokio::runtime::Runtime;
use zookeeper_client as zk;

const CLIENT_ID: &str = "offsetkeeper-floor";

/// ZooKeeper's default `jute.maxbuffer`, the largest packet a server reads, less 1 KiB for the
/// request's header (the engine's bound too).
const MAX_REQUEST_BYTES: usize = 0xfffff - 1024;
/// Bytes a multi's op takes besides its path and data (jute: header, lengths, version or watch).
const OP_BYTES: usize = 9 + 4 + 4 + 4;

type Result<T> = std::result::Result<T, String>;

/// Connections to the cluster: one for metadata, two per leader (one per side).
struct Kafka {
    metadata: Connection,
    leaders: HashMap<String, [Connection; 2]>,
}

struct Clients {
    zk: zk::Client,
    kafka: Kafka,
}

struct Floor {
    runtime: Runtime,
    zk_connect: String,
    bootstrap: String,
    warm: Option<Clients>,
}

async fn open(address: &str) -> Result<Connection> {
    Connection::open(address, CLIENT_ID, &KafkaSecurity::default())
        .await
        .map_err(|e| format!("connect {address}: {e}"))
}

impl Floor {
    async fn connect_zk(&self) -> Result<zk::Client> {
        // The engine's detection, so that the floor sends what the servers parse (a server
        // before 3.6 has no multi-read: the floor then fails with "unimplemented").
        let version = server_version::detect(&self.zk_connect, Duration::from_secs(10), None)
            .await
            .map_err(|e| format!("zookeeper connect string: {e}"))?
            .lowest
            .unwrap_or(ServerVersion::CONSERVATIVE);
        zk::Client::connector()
            .with_server_version(version.major, version.minor, version.patch)
            .with_session_timeout(Duration::from_secs(30))
            .with_connection_timeout(Duration::from_secs(10))
            .connect(&self.zk_connect)
            .await
            .map_err(|e| format!("zookeeper connect: {e}"))
    }

    async fn connect(&self) -> Result<Clients> {
        let (zk, metadata) = tokio::try_join!(self.connect_zk(), open(&self.bootstrap))?;
        Ok(Clients {
            zk,
            kafka: Kafka {
                metadata,
                leaders: HashMap::new(),
            },
        })
    }

    /// Cold: the ZooKeeper session and every Kafka connection are made inside the timed
    /// region; they are dropped after the clock stops.
    fn load_cold(&self, group: &str, topics: &[String]) -> Result<(u128, usize)> {
        let start = Instant::now();
        let (count, clients) = self.runtime.block_on(async {
            let mut clients = self.connect().await?;
            let count = load(&mut clients, group, topics).await?;
            Ok::<_, String>((count, clients))
        })?;
        let elapsed = start.elapsed().as_nanos();
        drop(clients);
        Ok((elapsed, count))
    }

    fn load_warm(&mut self, group: &str, topics: &[String]) -> Result<(u128, usize)> {
        if self.warm.is_none() {
            let mut clients = self.runtime.block_on(self.connect())?;
            self.runtime.block_on(load(&mut clients, group, topics))?;
            self.warm = Some(clients);
        }
        let clients = self.warm.as_mut().ok_or("no warm clients")?;
        let start = Instant::now();
        let count = self.runtime.block_on(load(clients, group, topics))?;
        Ok((start.elapsed().as_nanos(), count))
    }

    fn commit(
        &mut self,
        group: &str,
        value: &str,
        writes: &[(String, i32)],
    ) -> Result<(u128, usize)> {
        if self.warm.is_none() {
            self.warm = Some(self.runtime.block_on(self.connect())?);
        }
        let clients = self.warm.as_ref().ok_or("no warm clients")?;
        let paths: Vec<String> = writes
            .iter()
            .map(|(topic, p)| format!("/consumers/{group}/offsets/{topic}/{p}"))
            .collect();
        let start = Instant::now();
        let (zk, value) = (&clients.zk, value.as_bytes());
        self.runtime.block_on(futures::future::try_join_all(
            request_chunks(&paths, value.len()).map(|chunk| async move {
                let mut writer = zk.new_multi_writer();
                for path in chunk {
                    writer
                        .add_set_data(path, value, None)
                        .map_err(|e| e.to_string())?;
                }
                writer
                    .commit()
                    .await
                    .map(|_| ())
                    .map_err(|e| format!("multi-write: {e}"))
            }),
        ))?;
        Ok((start.elapsed().as_nanos(), paths.len()))
    }
}

/// One Metadata request, then the multi-read and both sides' ListOffsets all in flight at once.
async fn load(clients: &mut Clients, group: &str, topics: &[String]) -> Result<usize> {
    let Clients { zk, kafka } = clients;
    let version = kafka
        .metadata
        .version("Metadata", API_METADATA, METADATA_VERSIONS)
        .map_err(|e| e.to_string())?;
    let request = protocol::metadata_request(version, Some(topics));
    let answer = kafka
        .metadata
        .call(version, &request)
        .await
        .map_err(|e| format!("metadata: {e}"))?;
    let metadata = protocol::parse_metadata(answer);
    let addresses: HashMap<i32, String> = metadata
        .brokers
        .iter()
        .map(|b| (b.node_id, format!("{}:{}", b.host, b.port)))
        .collect();
    let mut paths = Vec::new();
    let mut by_leader: HashMap<String, Vec<(&str, Vec<i32>)>> = HashMap::new();
    for topic in &metadata.topics {
        if topic.error != 0 {
            return Err(format!("topic {}: error {}", topic.name, topic.error));
        }
        for p in &topic.partitions {
            paths.push(format!(
                "/consumers/{group}/offsets/{}/{}",
                topic.name, p.partition
            ));
            let leader = addresses.get(&p.leader).ok_or("partition without leader")?;
            let topics = by_leader.entry(leader.clone()).or_default();
            match topics.last_mut() {
                Some((name, ids)) if *name == topic.name => ids.push(p.partition),
                _ => topics.push((&topic.name, vec![p.partition])),
            }
        }
    }
    for leader in by_leader.keys() {
        if !kafka.leaders.contains_key(leader) {
            let pair = tokio::try_join!(open(leader), open(leader))?;
            kafka.leaders.insert(leader.clone(), [pair.0, pair.1]);
        }
    }
    let zk = &*zk;
    let read = futures::future::try_join_all(request_chunks(&paths, 0).map(|chunk| async move {
        let mut reader = zk.new_multi_reader();
        for path in chunk {
            reader.add_get_data(path).map_err(|e| e.to_string())?;
        }
        let results = reader
            .commit()
            .await
            .map_err(|e| format!("multi-read: {e}"))?;
        Ok::<usize, String>(results.len())
    }));
    let read = async { Ok::<usize, String>(read.await?.into_iter().sum()) };
    let lists =
        futures::future::try_join_all(kafka.leaders.iter_mut().filter_map(|(leader, pair)| {
            let topics = by_leader.get(leader)?;
            let [earliest, latest] = pair;
            Some(async move {
                let (a, b) = tokio::try_join!(
                    list(earliest, topics, EARLIEST),
                    list(latest, topics, LATEST)
                )?;
                Ok::<usize, String>(a.min(b))
            })
        }));
    let (stored, listed) = tokio::try_join!(read, lists)?;
    let listed: usize = listed.into_iter().sum();
    if stored != paths.len() || listed != paths.len() {
        return Err(format!(
            "answers for {} partitions: {stored} stored, {listed} listed",
            paths.len()
        ));
    }
    Ok(paths.len())
}

/// Consecutive runs of `paths` whose multi (ops of `data_bytes` of data each) fits one request.
fn request_chunks(paths: &[String], data_bytes: usize) -> impl Iterator<Item = &[String]> {
    let mut rest = paths;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut bytes = 0;
        let len = rest
            .iter()
            .take_while(|path| {
                bytes += path.len() + data_bytes + OP_BYTES;
                bytes <= MAX_REQUEST_BYTES
            })
            .count()
            .max(1);
        let (chunk, tail) = rest.split_at(len);
        rest = tail;
        Some(chunk)
    })
}

/// One ListOffsets request; the number of partitions answered without error.
async fn list(
    connection: &mut Connection,
    topics: &[(&str, Vec<i32>)],
    timestamp: i64,
) -> Result<usize> {
    let version = connection
        .version("ListOffsets", API_LIST_OFFSETS, LIST_OFFSETS_VERSIONS)
        .map_err(|e| e.to_string())?;
    let request = protocol::list_offsets_request(version, false, topics, timestamp, 30_000);
    let answer = connection
        .call(version, &request)
        .await
        .map_err(|e| format!("list offsets: {e}"))?;
    let listed = protocol::parse_list_offsets(answer);
    Ok(listed
        .iter()
        .flat_map(|topic| &topic.partitions)
        .filter(|l| l.error == 0)
        .count())
}

fn topic_counts(spec: &str) -> Result<Vec<(String, i32)>> {
    let mut writes = Vec::new();
    for part in spec.split(',') {
        let (topic, n) = part
            .split_once(':')
            .ok_or_else(|| format!("expected TOPIC:N, got '{part}'"))?;
        let n: i32 = n.parse().map_err(|_| format!("bad count in '{part}'"))?;
        writes.extend((0..n).map(|p| (topic.to_string(), p)));
    }
    Ok(writes)
}

fn run(floor: &mut Floor, line: &str) -> Result<(u128, usize)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["load", "cold", group, topics] => floor.load_cold(
            group,
            &topics.split(',').map(String::from).collect::<Vec<_>>(),
        ),
        ["load", "warm", group, topics] => floor.load_warm(
            group,
            &topics.split(',').map(String::from).collect::<Vec<_>>(),
        ),
        ["commit", group, value, spec] => floor.commit(group, value, &topic_counts(spec)?),
        ["commit-one", group, topic, partition, value] => {
            let partition = partition
                .parse()
                .map_err(|_| format!("bad partition '{partition}'"))?;
            floor.commit(group, value, &[(topic.to_string(), partition)])
        }
        _ => Err(format!("unknown command '{line}'")),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [zk_connect, bootstrap] = args.as_slice() else {
        eprintln!("usage: offsetkeeper-floor ZK_CONNECT BOOTSTRAP  (commands on stdin)");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut floor = Floor {
        runtime,
        zk_connect: zk_connect.clone(),
        bootstrap: bootstrap.clone(),
        warm: None,
    };
    let stdout = io::stdout();
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let line = line.trim();
        if line == "quit" {
            break;
        }
        let answer = match run(&mut floor, line) {
            Ok((nanos, count)) => format!("ok {nanos} {count}"),
            Err(message) => format!("error {}", message.replace('\n', " ")),
        };
        let mut out = stdout.lock();
        if writeln!(out, "{answer}").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
}
