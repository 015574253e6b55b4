//! F, the benchmark's protocol floor: the requests offsetkeeper needs, sent straight from Rust,
//! with no engine, no validation, no ownership, no JNI and no logging. Kafka requests use the
//! engine's wire encoding and connection (`offsetkeeper::kafka::{protocol, connection}`) with
//! nothing around them; ZooKeeper requests use `zookeeper-client` directly.
//!
//! A load is one Metadata request for all the topics, then at the same time one ZooKeeper
//! multi-read of every partition's znode and, per side (earliest, latest), one ListOffsets per
//! leader, the two sides on two connections. A commit is handed every partition of the batch,
//! as a job's commit is, compares each offset with what it last wrote to the group (the least
//! work a program given that input must do), and writes the changed offsets in one ZooKeeper
//! multi of `setData`s. A multi past ZooKeeper's packet limit (1 MB) is sent as several, all in
//! flight at once. For reference, `commit-one` writes one partition it is told changed, with
//! no input to look through.
//!
//! The Java harness (tests/bench) starts this program once and drives it over stdin, one
//! command a line; each answer is one line `ok NANOS COUNT` (time measured here, around the
//! requests only) or `error MESSAGE`.
//!
//! ```text
//! offsetkeeper-floor ZK_CONNECT BOOTSTRAP
//! load cold|warm GROUP TOPIC[,TOPIC...]    cold: new ZooKeeper session and Kafka connections, timed
//! commit GROUP TOPIC:PARTITION:OFFSET[,...]  the batch: every entry, changed or not
//! commit-one GROUP TOPIC PARTITION VALUE     one partition set to VALUE (told it changed)
//! kload cold|warm GROUP TOPIC[,TOPIC...]   KF: a load of the group's offsets in Kafka's store
//! kcommit GROUP TOPIC:PARTITION:OFFSET[,...] KF: the batch into Kafka's store (group_store.rs)
//! quit
//! ```

mod group_store;

use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::time::{Duration, Instant};

use group_store::GroupFloor;
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
    /// What `commit` last wrote, by group: see [`Written`].
    written: HashMap<String, Written>,
    /// KF, the Kafka group store's floor (`kload`, `kcommit`).
    group_store: GroupFloor,
}

/// A commit's input as the harness hands it over (parsed before the clock starts, as a job's
/// map is built before it commits): each topic name once, and per entry the index of its topic,
/// its partition and its offset.
struct Batch {
    names: Vec<String>,
    entries: Vec<(usize, i32, i64)>,
}

/// Per topic, the offset last written for each partition number (`NOTHING`: none yet).
type Written = HashMap<String, Vec<i64>>;
const NOTHING: i64 = -1;
/// The columns are indexed by partition number: a number past this is refused, not allocated.
const MAX_PARTITION: usize = 1 << 20;

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

    fn warm_zk(&mut self) -> Result<&zk::Client> {
        if self.warm.is_none() {
            self.warm = Some(self.runtime.block_on(self.connect())?);
        }
        Ok(&self.warm.as_ref().ok_or("no warm clients")?.zk)
    }

    /// Writes one partition the caller says changed: no input to look through (the paths are
    /// made before the clock starts).
    fn commit_one(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
        value: &str,
    ) -> Result<(u128, usize)> {
        let writes = vec![(
            format!("/consumers/{group}/offsets/{topic}/{partition}"),
            value.as_bytes().to_vec(),
        )];
        let zk = self.warm_zk()?.clone();
        let start = Instant::now();
        self.runtime.block_on(write(&zk, &writes))?;
        Ok((start.elapsed().as_nanos(), writes.len()))
    }

    /// A job's commit done with the least work: every entry of the batch is compared with what
    /// this program last wrote to the group, and only the changed ones are written, in one multi
    /// (several past the 1 MB limit, sent at once). Comparing, making the changed paths and
    /// writing are timed.
    fn commit(&mut self, group: &str, batch: &Batch) -> Result<(u128, usize)> {
        let zk = self.warm_zk()?.clone();
        let start = Instant::now();
        let written = self.written.entry(group.to_string()).or_default();
        // Each topic's column taken out once per batch, not looked up per entry.
        let mut columns: Vec<Vec<i64>> = batch
            .names
            .iter()
            .map(|name| written.remove(name).unwrap_or_default())
            .collect();
        let mut writes = Vec::new();
        for &(topic, partition, offset) in &batch.entries {
            let index = usize::try_from(partition)
                .ok()
                .filter(|&index| index < MAX_PARTITION)
                .ok_or_else(|| format!("partition {partition} is outside 0..{MAX_PARTITION}"))?;
            let column = columns.get_mut(topic).ok_or("topic index out of range")?;
            if index >= column.len() {
                column.resize(index + 1, NOTHING);
            }
            if column[index] != offset {
                column[index] = offset;
                let name = &batch.names[topic];
                writes.push((
                    format!("/consumers/{group}/offsets/{name}/{partition}"),
                    offset.to_string().into_bytes(),
                ));
            }
        }
        for (name, column) in batch.names.iter().zip(columns) {
            written.insert(name.clone(), column);
        }
        if let Err(e) = self.runtime.block_on(write(&zk, &writes)) {
            // Not known what the group holds now: the next batch writes every entry.
            self.written.remove(group);
            return Err(e);
        }
        Ok((start.elapsed().as_nanos(), writes.len()))
    }
}

