//! The real test cluster, as `tests/cluster/cluster.sh` started it, and helpers to stage the
//! situations a job meets on restart. Nothing here is mocked: every call reaches a real server.

#![allow(dead_code)] // each test binary uses a different part

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use once_cell::sync::Lazy;
use rdkafka::admin::{AdminClient, AdminOptions, NewPartitions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use tokio::runtime::Runtime;
use zookeeper_client as zk;

use offsetkeeper::zookeeper::{server_version, ServerVersion};
use offsetkeeper::{KafkaSettings, KeeperConfig, OffsetKeeper, ZkConfig};

pub static RUNTIME: Lazy<Runtime> = Lazy::new(|| Runtime::new().expect("test runtime"));

/// Addresses of a running cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub zookeeper: String,
    pub bootstrap: String,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_env_file(path: &Path) -> HashMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|err| {
        panic!(
            "no test cluster: cannot read {} ({err}). Run the tests through `gradle cargoTest` \
             (README), which starts real ZooKeeper and Kafka, or set OFFSETKEEPER_ZK and OFFSETKEEPER_BOOTSTRAP",
            path.display()
        )
    });
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// The shared cluster. Fails loudly when there is none: these tests never pass without servers.
pub fn cluster() -> Cluster {
    static SHARED: Lazy<Cluster> = Lazy::new(|| {
        let from_env = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
        if let (Some(zookeeper), Some(bootstrap)) = (
            from_env("OFFSETKEEPER_ZK"),
            from_env("OFFSETKEEPER_BOOTSTRAP"),
        ) {
            return Cluster {
                zookeeper,
                bootstrap,
            };
        }
        let file = from_env("OFFSETKEEPER_CLUSTER_ENV")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_root().join("build/cluster/cluster.env"));
        cluster_from_file(&file)
    });
    SHARED.clone()
}

fn cluster_from_file(file: &Path) -> Cluster {
    let vars = read_env_file(file);
    let get = |key: &str| {
        vars.get(key)
            .cloned()
            .unwrap_or_else(|| panic!("{} has no {key}", file.display()))
    };
    Cluster {
        zookeeper: get("OFFSETKEEPER_ZK"),
        bootstrap: get("OFFSETKEEPER_BOOTSTRAP"),
    }
}

/// The Kafka release of the shared cluster's brokers when nothing names another: build.gradle's
/// testCluster configuration.
pub const MAIN_CLUSTER_KAFKA: &str = "3.9.1";

/// What the brokers of the cluster under test can do, from their Kafka release: the one place
/// tests ask before staging with a feature old brokers lack, and before asserting what the
/// product does with it. The release comes from OFFSETKEEPER_KAFKA_VERSION (each cell of the
/// compatibility matrix, tests/compat/run-cell.sh, sets it), else it is [`MAIN_CLUSTER_KAFKA`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// The release as named, e.g. `0.10.2.2` or `3.9.1`.
    pub kafka: String,
    /// Topic IDs in Metadata answers (Kafka 2.8+, Metadata v10): commits record them, and a
    /// re-created topic is known by its new ID. Before, nothing is recorded and loads judge
    /// every stored offset by the partition's range alone.
    pub topic_ids: bool,
    /// The DeleteRecords admin API (Kafka 0.11+), which [`Kafka::delete_records`] stages purges
    /// with. [`Kafka::create_purged_topic`] stages them by time retention without it.
    pub delete_records: bool,
    /// The CreatePartitions admin API (Kafka 1.0+). Without it [`Kafka::add_partitions`] writes
    /// the topic's new partition assignment to ZooKeeper, as kafka-topics.sh did then.
    pub create_partitions: bool,
    /// Brokers in ZooKeeper mode (every release before 4.0), keeping their topics in the
    /// cluster's ZooKeeper; Kafka 4 is KRaft only.
    pub zookeeper_mode: bool,
    /// The OffsetDelete API (Kafka 2.4+, KIP-496), which the Kafka store's `delete` uses.
    pub offset_delete: bool,
}

impl Capabilities {
    /// The capabilities of Kafka `release` (`major.minor[.patch...]`).
    pub fn of(release: &str) -> Capabilities {
        let mut numbers = release.split('.').map(|n| {
            n.parse::<u32>()
                .unwrap_or_else(|_| panic!("Kafka release '{release}' is not major.minor[.patch]"))
        });
        let (major, minor) = (
            numbers.next().unwrap_or_default(),
            numbers.next().unwrap_or_default(),
        );
        let at_least = |m: u32, n: u32| (major, minor) >= (m, n);
        Capabilities {
            kafka: release.to_string(),
            topic_ids: at_least(2, 8),
            delete_records: at_least(0, 11),
            create_partitions: at_least(1, 0),
            zookeeper_mode: !at_least(4, 0),
            offset_delete: at_least(2, 4),
        }
    }
}

