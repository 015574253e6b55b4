package io.offsetkeeper;

import io.offsetkeeper.e2e.Cluster;
import io.offsetkeeper.e2e.ClusterEnv;
import java.io.IOException;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.zookeeper.ZooKeeper;

/**
 * The real test cluster started by Gradle's clusterStart, and the Kafka and ZooKeeper clients
 * the tests use to set up and inspect what the engine sees: the e2e tests' {@link Cluster}
 * (tests/e2e, compiled in by jvm/build.gradle), one per test JVM, behind static methods.
 */
final class TestCluster {
    private static final long WAIT_MS = 60_000;

    private static Cluster cluster;
    private static ClusterEnv clusterEnv;
    private static ClusterEnv secureEnv;

    private TestCluster() {}

    /**
     * A key of the env file that system property {@code fileProperty} names (Gradle passes
     * build/cluster/cluster.env and build/secure-cluster/secure.env): a system property of the
     * key's name first, then the file, then an environment variable; absent is an error.
     */
    private static synchronized String setting(String key, String fileProperty, String hint) {
        String value = System.getProperty(key);
        if (value == null) {
            String file = System.getProperty(fileProperty);
            if (file != null) {
                boolean secure = fileProperty.equals("offsetkeeper.secure.env");
                ClusterEnv env = secure ? secureEnv : clusterEnv;
                if (env == null) {
                    try {
                        env = ClusterEnv.load(Paths.get(file));
                    } catch (IOException e) {
                        throw new IllegalStateException("cannot read " + file + ": " + hint, e);
                    }
                    if (secure) {
                        secureEnv = env;
                    } else {
                        clusterEnv = env;
                    }
                }
                value = env.get(key);
            }
        }
        if (value == null) {
            value = System.getenv(key);
        }
        if (value == null || value.isEmpty()) {
            throw new IllegalStateException(key + " is not set: " + hint);
        }
        return value;
    }

    /** An address of the open cluster (build/cluster/cluster.env). */
    private static String address(String key) {
        return setting(key, "offsetkeeper.cluster.env", "run the tests with `gradle :jvm:test`"
                + " (it starts the cluster), or set it as in build/cluster/cluster.env");
    }

    /** {@code OFFSETKEEPER_SECURE_<name>} of the secured cluster (build/secure-cluster/secure.env). */
    static String secure(String name) {
        return setting(ClusterEnv.SECURE_PREFIX + name, "offsetkeeper.secure.env",
                "run the tests with `gradle :jvm:test`, which starts the secured cluster");
    }

    static String zookeeper() {
        return address(ClusterEnv.ZK);
    }

    static String bootstrap() {
        return address(ClusterEnv.BOOTSTRAP);
    }

    /** A name no other test uses, legal for topics and groups. */
    static String unique(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** kafkaParams as a Spark job writes them, Java-only keys included. */
    static Map<String, Object> kafkaParams(String group) {
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", bootstrap());
        params.put("group.id", group);
        params.put("key.deserializer", StringDeserializer.class);
        params.put("value.deserializer", StringDeserializer.class);
        params.put("enable.auto.commit", false);
        return params;
    }

    static OffsetKeeper.Builder keeperBuilder(String group) {
        return OffsetKeeper.builder().zookeeper(zookeeper()).kafkaParams(kafkaParams(group));
    }

    static OffsetKeeper keeper(String group) {
        return keeperBuilder(group).build();
    }

    /** The clients, opened on first use and kept for the test JVM's life. */
    static synchronized Cluster cluster() {
        if (cluster == null) {
            cluster = new Cluster(zookeeper(), bootstrap());
        }
        return cluster;
    }

    static Admin admin() {
        return cluster().admin();
    }

    /** A new topic whose partitions all have a leader, so the engine can list their offsets. */
    static String createTopic(int partitions) throws Exception {
        String topic = unique("topic");
        createTopic(topic, partitions);
        return topic;
    }

    static void createTopic(String topic, int partitions) throws Exception {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        cluster().createTopic(topic, partitions);
        while (!hasLeaders(topic, partitions)) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("topic " + topic + " has no leaders after " + WAIT_MS + " ms");
            }
            Thread.sleep(100);
        }
    }

    private static boolean hasLeaders(String topic, int partitions) throws InterruptedException {
        try {
            TopicDescription d = admin().describeTopics(Collections.singleton(topic))
                    .allTopicNames().get().get(topic);
            List<TopicPartitionInfo> infos = d.partitions();
            return infos.size() == partitions && infos.stream().allMatch(p -> p.leader() != null);
        } catch (ExecutionException e) {
            return false;
        }
    }

    /** Deletes the topic, waits until it is gone, and creates it again, empty. */
    static void recreateTopic(String topic, int partitions) throws Exception {
        cluster().deleteTopic(topic);
        createTopic(topic, partitions);
    }

    /** {@code records} records to one partition, values r0, r1, ..., acknowledged. */
    static void produce(String topic, int partition, int records) throws Exception {
        cluster().produce(topic, partition, records, "r");
    }

    /** Retention by hand: the partition's earliest offset becomes {@code offset}. */
    static void deleteRecordsBefore(String topic, int partition, long offset) throws Exception {
        cluster().deleteRecords(topic, partition, offset);
    }

    static ZooKeeper zk() throws Exception {
        return cluster().zooKeeper();
    }

    static String offsetPath(String group, String topic, int partition) {
        return Cluster.offsetPath(group, topic, partition);
    }

    /** The znode's text, or null when it does not exist. */
    static String read(String path) throws Exception {
        return cluster().readZnode(path);
    }

    static String readOffset(String group, String topic, int partition) throws Exception {
        return read(offsetPath(group, topic, partition));
    }

    static boolean exists(String path) throws Exception {
        return cluster().exists(path);
    }

    /** Creates or overwrites the znode, parents included. */
    static void write(String path, String text) throws Exception {
        cluster().writeZnode(path, text);
    }

    static TopicPartition tp(String topic, int partition) {
        return new TopicPartition(topic, partition);
    }
}
