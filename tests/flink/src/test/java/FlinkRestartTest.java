import static org.junit.Assert.assertEquals;
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
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;

/**
 * The example job's start ({@code FlinkOrdersJob.startingOffsets}: offsetkeeper's validated
 * offsets into {@code OffsetsInitializer.offsets}) on Flink's MiniCluster (a local environment)
 * with the real Kafka connector, after a retention purge and after a re-created topic: every
 * record Kafka holds past the valid start is read once, nothing purged or skipped.
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
