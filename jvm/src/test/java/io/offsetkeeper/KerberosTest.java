package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.offsetkeeper.e2e.ClusterEnv;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.TopicPartition;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Kerberos, configured as on a Kerberized Hadoop cluster: the JVM's JAAS file with a
 * {@code Client} and a {@code KafkaClient} section (keytab logins), {@code java.security.krb5.conf},
 * kafkaParams with {@code SASL_PLAINTEXT} and {@code sasl.kerberos.service.name}; nothing specific
 * to offsetkeeper. Against the Kerberos cluster ({@code cluster.sh start-kerberos}: a Kerby KDC, a
 * ZooKeeper that requires SASL on every session, a broker whose listener takes only GSSAPI).
 * The task {@code :jvm:testKerberos} sets the JVM's login and krb5 configuration.
 */
public class KerberosTest {
    private static ClusterEnv env;

    @BeforeClass
    public static void readEnv() throws Exception {
        String file = System.getProperty("offsetkeeper.kerberos.env");
        if (file == null) {
            throw new IllegalStateException("offsetkeeper.kerberos.env is not set: run these tests"
                    + " through gradle :jvm:testKerberos, which starts the Kerberos cluster");
        }
        env = ClusterEnv.load(Paths.get(file));
    }

    private static String kerberos(String name) {
        return env.get("OFFSETKEEPER_KERBEROS_" + name);
    }

    private static String topic(int partitions) throws Exception {
        Properties props = new Properties();
        // The broker's inter-broker listener: plaintext, for staging only.
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kerberos("KAFKA_PLAINTEXT"));
        String topic = TestCluster.unique("krb");
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(Collections.singleton(new NewTopic(topic, partitions, (short) 1)))
                    .all().get();
        }
        return topic;
    }

    private static Map<String, Object> kafkaParams(String group) {
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", kerberos("KAFKA_SASL_PLAINTEXT"));
        params.put("security.protocol", "SASL_PLAINTEXT");
        params.put("sasl.kerberos.service.name", "kafka");
        params.put("group.id", group);
        return params;
    }

    private static OffsetKeeper.Builder builder(Map<String, Object> kafkaParams) {
        return OffsetKeeper.builder().zookeeper(kerberos("ZK")).kafkaParams(kafkaParams)
                .zookeeperTimeout(15_000).kafkaTimeout(15_000);
    }

    /** The JAAS sections of the JVM, keytab logins: load, commit, and a restart sees the commit. */
    @Test
    public void jaasSectionsLoadCommitAndRestart() throws Exception {
        String topic = topic(2);
        String group = TestCluster.unique("krb-group");
        Map<TopicPartition, Long> offsets = new HashMap<>();
        offsets.put(new TopicPartition(topic, 0), 0L);
        offsets.put(new TopicPartition(topic, 1), 0L);
        try (OffsetKeeper keeper = builder(kafkaParams(group))
                .zookeeperProperty("zookeeper.acl", "creator").build()) {
            assertEquals(offsets, keeper.load(Collections.singleton(topic)));
            assertEquals(2, keeper.commit(offsets).written());
        }
        try (OffsetKeeper keeper = builder(kafkaParams(group)).build()) {
            LoadReport report = keeper.loadWithReport(Collections.singleton(topic));
            for (PartitionReport p : report.partitions()) {
                assertEquals(p.toString(), Long.valueOf(0L), p.stored());
            }
        }
        // Another principal (the JAAS section OtherClient, named as ZooKeeper's client names
        // one): the creator-only ACL of sasl:offsetkeeper keeps it out, and it writes nothing.
        try (OffsetKeeper other = builder(kafkaParams(group))
                .zookeeperProperty("zookeeper.sasl.clientconfig", "OtherClient")
                .ownership(false).build()) {
            Map<TopicPartition, Long> moved = new HashMap<>();
            offsets.keySet().forEach(tp -> moved.put(tp, 1L));
            other.commit(moved);
            fail("the creator ACL must refuse another principal");
        } catch (ZooKeeperException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("ACL"));
        }
    }

    /** Kafka's login from a ticket cache in sasl.jaas.config (as after kinit), ZooKeeper's from the JVM's Client section. */
    @Test
    public void ticketCacheLoginInSaslJaasConfig() throws Exception {
        String topic = topic(1);
        Map<String, Object> params = kafkaParams(TestCluster.unique("krb-cache"));
        params.put("sasl.jaas.config", "com.sun.security.auth.module.Krb5LoginModule required"
                + " useTicketCache=true ticketCache=\"" + kerberos("CLIENT_CCACHE") + "\""
                + " principal=\"" + kerberos("CLIENT_PRINCIPAL") + "\";");
        try (OffsetKeeper keeper = builder(params).build()) {
            assertEquals(1, keeper.load(Collections.singleton(topic)).size());
        }
    }

    /** A service principal the KDC does not know: a clear error naming it, within the timeout. */
    @Test
    public void unknownServicePrincipalFailsClearly() throws Exception {
        String topic = topic(1);
        Map<String, Object> params = kafkaParams(TestCluster.unique("krb-wrong"));
        params.put("sasl.kerberos.service.name", "notkafka");
        long start = System.nanoTime();
        try (OffsetKeeper keeper = builder(params).build()) {
            keeper.load(Collections.singleton(topic));
            fail("an unknown service principal must fail");
        } catch (KafkaClusterException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("GSSAPI"));
            assertTrue(e.getMessage(), e.getMessage().contains("notkafka"));
        }
        long seconds = (System.nanoTime() - start) / 1_000_000_000L;
        assertTrue("took " + seconds + " s", seconds < 30);
    }

    /** A keytab that is not there: the login fails naming the principal, nothing is written. */
    @Test
    public void missingKeytabFailsClearly() throws Exception {
        String topic = topic(1);
        Map<String, Object> params = kafkaParams(TestCluster.unique("krb-nokeytab"));
        params.put("sasl.jaas.config", "com.sun.security.auth.module.Krb5LoginModule required"
                + " useKeyTab=true storeKey=true keyTab=\"/nonexistent/offsetkeeper.keytab\""
                + " principal=\"" + kerberos("CLIENT_PRINCIPAL") + "\";");
        try (OffsetKeeper keeper = builder(params).build()) {
            keeper.load(Collections.singleton(topic));
            fail("a missing keytab must fail");
        } catch (KafkaClusterException | IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains(kerberos("CLIENT_PRINCIPAL")));
        }
    }

    /** zookeeper.sasl.client=false on a ZooKeeper that requires SASL: refused, clearly. */
    @Test
    public void zookeeperWithoutSaslIsRefused() throws Exception {
        String topic = topic(1);
        try (OffsetKeeper keeper = builder(kafkaParams(TestCluster.unique("krb-nosasl")))
                .zookeeperProperty("zookeeper.sasl.client", "false").build()) {
            keeper.load(Collections.singleton(topic));
            fail("a session without SASL must be refused");
        } catch (ZooKeeperException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("ZooKeeper"));
        }
    }
}
