import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import io.offsetkeeper.Action;
import io.offsetkeeper.LoadReport;
import io.offsetkeeper.OffsetKeeper;
import io.offsetkeeper.PartitionReport;
import io.offsetkeeper.e2e.ClusterTestBase;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;

/**
 * The example job's start ({@code FlinkOrdersJob.startingOffsets}: offsetkeeper's validated
 * offsets into {@code OffsetsInitializer.offsets}) on Flink's MiniCluster (a local environment)
 * with the real Kafka connector, after a retention purge and after a re-created topic: every
 * record Kafka holds past the valid start is read once, nothing purged or skipped. The same after
 * a purge with the offsets in Kafka's group store ({@code kafkaStore()}), and the next offsets after
 * what the job read, committed through the keeper, read back by Kafka's AdminClient.
 */
public class FlinkRestartTest extends ClusterTestBase {
    private static Map<String, Object> kafkaParams(String group) {
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", cluster.bootstrap);
        params.put("group.id", group);
        return params;
    }

    /**
     * What a previous job (a Spark Streaming one, say) stored when it stopped: it loaded at its
     * start (so its commits record the topic's ID), then committed.
     */
    private static void store(String group, String topic, long... offsets) {
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(cluster.zookeeper)
                .kafkaParams(kafkaParams(group)).build()) {
            keeper.load(Collections.singletonList(topic));
            Map<TopicPartition, Long> stored = new HashMap<>();
            for (int p = 0; p < offsets.length; p++) {
                stored.put(new TopicPartition(topic, p), offsets[p]);
            }
            assertEquals(offsets.length, keeper.commit(stored).written());
        }
    }

    private static LoadReport report(String group, String topic) {
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(cluster.zookeeper)
                .kafkaParams(kafkaParams(group)).build()) {
            return keeper.loadWithReport(Collections.singletonList(topic));
        }
    }

    /** A keeper on Kafka's group store ({@code kafkaStore()}): no ZooKeeper setting. */
    private static OffsetKeeper kafkaStoreKeeper(String group) {
        return OffsetKeeper.builder().kafkaStore().kafkaParams(kafkaParams(group)).build();
    }

    /** "partition:offset:value" of every record, so that each is told apart. */
    static final class RecordText implements KafkaRecordDeserializationSchema<String> {
        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<String> out) {
            out.collect(record.partition() + ":" + record.offset() + ":"
                    + new String(record.value(), StandardCharsets.UTF_8));
        }

        @Override
        public TypeInformation<String> getProducedType() {
            return Types.STRING;
        }
    }

    /** A Flink job from {@code start} to the current end of the topic, on a MiniCluster. */
    private static List<String> read(String topic, OffsetsInitializer start) throws Exception {
        KafkaSource<String> source = KafkaSource.<String>builder()
                .setBootstrapServers(cluster.bootstrap)
                .setTopics(topic)
                .setStartingOffsets(start)
                .setBounded(OffsetsInitializer.latest())
                .setDeserializer(new RecordText())
                .build();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1);
        List<String> records = new ArrayList<>();
        try (CloseableIterator<String> it = env.fromSource(source, WatermarkStrategy.noWatermarks(),
                "kafka").executeAndCollect("offsetkeeper-flink")) {
            it.forEachRemaining(records::add);
        }
        return records;
    }

    private static List<String> expected(int partition, long from, long to, String prefix, long firstValue) {
        return LongStream.range(from, to)
                .mapToObj(o -> partition + ":" + o + ":" + prefix + (firstValue + o - from))
                .collect(Collectors.toList());
    }

    private static void assertExactlyOnce(List<String> expected, List<String> read) {
        assertEquals(new TreeSet<>(expected), new TreeSet<>(read));
        assertEquals("records read twice", expected.size(), read.size());
    }

    @Test
    public void restartsAfterARetentionPurge() throws Exception {
        String topic = "flink-purge-" + System.currentTimeMillis() % 1_000_000;
        String group = topic + "-group";
        cluster.createTopic(topic, 2);
        cluster.produce(topic, 0, 100);
        cluster.produce(topic, 1, 100);
        store(group, topic, 20, 50);
        cluster.deleteRecords(topic, 0, 70); // retention went past the stored 20

        PartitionReport p0 = report(group, topic).partitions().get(0);
        assertEquals(Action.RESET_BELOW_RANGE, p0.action());
        assertEquals(70, p0.chosen());
        assertEquals(50, p0.recordsLost());

        List<String> read = read(topic, FlinkOrdersJob.startingOffsets(cluster.zookeeper,
                kafkaParams(group), Collections.singletonList(topic)));
        List<String> expected = new ArrayList<>(expected(0, 70, 100, "record-", 70));
        expected.addAll(expected(1, 50, 100, "record-", 50));
        assertExactlyOnce(expected, read);
        System.out.println("offsetkeeper-flink: after the purge, " + read.size()
                + " records read from 0:70 and 1:50, none purged, none twice");
    }

    /** The first record read of the partition, in the order the job read them; null for none. */
    private static String firstOf(int partition, List<String> read) {
        return read.stream().filter(r -> r.startsWith(partition + ":")).findFirst().orElse(null);
    }

    /** The offsets to commit after the job: each partition's next one, its last record's + 1. */
    private static Map<TopicPartition, Long> nextOffsets(String topic, List<String> read) {
        Map<TopicPartition, Long> next = new HashMap<>();
        for (String record : read) {
            String[] fields = record.split(":", 3);
            next.merge(new TopicPartition(topic, Integer.parseInt(fields[0])),
                    Long.parseLong(fields[1]) + 1, Math::max);
        }
        return next;
    }

    @Test
    public void startsFromKafkasGroupStoreAfterAPurgeAndCommitsBackThere() throws Exception {
        String topic = "flink-kafka-store-" + System.currentTimeMillis() % 1_000_000;
        String group = topic + "-group";
        List<String> topics = Collections.singletonList(topic);
        cluster.createTopic(topic, 2);
        cluster.produce(topic, 0, 100);
        cluster.produce(topic, 1, 100);
        // What a previous job committed to Kafka's group store when it stopped.
        try (OffsetKeeper previous = kafkaStoreKeeper(group)) {
            previous.load(topics);
            Map<TopicPartition, Long> stored = new HashMap<>();
            stored.put(new TopicPartition(topic, 0), 20L);
            stored.put(new TopicPartition(topic, 1), 50L);
            assertEquals(2, previous.commit(stored).written());
        }
        assertEquals(Long.valueOf(20), cluster.groupOffset(group, topic, 0));
        assertEquals(Long.valueOf(50), cluster.groupOffset(group, topic, 1));
        cluster.deleteRecords(topic, 0, 70); // retention went past the stored 20
        assertEquals(70, cluster.earliest(topic, 0));

        List<String> read;
        try (OffsetKeeper keeper = kafkaStoreKeeper(group)) {
            LoadReport report = keeper.loadWithReport(topics);
            PartitionReport p0 = report.partitions().get(0);
            assertEquals(p0.toString(), Action.RESET_BELOW_RANGE, p0.action());
            assertEquals(p0.toString(), 70, p0.chosen());
            assertEquals(p0.toString(), 50, p0.recordsLost());
            PartitionReport p1 = report.partitions().get(1);
            assertEquals(p1.toString(), Action.KEPT, p1.action());
            assertEquals(p1.toString(), 50, p1.chosen());
            // The keeper holds the group while the job runs. The source reads by assignment with
            // no group id and, without checkpoints, commits nothing: it never joins that group.
            read = read(topic, OffsetsInitializer.offsets(report.offsets(), OffsetResetStrategy.EARLIEST));
            assertEquals(read.toString(), "0:70:record-70", firstOf(0, read));
            assertEquals(read.toString(), "1:50:record-50", firstOf(1, read));
            List<String> expected = new ArrayList<>(expected(0, 70, 100, "record-", 70));
            expected.addAll(expected(1, 50, 100, "record-", 50));
            assertExactlyOnce(expected, read);
            // The bounded job ended: what it read, committed through the keeper that started it,
            // into Kafka's group store.
            Map<TopicPartition, Long> next = nextOffsets(topic, read);
            assertEquals(Long.valueOf(100), next.get(new TopicPartition(topic, 0)));
            assertEquals(Long.valueOf(100), next.get(new TopicPartition(topic, 1)));
            assertEquals(2, keeper.commit(next).written());
        }

        // Kafka's AdminClient reads the commit from the group store, with the keeper's commit
        // metadata; ZooKeeper holds nothing of the group.
        Map<TopicPartition, OffsetAndMetadata> committed = cluster.admin().listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS);
        for (int p = 0; p < 2; p++) {
            OffsetAndMetadata offset = committed.get(new TopicPartition(topic, p));
            assertNotNull("Kafka's group store holds no offset of partition " + p + ": " + committed, offset);
            assertEquals(committed.toString(), 100, offset.offset());
            assertTrue(offset.metadata(), offset.metadata().startsWith("{\"offsetkeeper\":1,\"topic_id\":\""));
        }
        assertFalse("ZooKeeper holds offsets of " + group, cluster.exists("/consumers/" + group));
        System.out.println("offsetkeeper-flink: on Kafka's group store, after the purge, " + read.size()
                + " records read from 0:70 (50 lost) and 1:50, none twice; AdminClient reads the commit 100/100");
    }

    @Test
    public void restartsAfterTheTopicWasRecreatedAndFilledPastTheStoredOffset() throws Exception {
        String topic = "flink-recreated-" + System.currentTimeMillis() % 1_000_000;
        String group = topic + "-group";
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 50, "old-");
        store(group, topic, 50); // also records the topic's ID
        cluster.deleteTopic(topic);
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 80, "new-");

        // The stored offset as it is: Flink would silently skip the new topic's first 50 records.
        Map<TopicPartition, Long> raw = Collections.singletonMap(new TopicPartition(topic, 0), 50L);
        List<String> naive = read(topic, OffsetsInitializer.offsets(raw, OffsetResetStrategy.EARLIEST));
        assertExactlyOnce(expected(0, 50, 80, "new-", 50), naive);

        // Through offsetkeeper: the topic ID differs, the new topic starts at its earliest.
        PartitionReport p0 = report(group, topic).partitions().get(0);
        assertEquals(Action.RECREATED, p0.action());
        assertEquals(0, p0.chosen());
        List<String> read = read(topic, FlinkOrdersJob.startingOffsets(cluster.zookeeper,
                kafkaParams(group), Collections.singletonList(topic)));
        assertExactlyOnce(expected(0, 0, 80, "new-", 0), read);
        assertTrue(read.stream().noneMatch(r -> r.contains(":old-")));
        System.out.println("offsetkeeper-flink: after the re-creation, " + read.size()
                + " new records read (the stored offset alone: " + naive.size() + ")");
    }
}
