//! ZooKeeper authentication and ACLs against real servers: digest auth with a creator-only ACL
//! on the open test cluster, SASL (DIGEST-MD5) on the secured one (`cluster.sh start-secure`).
//! Every log line and error message of these tests is captured and must hold no secret.

mod support;

use std::sync::Mutex;
use std::time::Duration;

use offsetkeeper::zookeeper::{VersionSource, ZkSecurity};
use offsetkeeper::{Error, KafkaSettings, KeeperConfig, OffsetKeeper, TopicPartition, ZkConfig};
use once_cell::sync::Lazy;
use support::{cluster, offset_path, secure_cluster, unique, Cluster, Kafka};
use zookeeper_client as zk;

/// Everything logged by the engine in this test binary.
static LOGGED: Lazy<Mutex<Vec<String>>> = Lazy::new(|| Mutex::new(Vec::new()));

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        LOGGED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("{} {}", record.level(), record.args()));
    }
    fn flush(&self) {}
}

fn capture_logs() {
    static INSTALLED: Lazy<()> = Lazy::new(|| {
        log::set_logger(&Capture).expect("one logger");
        log::set_max_level(log::LevelFilter::Trace);
    });
    Lazy::force(&INSTALLED);
}

/// Fails when any secret appears in what was logged or in `printed`.
fn assert_no_secret(printed: &[String], secrets: &[&str]) {
    let logged = LOGGED.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for text in logged.iter().chain(printed) {
        for secret in secrets {
            assert!(!text.contains(secret), "a secret was printed: {text}");
        }
    }
}

fn keeper(zookeeper: &str, bootstrap: &str, properties: &[(&str, &str)]) -> OffsetKeeper {
    try_keeper(zookeeper, bootstrap, properties).expect("open keeper")
}

fn try_keeper(
    zookeeper: &str,
    bootstrap: &str,
    properties: &[(&str, &str)],
) -> offsetkeeper::Result<OffsetKeeper> {
    keeper_with_kafka(zookeeper, properties, &[("bootstrap.servers", bootstrap)])
}

fn keeper_with_kafka(
    zookeeper: &str,
    properties: &[(&str, &str)],
    kafka_params: &[(&str, &str)],
) -> offsetkeeper::Result<OffsetKeeper> {
    let mut zk = ZkConfig::new(zookeeper);
    zk.security = ZkSecurity::from_properties(properties.iter().copied())?;
    zk.request_timeout = Duration::from_secs(5);
    let kafka = KafkaSettings::from_params(kafka_params.iter().copied())?;
    let mut config = KeeperConfig::new(zk, kafka);
    config.kafka_timeout = Some(Duration::from_secs(5));
    OffsetKeeper::open(config)
}

/// A keeper with `properties`, its offsets under `base_path`.
fn keeper_under(
    zookeeper: &str,
    bootstrap: &str,
    base_path: &str,
    properties: &[(&str, &str)],
) -> OffsetKeeper {
    let mut zk = ZkConfig::new(zookeeper);
    zk.security = ZkSecurity::from_properties(properties.iter().copied()).expect("security");
    zk.request_timeout = Duration::from_secs(5);
    zk.base_path = base_path.to_string();
    let kafka = KafkaSettings::from_params([("bootstrap.servers", bootstrap)]).expect("kafka");
    let mut config = KeeperConfig::new(zk, kafka);
    config.kafka_timeout = Some(Duration::from_secs(5));
    OffsetKeeper::open(config).expect("open keeper")
}

fn topic_with(cluster: &Cluster, partitions: i32) -> String {
    let kafka = Kafka::new(cluster);
    let topic = unique("sec");
    kafka.create_topic(&topic, partitions);
    for p in 0..partitions {
        kafka.produce(&topic, p, 10);
    }
    topic
}

fn batch(topic: &str, offsets: &[i64]) -> Vec<(TopicPartition, i64)> {
    offsets
        .iter()
        .enumerate()
        .map(|(p, o)| (TopicPartition::new(topic, p as i32), *o))
        .collect()
}

fn refs<'a>(pairs: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    pairs.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// A plain client, with digest credentials when given.
fn client(zookeeper: &str, digest: Option<&str>) -> (tokio::runtime::Runtime, zk::Client) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let mut connector = runtime.block_on(support::zk_connector(zookeeper));
    if let Some(credentials) = digest {
        connector = connector.with_auth("digest", credentials.as_bytes());
    }
    let client = runtime
        .block_on(connector.connect(zookeeper))
        .expect("connect");
    (runtime, client)
}