/// One multi of `setData` per request's worth of `writes` (path, data), all sent at once.
async fn write(zk: &zk::Client, writes: &[(String, Vec<u8>)]) -> Result<()> {
    futures::future::try_join_all(
        request_chunks(writes, |(path, data)| path.len() + data.len()).map(|chunk| async move {
            let mut writer = zk.new_multi_writer();
            for (path, data) in chunk {
                writer
                    .add_set_data(path, data, None)
                    .map_err(|e| e.to_string())?;
            }
            writer
                .commit()
                .await
                .map(|_| ())
                .map_err(|e| format!("multi-write: {e}"))
        }),
    )
    .await
    .map(|_| ())
}

/// Where a load's ListOffsets go: each leader's topics and partitions, from one Metadata answer.
struct Routes {
    /// Every partition, in the answer's order.
    partitions: Vec<(String, i32)>,
    by_leader: HashMap<String, Vec<(String, Vec<i32>)>>,
    /// Topic IDs by name (brokers from 2.8).
    topic_ids: HashMap<String, String>,
}

/// One Metadata request for the topics; opens both connections to each leader not known yet.
async fn routes(kafka: &mut Kafka, topics: &[String]) -> Result<Routes> {
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
    let mut routes = Routes {
        partitions: Vec::new(),
        by_leader: HashMap::new(),
        topic_ids: HashMap::new(),
    };
    for topic in &metadata.topics {
        if topic.error != 0 {
            return Err(format!("topic {}: error {}", topic.name, topic.error));
        }
        if let Some(id) = &topic.topic_id {
            routes.topic_ids.insert(topic.name.clone(), id.clone());
        }
        for p in &topic.partitions {
            routes.partitions.push((topic.name.clone(), p.partition));
            let leader = addresses.get(&p.leader).ok_or("partition without leader")?;
            let topics = routes.by_leader.entry(leader.clone()).or_default();
            match topics.last_mut() {
                Some((name, ids)) if *name == topic.name => ids.push(p.partition),
                _ => topics.push((topic.name.clone(), vec![p.partition])),
            }
        }
    }
    for leader in routes.by_leader.keys() {
        if !kafka.leaders.contains_key(leader) {
            let pair = tokio::try_join!(open(leader), open(leader))?;
            kafka.leaders.insert(leader.clone(), [pair.0, pair.1]);
        }
    }
    Ok(routes)
}

/// Both sides' ListOffsets of every leader at once; the partitions answered on both sides.
async fn list_routes(
    leaders: &mut HashMap<String, [Connection; 2]>,
    routes: &Routes,
) -> Result<usize> {
    let lists = futures::future::try_join_all(leaders.iter_mut().filter_map(|(leader, pair)| {
        let topics = routes.by_leader.get(leader)?;
        let [earliest, latest] = pair;
        Some(async move {
            let (a, b) = tokio::try_join!(
                list(earliest, topics, EARLIEST),
                list(latest, topics, LATEST)
            )?;
            Ok::<usize, String>(a.min(b))
        })
    }))
    .await?;
    let listed: usize = lists.into_iter().sum();
    if listed != routes.partitions.len() {
        return Err(format!(
            "{listed} of {} partitions listed",
            routes.partitions.len()
        ));
    }
    Ok(listed)
}

/// One Metadata request, then both sides' ListOffsets: the partitions listed and the topic IDs
/// (the Kafka side of a load, on either store).
async fn list_ranges(
    kafka: &mut Kafka,
    topics: &[String],
) -> Result<(usize, HashMap<String, String>)> {
    let routes = routes(kafka, topics).await?;
    let listed = list_routes(&mut kafka.leaders, &routes).await?;
    Ok((listed, routes.topic_ids))
}

