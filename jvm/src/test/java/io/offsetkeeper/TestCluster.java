package io.offsetkeeper;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

/**
 * The real test cluster started by Gradle's clusterStart, and the Kafka and ZooKeeper clients
 * the tests use to set up and inspect what the engine sees. One set of clients per test JVM.
 */
final class TestCluster {
    private static final long WAIT_MS = 60_000;

    private static Admin admin;
    private static KafkaProducer<byte[], byte[]> producer;
    private static ZooKeeper zooKeeper;

    private TestCluster() {}

    /** An address from build/cluster/cluster.env, as Gradle passes it; absent is an error. */
    private static String address(String name) {
        String value = System.getProperty(name, System.getenv(name));
        if (value == null || value.isEmpty()) {
            throw new IllegalStateException(name + " is not set: run the tests with"
                    + " `gradle :jvm:test` (it starts the cluster), or set it as in"
                    + " build/cluster/cluster.env");
        }
        return value;
    }

    static String zookeeper() {
        return address("OFFSETKEEPER_ZK");
    }

    static String bootstrap() {
        return address("OFFSETKEEPER_BOOTSTRAP");
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

    static synchronized Admin admin() {
        if (admin == null) {
            Properties props = new Properties();
            props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
            admin = Admin.create(props);
        }
        return admin;
    }

    /** A new topic whose partitions all have a leader, so the engine can list their offsets. */
    static String createTopic(int partitions) throws Exception {
        String topic = unique("topic");
        createTopic(topic, partitions);
        return topic;
    }

    static void createTopic(String topic, int partitions) throws Exception {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (true) {
            try {
                admin().createTopics(Collections.singleton(new NewTopic(topic, partitions, (short) 1)))
                        .all().get();
                break;
            } catch (ExecutionException e) {
                // A deleted topic of the same name may still be going away.
                if (!(e.getCause() instanceof TopicExistsException)
                        || System.currentTimeMillis() > deadline) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
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
        admin().deleteTopics(Collections.singleton(topic)).all().get();
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (admin().listTopics().names().get().contains(topic)) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("topic " + topic + " was not deleted in " + WAIT_MS + " ms");
            }
            Thread.sleep(100);
        }
        createTopic(topic, partitions);
    }

    static synchronized void produce(String topic, int partition, int records) throws Exception {
        if (producer == null) {
            Properties props = new Properties();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
            props.put(ProducerConfig.ACKS_CONFIG, "all");
            props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
            props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
            producer = new KafkaProducer<>(props);
        }
        for (int i = 0; i < records; i++) {
            producer.send(new ProducerRecord<>(topic, partition, null, ("r" + i).getBytes(StandardCharsets.UTF_8)));
        }
        producer.flush();
    }

    /** Retention by hand: the partition's earliest offset becomes {@code offset}. */
    static void deleteRecordsBefore(String topic, int partition, long offset) throws Exception {
        admin().deleteRecords(Collections.singletonMap(new TopicPartition(topic, partition),
                RecordsToDelete.beforeOffset(offset))).all().get();
    }

    static synchronized ZooKeeper zk() throws Exception {
        if (zooKeeper == null) {
            CountDownLatch connected = new CountDownLatch(1);
            zooKeeper = new ZooKeeper(zookeeper(), 30_000, event -> {
                if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            });
            if (!connected.await(WAIT_MS, TimeUnit.MILLISECONDS)) {
                throw new AssertionError("no ZooKeeper session with " + zookeeper());
            }
        }
        return zooKeeper;
    }

    static String offsetPath(String group, String topic, int partition) {
        return "/consumers/" + group + "/offsets/" + topic + "/" + partition;
    }

    /** The znode's text, or null when it does not exist. */
    static String read(String path) throws Exception {
        try {
            return new String(zk().getData(path, false, null), StandardCharsets.UTF_8);
        } catch (KeeperException.NoNodeException e) {
            return null;
        }
    }

    static String readOffset(String group, String topic, int partition) throws Exception {
        return read(offsetPath(group, topic, partition));
    }

    static boolean exists(String path) throws Exception {
        return zk().exists(path, false) != null;
    }

    /** Creates or overwrites the znode, parents included. */
    static void write(String path, String text) throws Exception {
        byte[] data = text.getBytes(StandardCharsets.UTF_8);
        for (int slash = path.indexOf('/', 1); slash > 0; slash = path.indexOf('/', slash + 1)) {
            try {
                zk().create(path.substring(0, slash), new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE,
                        CreateMode.PERSISTENT);
            } catch (KeeperException.NodeExistsException ignored) {
                // already there
            }
        }
        try {
            zk().create(path, data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        } catch (KeeperException.NodeExistsException e) {
            zk().setData(path, data, -1);
        }
    }

    static TopicPartition tp(String topic, int partition) {
        return new TopicPartition(topic, partition);
    }
}
