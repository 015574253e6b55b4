package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.Test;

/** Every validation action, as the report shows it, on real partitions. */
public class ValidationActionsTest {

    @Test
    public void keptInitializedBelowRangeAndCorrupt() throws Exception {
        String topic = TestCluster.createTopic(4);
        for (int p = 0; p < 4; p++) {
            TestCluster.produce(topic, p, 10);
        }
        String group = TestCluster.unique("group");
        TestCluster.write(TestCluster.offsetPath(group, topic, 0), "3");
        // partition 1: nothing stored
        TestCluster.write(TestCluster.offsetPath(group, topic, 2), "2");
        TestCluster.deleteRecordsBefore(topic, 2, 6);
        TestCluster.write(TestCluster.offsetPath(group, topic, 3), "not a number");

        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            LoadReport report = keeper.loadWithReport(Collections.singleton(topic));
            List<PartitionReport> p = report.partitions();
            assertEquals(report.toString(), 4, p.size());

            assertRow(p.get(0), 0, Action.KEPT, 3L, 0, 10, 3, 0);
            assertEquals("3", p.get(0).storedText());
            assertRow(p.get(1), 1, Action.INITIALIZED, null, 0, 10, 0, 0);
            assertEquals("none", p.get(1).storedText());
            assertRow(p.get(2), 2, Action.RESET_BELOW_RANGE, 2L, 6, 10, 6, 4);
            assertRow(p.get(3), 3, Action.CORRUPT_REPLACED, null, 0, 10, 0, 0);
            assertTrue(p.get(3).storedText(), p.get(3).storedText().startsWith("corrupt"));
            assertTrue(p.get(3).storedText(), p.get(3).storedText().contains("not a number"));

            assertEquals(3, report.corrections().size());
            assertEquals(Long.valueOf(6), report.offsets().get(TestCluster.tp(topic, 2)));
            assertEquals("load writes nothing", "2", TestCluster.readOffset(group, topic, 2));
        }
    }

    @Test
    public void aboveRangeAfterTheTopicWasRecreated() throws Exception {
        String topic = TestCluster.createTopic(1);
        TestCluster.produce(topic, 0, 10);
        String group = TestCluster.unique("group");
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            keeper.commit(Collections.singletonMap(TestCluster.tp(topic, 0), 8L));
            TestCluster.recreateTopic(topic, 1);
            TestCluster.produce(topic, 0, 2);
            PartitionReport p = keeper.loadWithReport(Collections.singleton(topic)).partitions().get(0);
            assertRow(p, 0, Action.RESET_ABOVE_RANGE, 8L, 0, 2, 0, 0);
        }
        try (OffsetKeeper keeper = TestCluster.keeperBuilder(group)
                .onAboveRange(OnAboveRange.LATEST).build()) {
            PartitionReport p = keeper.loadWithReport(Collections.singleton(topic)).partitions().get(0);
            assertRow(p, 0, Action.RESET_ABOVE_RANGE, 8L, 0, 2, 2, 2);
        }
    }

    @Test
    public void policies() throws Exception {
        String topic = TestCluster.createTopic(1);
        TestCluster.produce(topic, 0, 10);
        String group = TestCluster.unique("group");
        try (OffsetKeeper keeper = TestCluster.keeperBuilder(group).onMissing(OnMissing.LATEST).build()) {
            assertRow(keeper.loadWithReport(Collections.singleton(topic)).partitions().get(0), 0,
                    Action.INITIALIZED, null, 0, 10, 10, 10);
        }
        Map<String, Object> params = TestCluster.kafkaParams(group);
        params.put("auto.offset.reset", "latest");
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(TestCluster.zookeeper())
                .kafkaParams(params).build()) {
            assertEquals(Long.valueOf(10),
                    keeper.load(Collections.singleton(topic)).get(TestCluster.tp(topic, 0)));
        }
        try (OffsetKeeper keeper = TestCluster.keeperBuilder(group).onMissing(OnMissing.FAIL).build()) {
            PolicyViolationException e = assertThrows(PolicyViolationException.class,
                    () -> keeper.load(Collections.singleton(topic)));
            assertTrue(e.getMessage(), e.getMessage().contains(topic + "-0"));
        }
        TestCluster.write(TestCluster.offsetPath(group, topic, 0), "2");
        TestCluster.deleteRecordsBefore(topic, 0, 5);
        try (OffsetKeeper keeper = TestCluster.keeperBuilder(group)
                .onBelowRange(OnBelowRange.FAIL).build()) {
            assertThrows(PolicyViolationException.class, () -> keeper.load(Collections.singleton(topic)));
        }
        assertEquals("a refused load writes nothing", "2", TestCluster.readOffset(group, topic, 0));
    }

    @Test
    public void validateWithoutServers() {
        assertDecision(OffsetKeeper.validate(5L, 0, 10, null, null, null), 5, Action.KEPT, 0);
        assertDecision(OffsetKeeper.validate(null, 3, 10, null, null, null), 3, Action.INITIALIZED, 0);
        assertDecision(OffsetKeeper.validate(null, 3, 10, OnMissing.LATEST, null, null), 10,
                Action.INITIALIZED, 7);
        assertDecision(OffsetKeeper.validate(2L, 6, 10, null, null, null), 6,
                Action.RESET_BELOW_RANGE, 4);
        assertDecision(OffsetKeeper.validate(20L, 0, 10, null, null, null), 0,
                Action.RESET_ABOVE_RANGE, 0);
        assertDecision(OffsetKeeper.validate(20L, 0, 10, null, null, OnAboveRange.LATEST), 10,
                Action.RESET_ABOVE_RANGE, 10);
        assertThrows(PolicyViolationException.class,
                () -> OffsetKeeper.validate(2L, 6, 10, null, OnBelowRange.FAIL, null));
        assertThrows(PolicyViolationException.class,
                () -> OffsetKeeper.validate(null, 6, 10, OnMissing.FAIL, null, null));
    }

    private static void assertDecision(Decision d, long offset, Action action, long lost) {
        assertEquals(d.toString(), offset, d.offset());
        assertEquals(d.toString(), action, d.action());
        assertEquals(d.toString(), lost, d.recordsLost());
    }

    private static void assertRow(PartitionReport p, int partition, Action action, Long stored,
            long earliest, long latest, long chosen, long lost) {
        String row = p.toString();
        assertEquals(row, partition, p.partition());
        assertEquals(row, action, p.action());
        if (stored == null) {
            assertNull(row, p.stored());
        } else {
            assertEquals(row, stored, p.stored());
        }
        assertEquals(row, earliest, p.earliest());
        assertEquals(row, latest, p.latest());
        assertEquals(row, chosen, p.chosen());
        assertEquals(row, lost, p.recordsLost());
    }
}
