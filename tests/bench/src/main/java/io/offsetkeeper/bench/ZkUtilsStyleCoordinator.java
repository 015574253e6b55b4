package io.offsetkeeper.bench;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.NoOffsetForPartitionException;
import org.apache.kafka.common.TopicPartition;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * B1, the approach jobs write by hand: a {@code KafkaOffsetCoordinator} in the style of Kafka's
 * old {@code ZkUtils}, one ZooKeeper round trip per partition, in Java. ZkUtils/ZkClient are
 * replaced by the ZooKeeper Java client they wrap, used the same way: partitions from
 * {@code /brokers/topics/<topic>}, one synchronous getData per partition, one synchronous setData
 * per partition (create with parents when missing, as {@code updatePersistentPath} did). The
 * ranges come from two KafkaConsumers that subscribe with the job's group, {@code poll(0)}, pause,
 * seek to the beginning (then to the end) and ask each partition's position; each consumer is
 * closed after use, as such coordinators do.
 */
final class ZkUtilsStyleCoordinator implements Contender {
    private static final Logger log = LoggerFactory.getLogger(ZkUtilsStyleCoordinator.class);
    private static final Pattern PARTITION_KEY = Pattern.compile("\"(\\d+)\"\\s*:\\s*\\[");

    private final String zkConnect;
    private final Map<String, Object> kafkaConfig;
    private Coordinator warm;

    ZkUtilsStyleCoordinator(String zkConnect, Map<String, Object> kafkaConfig) {
        this.zkConnect = zkConnect;
        this.kafkaConfig = kafkaConfig;
    }

    @Override
    public String name() {
        return "B1";
    }

    @Override
    public void open(Workload w) throws Exception {
        close();
        warm = new Coordinator(zkConnect, kafkaConfig);
    }

    @Override
    public Timed loadCold(Workload w) throws Exception {
        long start = System.nanoTime();
        Coordinator coordinator = new Coordinator(zkConnect, kafkaConfig);
        Map<TopicPartition, Long> offsets = coordinator.loadOffsets(w.topics, w.coldGroup);
        long nanos = System.nanoTime() - start;
        coordinator.zk.close();
        return new Timed(nanos, offsets, offsets.size());
    }

    @Override
    public Timed loadWarm(Workload w) throws Exception {
        long start = System.nanoTime();
        Map<TopicPartition, Long> offsets = warm.loadOffsets(w.topics, w.loadGroup);
        return new Timed(System.nanoTime() - start, offsets, offsets.size());
    }

    @Override
    public long commit(Workload w, Map<TopicPartition, Long> offsets,
            Map<TopicPartition, Long> changed) throws Exception {
        long start = System.nanoTime();
        warm.commitOffsets(w.commitGroup(name()), offsets);
        return System.nanoTime() - start;
    }

    @Override
    public void close() throws Exception {
        if (warm != null) {
            warm.zk.close();
            warm = null;
        }
    }

    /** The hand-written coordinator class, as jobs carry it. */
    static final class Coordinator {
        final ZooKeeper zk;
        private final Map<String, Object> kafkaConfig;

        /** ZkUtils.createZkClientAndConnection(zkQuorum, 10000, 10000): connected on return. */
        Coordinator(String zkQuorum, Map<String, Object> kafkaConfig) throws Exception {
            CountDownLatch connected = new CountDownLatch(1);
            this.zk = new ZooKeeper(zkQuorum, 10_000, event -> {
                if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            });
            if (!connected.await(10, TimeUnit.SECONDS)) {
                zk.close();
                throw new IllegalStateException("no ZooKeeper connection to " + zkQuorum);
            }
            this.kafkaConfig = kafkaConfig;
        }

        private KafkaConsumer<String, byte[]> buildConsumer(String resetPolicy) {
            Properties props = new Properties();
            props.putAll(kafkaConfig);
            props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, resetPolicy);
            return new KafkaConsumer<>(props);
        }

        @SuppressWarnings("deprecation") // poll(long): the coordinator calls poll(0)
        Map<TopicPartition, Long> fetchStartingOffsets(List<String> topics) {
            KafkaConsumer<String, byte[]> consumer = buildConsumer("earliest");
            consumer.subscribe(topics);
            try {
                consumer.poll(0);
            } catch (NoOffsetForPartitionException e) {
                // ignored, as the coordinator does
            }
            Set<TopicPartition> assigned = consumer.assignment();
            consumer.pause(assigned);
            consumer.seekToBeginning(assigned);
            Map<TopicPartition, Long> points = new HashMap<>();
            for (TopicPartition tp : assigned) {
                points.put(tp, consumer.position(tp));
            }
            consumer.close();
            return points;
        }

