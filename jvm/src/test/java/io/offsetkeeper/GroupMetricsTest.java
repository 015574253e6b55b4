package io.offsetkeeper;

import static io.offsetkeeper.TestCluster.tp;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.lang.management.ManagementFactory;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;
import javax.management.openmbean.TabularData;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;

/**
 * Each group's metrics, read as an operator reads them: through the JVM's MBean server, against
 * the real cluster (a ZooKeeper address nothing listens on stands for an outage).
 */
public class GroupMetricsTest {
    private static final MBeanServer JMX = ManagementFactory.getPlatformMBeanServer();

    @Test
    public void loadsCommitsLostRecordsLagAndOwnershipAreInJmx() throws Exception {
        String topic = TestCluster.createTopic(2);
        TestCluster.produce(topic, 0, 100);
        TestCluster.produce(topic, 1, 100);
        String group = TestCluster.unique("metrics");
        TestCluster.write(TestCluster.offsetPath(group, topic, 0), "10");
        TestCluster.write(TestCluster.offsetPath(group, topic, 1), "10");
        TestCluster.deleteRecordsBefore(topic, 0, 40); // retention took 30 unread records
        ObjectName name = new ObjectName("io.offsetkeeper:type=GroupMetrics,group="
                + ObjectName.quote(group));
        GroupMetrics.lagRefreshInterval(Duration.ofMillis(200));
        try {
            OffsetKeeper keeper = TestCluster.keeper(group);
            assertEquals("registered when built", 0L, JMX.getAttribute(name, "Loads"));
            LoadReport report = keeper.loadWithReport(Collections.singleton(topic));
            long lost = report.partitions().stream().mapToLong(PartitionReport::recordsLost).sum();
            assertEquals(30, lost);
            assertEquals(1L, JMX.getAttribute(name, "Loads"));
            assertEquals(lost, JMX.getAttribute(name, "RecordsLost"));
            assertEquals(1L, JMX.getAttribute(name, "PartitionsResetBelowRange"));
            assertEquals(0L, JMX.getAttribute(name, "PartitionsResetMissing"));
            assertEquals(1, JMX.getAttribute(name, "OwnershipHeld"));
            assertEquals(-1L, JMX.getAttribute(name, "MillisSinceLastStoredCommit"));
            // Nothing committed yet: the lag counts from what is stored (10 and 10).
            awaitLag(name, topic, (100 - 10) + (100 - 10));

            for (long offset = 50; offset <= 100; offset += 25) {
                Map<TopicPartition, Long> batch = new LinkedHashMap<>();
                batch.put(tp(topic, 0), offset);
                batch.put(tp(topic, 1), offset);
                keeper.commit(batch);
            }
            assertEquals(3L, JMX.getAttribute(name, "Commits"));
            assertEquals(0L, JMX.getAttribute(name, "CommitsDeferred"));
            assertEquals(0L, JMX.getAttribute(name, "CommitOutageMillis"));
            long since = (Long) JMX.getAttribute(name, "MillisSinceLastStoredCommit");
            assertTrue("since the last stored commit: " + since, since >= 0 && since < 60_000);
            assertTrue((Double) JMX.getAttribute(name, "CommitMillisTotal") > 0);
            awaitLag(name, topic, 0);

            keeper.commitAsync(Collections.singletonMap(tp(topic, 0), 100L));
            keeper.flush();
            assertEquals(1L, JMX.getAttribute(name, "AsyncCommitsHanded"));
            assertEquals(0, JMX.getAttribute(name, "AsyncPendingOffsets"));
            assertEquals("the writer's commit counts", 4L, JMX.getAttribute(name, "Commits"));

            keeper.close();
            assertEquals("released at close", 0, JMX.getAttribute(name, "OwnershipHeld"));
        } finally {
            GroupMetrics.lagRefreshInterval(Duration.ofSeconds(30));
        }
    }

    @Test
    public void deferredAndFailedCommitsAreCountedAndTheOutageShown() throws Exception {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        String group = TestCluster.unique("metrics-outage");
        Map<String, Object> kafkaParams = new HashMap<>();
        kafkaParams.put("bootstrap.servers", "127.0.0.1:1");
        kafkaParams.put("group.id", group);
        GroupMetrics metrics;
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper("127.0.0.1:" + port)
                .kafkaParams(kafkaParams).zookeeperTimeout(Duration.ofMillis(500))
                .commitOutageTolerance(Duration.ofSeconds(2)).build()) {
            metrics = GroupMetrics.find(group);
            CommitResult first = keeper.commit(Collections.singletonMap(tp("t", 0), 5L));
            assertTrue(first.toString(), first.deferred());
            assertEquals(1, metrics.getCommits());
            assertEquals(1, metrics.getCommitsDeferred());
            assertTrue("an outage is shown", metrics.getCommitOutageMillis() > 0);
            long started = System.nanoTime();
            while (true) {
                assertTrue("no commit failed 15 s into the outage",
                        System.nanoTime() - started < Duration.ofSeconds(15).toNanos());
                try {
                    keeper.commit(Collections.singletonMap(tp("t", 0), 6L));
                } catch (ServerTimeoutException e) {
                    break;
                }
            }
            assertEquals(1, metrics.getCommitFailures());
            assertEquals(metrics.getCommits(), metrics.getCommitsDeferred());
            assertTrue(metrics.getCommitOutageMillis() >= 1_000);
            assertEquals("never stored", -1, metrics.getMillisSinceLastStoredCommit());
            assertEquals(0, metrics.getOwnershipHeld());
        }
    }

    @Test
    public void aListenerHearsEachLoadAndCommit() throws Exception {
        String topic = TestCluster.createTopic(1);
        TestCluster.produce(topic, 0, 10);
        String group = TestCluster.unique("metrics-listener");
        AtomicLong loads = new AtomicLong();
        AtomicLong commits = new AtomicLong();
        GroupMetrics.Listener listener = new GroupMetrics.Listener() {
            @Override
            public void load(long nanos) {
                assertTrue(nanos > 0);
                loads.incrementAndGet();
            }

            @Override
            public void commit(long nanos) {
                commits.incrementAndGet();
            }
        };
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            GroupMetrics.find(group).addListener(listener);
            keeper.load(Collections.singleton(topic));
            keeper.commit(Collections.singletonMap(tp(topic, 0), 5L));
            keeper.commit(Collections.singletonMap(tp(topic, 0), 10L));
            GroupMetrics.find(group).removeListener(listener);
            keeper.commit(Collections.singletonMap(tp(topic, 0), 10L));
        }
        assertEquals(1, loads.get());
        assertEquals(2, commits.get());
        assertEquals(3, GroupMetrics.find(group).getCommits());
        try {
            GroupMetrics.lagRefreshInterval(Duration.ofSeconds(-1));
            fail("a negative interval was taken");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("PT-1S is not allowed"));
        }
    }

    /** Waits up to 20 s for the refreshed lag of the topic (a JMX TabularData of the map). */
    private static void awaitLag(ObjectName name, String topic, long expected) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        Object seen = null;
        while (System.nanoTime() < deadline) {
            TabularData lag = (TabularData) JMX.getAttribute(name, "Lag");
            CompositeData row = lag.get(new Object[] {topic});
            seen = row == null ? null : row.get("value");
            if (Long.valueOf(expected).equals(seen)) {
                return;
            }
            Thread.sleep(50);
        }
        fail("the lag of " + topic + " is " + seen + ", not " + expected + ", after 20 s");
    }
}
