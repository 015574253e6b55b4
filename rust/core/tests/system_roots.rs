//! With no truststore, Kafka TLS and ZooKeeper TLS trust the platform's roots, which
//! `SSL_CERT_FILE` names here: the secured cluster's test CA, given nowhere else. A test binary
//! of its own with one test, so the variable is set before any thread starts and reaches no
//! other test.

mod support;

use std::time::Duration;

use offsetkeeper::zookeeper::ZkSecurity;
use offsetkeeper::{KafkaSettings, KeeperConfig, OffsetKeeper, TopicPartition, ZkConfig};
use support::{secure_cluster, unique, Kafka};

fn open(zookeeper: &str, properties: &[(&str, &str)], kafka: &[(&str, &str)]) -> OffsetKeeper {
    let mut zk = ZkConfig::new(zookeeper);
    zk.security = ZkSecurity::from_properties(properties.iter().copied()).expect("zk settings");
    zk.request_timeout = Duration::from_secs(5);
    let kafka = KafkaSettings::from_params(kafka.iter().copied()).expect("kafka settings");
    let mut config = KeeperConfig::new(zk, kafka);
    config.kafka_timeout = Some(Duration::from_secs(10));
    OffsetKeeper::open(config).expect("open keeper")
}

#[test]
fn without_a_truststore_kafka_and_zookeeper_tls_trust_ssl_cert_file() {
    let secure = secure_cluster();
    // Only the test CA: the system bundle does not hold it, so a pass shows the variable read.
    std::env::set_var("SSL_CERT_FILE", secure.get("CA"));
    std::env::remove_var("SSL_CERT_DIR");

    let plain = secure.plaintext();
    let topic = unique("roots");
    Kafka::new(&plain).create_topic(&topic, 1);
    let topics = std::slice::from_ref(&topic);
    let group = unique("roots");
    let (user, password) = (secure.get("KAFKA_USER"), secure.get("KAFKA_PASSWORD"));
    let jaas = format!(
        "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{user}\" password=\"{password}\";"
    );
    let [zk_user, zk_password] = secure.zookeeper_login();

    // Kafka over SASL_SSL, ZooKeeper over TLS, neither given a truststore.
    let zk_tls = [
        zk_user,
        zk_password,
        ("zookeeper.ssl.client.enable", "true"),
    ];
    let kafka_tls = [
        ("bootstrap.servers", secure.get("KAFKA_SASL_SSL")),
        ("security.protocol", "SASL_SSL"),
        ("sasl.mechanism", "SCRAM-SHA-512"),
        ("sasl.jaas.config", jaas.as_str()),
    ];
    let keeper = open(secure.get("ZK_TLS"), &zk_tls, &kafka_tls);
    let loaded = keeper.load(&group, topics).expect("load over TLS");
    assert_eq!(loaded.offsets().map(|(_, o)| o).collect::<Vec<_>>(), [0]);
    keeper
        .commit(&group, &[(TopicPartition::new(&*topic, 0), 0)])
        .expect("commit over TLS");
}