        @SuppressWarnings("deprecation")
        Map<TopicPartition, Long> fetchEndingOffsets(List<String> topics) {
            KafkaConsumer<String, byte[]> consumer = buildConsumer("latest");
            consumer.subscribe(topics);
            try {
                consumer.poll(0);
            } catch (NoOffsetForPartitionException e) {
                // ignored, as the coordinator does
            }
            Set<TopicPartition> assigned = consumer.assignment();
            consumer.pause(assigned);
            consumer.seekToEnd(assigned);
            Map<TopicPartition, Long> points = new HashMap<>();
            for (TopicPartition tp : assigned) {
                points.put(tp, consumer.position(tp));
            }
            consumer.close();
            return points;
        }

        /** ZkUtils.getPartitionsForTopics: each topic's znode, its "partitions" keys. */
        Map<String, List<Integer>> getPartitionsForTopics(List<String> topics) throws Exception {
            Map<String, List<Integer>> result = new TreeMap<>();
            for (String topic : topics) {
                byte[] data = zk.getData("/brokers/topics/" + topic, false, null);
                String json = new String(data, StandardCharsets.UTF_8);
                int at = json.indexOf("\"partitions\"");
                List<Integer> partitions = new ArrayList<>();
                Matcher m = PARTITION_KEY.matcher(json);
                m.region(at, json.length());
                while (m.find()) {
                    partitions.add(Integer.parseInt(m.group(1)));
                }
                partitions.sort(null);
                result.put(topic, partitions);
            }
            return result;
        }

        Map<TopicPartition, Long> loadOffsets(List<String> topicList, String consumerGroup)
                throws Exception {
            Map<TopicPartition, Long> offsetMap = new HashMap<>();
            Map<String, List<Integer>> topicPartitionInfo = getPartitionsForTopics(topicList);
            for (Map.Entry<String, List<Integer>> e : topicPartitionInfo.entrySet()) {
                String topic = e.getKey();
                String dir = "/consumers/" + consumerGroup + "/offsets/" + topic;
                for (int partition : e.getValue()) {
                    String path = dir + "/" + partition;
                    TopicPartition tp = new TopicPartition(topic, partition);
                    try {
                        byte[] bytes = zk.getData(path, false, null);
                        if (bytes != null) {
                            String data = new String(bytes, StandardCharsets.UTF_8);
                            log.info("Topic: {}, Partition: {}, Offset: {}, Path: {}", topic,
                                    partition, data, path);
                            offsetMap.put(tp, Long.parseLong(data));
                        }
                    } catch (Exception failure) {
                        log.warn("No previous offset found in ZK for {}-{}. Fetching from Kafka.",
                                topic, partition);
                        offsetMap.put(tp, 0L);
                    }
                }
            }

            Map<TopicPartition, Long> lowerBounds = fetchStartingOffsets(topicList);
            Map<TopicPartition, Long> upperBounds = fetchEndingOffsets(topicList);

            for (Map.Entry<TopicPartition, Long> e : offsetMap.entrySet()) {
                long storedOffset = e.getValue();
                long minOffset = lowerBounds.getOrDefault(e.getKey(), 0L);
                long maxOffset = upperBounds.getOrDefault(e.getKey(), Long.MAX_VALUE);
                if (storedOffset > maxOffset || storedOffset < minOffset) {
                    log.warn("Offset {} for {} is out of range [{}, {}]. Resetting to {}.",
                            storedOffset, e.getKey(), minOffset, maxOffset, minOffset);
                    e.setValue(minOffset);
                }
            }
            return offsetMap;
        }

        /** One updatePersistentPath per range, in series, as the coordinator's commitOffsets. */
        void commitOffsets(String groupId, Map<TopicPartition, Long> ranges) throws Exception {
            for (Map.Entry<TopicPartition, Long> range : ranges.entrySet()) {
                String path = "/consumers/" + groupId + "/offsets/" + range.getKey().topic() + "/"
                        + range.getKey().partition();
                updatePersistentPath(path, range.getValue().toString());
                log.debug("Committed offset {} for {} at {}", range.getValue(), range.getKey(), path);
            }
        }

        private void updatePersistentPath(String path, String data) throws Exception {
            byte[] bytes = data.getBytes(StandardCharsets.UTF_8);
            try {
                zk.setData(path, bytes, -1);
            } catch (KeeperException.NoNodeException e) {
                createParentPath(path);
                try {
                    zk.create(path, bytes, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                } catch (KeeperException.NodeExistsException again) {
                    zk.setData(path, bytes, -1);
                }
            }
        }

        private void createParentPath(String path) throws Exception {
            String parent = path.substring(0, path.lastIndexOf('/'));
            if (parent.isEmpty()) {
                return;
            }
            try {
                zk.create(parent, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            } catch (KeeperException.NoNodeException e) {
                createParentPath(parent);
                createParentPath(path);
            } catch (KeeperException.NodeExistsException e) {
                // there already
            }
        }
    }
}
