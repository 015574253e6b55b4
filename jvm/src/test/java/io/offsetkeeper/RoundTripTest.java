package io.offsetkeeper;

import static io.offsetkeeper.TestCluster.tp;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import io.offsetkeeper.spark.SparkOffsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.streaming.kafka010.OffsetRange;
import org.junit.Test;

/** Load, commit and lag from Java, checked against what ZooKeeper holds. */
public class RoundTripTest {

    @Test
    public void loadCommitLoad() throws Exception {
        String topic = TestCluster.createTopic(3);
        TestCluster.produce(topic, 0, 10);
        TestCluster.produce(topic, 1, 5);
        String group = TestCluster.unique("group");
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            Map<TopicPartition, Long> first = keeper.load(Collections.singletonList(topic));
            Map<TopicPartition, Long> expected = new HashMap<>();
            expected.put(tp(topic, 0), 0L);
            expected.put(tp(topic, 1), 0L);
            expected.put(tp(topic, 2), 0L);
            assertEquals(expected, first);
            assertNull("load writes nothing", TestCluster.readOffset(group, topic, 0));

            Map<TopicPartition, Long> batch = new HashMap<>();
            batch.put(tp(topic, 0), 7L);
            batch.put(tp(topic, 1), 5L);
            batch.put(tp(topic, 2), 0L);
            CommitResult result = keeper.commit(batch);
            assertEquals(3, result.written());
            assertEquals(0, result.unchanged());
            assertEquals(1, result.requests());
            assertEquals("7", TestCluster.readOffset(group, topic, 0));
            assertEquals("5", TestCluster.readOffset(group, topic, 1));
            assertEquals("0", TestCluster.readOffset(group, topic, 2));

            LoadReport report = keeper.loadWithReport(Collections.singletonList(topic));
            assertEquals(batch, report.offsets());
            assertTrue(report.corrections().isEmpty());
            for (PartitionReport p : report.partitions()) {
                assertEquals(Action.KEPT, p.action());
                assertEquals(p.chosen(), (long) p.stored());
            }

            CommitResult again = keeper.commit(batch);
            assertEquals(0, again.written());
            assertEquals(3, again.unchanged());
        }
    }

    /** Commits of one size reuse their columns: nothing of the last batch may leak into the next. */
    @Test
    public void batchesOfOneSizeEachCommitTheirOwnEntries() throws Exception {
        String first = TestCluster.createTopic(2);
        String second = TestCluster.createTopic(1);
        String group = TestCluster.unique("group");
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            Map<TopicPartition, Long> batch = new LinkedHashMap<>();
            batch.put(tp(first, 0), 4L);
            batch.put(tp(first, 1), 5L);
            batch.put(tp(second, 0), 6L);
            assertEquals(3, keeper.commit(batch).written());
            // The same size, the topics in the other order, one partition moved to the other.
            Map<TopicPartition, Long> next = new LinkedHashMap<>();
            next.put(tp(second, 0), 9L);
            next.put(tp(first, 1), 8L);
            next.put(tp(first, 0), 7L);
            CommitResult result = keeper.commit(next);
            assertEquals(3, result.written());
            assertEquals("7", TestCluster.readOffset(group, first, 0));
            assertEquals("8", TestCluster.readOffset(group, first, 1));
            assertEquals("9", TestCluster.readOffset(group, second, 0));
        }
    }

    @Test
    public void commitsTheUntilOffsetOfSparkRanges() throws Exception {
        String topic = TestCluster.createTopic(2);
        TestCluster.produce(topic, 0, 20);
        TestCluster.produce(topic, 1, 20);
        String group = TestCluster.unique("group");
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            OffsetRange[] ranges = {OffsetRange.create(topic, 0, 0, 12),
                OffsetRange.create(topic, 1, 3, 20)};
            assertEquals(2, keeper.commit(SparkOffsets.untilOffsets(ranges)).written());
            assertEquals("12", TestCluster.readOffset(group, topic, 0));
            assertEquals("20", TestCluster.readOffset(group, topic, 1));
            assertEquals(Long.valueOf(12), keeper.load(Collections.singleton(topic)).get(tp(topic, 0)));
            // Straight from the array, as a job's foreachRDD commits: one changed of two.
            OffsetRange[] next = {OffsetRange.create(topic, 1, 20, 20), OffsetRange.create(topic, 0, 12, 15)};
            assertEquals(1, SparkOffsets.commit(keeper, next).written());
            assertEquals("15", TestCluster.readOffset(group, topic, 0));
            assertEquals("20", TestCluster.readOffset(group, topic, 1));
            assertEquals(0, SparkOffsets.commit(keeper, new OffsetRange[0]).written());
        }
    }

    @Test
    public void lagPerPartition() throws Exception {
        String topic = TestCluster.createTopic(2);
        TestCluster.produce(topic, 0, 10);
        TestCluster.produce(topic, 1, 4);
        String group = TestCluster.unique("group");
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            keeper.commit(Collections.singletonMap(tp(topic, 0), 6L));
            List<PartitionLag> lag = keeper.lag(Collections.singleton(topic));
            assertEquals(2, lag.size());
            assertEquals(Long.valueOf(6), lag.get(0).committed());
            assertEquals(10, lag.get(0).latest());
            assertEquals(Long.valueOf(4), lag.get(0).lag());
            assertNull(lag.get(1).committed());
            // Nothing committed: the lag is unknown, as kafka-consumer-groups shows it ("-").
            assertNull(lag.get(1).lag());
        }
    }

    @Test
    public void emptyCommitsTouchNothing() {
        // No server listens on port 1: an empty commit must not even try to connect.
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", "127.0.0.1:1");
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper("127.0.0.1:1").group("g")
                .kafkaParams(params).build()) {
            assertEquals(0, keeper.commit(SparkOffsets.untilOffsets(new OffsetRange[0])).written());
            assertEquals(0, keeper.commit(Collections.<TopicPartition, Long>emptyMap()).requests());
        }
    }

    @Test
    public void reportTable() throws Exception {
        String topic = TestCluster.createTopic(1);
        TestCluster.produce(topic, 0, 3);
        try (OffsetKeeper keeper = TestCluster.keeper(TestCluster.unique("group"))) {
            String table = keeper.loadWithReport(Arrays.asList(topic, topic)).toString();
            String[] lines = table.split("\n");
            assertEquals(table, 2, lines.length); // duplicates are the engine's to drop
            assertTrue(table, lines[0].startsWith("TOPIC"));
            assertTrue(table, lines[1].matches(topic + " +0 +none +0 +3 +0 +initialized +0"));
        }
    }
}
