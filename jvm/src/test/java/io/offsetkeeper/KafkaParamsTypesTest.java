package io.offsetkeeper;

import static io.offsetkeeper.TestCluster.secure;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.types.Password;
import org.junit.Test;

/**
 * kafkaParams values of the types {@code KafkaConsumer} takes (a {@code List} of servers, a
 * {@code Password}, numbers as numbers or text) reach the engine as Kafka reads them.
 */
public class KafkaParamsTypesTest {
    @Test
    public void bootstrapServersAsAListLoadsAndCommits() throws Exception {
        String topic = TestCluster.createTopic(2);
        String group = TestCluster.unique("list");
        Map<String, Object> params = TestCluster.kafkaParams(group);
        params.put("bootstrap.servers", Arrays.asList(TestCluster.bootstrap()));
        params.put("request.timeout.ms", 20_000);
        params.put("default.api.timeout.ms", "30000 ");
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(TestCluster.zookeeper())
                .kafkaParams(params).build()) {
            Map<TopicPartition, Long> loaded = keeper.load(Collections.singleton(topic));
            assertEquals(2, loaded.size());
            assertEquals(2, keeper.commit(loaded).written());
            String shown = keeper.toString();
            assertTrue(shown, shown.contains("bootstrap.servers=" + TestCluster.bootstrap()));
            assertFalse(shown, shown.contains(TestCluster.bootstrap() + "]"));
        }
    }

    @Test
    public void aPasswordObjectAndAListReachTheSecuredBroker() throws Exception {
        String password = secure("KAFKA_PASSWORD");
        String topic = TestCluster.unique("password");
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, secure("KAFKA_PLAINTEXT"));
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(Collections.singleton(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", Collections.singletonList(secure("KAFKA_SASL_SSL")));
        params.put("security.protocol", "SASL_SSL");
        params.put("sasl.mechanism", "SCRAM-SHA-512");
        params.put("sasl.jaas.config", new Password(
                "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                        + secure("KAFKA_USER") + "\" password=\"" + password + "\";"));
        params.put("ssl.truststore.location", secure("CA"));
        params.put("ssl.truststore.type", "PEM");
        params.put("group.id", TestCluster.unique("password"));
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(secure("ZK"))
                .kafkaParams(params)
                .zookeeperProperty("zookeeper.sasl.username", secure("ZK_USER"))
                .zookeeperProperty("zookeeper.sasl.password", secure("ZK_PASSWORD"))
                .build()) {
            Map<TopicPartition, Long> loaded = keeper.load(Collections.singleton(topic));
            assertEquals(Collections.singletonMap(new TopicPartition(topic, 0), 0L), loaded);
            String shown = keeper.toString();
            assertFalse(shown, shown.contains(password));
        }
    }

    @Test
    public void aValueNotOfItsSettingsTypeIsRefusedByName() {
        Map<String, Object> params = TestCluster.kafkaParams("bad");
        params.put("request.timeout.ms", "soon");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> OffsetKeeper.builder().kafkaParams(params));
        assertTrue(e.getMessage(), e.getMessage().contains("request.timeout.ms"));
        assertTrue(e.getMessage(), e.getMessage().contains("soon"));

        Map<String, Object> secret = TestCluster.kafkaParams("bad");
        secret.put("ssl.key.password", 987654321);
        e = assertThrows(IllegalArgumentException.class,
                () -> OffsetKeeper.builder().kafkaParams(secret));
        assertTrue(e.getMessage(), e.getMessage().contains("ssl.key.password"));
        assertFalse(e.getMessage(), e.getMessage().contains("987654321"));
    }
}
