package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.Test;

/**
 * A topic deleted and re-created with fewer partitions, then filled past the stored offset:
 * caught by its topic ID through the Java API, with the stale partition reported.
 */
public class TopicIdentityTest {

    @Test
    public void recreatedTopicIsReportedWithBothIdsAndStalePartitions() throws Exception {
        String topic = TestCluster.createTopic(2);
        TestCluster.produce(topic, 0, 10);
        TestCluster.produce(topic, 1, 10);
        String group = TestCluster.unique("group");
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            keeper.loadWithReport(Collections.singleton(topic));
            Map<org.apache.kafka.common.TopicPartition, Long> offsets = new HashMap<>();
            offsets.put(TestCluster.tp(topic, 0), 8L);
            offsets.put(TestCluster.tp(topic, 1), 8L);
            keeper.commit(offsets);
        }
        String folder = "/consumers/" + group + "/offsets/" + topic;
        String recorded = TestCluster.read(folder);
        assertTrue(recorded, recorded.startsWith("offsetkeeper-topic-identity 1\ntopic_id="));
        assertEquals("8", TestCluster.readOffset(group, topic, 0));

        TestCluster.recreateTopic(topic, 1);
        TestCluster.produce(topic, 0, 20);

        try (OffsetKeeper keeper = TestCluster.keeperBuilder(group)
                .onRecreated(OnRecreated.FAIL).build()) {
            PolicyViolationException e = assertThrows(PolicyViolationException.class,
                    () -> keeper.loadWithReport(Collections.singleton(topic)));
            assertTrue(e.getMessage(), e.getMessage().contains("topic " + topic + " was re-created (id "));
            assertTrue(e.getMessage(), e.getMessage().contains("on_recreated=fail"));
        }
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            LoadReport report = keeper.loadWithReport(Collections.singleton(topic));
            List<PartitionReport> p = report.partitions();
            assertEquals(report.toString(), 1, p.size());
            PartitionReport row = p.get(0);
            assertEquals(Action.RECREATED, row.action());
            assertEquals(Long.valueOf(8), row.stored());
            assertEquals(0, row.chosen());
            assertEquals(0, row.recordsLost());
            assertNotNull(row.recreatedFromId());
            assertNotEquals(row.recreatedFromId(), row.recreatedToId());
            assertTrue(recorded, recorded.contains("topic_id=" + row.recreatedFromId()));
            String text = "re-created (id " + row.recreatedFromId() + " -> " + row.recreatedToId() + ")";
            assertEquals(text, row.actionText());
            assertTrue(report.toString(), report.toString().contains(text));
            assertEquals(Action.RECREATED.label(), "re-created");

            List<StalePartition> stale = report.stalePartitions();
            assertEquals(report.toString(), 1, stale.size());
            assertEquals(topic, stale.get(0).topic());
            assertEquals(1, stale.get(0).partition());
            assertEquals(Long.valueOf(8), stale.get(0).stored());
            assertTrue(report.toString(), report.toString().contains("stale (partition no longer exists)"));
            assertNull(report.offsets().get(TestCluster.tp(topic, 1)));

            keeper.commit(Collections.singletonMap(TestCluster.tp(topic, 0), 20L));
            assertTrue(TestCluster.read(folder).contains("topic_id=" + row.recreatedToId()));
        }
        try (OffsetKeeper keeper = TestCluster.keeperBuilder(group)
                .onRecreated(OnRecreated.FAIL).build()) {
            PartitionReport row = keeper.loadWithReport(Collections.singleton(topic)).partitions().get(0);
            assertEquals(Action.KEPT, row.action());
            assertNull(row.recreatedFromId());
            assertEquals(20, row.chosen());
        }
    }
}