/// The capabilities of the shared cluster's brokers (see [`Capabilities`]).
pub fn capabilities() -> &'static Capabilities {
    static SHARED: Lazy<Capabilities> = Lazy::new(|| {
        let release = std::env::var("OFFSETKEEPER_KAFKA_VERSION")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| MAIN_CLUSTER_KAFKA.to_string());
        Capabilities::of(release.trim())
    });
    &SHARED
}

/// The secured cluster `gradle clusterStart` runs beside the open one (`cluster.sh
/// start-secure`): ZooKeeper requiring SASL with a TLS port, Kafka with a SASL_SSL listener.
#[derive(Debug, Clone)]
pub struct SecureCluster {
    vars: HashMap<String, String>,
}

impl SecureCluster {
    /// One of the variables of `secure.env` (`OFFSETKEEPER_SECURE_` left out): `ZK`, `ZK_TLS`,
    /// `ZK_USER`, `ZK_PASSWORD`, `KAFKA_PLAINTEXT`, `KAFKA_SASL_SSL`, `KAFKA_USER`,
    /// `KAFKA_PASSWORD`, `CA`, `JKS`.
    pub fn get(&self, name: &str) -> &str {
        self.vars
            .get(&format!("OFFSETKEEPER_SECURE_{name}"))
            .unwrap_or_else(|| panic!("secure.env has no OFFSETKEEPER_SECURE_{name}"))
    }

    /// Its ZooKeeper (SASL required) with the broker's PLAINTEXT listener, for staging topics.
    pub fn plaintext(&self) -> Cluster {
        Cluster {
            zookeeper: self.get("ZK").to_string(),
            bootstrap: self.get("KAFKA_PLAINTEXT").to_string(),
        }
    }

    /// The ZooKeeper SASL login, as `zookeeper.*` properties.
    pub fn zookeeper_login(&self) -> [(&'static str, &str); 2] {
        [
            ("zookeeper.sasl.username", self.get("ZK_USER")),
            ("zookeeper.sasl.password", self.get("ZK_PASSWORD")),
        ]
    }
}

pub fn secure_cluster() -> SecureCluster {
    static SHARED: Lazy<SecureCluster> = Lazy::new(|| {
        let file = std::env::var("OFFSETKEEPER_SECURE_ENV")
            .ok()
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_root().join("build/secure-cluster/secure.env"));
        SecureCluster {
            vars: read_env_file(&file),
        }
    });
    SHARED.clone()
}

/// The Kerberos cluster (`cluster.sh start-kerberos`, `gradle kerberosClusterStart`): a KDC, a
/// ZooKeeper requiring SASL GSSAPI and a broker with a SASL_PLAINTEXT GSSAPI listener.
#[derive(Debug, Clone)]
pub struct KerberosCluster {
    vars: HashMap<String, String>,
}

impl KerberosCluster {
    /// One of the variables of `kerberos.env` (`OFFSETKEEPER_KERBEROS_` left out): `ZK`,
    /// `KAFKA_SASL_PLAINTEXT`, `KAFKA_PLAINTEXT`, `REALM`, `KRB5_CONF`, `CLIENT_PRINCIPAL`,
    /// `CLIENT_KEYTAB`, `CLIENT_CCACHE`, `CLIENT_JAAS`, `OTHER_PRINCIPAL`, `OTHER_KEYTAB`, ...
    pub fn get(&self, name: &str) -> &str {
        self.vars
            .get(&format!("OFFSETKEEPER_KERBEROS_{name}"))
            .unwrap_or_else(|| panic!("kerberos.env has no OFFSETKEEPER_KERBEROS_{name}"))
    }

    /// Its broker's PLAINTEXT listener, for staging topics (its ZooKeeper needs Kerberos).
    pub fn plaintext(&self) -> Cluster {
        Cluster {
            zookeeper: self.get("ZK").to_string(),
            bootstrap: self.get("KAFKA_PLAINTEXT").to_string(),
        }
    }
}

pub fn kerberos_cluster() -> KerberosCluster {
    static SHARED: Lazy<KerberosCluster> = Lazy::new(|| {
        let file = std::env::var("OFFSETKEEPER_KERBEROS_ENV")
            .ok()
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_root().join("build/kerberos-cluster/kerberos.env"));
        assert!(
            file.is_file(),
            "no Kerberos test cluster: {} is missing. Run the tests through `gradle cargoTest`, \
             which starts it (cluster.sh start-kerberos), or set OFFSETKEEPER_KERBEROS_ENV",
            file.display()
        );
        KerberosCluster {
            vars: read_env_file(&file),
        }
    });
    SHARED.clone()
}

/// A cluster of its own, for tests that stop servers. Stopped when dropped.
pub struct PrivateCluster {
    pub dir: PathBuf,
    pub cluster: Cluster,
}

impl PrivateCluster {
    pub fn start(name: &str) -> PrivateCluster {
        let dir = repo_root().join("build").join(unique(name));
        cluster_script("start", &dir);
        let cluster = cluster_from_file(&dir.join("cluster.env"));
        PrivateCluster { dir, cluster }
    }

