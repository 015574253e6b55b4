//! F, the benchmark's protocol floor: the requests offsetkeeper needs, sent straight from Rust
//! with `zookeeper-client` and `rdkafka`, with no engine, no validation, no JNI and no logging.
//!
//! A load is one Metadata request per topic (all at once), then at the same time one
//! ZooKeeper multi-read of every partition's znode and, per side (earliest, latest), one
//! ListOffsets per leader for every 250 partitions (librdkafka's `offsets_for_times` is O(n²) in
//! the partitions of one call, so the engine splits the same way). A commit is one ZooKeeper
//! multi of `setData`s, for exactly the changed offsets.
//!
//! The Java harness (tests/bench) starts this program once and drives it over stdin, one
//! command a line; each answer is one line `ok NANOS COUNT` (time measured here, around the
//! requests only) or `error MESSAGE`.
//!
//! ```text
//! offsetkeeper-floor ZK_CONNECT BOOTSTRAP
//! load cold|warm GROUP TOPIC[,TOPIC...]    cold: new ZooKeeper session and Kafka client, timed
//! commit GROUP VALUE TOPIC:N[,TOPIC:N...]  partitions 0..N-1 of each topic set to VALUE
//! commit-one GROUP TOPIC PARTITION VALUE   one partition set to VALUE
//! quit
//! ```

use std::io::{self, BufRead, Write};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use tokio::runtime::Runtime;
use zookeeper_client as zk;

const TIMEOUT: Duration = Duration::from_secs(10);
const PARTITIONS_PER_CALL: usize = 250;
const PARALLEL_CALLS: usize = 8;

type Result<T> = std::result::Result<T, String>;

struct Clients {
    zk: zk::Client,
    kafka: BaseConsumer,
}

struct Floor {
    runtime: Runtime,
    zk_connect: String,
    bootstrap: String,
    warm: Option<Clients>,
}

impl Floor {
    fn kafka_client(&self) -> Result<BaseConsumer> {
        ClientConfig::new()
            .set("bootstrap.servers", &self.bootstrap)
            .set("isolation.level", "read_uncommitted")
            .set("enable.auto.commit", "false")
            .set("allow.auto.create.topics", "false")
            // Connect to the learned brokers at once instead of after librdkafka's sparse
            // connection suppression (50 ms by default), as the engine does.
            .set("enable.sparse.connections", "false")
            .create()
            .map_err(|e| format!("kafka client: {e}"))
    }

    fn connect_zk(&self) -> Result<zk::Client> {
        let connecting = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(30))
            .with_connection_timeout(TIMEOUT)
            .connect(&self.zk_connect);
        self.runtime
            .block_on(connecting)
            .map_err(|e| format!("zookeeper connect: {e}"))
    }

    /// The warm clients, created (untimed) on first use.
    fn warm_clients(&mut self) -> Result<&Clients> {
        if self.warm.is_none() {
            let clients = Clients {
                zk: self.connect_zk()?,
                kafka: self.kafka_client()?,
            };
            self.warm = Some(clients);
        }
        Ok(self.warm.as_ref().expect("just set"))
    }

    /// Cold: the clients are created inside the timed region, the ZooKeeper session while the
    /// metadata is asked; they are dropped after the clock stops.
    fn load_cold(&self, group: &str, topics: &[&str]) -> Result<(u128, usize)> {
        let start = Instant::now();
        let kafka = self.kafka_client()?;
        let (zk, partitions) = std::thread::scope(|scope| {
            let zk = scope.spawn(|| self.connect_zk());
            let partitions = discover(&kafka, topics);
            let zk = zk.join().map_err(|_| "zk thread panicked".to_string());
            (zk, partitions)
        });
        let (zk, partitions) = (zk??, partitions?);
        let count = self.read_and_list(&zk, &kafka, group, &partitions)?;
        let elapsed = start.elapsed().as_nanos();
        drop((zk, kafka));
        Ok((elapsed, count))
    }

    fn load_warm(&mut self, group: &str, topics: &[&str]) -> Result<(u128, usize)> {
        self.warm_clients()?;
        let clients = self.warm.as_ref().expect("warm clients");
        let start = Instant::now();
        let partitions = discover(&clients.kafka, topics)?;
        let count = self.read_and_list(&clients.zk, &clients.kafka, group, &partitions)?;
        Ok((start.elapsed().as_nanos(), count))
    }

    /// One multi-read and the two ListOffsets requests, all in flight at once.
    fn read_and_list(
        &self,
        zk: &zk::Client,
        kafka: &BaseConsumer,
        group: &str,
        partitions: &[(String, i32)],
    ) -> Result<usize> {
        let paths: Vec<String> = partitions
            .iter()
            .map(|(topic, p)| format!("/consumers/{group}/offsets/{topic}/{p}"))
            .collect();
        let (stored, earliest, latest) = std::thread::scope(|scope| {
            let earliest = scope.spawn(|| list_offsets(kafka, partitions, Offset::Beginning));
            let latest = scope.spawn(|| list_offsets(kafka, partitions, Offset::End));
            let stored = self.runtime.block_on(async {
                let mut reader = zk.new_multi_reader();
                for path in &paths {
                    reader.add_get_data(path).map_err(|e| e.to_string())?;
                }
                reader
                    .commit()
                    .await
                    .map_err(|e| format!("multi-read: {e}"))
            });
            let join = |h: std::thread::ScopedJoinHandle<'_, Result<usize>>| {
                h.join()
                    .unwrap_or_else(|_| Err("list offsets panicked".into()))
            };
            (stored, join(earliest), join(latest))
        });
        let (stored, earliest, latest) = (stored?, earliest?, latest?);
        if stored.len() != partitions.len()
            || earliest != partitions.len()
            || latest != partitions.len()
        {
            return Err(format!(
                "answers for {} partitions: {} stored, {earliest} earliest, {latest} latest",
                partitions.len(),
                stored.len()
            ));
        }
        Ok(partitions.len())
    }

    fn commit(
        &mut self,
        group: &str,
        value: &str,
        writes: &[(String, i32)],
    ) -> Result<(u128, usize)> {
        self.warm_clients()?;
        let clients = self.warm.as_ref().expect("warm clients");
        let paths: Vec<String> = writes
            .iter()
            .map(|(topic, p)| format!("/consumers/{group}/offsets/{topic}/{p}"))
            .collect();
        let start = Instant::now();
        self.runtime.block_on(async {
            let mut writer = clients.zk.new_multi_writer();
            for path in &paths {
                writer
                    .add_set_data(path, value.as_bytes(), None)
                    .map_err(|e| e.to_string())?;
            }
            writer
                .commit()
                .await
                .map(|_| ())
                .map_err(|e| format!("multi-write: {e}"))
        })?;
        Ok((start.elapsed().as_nanos(), paths.len()))
    }
}

