package io.offsetkeeper;

import static io.offsetkeeper.TestCluster.admin;
import static io.offsetkeeper.TestCluster.tp;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;

/**
 * A move between stores watched from the JVM (phase 2, {@code offsetkeeper.store=zookeeper,kafka}):
 * the mirror's status, the load report's differences between the stores, and the mirror's
 * metrics in JMX.
 */
public class MirrorStatusTest {
    private static final MBeanServer JMX = ManagementFactory.getPlatformMBeanServer();

    private static OffsetKeeper phase2(String group) {
        return TestCluster.keeperBuilder(group).property("offsetkeeper.store", "zookeeper,kafka")
                .build();
    }

    @Test
    public void theMirrorIsWatchedThroughItsStatusTheLoadReportAndTheMetrics() throws Exception {
        String topic = TestCluster.createTopic(2);
        TestCluster.produce(topic, 0, 50);
        TestCluster.produce(topic, 1, 50);
        String group = TestCluster.unique("mirror-status");
        Set<String> topics = Collections.singleton(topic);
        ObjectName name = new ObjectName("io.offsetkeeper:type=GroupMetrics,group="
                + ObjectName.quote(group));

        // One store: no mirror.
        try (OffsetKeeper single = TestCluster.keeper(TestCluster.unique("mirror-none"))) {
            assertNull(single.mirrorStatus());
        }

        try (OffsetKeeper keeper = phase2(group)) {
            LoadReport first = keeper.loadWithReport(topics);
            assertEquals("both stores hold nothing", Collections.emptyList(),
                    first.mirrorDifferences());
            Map<TopicPartition, Long> batch = new LinkedHashMap<>();
            batch.put(tp(topic, 0), 10L);
            batch.put(tp(topic, 1), 20L);
            keeper.commit(batch);
            MirrorStatus status = awaitCaughtUp(keeper);
            assertEquals("kafka", status.store());
            assertEquals(0, status.pendingPartitions());
            assertEquals(status.toString(), 0, status.failures());
            assertNull(status.lastError());
            assertEquals(Duration.ZERO, status.behind());
            // The metrics: present, and nothing pending.
            assertEquals(0, JMX.getAttribute(name, "MirrorPendingPartitions"));
            assertEquals(0L, JMX.getAttribute(name, "MirrorFailures"));
            assertEquals(0L, JMX.getAttribute(name, "MirrorBehindMillis"));
        }
        Map<TopicPartition, OffsetAndMetadata> mirrored = admin()
                .listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                .get(30, TimeUnit.SECONDS);
        assertEquals(10L, mirrored.get(tp(topic, 0)).offset());
        assertEquals(20L, mirrored.get(tp(topic, 1)).offset());

        // Behind the keepers' back: ZooKeeper (authoritative) moves partition 0 on, Kafka (the
        // mirror) moves partition 1 on.
        TestCluster.write(TestCluster.offsetPath(group, topic, 0), "30");
        admin().alterConsumerGroupOffsets(group,
                Collections.singletonMap(tp(topic, 1), new OffsetAndMetadata(40L)))
                .all().get(30, TimeUnit.SECONDS);

        try (OffsetKeeper keeper = phase2(group)) {
            LoadReport report = keeper.loadWithReport(topics);
            List<MirrorDifference> differences = report.mirrorDifferences();
            assertEquals(report.toString() + differences, 2, differences.size());
            MirrorDifference behind = differences.get(0);
            assertEquals(topic, behind.topic());
            assertEquals(0, behind.partition());
            assertEquals(Long.valueOf(30), behind.authoritative());
            assertEquals(Long.valueOf(10), behind.mirror());
            assertEquals("10", behind.mirrorText());
            assertFalse("the mirror is behind: not taken", behind.taken());
            MirrorDifference ahead = differences.get(1);
            assertEquals(1, ahead.partition());
            assertEquals(Long.valueOf(20), ahead.authoritative());
            assertEquals(Long.valueOf(40), ahead.mirror());
            assertTrue("the mirror is ahead, in range: taken", ahead.taken());
            assertEquals(Long.valueOf(30), report.offsets().get(tp(topic, 0)));
            assertEquals("never backwards", Long.valueOf(40), report.offsets().get(tp(topic, 1)));
            assertEquals(1, JMX.getAttribute(name, "OwnershipHeld"));
            assertEquals(0, JMX.getAttribute(name, "MirrorPendingPartitions"));
        }
    }

    /** Waits up to 20 s for the mirror to hold every committed offset. */
    private static MirrorStatus awaitCaughtUp(OffsetKeeper keeper) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        MirrorStatus status = keeper.mirrorStatus();
        while (!status.caughtUp() || !status.behind().isZero()) {
            if (System.nanoTime() > deadline) {
                fail("the mirror did not catch up in 20 s: " + status);
            }
            Thread.sleep(20);
            status = keeper.mirrorStatus();
        }
        return status;
    }
}