/// The base path's folders are shared by every group: created open to all (as Kafka keeps
/// `/consumers`), so one identity's creator-only ACL shuts no other identity out of its own
/// groups; the group's own nodes carry the creator's ACL.
#[test]
fn a_creator_only_acl_leaves_the_base_path_open_to_other_identities() {
    let cluster = cluster();
    let topic = topic_with(&cluster, 1);
    let base = format!("/{}/consumers", unique("shared"));
    let (zookeeper, bootstrap) = (cluster.zookeeper.as_str(), cluster.bootstrap.as_str());
    let topics = std::slice::from_ref(&topic);
    for (user, group) in [("alice", unique("alice")), ("bob", unique("bob"))] {
        let auth = format!("digest:{user}:{user}-Secret-3");
        let keeper = keeper_under(
            zookeeper,
            bootstrap,
            &base,
            &[
                ("zookeeper.auth", auth.as_str()),
                ("zookeeper.acl", "creator"),
            ],
        );
        keeper.load(&group, topics).unwrap();
        keeper.commit(&group, &batch(&topic, &[4])).unwrap();
        let (runtime, plain) = client(zookeeper, None);
        for shared in [
            base.rsplit_once('/').map_or("/", |(parent, _)| parent),
            &base,
        ] {
            let (acls, _) = runtime.block_on(plain.get_acl(shared)).unwrap();
            assert_eq!(acls, zk::Acls::anyone_all().to_vec(), "{shared}");
        }
        // Reading a node's ACL needs READ on it: as its creator.
        let (runtime, creator) = client(zookeeper, Some(&format!("{user}:{user}-Secret-3")));
        let (acls, _) = runtime
            .block_on(creator.get_acl(&format!("{base}/{group}")))
            .unwrap();
        assert_eq!(acls.len(), 1, "{acls:?}");
        assert!(acls[0].id().starts_with(&format!("{user}:")), "{acls:?}");
    }
}