    /// Runs `cluster.sh <command>` on this cluster: stop-kafka, start-kafka, stop-zk, start-zk.
    pub fn run(&self, command: &str) {
        cluster_script(command, &self.dir);
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        cluster_script("stop", &self.dir);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn cluster_script(command: &str, dir: &Path) {
    let script = std::env::var("OFFSETKEEPER_CLUSTER_SCRIPT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("tests/cluster/cluster.sh"));
    let status = Command::new("bash")
        .arg(&script)
        .arg(command)
        .arg(dir)
        .status()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", script.display()));
    assert!(
        status.success(),
        "cluster.sh {command} {} failed: {status}",
        dir.display()
    );
}

/// A name no other test or run uses.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{prefix}-{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A keeper on `cluster` with the default policy and the given extra `kafkaParams`.
pub fn keeper_with(
    cluster: &Cluster,
    extra: &[(&str, &str)],
    tweak: impl FnOnce(&mut KeeperConfig),
) -> OffsetKeeper {
    let mut params = vec![("bootstrap.servers", cluster.bootstrap.as_str())];
    params.extend_from_slice(extra);
    let settings = KafkaSettings::from_params(params).expect("kafka params");
    let mut config = KeeperConfig::new(ZkConfig::new(cluster.zookeeper.clone()), settings);
    tweak(&mut config);
    OffsetKeeper::open(config).expect("open keeper")
}

/// The same offset for partitions `0..partitions` of a topic.
pub fn batch(topic: &str, partitions: i32, value: i64) -> Vec<(offsetkeeper::TopicPartition, i64)> {
    (0..partitions)
        .map(|p| (offsetkeeper::TopicPartition::new(topic, p), value))
        .collect()
}

pub fn keeper(cluster: &Cluster) -> OffsetKeeper {
    keeper_with(cluster, &[], |_| {})
}

/// Kafka administration through the real broker.
pub struct Kafka {
    admin: AdminClient<DefaultClientContext>,
    config: ClientConfig,
    /// The cluster's ZooKeeper, which brokers in ZooKeeper mode keep their topics in.
    zookeeper: String,
}

const ADMIN_TIMEOUT: Duration = Duration::from_secs(30);

impl Kafka {
    pub fn new(cluster: &Cluster) -> Kafka {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", &cluster.bootstrap);
        Kafka {
            admin: config.create().expect("admin client"),
            config,
            zookeeper: cluster.zookeeper.clone(),
        }
    }

    fn options() -> AdminOptions {
        AdminOptions::new().operation_timeout(Some(ADMIN_TIMEOUT))
    }

    /// Creates a topic, retrying while an earlier deletion of the same name completes.
    pub fn create_topic(&self, topic: &str, partitions: i32) {
        self.create_replicated_topic(topic, partitions, 1);
    }

    /// [`Kafka::create_topic`] with `replicas` copies of each partition.
    pub fn create_replicated_topic(&self, topic: &str, partitions: i32, replicas: i32) {
        self.create_topic_with(topic, partitions, replicas, &[]);
    }

    /// Creates a topic with topic-level `config` (`retention.ms`, ...), retrying while an
    /// earlier deletion of the same name completes.
    pub fn create_topic_with(
        &self,
        topic: &str,
        partitions: i32,
        replicas: i32,
        config: &[(&str, &str)],
    ) {
        let deadline = Instant::now() + ADMIN_TIMEOUT;
        loop {
            let mut new = NewTopic::new(topic, partitions, TopicReplication::Fixed(replicas));
            for (key, value) in config {
                new = new.set(key, value);
            }
            let results = RUNTIME
                .block_on(self.admin.create_topics([&new], &Self::options()))
                .expect("create topics");
            match &results[0] {
                Ok(_) => break,
                Err((_, code)) if Instant::now() < deadline => {
                    eprintln!("create {topic}: {code:?}; retrying");
                    std::thread::sleep(Duration::from_millis(300));
                }
                Err((_, code)) => panic!("create topic {topic}: {code:?}"),
            }
        }
        self.wait_for_partitions(topic, partitions);
    }

    pub fn delete_topic(&self, topic: &str) {
        let results = RUNTIME
            .block_on(self.admin.delete_topics(&[topic], &Self::options()))
            .expect("delete topics");
        results[0].as_ref().expect("delete topic");
        let deadline = Instant::now() + ADMIN_TIMEOUT;
        while self.partition_count(topic) != 0 {
            assert!(
                Instant::now() < deadline,
                "topic {topic} still present after delete"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Grows a topic to `total` partitions: with CreatePartitions (Kafka 1.0+), else by
    /// writing the new partition assignment to the topic's znode in ZooKeeper, as
    /// kafka-topics.sh --alter did before Kafka 1.0 (the controller watches that znode).
    pub fn add_partitions(&self, topic: &str, total: usize) {
        if capabilities().create_partitions {
            let new = NewPartitions::new(topic, total);
            let results = RUNTIME
                .block_on(self.admin.create_partitions([&new], &Self::options()))
                .expect("create partitions");
            results[0].as_ref().expect("add partitions");
        } else {
            self.add_partitions_in_zookeeper(topic, total);
        }
        self.wait_for_partitions(topic, total as i32);
    }

    /// The new partitions go to the replicas of partition 0.
    fn add_partitions_in_zookeeper(&self, topic: &str, total: usize) {
        assert!(
            capabilities().zookeeper_mode,
            "Kafka {} keeps no topics in ZooKeeper",
            capabilities().kafka
        );
        let zk = Zk::new(&Cluster {
            zookeeper: self.zookeeper.clone(),
            bootstrap: String::new(),
        });
        let path = format!("/brokers/topics/{topic}");
        let data = zk
            .get(&path)
            .unwrap_or_else(|| panic!("no {path} in ZooKeeper {}", self.zookeeper));
        let mut assignment: serde_json::Value =
            serde_json::from_slice(&data).unwrap_or_else(|err| panic!("{path}: {err}"));
        let partitions = assignment
            .get_mut("partitions")
            .and_then(|p| p.as_object_mut())
            .unwrap_or_else(|| panic!("{path} has no partitions"));
        let replicas = partitions
            .get("0")
            .cloned()
            .unwrap_or_else(|| panic!("{path} has no partition 0"));
        for partition in partitions.len()..total {
            partitions.insert(partition.to_string(), replicas.clone());
        }
        zk.put(&path, assignment.to_string().as_bytes());
    }

    /// Creates `topic` with `records[p]` records in each partition p, the first `below` of
    /// each `(partition, below)` in `purged` gone, as retention leaves a log: the partition's
    /// earliest offset is `below`. With deleteRecords where the brokers have it (see
    /// [`Capabilities::delete_records`]), else (or with OFFSETKEEPER_PURGE_BY=retention) by time
    /// retention: the topic rolls a segment when record timestamps are a day apart and keeps a
    /// day, the records to purge carry timestamps ten days old and go first, in a segment of
    /// their own, which the broker then deletes (the clusters check retention every second).
    pub fn create_purged_topic(&self, topic: &str, records: &[usize], purged: &[(i32, i64)]) {
        let partitions = records.len() as i32;
        let by_retention = !capabilities().delete_records
            || std::env::var("OFFSETKEEPER_PURGE_BY").as_deref() == Ok("retention");
        if !by_retention {
            self.create_topic(topic, partitions);
            for (partition, count) in (0..).zip(records) {
                self.produce(topic, partition, *count);
            }
            for (partition, below) in purged {
                self.delete_records(topic, *partition, *below);
            }
            return;
        }
        const DAY_MS: i64 = 24 * 3600 * 1000;
        let day = DAY_MS.to_string();
        self.create_topic_with(
            topic,
            partitions,
            1,
            &[("segment.ms", &day), ("retention.ms", &day)],
        );
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_millis() as i64;
        for (partition, count) in (0..).zip(records) {
            let below = purged
                .iter()
                .find(|(p, _)| *p == partition)
                .map_or(0, |(_, below)| *below);
            assert!(
                below as usize <= *count,
                "{topic}-{partition}: cannot purge below {below} of {count} records"
            );
            if below > 0 {
                let old: Vec<i64> = (0..below).map(|i| now - 10 * DAY_MS + i).collect();
                self.produce_at(topic, partition, &old);
            }
            self.produce(topic, partition, count - below as usize);
        }
        let consumer: BaseConsumer = self.config.create().expect("consumer");
        let deadline = Instant::now() + Duration::from_secs(60);
        for (partition, below) in purged {
            loop {
                let marks = consumer.fetch_watermarks(topic, *partition, ADMIN_TIMEOUT);
                if matches!(marks, Ok((low, _)) if low == *below) {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "retention did not purge {topic}-{partition} below {below} in 60 s: {marks:?}"
                );
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }

    /// Kafka's deleteRecords: what retention does, on demand. Kafka 0.11+ only: a test that
    /// runs on older brokers stages with [`Kafka::create_purged_topic`].
    pub fn delete_records(&self, topic: &str, partition: i32, before: i64) {
        assert!(
            capabilities().delete_records,
            "staging needs deleteRecords (Kafka 0.11+), which Kafka {} lacks: stage the purge \
             with Kafka::create_purged_topic",
            capabilities().kafka
        );
        let mut list = TopicPartitionList::new();
        list.add_partition_offset(topic, partition, Offset::Offset(before))
            .expect("partition list");
        let result = RUNTIME
            .block_on(self.admin.delete_records(&list, &Self::options()))
            .expect("delete records");
        for element in result.elements() {
            element.error().expect("delete records of partition");
        }
    }

    /// Produces `count` records to one partition and waits until they are acknowledged.
    /// A new producer each time, so partitions added since are known to it.
    pub fn produce(&self, topic: &str, partition: i32, count: usize) {
        self.send_all(topic, partition, (0..count).map(|_| None));
    }

    /// Produces one record per timestamp (milliseconds since the epoch, as the record's
    /// CreateTime) to one partition, in order, and waits until they are acknowledged.
    pub fn produce_at(&self, topic: &str, partition: i32, timestamps: &[i64]) {
        self.send_all(topic, partition, timestamps.iter().map(|t| Some(*t)));
    }

    fn send_all(&self, topic: &str, partition: i32, timestamps: impl Iterator<Item = Option<i64>>) {
        let producer: BaseProducer = self.config.create().expect("producer");
        let deadline = Instant::now() + ADMIN_TIMEOUT;
        for (i, timestamp) in timestamps.enumerate() {
            // Keyed, so that compacted topics take them too.
            let (key, payload) = (format!("key-{i}"), format!("record-{i}"));
            let mut record = BaseRecord::<String, String>::to(topic)
                .partition(partition)
                .key(&key)
                .payload(&payload);
            if let Some(timestamp) = timestamp {
                record = record.timestamp(timestamp);
            }
            loop {
                match producer.send(record) {
                    Ok(()) => break,
                    Err((err, returned)) => {
                        assert!(
                            Instant::now() < deadline,
                            "produce to {topic}-{partition}: {err}"
                        );
                        producer.poll(Duration::from_millis(50));
                        record = returned;
                    }
                }
            }
        }
        producer.flush(ADMIN_TIMEOUT).expect("flush producer");
    }

    /// The offsets a Kafka consumer group committed for the partitions of a topic; `None` where
    /// it committed none.
    pub fn group_offsets(&self, group: &str, topic: &str, partitions: &[i32]) -> Vec<Option<i64>> {
        let consumer = self.group_consumer(group);
        let mut list = TopicPartitionList::new();
        for partition in partitions {
            list.add_partition(topic, *partition);
        }
        let committed = consumer
            .committed_offsets(list, ADMIN_TIMEOUT)
            .expect("committed offsets");
        partitions
            .iter()
            .map(|partition| {
                match committed
                    .find_partition(topic, *partition)
                    .map(|e| e.offset())
                {
                    Some(Offset::Offset(offset)) => Some(offset),
                    _ => None,
                }
            })
            .collect()
    }

    /// Commits offsets for a Kafka consumer group, as a consumer outside the group.
    pub fn commit_group(&self, group: &str, topic: &str, offsets: &[(i32, i64)]) {
        let consumer = self.group_consumer(group);
        let mut list = TopicPartitionList::new();
        for (partition, offset) in offsets {
            list.add_partition_offset(topic, *partition, Offset::Offset(*offset))
                .expect("partition list");
        }
        consumer
            .commit(&list, CommitMode::Sync)
            .expect("commit group offsets");
    }

    fn group_consumer(&self, group: &str) -> BaseConsumer {
        let mut config = self.config.clone();
        config
            .set("group.id", group)
            .set("enable.auto.commit", "false");
        config.create().expect("group consumer")
    }

    /// A consumer of the group (`extra`: further settings) subscribed to the topic, returned
    /// once the coordinator has given it its partitions: a live member of another kind.
    pub fn subscribed_member(
        &self,
        group: &str,
        topic: &str,
        extra: &[(&str, &str)],
    ) -> BaseConsumer {
        let mut config = self.config.clone();
        config
            .set("group.id", group)
            .set("enable.auto.commit", "false");
        for (key, value) in extra {
            config.set(*key, *value);
        }
        let consumer: BaseConsumer = config.create().expect("consumer");
        consumer.subscribe(&[topic]).expect("subscribe");
        let deadline = Instant::now() + ADMIN_TIMEOUT;
        while consumer.assignment().map_or(0, |a| a.count()) == 0 {
            assert!(
                Instant::now() < deadline,
                "the consumer of group {group} never got its assignment"
            );
            let _ = consumer.poll(Duration::from_millis(100));
        }
        consumer
    }

    pub fn partition_count(&self, topic: &str) -> usize {
        self.admin
            .inner()
            .fetch_metadata(Some(topic), ADMIN_TIMEOUT)
            .map(|m| {
                m.topics()
                    .iter()
                    .filter(|t| t.error().is_none())
                    .map(|t| t.partitions().len())
                    .sum()
            })
            .unwrap_or(0)
    }

    /// The leader (broker id) of each partition of `topic`, -1 where it has none.
    pub fn leaders(&self, topic: &str) -> Vec<(i32, i32)> {
        let metadata = self
            .admin
            .inner()
            .fetch_metadata(Some(topic), ADMIN_TIMEOUT)
            .expect("topic metadata");
        metadata
            .topics()
            .iter()
            .flat_map(|t| t.partitions().iter().map(|p| (p.id(), p.leader())))
            .collect()
    }

    fn wait_for_partitions(&self, topic: &str, partitions: i32) {
        let deadline = Instant::now() + ADMIN_TIMEOUT;
        while self.partition_count(topic) != partitions as usize {
            assert!(
                Instant::now() < deadline,
                "topic {topic} has no {partitions} partitions in time"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The servers' version as the engine learns it (`srvr`), or the protocol every version takes
/// when they do not tell.
pub async fn zk_server_version(connect: &str) -> ServerVersion {
    server_version::detect(connect, Duration::from_secs(10), None)
        .await
        .expect("a valid connect string")
        .lowest
        .unwrap_or(ServerVersion::CONSERVATIVE)
}

/// A plain zookeeper-client connector that sends only requests the servers understand.
pub async fn zk_connector(connect: &str) -> zk::Connector {
    let version = zk_server_version(connect).await;
    zk::Client::connector().with_server_version(version.major, version.minor, version.patch)
}

/// Raw ZooKeeper access, to stage znodes and read back what offsetkeeper wrote.
pub struct Zk {
    client: zk::Client,
}

impl Zk {
    pub fn new(cluster: &Cluster) -> Zk {
        let client = RUNTIME
            .block_on(async {
                zk_connector(&cluster.zookeeper)
                    .await
                    .connect(&cluster.zookeeper)
                    .await
            })
            .expect("connect to ZooKeeper");
        Zk { client }
    }

    pub fn get(&self, path: &str) -> Option<Vec<u8>> {
        match RUNTIME.block_on(self.client.get_data(path)) {
            Ok((data, _)) => Some(data),
            Err(zk::Error::NoNode) => None,
            Err(err) => panic!("get {path}: {err}"),
        }
    }

    /// The node's modification time (the ZooKeeper server's clock), milliseconds since the epoch.
    pub fn mtime(&self, path: &str) -> i64 {
        match RUNTIME.block_on(self.client.get_data(path)) {
            Ok((_, stat)) => stat.mtime,
            Err(err) => panic!("get {path}: {err}"),
        }
    }

    /// Writes a raw value, creating the node and its parents.
    pub fn put(&self, path: &str, data: &[u8]) {
        let options = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        RUNTIME.block_on(async {
            if let Some((parent, _)) = path.rsplit_once('/').filter(|(p, _)| !p.is_empty()) {
                self.client.mkdir(parent, &options).await.expect("mkdir");
            }
            match self.client.create(path, data, &options).await {
                Ok(_) => {}
                Err(zk::Error::NodeExists) => {
                    self.client
                        .set_data(path, data, None)
                        .await
                        .expect("set data");
                }
                Err(err) => panic!("create {path}: {err}"),
            }
        });
    }

    /// Makes a node read-only for everyone, so that any write to it fails.
    pub fn make_read_only(&self, path: &str) {
        let read_only = [zk::Acl::new(zk::Permission::READ, zk::AuthId::anyone())];
        RUNTIME
            .block_on(self.client.set_acl(path, &read_only, None))
            .expect("set acl");
    }
}

/// The stored offset path, in Kafka's old consumer layout.
pub fn offset_path(group: &str, topic: &str, partition: i32) -> String {
    format!("/consumers/{group}/offsets/{topic}/{partition}")
}

/// A TCP proxy on loopback between a client and a server, which can cut the network: open
/// connections are closed and new ones refused until it heals. With the cut longer than the
/// client's session timeout, ZooKeeper expires the session, as after a real network partition.
pub struct Proxy {
    pub address: String,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    open: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
}

impl Proxy {
    /// A proxy to `target` (`host:port`), listening on a free loopback port.
    pub fn to(target: &str) -> Proxy {
        use std::net::{TcpListener, TcpStream};
        use std::sync::atomic::AtomicBool;
        use std::sync::{Arc, Mutex};
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let address = listener.local_addr().expect("proxy address").to_string();
        let cut = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
        let (target, flag, streams) = (target.to_string(), cut.clone(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if flag.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                for stream in [&client, &server] {
                    if let Ok(clone) = stream.try_clone() {
                        streams.lock().unwrap().push(clone);
                    }
                }
                for (mut from, mut to) in [
                    (client.try_clone(), server.try_clone()),
                    (server.try_clone(), client.try_clone()),
                ]
                .into_iter()
                .filter_map(|(a, b)| Some((a.ok()?, b.ok()?)))
                {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                        let _ = from.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Proxy { address, cut, open }
    }

    /// Cuts the network: every open connection is closed, new ones are refused.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for stream in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    pub fn heal(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

/// Expires a keeper's ZooKeeper session as a network partition does: the keeper reaches
/// ZooKeeper through `proxy`, which is cut until ZooKeeper expired the session (`ids` nodes of
/// the group gone, bounded by 30 s), then healed. The keeper notices at its next call.
pub fn expire_through(proxy: &Proxy, zk: &Zk, group: &str) {
    proxy.cut();
    let ids = format!("/consumers/{group}/ids");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !zk.children(&ids).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the session did not expire in 30 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    proxy.heal();
}

impl Zk {
    /// The children of a node, sorted; empty when it does not exist.
    pub fn children(&self, path: &str) -> Vec<String> {
        match RUNTIME.block_on(self.client.list_children(path)) {
            Ok(mut children) => {
                children.sort();
                children
            }
            Err(zk::Error::NoNode) => Vec::new(),
            Err(err) => panic!("list {path}: {err}"),
        }
    }

    /// The owner nodes of a topic in a group, sorted, once there are `count` of them: a load's
    /// owner nodes follow it in the background. Panics after 10 s with what is there.
    pub fn owners(&self, group: &str, topic: &str, count: usize) -> Vec<String> {
        let dir = format!("/consumers/{group}/owners/{topic}");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let children = self.children(&dir);
            if children.len() == count {
                return children;
            }
            assert!(
                Instant::now() < deadline,
                "{dir}: {} owner node(s) after 10 s, expected {count}: {children:?}",
                children.len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the node exists and is ephemeral.
    /// The session owning the node: `None` when it does not exist, 0 for a persistent node.
    pub fn ephemeral_owner(&self, path: &str) -> Option<i64> {
        match RUNTIME.block_on(self.client.check_stat(path)) {
            Ok(stat) => stat.map(|stat| stat.ephemeral_owner),
            Err(err) => panic!("stat {path}: {err}"),
        }
    }

    pub fn is_ephemeral(&self, path: &str) -> bool {
        match RUNTIME.block_on(self.client.check_stat(path)) {
            Ok(Some(stat)) => stat.ephemeral_owner != 0,
            Ok(None) => false,
            Err(err) => panic!("stat {path}: {err}"),
        }
    }

    /// Every node under `path` with its data, depth first, `path` included; empty when it does
    /// not exist. For proving that nothing was written.
    pub fn tree(&self, path: &str) -> Vec<(String, Vec<u8>)> {
        let mut nodes = Vec::new();
        let mut stack = vec![path.to_string()];
        while let Some(next) = stack.pop() {
            let Some(data) = self.get(&next) else {
                continue;
            };
            for child in self.children(&next) {
                stack.push(format!("{next}/{child}"));
            }
            nodes.push((next, data));
        }
        nodes.sort();
        nodes
    }
}

/// A ZooKeeper ensemble of its own (`tests/cluster/ensemble.sh`), for tests that crash, stop
/// and freeze its nodes. Nodes are numbered from 1. Stopped and removed when dropped.
pub struct Ensemble {
    pub dir: PathBuf,
    /// The connect string of every node.
    pub connect: String,
}

impl Ensemble {
    pub fn start(name: &str, nodes: usize) -> Ensemble {
        Ensemble::start_with_env(name, nodes, &[])
    }

    /// [`Ensemble::start`] with `env` in the servers' environment (e.g. libfaketime's).
    pub fn start_with_env(name: &str, nodes: usize, env: &[(&str, &str)]) -> Ensemble {
        let dir = repo_root().join("build").join(unique(name));
        ensemble_script_with_env(&["start", &dir.to_string_lossy(), &nodes.to_string()], env);
        let vars = read_env_file(&dir.join("ensemble.env"));
        let connect = vars
            .get("OFFSETKEEPER_ZK")
            .cloned()
            .expect("ensemble.env has OFFSETKEEPER_ZK");
        Ensemble { dir, connect }
    }

    /// `ensemble.sh <command> DIR <node>`: stop-node, kill-node, start-node, freeze, thaw.
    pub fn node(&self, command: &str, node: usize) {
        ensemble_script(&[command, &self.dir.to_string_lossy(), &node.to_string()]);
    }
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        ensemble_script(&["stop", &self.dir.to_string_lossy()]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ensemble_script(args: &[&str]) {
    ensemble_script_with_env(args, &[]);
}

fn ensemble_script_with_env(args: &[&str], env: &[(&str, &str)]) {
    let script = repo_root().join("tests/cluster/ensemble.sh");
    let status = Command::new("bash")
        .arg(&script)
        .args(args)
        .envs(env.iter().copied())
        .status()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", script.display()));
    assert!(status.success(), "ensemble.sh {args:?} failed: {status}");
}

/// A Kafka 4 KRaft cluster of its own (`tests/cluster/kraft.sh`): N combined broker+controller
/// nodes, node I has broker id I. Stopped and removed when dropped. Its jars come from
/// `gradle kraftClasspath` (build/kraft/classpath.txt, or OFFSETKEEPER_KRAFT_CLASSPATH); without
/// them kraft.sh fails and so does the test.
pub struct KraftCluster {
    pub dir: PathBuf,
    /// bootstrap.servers: every node.
    pub bootstrap: String,
    /// The broker port of each node, node 1 first.
    pub ports: Vec<u16>,
}

impl KraftCluster {
    pub fn start(name: &str, nodes: usize) -> KraftCluster {
        KraftCluster::start_with(name, nodes, &[])
    }

    /// [`KraftCluster::start`] with `broker_properties` added to every node's
    /// server.properties, over kraft.sh's defaults (its OFFSETKEEPER_KRAFT_BROKER_PROPERTIES),
    /// e.g. `[("offsets.retention.minutes", "1")]`. None at all whatever the environment says.
    pub fn start_with(
        name: &str,
        nodes: usize,
        broker_properties: &[(&str, &str)],
    ) -> KraftCluster {
        let properties: String = broker_properties
            .iter()
            .map(|(key, value)| {
                assert!(
                    !key.is_empty() && !key.contains(['=', '\n']) && !value.contains('\n'),
                    "not a broker property: {key:?}={value:?}"
                );
                format!("{key}={value}\n")
            })
            .collect();
        let dir = repo_root().join("build").join(unique(name));
        kraft_script_with(
            &["start", &dir.to_string_lossy(), &nodes.to_string()],
            &[("OFFSETKEEPER_KRAFT_BROKER_PROPERTIES", properties.as_str())],
        );
        let vars = read_env_file(&dir.join("kraft.env"));
        let bootstrap = vars
            .get("OFFSETKEEPER_BOOTSTRAP")
            .cloned()
            .expect("kraft.env has OFFSETKEEPER_BOOTSTRAP");
        let ports = (1..=nodes)
            .map(|i| {
                vars.get(&format!("KRAFT_NODE_{i}_PORT"))
                    .and_then(|port| port.parse().ok())
                    .unwrap_or_else(|| panic!("kraft.env has no KRAFT_NODE_{i}_PORT"))
            })
            .collect();
        KraftCluster {
            dir,
            bootstrap,
            ports,
        }
    }

    /// `kraft.sh <command> DIR <node>`: kill-node, stop-node, start-node.
    pub fn node(&self, command: &str, node: usize) {
        kraft_script(&[command, &self.dir.to_string_lossy(), &node.to_string()]);
    }

    /// This cluster's brokers with `zookeeper` for the offsets.
    pub fn with_zookeeper(&self, zookeeper: &str) -> Cluster {
        Cluster {
            zookeeper: zookeeper.to_string(),
            bootstrap: self.bootstrap.clone(),
        }
    }
}

impl Drop for KraftCluster {
    fn drop(&mut self) {
        kraft_script(&["stop", &self.dir.to_string_lossy()]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn kraft_script(args: &[&str]) {
    kraft_script_with(args, &[]);
}

/// `kraft.sh` with `env` set for it.
fn kraft_script_with(args: &[&str], env: &[(&str, &str)]) {
    let script = repo_root().join("tests/cluster/kraft.sh");
    let status = Command::new("bash")
        .arg(&script)
        .args(args)
        .envs(env.iter().copied())
        .status()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", script.display()));
    assert!(status.success(), "kraft.sh {args:?} failed: {status}");
}

static WARNINGS: Lazy<std::sync::Mutex<Vec<String>>> =
    Lazy::new(|| std::sync::Mutex::new(Vec::new()));

/// Keeps the WARN and ERROR lines of this test binary (see [`warnings`]).
struct WarningCapture;

impl log::Log for WarningCapture {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::Level::Warn
    }
    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            WARNINGS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(record.args().to_string());
        }
    }
    fn flush(&self) {}
}

/// Makes this binary's logger keep its WARN and ERROR lines for [`warnings`]; once per binary,
/// and only in binaries that install no logger of their own.
pub fn capture_warnings() {
    static INSTALLED: Lazy<()> = Lazy::new(|| {
        let _ = log::set_logger(&WarningCapture);
        log::set_max_level(log::LevelFilter::Warn);
    });
    Lazy::force(&INSTALLED);
}

/// The WARN and ERROR lines logged since [`capture_warnings`], in order.
pub fn warnings() -> Vec<String> {
    WARNINGS.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The path of libfaketime.so.1, read from the file `OFFSETKEEPER_LIBFAKETIME_FILE` names (Gradle's
/// `:jvm:libfaketime` writes it), else from what `tests/cluster/libfaketime.sh` finds or installs.
pub fn libfaketime() -> String {
    let file = match std::env::var("OFFSETKEEPER_LIBFAKETIME_FILE") {
        Ok(file) => PathBuf::from(file),
        Err(_) => {
            let file = repo_root().join("build/libfaketime.path");
            let script = repo_root().join("tests/cluster/libfaketime.sh");
            let status = Command::new("bash")
                .arg(&script)
                .arg(&file)
                .status()
                .unwrap_or_else(|err| panic!("cannot run {}: {err}", script.display()));
            assert!(status.success(), "libfaketime.sh failed: {status}");
            file
        }
    };
    let library = std::fs::read_to_string(&file)
        .unwrap_or_else(|err| panic!("{}: {err}", file.display()))
        .trim()
        .to_string();
    assert!(
        Path::new(&library).is_file(),
        "no libfaketime at {library} (from {})",
        file.display()
    );
    library
}
