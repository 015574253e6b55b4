package io.offsetkeeper;

import static io.offsetkeeper.TestCluster.secure;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;
import org.slf4j.LoggerFactory;

/**
 * ZooKeeper SASL (DIGEST-MD5) through the Java builder, against the secured cluster that
 * {@code gradle clusterStart} runs beside the open one ({@code cluster.sh start-secure}).
 * Everything the keepers log, throw and print of themselves is captured and must hold no
 * secret.
 */
public class SecurityTest {
    private static OffsetKeeper.Builder builder(String group, String password) {
        Map<String, Object> kafkaParams = new HashMap<>();
        kafkaParams.put("bootstrap.servers", secure("KAFKA_PLAINTEXT"));
        return OffsetKeeper.builder().zookeeper(secure("ZK")).group(group)
                .kafkaParams(kafkaParams).zookeeperTimeout(5_000)
                .zookeeperProperty("zookeeper.sasl.mechanism", "DIGEST-MD5")
                .zookeeperProperty("zookeeper.sasl.username", secure("ZK_USER"))
                .zookeeperProperty("zookeeper.sasl.password", password)
                .zookeeperProperty("zookeeper.acl", "creator");
    }

    private static String topicOnSecureCluster() throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, secure("KAFKA_PLAINTEXT"));
        String topic = TestCluster.unique("secure");
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(Collections.singleton(new NewTopic(topic, 2, (short) 1))).all().get();
        }
        return topic;
    }

    @Test
    public void saslLoginLoadsAndCommitsAndWrongCredentialsFailWithoutShowingThem()
            throws Exception {
        String topic = topicOnSecureCluster();
        String group = TestCluster.unique("sasl");
        String password = secure("ZK_PASSWORD");
        String wrong = "Wrong-Password-77";
        List<String> printed = new ArrayList<>();

        Logger root = (Logger) LoggerFactory.getLogger(NativeLog.ROOT_LOGGER);
        ListAppender<ILoggingEvent> appender = new ListAppender<>();
        appender.start();
        root.addAppender(appender);
        try {
            Map<TopicPartition, Long> offsets = new HashMap<>();
            offsets.put(new TopicPartition(topic, 0), 0L);
            offsets.put(new TopicPartition(topic, 1), 0L);
            try (OffsetKeeper keeper = builder(group, password).build()) {
                printed.add(keeper.toString());
                assertEquals(offsets, keeper.load(Collections.singleton(topic)));
                keeper.commit(offsets);
            }
            try (OffsetKeeper keeper = builder(group, wrong).build()) {
                printed.add(keeper.toString());
                keeper.load(Collections.singleton(topic));
                fail("a wrong SASL password must fail");
            } catch (ZooKeeperException e) {
                printed.add(e.toString());
                assertTrue(e.getMessage(), e.getMessage().contains("refused the credentials"));
            }
        } finally {
            root.detachAppender(appender);
        }
        for (ILoggingEvent event : appender.list) {
            printed.add(event.getFormattedMessage());
        }
        for (String text : printed) {
            assertFalse(text, text.contains(password));
            assertFalse(text, text.contains(wrong));
        }
    }

    @Test
    public void kafkaSaslSslWithTheJavaClientsKeysAsSparkJobsWriteThem() throws Exception {
        String topic = topicOnSecureCluster();
        String password = secure("KAFKA_PASSWORD");
        Map<String, Object> kafkaParams = new HashMap<>();
        kafkaParams.put("bootstrap.servers", secure("KAFKA_SASL_SSL"));
        kafkaParams.put("security.protocol", "SASL_SSL");
        kafkaParams.put("sasl.mechanism", "SCRAM-SHA-512");
        kafkaParams.put("sasl.jaas.config",
                "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                        + secure("KAFKA_USER") + "\" password=\"" + password + "\";");
        kafkaParams.put("ssl.truststore.location", secure("CA"));
        kafkaParams.put("ssl.truststore.type", "PEM");
        kafkaParams.put("group.id", TestCluster.unique("sasl-ssl"));
        kafkaParams.put("key.deserializer",
                "org.apache.kafka.common.serialization.StringDeserializer");
        OffsetKeeper.Builder builder = OffsetKeeper.builder().zookeeper(secure("ZK"))
                .kafkaParams(kafkaParams)
                .zookeeperProperty("zookeeper.sasl.username", secure("ZK_USER"))
                .zookeeperProperty("zookeeper.sasl.password", secure("ZK_PASSWORD"));
        try (OffsetKeeper keeper = builder.build()) {
            Map<TopicPartition, Long> loaded = keeper.load(Collections.singleton(topic));
            assertEquals(2, loaded.size());
            assertEquals(2, keeper.commit(loaded).written());
            String shown = keeper.toString();
            assertFalse(shown, shown.contains(password));
        }
        // The JKS truststore a Java shop already has, read with the JVM's KeyStore.
        kafkaParams.put("ssl.truststore.location", secure("JKS"));
        kafkaParams.put("ssl.truststore.type", "JKS");
        kafkaParams.put("ssl.truststore.password", secure("JKS_PASSWORD"));
        try (OffsetKeeper keeper = builder.kafkaParams(kafkaParams).build()) {
            assertEquals(2, keeper.load(Collections.singleton(topic)).size());
            String shown = keeper.toString();
            assertTrue(shown, shown.contains("ssl.truststore.certificates=(1 certificates in PEM)"));
            assertFalse(shown, shown.contains(secure("JKS_PASSWORD")));
        }
        // A PKCS#12 store holding only a key entry trusts nothing: refused at build, by name.
        kafkaParams.put("ssl.truststore.location", secure("CLIENT_P12"));
        kafkaParams.put("ssl.truststore.type", "PKCS12");
        kafkaParams.put("ssl.truststore.password", secure("CLIENT_P12_PASSWORD"));
        try {
            builder.kafkaParams(kafkaParams).build();
            fail("a truststore without a trusted certificate must be refused");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains(
                    "ssl.truststore.location holds no trusted certificate entry"));
        }
    }

    /**
     * Java keystores for the client identity (mutual TLS) and for ZooKeeper's TLS: PKCS#12 and
     * JKS with a key password of its own, read by the jar; a wrong password is refused at
     * build, naming the key and the file, never the password, and nothing is written.
     */
    @Test
    public void javaKeystoresForMutualTlsAndZookeeperTls() throws Exception {
        String topic = topicOnSecureCluster();
        String group = TestCluster.unique("keystores");
        Map<String, Object> kafkaParams = new HashMap<>();
        kafkaParams.put("bootstrap.servers", secure("KAFKA_SSL_CLIENT_AUTH"));
        kafkaParams.put("security.protocol", "SSL");
        kafkaParams.put("ssl.truststore.location", secure("JKS"));
        kafkaParams.put("ssl.truststore.password", secure("JKS_PASSWORD"));
        kafkaParams.put("ssl.keystore.location", secure("CLIENT_P12"));
        kafkaParams.put("ssl.keystore.type", "PKCS12");
        kafkaParams.put("ssl.keystore.password", secure("CLIENT_P12_PASSWORD"));
        OffsetKeeper.Builder builder = OffsetKeeper.builder().zookeeper(secure("ZK_TLS"))
                .group(group).kafkaParams(kafkaParams)
                .zookeeperProperty("zookeeper.sasl.username", secure("ZK_USER"))
                .zookeeperProperty("zookeeper.sasl.password", secure("ZK_PASSWORD"))
                .zookeeperProperty("zookeeper.ssl.client.enable", "true")
                .zookeeperProperty("zookeeper.ssl.truststore.location", secure("JKS"))
                .zookeeperProperty("zookeeper.ssl.truststore.type", "JKS")
                .zookeeperProperty("zookeeper.ssl.truststore.password", secure("JKS_PASSWORD"))
                .zookeeperProperty("zookeeper.ssl.keystore.location", secure("CLIENT_P12"))
                .zookeeperProperty("zookeeper.ssl.keystore.type", "PKCS12")
                .zookeeperProperty("zookeeper.ssl.keystore.password",
                        secure("CLIENT_P12_PASSWORD"));
        Map<TopicPartition, Long> offsets = new HashMap<>();
        offsets.put(new TopicPartition(topic, 0), 0L);
        offsets.put(new TopicPartition(topic, 1), 0L);
        List<String> printed = new ArrayList<>();
        try (OffsetKeeper keeper = builder.build()) {
            printed.add(keeper.toString());
            assertEquals(2, keeper.load(Collections.singleton(topic)).size());
            assertEquals(2, keeper.commit(offsets).written());
        }
        // JKS with a key password of its own (ssl.key.password): the offsets written come back.
        kafkaParams.put("ssl.keystore.location", secure("CLIENT_JKS"));
        kafkaParams.put("ssl.keystore.type", "JKS");
        kafkaParams.put("ssl.keystore.password", secure("CLIENT_JKS_PASSWORD"));
        kafkaParams.put("ssl.key.password", secure("CLIENT_JKS_KEY_PASSWORD"));
        try (OffsetKeeper keeper = builder.kafkaParams(kafkaParams).build()) {
            printed.add(keeper.toString());
            assertEquals(offsets, keeper.load(Collections.singleton(topic)));
        }
        String wrong = "Not-The-Key-Password-3";
        kafkaParams.put("ssl.key.password", wrong);
        try {
            builder.kafkaParams(kafkaParams).build();
            fail("a wrong key password must be refused");
        } catch (IllegalArgumentException e) {
            printed.add(e.getMessage());
            assertTrue(e.getMessage(), e.getMessage().contains("ssl.keystore.location"));
            assertTrue(e.getMessage(), e.getMessage().contains("is wrong or missing"));
        }
        kafkaParams.put("ssl.key.password", secure("CLIENT_JKS_KEY_PASSWORD"));
        kafkaParams.put("ssl.keystore.password", wrong);
        try {
            builder.kafkaParams(kafkaParams).build();
            fail("a wrong store password must be refused");
        } catch (IllegalArgumentException e) {
            printed.add(e.getMessage());
            assertTrue(e.getMessage(), e.getMessage().contains(
                    "ssl.keystore.location " + secure("CLIENT_JKS") + " (JKS): cannot read it"));
        }
        for (String text : printed) {
            for (String secret : new String[] {wrong, secure("JKS_PASSWORD"),
                    secure("CLIENT_P12_PASSWORD"), secure("CLIENT_JKS_PASSWORD"),
                    secure("CLIENT_JKS_KEY_PASSWORD"), secure("ZK_PASSWORD")}) {
                assertFalse(text, text.contains(secret));
            }
            assertFalse(text, text.contains("PRIVATE KEY"));
        }
    }

    @Test
    public void badZookeeperSettingsAreRefusedByNameWithoutTheirValue() {
        try {
            OffsetKeeper.builder().zookeeperProperty("sasl.password", "x");
            fail("a key outside zookeeper.* must be refused");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("'sasl.password'"));
        }
        try (OffsetKeeper keeper = builder(TestCluster.unique("g"), "Secret-Value-9")
                .zookeeperProperty("zookeeper.acl", "world:anyone:rx").build()) {
            keeper.load(Collections.singleton("t"));
            fail("a bad ACL must be refused");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("'world:anyone:rx'"));
            assertFalse(e.getMessage(), e.getMessage().contains("Secret-Value-9"));
        }
        OffsetKeeper keeper = builder("g", "Secret-Value-9")
                .zookeeperProperty("zookeeper.auth", "digest:bob:Other-Secret-8").build();
        String shown = keeper.toString();
        assertFalse(shown, shown.contains("Secret-Value-9") || shown.contains("Other-Secret-8"));
        assertTrue(shown, shown.contains("zookeeper.sasl.username=" + secure("ZK_USER")));
    }
}