/// One Metadata request, then the multi-read and both sides' ListOffsets all in flight at once.
async fn load(clients: &mut Clients, group: &str, topics: &[String]) -> Result<usize> {
    let Clients { zk, kafka } = clients;
    let routes = routes(kafka, topics).await?;
    let paths: Vec<String> = routes
        .partitions
        .iter()
        .map(|(topic, partition)| format!("/consumers/{group}/offsets/{topic}/{partition}"))
        .collect();
    let zk = &*zk;
    let read = futures::future::try_join_all(request_chunks(&paths, String::len).map(
        |chunk| async move {
            let mut reader = zk.new_multi_reader();
            for path in chunk {
                reader.add_get_data(path).map_err(|e| e.to_string())?;
            }
            let results = reader
                .commit()
                .await
                .map_err(|e| format!("multi-read: {e}"))?;
            Ok::<usize, String>(results.len())
        },
    ));
    let read = async { Ok::<usize, String>(read.await?.into_iter().sum()) };
    let (stored, _) = tokio::try_join!(read, list_routes(&mut kafka.leaders, &routes))?;
    if stored != paths.len() {
        return Err(format!(
            "answers for {} partitions: {stored} stored",
            paths.len()
        ));
    }
    Ok(paths.len())
}

/// Consecutive runs of `ops` whose multi fits one request (`bytes`: an op's path and data).
fn request_chunks<T>(ops: &[T], bytes: impl Fn(&T) -> usize) -> impl Iterator<Item = &[T]> {
    let mut rest = ops;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut total = 0;
        let len = rest
            .iter()
            .take_while(|op| {
                total += bytes(*op) + OP_BYTES;
                total <= MAX_REQUEST_BYTES
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
    topics: &[(String, Vec<i32>)],
    timestamp: i64,
) -> Result<usize> {
    let version = connection
        .version("ListOffsets", API_LIST_OFFSETS, LIST_OFFSETS_VERSIONS)
        .map_err(|e| e.to_string())?;
    let asked: Vec<(&str, Vec<(i32, i64)>)> = topics
        .iter()
        .map(|(topic, partitions)| {
            (
                topic.as_str(),
                partitions.iter().map(|p| (*p, timestamp)).collect(),
            )
        })
        .collect();
    let request = protocol::list_offsets_request(version, false, &asked, 30_000);
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

/// `TOPIC:PARTITION:OFFSET[,...]` as a [`Batch`].
fn parse_batch(spec: &str) -> Result<Batch> {
    let mut ids: HashMap<&str, usize> = HashMap::new();
    let mut batch = Batch {
        names: Vec::new(),
        entries: Vec::new(),
    };
    for entry in spec.split(',') {
        let mut fields = entry.rsplitn(3, ':');
        let (Some(offset), Some(partition), Some(topic)) =
            (fields.next(), fields.next(), fields.next())
        else {
            return Err(format!("expected TOPIC:PARTITION:OFFSET, got '{entry}'"));
        };
        let partition = partition
            .parse()
            .map_err(|_| format!("bad partition in '{entry}'"))?;
        let offset = offset
            .parse()
            .map_err(|_| format!("bad offset in '{entry}'"))?;
        let id = *ids.entry(topic).or_insert_with(|| {
            batch.names.push(topic.to_string());
            batch.names.len() - 1
        });
        batch.entries.push((id, partition, offset));
    }
    Ok(batch)
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
        ["commit", group, spec] => floor.commit(group, &parse_batch(spec)?),
        ["kload", "cold", group, topics] => floor.group_store.load_cold(
            &floor.runtime,
            &floor.bootstrap,
            group,
            &topics.split(',').map(String::from).collect::<Vec<_>>(),
        ),
        ["kload", "warm", group, topics] => floor.group_store.load_warm(
            &floor.runtime,
            &floor.bootstrap,
            group,
            &topics.split(',').map(String::from).collect::<Vec<_>>(),
        ),
        ["kcommit", group, spec] => {
            floor
                .group_store
                .commit(&floor.runtime, &floor.bootstrap, group, &parse_batch(spec)?)
        }
        ["commit-one", group, topic, partition, value] => {
            let partition = partition
                .parse()
                .map_err(|_| format!("bad partition '{partition}'"))?;
            floor.commit_one(group, topic, partition, value)
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
        written: HashMap::new(),
        group_store: GroupFloor::default(),
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