#[test]
fn digest_auth_with_a_creator_only_acl_keeps_other_clients_out() {
    capture_logs();
    let cluster = cluster();
    let topic = topic_with(&cluster, 2);
    let group = unique("digest");
    let (zookeeper, bootstrap) = (cluster.zookeeper.as_str(), cluster.bootstrap.as_str());
    let alice = [
        ("zookeeper.auth", "digest:alice:Alice-Secret-1"),
        ("zookeeper.acl", "creator"),
    ];
    let topics = std::slice::from_ref(&topic);
    let owner = keeper(zookeeper, bootstrap, &alice);
    owner.load(&group, topics).unwrap();
    owner.commit(&group, &batch(&topic, &[5, 6])).unwrap();

    // Nodes carry alice's digest identity only; a client without it can neither read nor
    // change them.
    let path = offset_path(&group, &topic, 0);
    let (runtime, authed) = client(zookeeper, Some("alice:Alice-Secret-1"));
    let (acls, _) = runtime.block_on(authed.get_acl(&path)).unwrap();
    assert_eq!(acls.len(), 1, "{acls:?}");
    assert_eq!(
        (acls[0].scheme(), acls[0].permission()),
        ("digest", zk::Permission::ALL)
    );
    assert!(acls[0].id().starts_with("alice:"), "{acls:?}");
    let (runtime, other) = client(zookeeper, None);
    assert_eq!(
        runtime
            .block_on(other.set_data(&path, b"0", None))
            .unwrap_err(),
        zk::Error::NoAuth
    );
    assert_eq!(
        runtime.block_on(other.get_data(&path)).unwrap_err(),
        zk::Error::NoAuth
    );
    drop(owner);

    // Wrong credentials: a clear authorization error that names no secret.
    let mallory = [
        ("zookeeper.auth", "digest:alice:Wrong-Secret-2"),
        ("zookeeper.acl", "creator"),
    ];
    let err = keeper(zookeeper, bootstrap, &mallory)
        .load(&group, topics)
        .unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(
            err,
            Error::ZooKeeper {
                source: zk::Error::NoAuth,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(message.contains("zookeeper.auth"), "{message}");
    // Which identity the session presents, and that it may not read the ACL either.
    assert!(
        message.contains(
            "the node's ACL does not admit this session's identity; the session is authenticated as digest:alice:… (zookeeper.auth); the node's ACL is not readable by this session either"
        ),
        "{message}"
    );

    // The right credentials again: the committed offsets are there.
    let loaded = keeper(zookeeper, bootstrap, &alice)
        .load(&group, topics)
        .unwrap();
    assert_eq!(loaded.offsets().map(|(_, o)| o).collect::<Vec<_>>(), [5, 6]);
    assert_no_secret(&[message], &["Alice-Secret-1", "Wrong-Secret-2"]);
}

#[test]
fn an_explicit_acl_list_is_put_on_every_node_created() {
    capture_logs();
    let cluster = cluster();
    let topic = topic_with(&cluster, 1);
    let group = unique("acl-list");
    let list = [("zookeeper.acl", "world:anyone:crwd")];
    let owner = keeper(&cluster.zookeeper, &cluster.bootstrap, &list);
    owner.load(&group, std::slice::from_ref(&topic)).unwrap();
    owner.commit(&group, &batch(&topic, &[3])).unwrap();
    let (runtime, other) = client(&cluster.zookeeper, None);
    for path in [
        offset_path(&group, &topic, 0),
        format!("/consumers/{group}/offsets/{topic}"),
        format!("/consumers/{group}/owners/{topic}/0"),
    ] {
        let (acls, _) = runtime.block_on(other.get_acl(&path)).unwrap();
        assert_eq!(acls.len(), 1, "{path}: {acls:?}");
        assert_eq!(
            (acls[0].scheme(), acls[0].id(), acls[0].permission()),
            (
                "world",
                "anyone",
                zk::Permission::CREATE
                    | zk::Permission::READ
                    | zk::Permission::WRITE
                    | zk::Permission::DELETE
            ),
            "{path}"
        );
    }
}

#[test]
fn sasl_digest_md5_loads_and_commits_and_wrong_credentials_fail_clearly() {
    capture_logs();
    let secure = secure_cluster();
    let servers = secure.plaintext();
    let topic = topic_with(&servers, 2);
    let topics = std::slice::from_ref(&topic);
    let group = unique("sasl");
    let password = secure.get("ZK_PASSWORD").to_string();
    let login = [
        ("zookeeper.sasl.mechanism", "DIGEST-MD5"),
        ("zookeeper.sasl.username", secure.get("ZK_USER")),
        ("zookeeper.sasl.password", password.as_str()),
        ("zookeeper.acl", "creator"),
    ];
    let first = keeper(&servers.zookeeper, &servers.bootstrap, &login);
    first.load(&group, topics).unwrap();
    first.commit(&group, &batch(&topic, &[7, 8])).unwrap();
    drop(first);
    let loaded = keeper(&servers.zookeeper, &servers.bootstrap, &login)
        .load(&group, topics)
        .unwrap();
    assert_eq!(loaded.offsets().map(|(_, o)| o).collect::<Vec<_>>(), [7, 8]);

    let mut printed = Vec::new();
    let wrong = [
        ("zookeeper.sasl.username", secure.get("ZK_USER")),
        ("zookeeper.sasl.password", "Not-The-Password-3"),
    ];
    let err = keeper(&servers.zookeeper, &servers.bootstrap, &wrong)
        .load(&group, topics)
        .unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(
            err,
            Error::ZooKeeper {
                source: zk::Error::AuthFailed,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(message.contains("refused the credentials"), "{message}");
    printed.push(message);

    // No SASL at all: the server requires it, and says so by closing the session.
    let err = keeper(&servers.zookeeper, &servers.bootstrap, &[])
        .load(&group, topics)
        .unwrap_err();
    printed.push(err.to_string());
    printed.push(format!("{:?}", ZkSecurity::from_properties(login).unwrap()));
    assert_no_secret(&printed, &[password.as_str(), "Not-The-Password-3"]);
}

#[test]
fn kafka_sasl_ssl_with_plain_and_scram_as_java_clients_configure_it() {
    capture_logs();
    let secure = secure_cluster();
    let servers = secure.plaintext();
    let topic = topic_with(&servers, 2);
    let topics = std::slice::from_ref(&topic);
    let zk_password = secure.get("ZK_PASSWORD").to_string();
    let zk_login = secure.zookeeper_login();
    let (user, password) = (secure.get("KAFKA_USER"), secure.get("KAFKA_PASSWORD"));
    let jaas = |module: &str, password: &str| {
        format!(
            "org.apache.kafka.common.security.{module} required username=\"{user}\" password=\"{password}\";"
        )
    };
    let mut printed = Vec::new();
    for (mechanism, module) in [
        ("PLAIN", "plain.PlainLoginModule"),
        ("SCRAM-SHA-256", "scram.ScramLoginModule"),
        ("SCRAM-SHA-512", "scram.ScramLoginModule"),
    ] {
        let group = unique("sasl-ssl");
        let right = jaas(module, password);
        let params = |jaas: &str| {
            vec![
                ("bootstrap.servers", secure.get("KAFKA_SASL_SSL")),
                ("security.protocol", "SASL_SSL"),
                ("sasl.mechanism", mechanism),
                ("sasl.jaas.config", jaas),
                ("ssl.truststore.location", secure.get("CA")),
                ("ssl.truststore.type", "PEM"),
            ]
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect::<Vec<_>>()
        };
        let good = params(&right);
        let keeper = keeper_with_kafka(&servers.zookeeper, &zk_login, &refs(&good)).unwrap();
        let loaded = keeper.load(&group, topics).unwrap();
        assert_eq!(
            loaded.offsets().map(|(_, o)| o).collect::<Vec<_>>(),
            [0, 0],
            "{mechanism}"
        );
        keeper.commit(&group, &batch(&topic, &[4, 5])).unwrap();
        drop(keeper);

        let wrong_jaas = jaas(module, "Wrong-Kafka-Secret-5");
        let bad = params(&wrong_jaas);
        let err = keeper_with_kafka(&servers.zookeeper, &zk_login, &refs(&bad))
            .unwrap()
            .load(&group, topics)
            .unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(err, Error::Kafka { .. })
                && message.contains(&format!("SASL {mechanism} login of user '{user}' failed")),
            "{mechanism}: {message}"
        );
        printed.push(message);
    }

    // A JKS truststore, which offsetkeeper cannot read, is refused saying what to give instead.
    let jks = [
        ("bootstrap.servers", secure.get("KAFKA_SASL_SSL")),
        ("security.protocol", "SSL"),
        ("ssl.truststore.location", secure.get("JKS")),
        ("ssl.truststore.password", "changeit"),
    ];
    let message = keeper_with_kafka(&servers.zookeeper, &zk_login, &jks)
        .err()
        .expect("a JKS truststore is refused")
        .to_string();
    assert!(
        message.contains("Java KeyStore (JKS)") && message.contains("PEM"),
        "{message}"
    );
    printed.push(message);

    // Without the test CA the broker's certificate is not trusted: a clear TLS error, at once.
    let untrusted = [
        ("bootstrap.servers", secure.get("KAFKA_SASL_SSL")),
        ("security.protocol", "SASL_SSL"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.username", user),
        ("sasl.password", password),
    ];
    let started = std::time::Instant::now();
    let message = keeper_with_kafka(&servers.zookeeper, &zk_login, &untrusted)
        .unwrap()
        .load(&unique("untrusted"), topics)
        .unwrap_err()
        .to_string();
    assert!(message.contains("TLS handshake"), "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    printed.push(message);
    assert_no_secret(
        &printed,
        &[password, "Wrong-Kafka-Secret-5", zk_password.as_str()],
    );
}

#[test]
fn zookeeper_over_tls_with_the_test_ca_and_a_sasl_login() {
    capture_logs();
    let secure = secure_cluster();
    let plain = secure.plaintext();
    let topic = topic_with(&plain, 1);
    let topics = std::slice::from_ref(&topic);
    let group = unique("zk-tls");
    let password = secure.get("ZK_PASSWORD").to_string();
    let tls = |truststore: &str, kind: &str| -> Vec<(&'static str, String)> {
        vec![
            ("zookeeper.sasl.username", secure.get("ZK_USER").to_string()),
            ("zookeeper.sasl.password", password.clone()),
            ("zookeeper.ssl.client.enable", "true".to_string()),
            ("zookeeper.ssl.truststore.location", truststore.to_string()),
            ("zookeeper.ssl.truststore.type", kind.to_string()),
        ]
    };
    let kafka = [("bootstrap.servers", plain.bootstrap.as_str())];
    let good = tls(secure.get("CA"), "PEM");
    let keeper = keeper_with_kafka(secure.get("ZK_TLS"), &refs(&good), &kafka).unwrap();
    keeper.load(&group, topics).unwrap();
    keeper.commit(&group, &batch(&topic, &[9])).unwrap();
    // `srvr` over TLS with the same CA: the secured cluster's version, not an assumed one.
    let learned = keeper.zookeeper_server_version().expect("a session");
    assert_eq!(
        (learned.version.to_string(), learned.source),
        ("3.8.4".to_string(), VersionSource::Srvr)
    );
    drop(keeper);
    let loaded = keeper_with_kafka(secure.get("ZK_TLS"), &refs(&good), &kafka)
        .unwrap()
        .load(&group, topics)
        .unwrap();
    assert_eq!(loaded.offsets().map(|(_, o)| o).collect::<Vec<_>>(), [9]);

    // A JKS truststore is refused before any connection, saying what to give instead.
    let jks = tls(secure.get("JKS"), "JKS");
    let message = keeper_with_kafka(secure.get("ZK_TLS"), &refs(&jks), &kafka)
        .err()
        .expect("JKS refused")
        .to_string();
    assert!(
        message.contains("Java KeyStore (JKS)") && message.contains("PEM"),
        "{message}"
    );

    // A CA that did not sign the server's certificate: no session.
    let other_ca = std::env::temp_dir().join(format!("other-ca-{}.pem", std::process::id()));
    std::fs::copy("/etc/ssl/certs/ca-certificates.crt", &other_ca).expect("system CA bundle");
    let untrusted = tls(other_ca.to_str().expect("path"), "PEM");
    let err = keeper_with_kafka(secure.get("ZK_TLS"), &refs(&untrusted), &kafka)
        .unwrap()
        .load(&unique("untrusted"), topics)
        .unwrap_err();
    let _ = std::fs::remove_file(&other_ca);
    assert!(
        matches!(err, Error::Timeout { .. }) && err.to_string().contains("over TLS"),
        "{err:?}"
    );
    assert_no_secret(&[message, err.to_string()], &[password.as_str()]);
}

#[test]
fn kafka_ssl_with_a_client_certificate_and_sasl_plaintext() {
    capture_logs();
    let secure = secure_cluster();
    let plain = secure.plaintext();
    let topic = topic_with(&plain, 1);
    let topics = std::slice::from_ref(&topic);
    let zk_login = secure.zookeeper_login();
    let mutual_tls = [
        ("bootstrap.servers", secure.get("KAFKA_SSL_CLIENT_AUTH")),
        ("security.protocol", "SSL"),
        ("ssl.truststore.location", secure.get("CA")),
        ("ssl.truststore.type", "PEM"),
        ("ssl.keystore.location", secure.get("CLIENT_KEYSTORE")),
        ("ssl.keystore.type", "PEM"),
    ];
    let group = unique("mtls");
    let keeper = keeper_with_kafka(&plain.zookeeper, &zk_login, &mutual_tls).unwrap();
    keeper.load(&group, topics).unwrap();
    keeper.commit(&group, &batch(&topic, &[2])).unwrap();
    drop(keeper);

    // The same CA and identity as PEM text (Kafka's in-memory PEM keys, what the jar hands
    // over for a JKS or PKCS#12 store): no file is read.
    let text = |name: &str| std::fs::read_to_string(secure.get(name)).expect("PEM file");
    let (ca, chain, key) = (text("CA"), text("CLIENT_CERT"), text("CLIENT_KEY"));
    let in_memory = [
        ("bootstrap.servers", secure.get("KAFKA_SSL_CLIENT_AUTH")),
        ("security.protocol", "SSL"),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.certificates", ca.as_str()),
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.certificate.chain", chain.as_str()),
        ("ssl.keystore.key", key.as_str()),
    ];
    let keeper = keeper_with_kafka(&plain.zookeeper, &zk_login, &in_memory).unwrap();
    let loaded = keeper.load(&group, topics).unwrap();
    assert_eq!(loaded.offsets().map(|(_, o)| o).collect::<Vec<_>>(), [2]);
    drop(keeper);

    // The listener requires a client certificate: without one, no answer.
    let err = keeper_with_kafka(&plain.zookeeper, &zk_login, &mutual_tls[..4])
        .unwrap()
        .load(&unique("no-client-cert"), topics)
        .unwrap_err();
    assert!(
        matches!(err, Error::Kafka { .. } | Error::Timeout { .. }),
        "{err:?}"
    );

    let sasl_plaintext = [
        ("bootstrap.servers", secure.get("KAFKA_SASL_PLAINTEXT")),
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.username", secure.get("KAFKA_USER")),
        ("sasl.password", secure.get("KAFKA_PASSWORD")),
    ];
    let loaded = keeper_with_kafka(&plain.zookeeper, &zk_login, &sasl_plaintext)
        .unwrap()
        .load(&group, topics)
        .unwrap();
    assert_eq!(loaded.offsets().map(|(_, o)| o).collect::<Vec<_>>(), [2]);
    assert_no_secret(
        &[err.to_string()],
        &[secure.get("KAFKA_PASSWORD"), secure.get("ZK_PASSWORD")],
    );
}
