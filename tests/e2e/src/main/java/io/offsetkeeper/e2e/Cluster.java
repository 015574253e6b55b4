package io.offsetkeeper.e2e;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Collections;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

/**
 * A real ZooKeeper + Kafka, and the operations that stage what happens to a job while it is
 * stopped: records produced, retention purges, topics re-created, partitions added, znodes
 * damaged.
 */
public final class Cluster implements AutoCloseable {
    private static final Duration WAIT = Duration.ofSeconds(60);

    public final String zookeeper;
    public final String bootstrap;
    private final Admin admin;
    private final KafkaProducer<String, String> producer;
    private final ZooKeeper zk;

    public Cluster(String zookeeper, String bootstrap) {
        this.zookeeper = zookeeper;
        this.bootstrap = bootstrap;
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        admin = Admin.create(props);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.METADATA_MAX_AGE_CONFIG, "500");
        producer = new KafkaProducer<>(props);
        zk = connect(zookeeper);
    }

    /**
     * The cluster the build started: system properties {@code offsetkeeper.zookeeper} and
     * {@code offsetkeeper.bootstrap}, or the file named by {@code offsetkeeper.cluster.env}.
     * Fails loudly when neither is there: these tests never pass without servers.
     */
    public static Cluster fromBuild() {
        String zookeeper = System.getProperty("offsetkeeper.zookeeper");
        String bootstrap = System.getProperty("offsetkeeper.bootstrap");
        if (zookeeper == null || bootstrap == null) {
            String file = System.getProperty("offsetkeeper.cluster.env", "build/cluster/cluster.env");
            ClusterEnv env;
            try {
                env = ClusterEnv.load(Paths.get(file));
            } catch (IOException e) {
                throw new IllegalStateException("no test cluster: cannot read " + file
                        + "; run through Gradle (README), which starts ZooKeeper and Kafka", e);
            }
            zookeeper = env.zookeeper();
            bootstrap = env.bootstrap();
        }
        return new Cluster(zookeeper, bootstrap);
    }

    private static ZooKeeper connect(String connect) {
        try {
            CountDownLatch connected = new CountDownLatch(1);
            ZooKeeper client = new ZooKeeper(connect, 30_000, event -> {
                if (event.getState() == org.apache.zookeeper.Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            });
            if (!connected.await(WAIT.getSeconds(), TimeUnit.SECONDS)) {
                throw new IllegalStateException("ZooKeeper at " + connect + " did not answer");
            }
            return client;
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException("cannot connect to ZooKeeper at " + connect, e);
        }
    }

    /** Creates a topic, retrying while an earlier deletion of the same name completes. */
    public void createTopic(String topic, int partitions) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (true) {
            try {
                get(admin.createTopics(Collections.singleton(new NewTopic(topic, partitions, (short) 1))).all());
                break;
            } catch (IllegalStateException e) {
                if (!(e.getCause() instanceof TopicExistsException) || System.nanoTime() > deadline) {
                    throw e;
                }
                sleep(300);
            }
        }
        waitFor(() -> partitionCount(topic) == partitions, "topic " + topic + " with " + partitions + " partitions");
    }

    public void deleteTopic(String topic) {
        get(admin.deleteTopics(Collections.singleton(topic)).all());
        waitFor(() -> partitionCount(topic) == 0, "topic " + topic + " to disappear");
    }

    public void addPartitions(String topic, int total) {
        get(admin.createPartitions(Collections.singletonMap(topic, NewPartitions.increaseTo(total))).all());
        waitFor(() -> partitionCount(topic) == total, "topic " + topic + " with " + total + " partitions");
    }

    /** The offset a consumer group committed in Kafka for the partition, or null. */
    public Long groupOffset(String group, String topic, int partition) {
        java.util.Map<TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> offsets =
                get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
        org.apache.kafka.clients.consumer.OffsetAndMetadata committed =
                offsets.get(new TopicPartition(topic, partition));
        return committed == null ? null : committed.offset();
    }

    /** Kafka's deleteRecords: what retention does, on demand. */
    public void deleteRecords(String topic, int partition, long before) {
        get(admin.deleteRecords(Collections.singletonMap(new TopicPartition(topic, partition),
                RecordsToDelete.beforeOffset(before))).all());
    }

    /** Produces {@code count} records to one partition and waits until they are acknowledged. */
    public void produce(String topic, int partition, int count) {
        produce(topic, partition, count, "record-");
    }

    /** The same, values {@code prefix + i}: tells a re-created topic's records from the old ones. */
    public void produce(String topic, int partition, int count, String prefix) {
        for (int i = 0; i < count; i++) {
            producer.send(new ProducerRecord<>(topic, partition, null, prefix + i));
        }
        producer.flush();
    }

    /**
     * Produces {@code count} records to one partition stamped {@code timestampMs} onwards (their
     * CreateTime, one millisecond apart): records produced that much later, as a test cannot wait.
     */
    public void produceAt(String topic, int partition, int count, long timestampMs) {
        for (int i = 0; i < count; i++) {
            producer.send(new ProducerRecord<>(topic, partition, timestampMs + i, null, "record-" + i));
        }
        producer.flush();
    }

    public long earliest(String topic, int partition) {
        return listOffset(topic, partition, OffsetSpec.earliest());
    }

    public long latest(String topic, int partition) {
        return listOffset(topic, partition, OffsetSpec.latest());
    }

    private long listOffset(String topic, int partition, OffsetSpec spec) {
        TopicPartition tp = new TopicPartition(topic, partition);
        return get(admin.listOffsets(Collections.singletonMap(tp, spec)).partitionResult(tp)).offset();
    }

    // values(): in every kafka-clients the Spark lines bring, 2.8 (Spark 3.3) to 3.9 (Spark 4.2);
    // allTopicNames() came in 3.1, and values() is gone in 4.0.
    @SuppressWarnings("deprecation")
    public int partitionCount(String topic) {
        try {
            return admin.describeTopics(Collections.singleton(topic)).values().get(topic).get()
                    .partitions().size();
        } catch (ExecutionException e) {
            return 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The stored offset path, in Kafka's old consumer layout. */
    public static String offsetPath(String group, String topic, int partition) {
        return "/consumers/" + group + "/offsets/" + topic + "/" + partition;
    }

    /** The Kafka admin client, for what no method here does. */
    public Admin admin() {
        return admin;
    }

    /** The ZooKeeper client, for what no method here does. */
    public ZooKeeper zooKeeper() {
        return zk;
    }

    /** Whether the znode exists. */
    public boolean exists(String path) {
        try {
            return zk.exists(path, false) != null;
        } catch (KeeperException | InterruptedException e) {
            throw new IllegalStateException("exists " + path, e);
        }
    }

    /** A znode's value as text, or null when the node does not exist. */
    public String readZnode(String path) {
        try {
            return new String(zk.getData(path, false, null), StandardCharsets.UTF_8);
        } catch (KeeperException.NoNodeException e) {
            return null;
        } catch (KeeperException | InterruptedException e) {
            throw new IllegalStateException("read " + path, e);
        }
    }

    /** A znode's children, sorted; empty when it does not exist. */
    public java.util.List<String> children(String path) {
        try {
            java.util.List<String> children = new java.util.ArrayList<>(zk.getChildren(path, false));
            Collections.sort(children);
            return children;
        } catch (KeeperException.NoNodeException e) {
            return Collections.emptyList();
        } catch (KeeperException | InterruptedException e) {
            throw new IllegalStateException("list " + path, e);
        }
    }

    /** Writes a znode's raw value, creating it and its parents. */
    public void writeZnode(String path, String value) {
        try {
            byte[] data = value.getBytes(StandardCharsets.UTF_8);
            if (zk.exists(path, false) != null) {
                zk.setData(path, data, -1);
                return;
            }
            int slash = 0;
            while ((slash = path.indexOf('/', slash + 1)) > 0) {
                createIfAbsent(path.substring(0, slash), new byte[0]);
            }
            createIfAbsent(path, data);
        } catch (KeeperException | InterruptedException e) {
            throw new IllegalStateException("write " + path, e);
        }
    }

    private void createIfAbsent(String path, byte[] data) throws KeeperException, InterruptedException {
        try {
            zk.create(path, data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        } catch (KeeperException.NodeExistsException e) {
            // a parent that is already there
        }
    }

    /** Removes a group's stored offsets. */
    public void deleteGroup(String group) {
        try {
            org.apache.zookeeper.ZKUtil.deleteRecursive(zk, "/consumers/" + group);
        } catch (KeeperException.NoNodeException e) {
            // nothing stored
        } catch (KeeperException | InterruptedException e) {
            throw new IllegalStateException("delete group " + group, e);
        }
    }

    private static <T> T get(org.apache.kafka.common.KafkaFuture<T> future) {
        try {
            return future.get(WAIT.getSeconds(), TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause().getMessage(), e.getCause());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static void waitFor(java.util.function.BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out waiting for " + what);
            }
            sleep(100);
        }
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() throws InterruptedException {
        producer.close();
        admin.close();
        zk.close();
    }
}