/// One Metadata request per topic, all in flight at once.
fn discover(kafka: &BaseConsumer, topics: &[&str]) -> Result<Vec<(String, i32)>> {
    let per_topic: Vec<Result<Vec<(String, i32)>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = topics
            .iter()
            .map(|topic| {
                scope.spawn(move || {
                    let metadata = kafka
                        .fetch_metadata(Some(topic), TIMEOUT)
                        .map_err(|e| format!("metadata of {topic}: {e}"))?;
                    let meta = metadata
                        .topics()
                        .iter()
                        .find(|t| t.name() == *topic && t.error().is_none())
                        .ok_or_else(|| format!("unknown topic {topic}"))?;
                    let mut ids: Vec<i32> = meta.partitions().iter().map(|p| p.id()).collect();
                    ids.sort_unstable();
                    Ok(ids.into_iter().map(|p| (topic.to_string(), p)).collect())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("metadata panicked".into())))
            .collect()
    });
    let mut all = Vec::new();
    for partitions in per_topic {
        all.extend(partitions?);
    }
    Ok(all)
}

/// `offsets_for_times` in calls of [`PARTITIONS_PER_CALL`], made at once from up to
/// [`PARALLEL_CALLS`] threads: librdkafka matches answers to requests by linear search, O(n²)
/// in the partitions of one call (the engine does the same; see rust/core/src/kafka/mod.rs).
fn list_offsets(kafka: &BaseConsumer, partitions: &[(String, i32)], side: Offset) -> Result<usize> {
    let chunks: Vec<&[(String, i32)]> = partitions.chunks(PARTITIONS_PER_CALL).collect();
    let threads = chunks.len().clamp(1, PARALLEL_CALLS);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|first| {
                let chunks = &chunks;
                scope.spawn(move || -> Result<usize> {
                    let mut count = 0;
                    for chunk in chunks.iter().skip(first).step_by(threads) {
                        count += offsets_for_times(kafka, chunk, side)?;
                    }
                    Ok(count)
                })
            })
            .collect();
        let mut count = 0;
        for handle in handles {
            count += handle
                .join()
                .unwrap_or_else(|_| Err("list offsets panicked".into()))?;
        }
        Ok(count)
    })
}

/// One `offsets_for_times` call: librdkafka sends one ListOffsets per leader broker.
fn offsets_for_times(
    kafka: &BaseConsumer,
    partitions: &[(String, i32)],
    side: Offset,
) -> Result<usize> {
    let mut request = TopicPartitionList::with_capacity(partitions.len());
    for (topic, p) in partitions {
        request
            .add_partition_offset(topic, *p, side)
            .map_err(|e| e.to_string())?;
    }
    let reply = kafka
        .offsets_for_times(request, TIMEOUT)
        .map_err(|e| format!("list offsets: {e}"))?;
    let mut count = 0;
    for element in reply.elements() {
        element.error().map_err(|e| format!("list offsets: {e}"))?;
        if let Offset::Offset(_) = element.offset() {
            count += 1;
        }
    }
    Ok(count)
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
        ["load", "cold", group, topics] => {
            floor.load_cold(group, &topics.split(',').collect::<Vec<_>>())
        }
        ["load", "warm", group, topics] => {
            floor.load_warm(group, &topics.split(',').collect::<Vec<_>>())
        }
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
