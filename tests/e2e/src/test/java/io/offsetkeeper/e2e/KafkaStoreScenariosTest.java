package io.offsetkeeper.e2e;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import io.offsetkeeper.Action;
import io.offsetkeeper.PartitionReport;
import io.offsetkeeper.e2e.StreamingJob.Offsets;
import io.offsetkeeper.e2e.StreamingJob.Run;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;

/**
 * A real Spark Streaming job whose offsets offsetkeeper keeps in Kafka's group store
 * ({@code kafkaStore()}, no ZooKeeper): it restarts where it stopped, survives a retention purge
 * with the records lost counted, processes a crashed batch again, and its commits are what
 * Kafka's AdminClient reads for the group.
 */
public class KafkaStoreScenariosTest extends ClusterTestBase {
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(90);
    private static final AtomicInteger NAMES = new AtomicInteger();

    private static String unique(String prefix) {
        return prefix + "-" + System.currentTimeMillis() % 1_000_000 + "-" + NAMES.incrementAndGet();
    }

    private static StreamingJob job(String group, String topic) {
        return new StreamingJob(cluster, group, Collections.singletonList(topic), Offsets.KAFKA_STORE);
    }

    private static Run runToEnd(StreamingJob job, String topic, int partitions) {
        Map<TopicPartition, Long> ends = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            ends.put(new TopicPartition(topic, p), cluster.latest(topic, p));
        }
        return job.run(StreamingJob.reached(ends), RUN_TIMEOUT, false);
    }

    private static void assertSucceeded(Run run) {
        assertNull("the job failed: " + run.failureText(), run.failure);
    }

    private static void assertProcessed(String topic, int partition, long from, long to, Run... runs) {
        TreeSet<Long> seen = new TreeSet<>();
        for (Run run : runs) {
            seen.addAll(run.offsets(topic, partition));
        }
        for (long o = from; o < to; o++) {
            assertTrue(topic + "-" + partition + " skipped offset " + o, seen.contains(o));
        }
    }

    private static PartitionReport reportOf(Run run, int partition) {
        assertNotNull("no load report", run.report);
        return run.report.partitions().get(partition);
    }

    @Test
    public void restartsWhereItStoppedAndKafkasToolsSeeTheCommits() {
        String topic = unique("ks-clean");
        String group = unique("ks-g");
        cluster.createTopic(topic, 2);
        cluster.produce(topic, 0, 20);
        cluster.produce(topic, 1, 20);
        Run first = runToEnd(job(group, topic), topic, 2);
        assertSucceeded(first);
        assertEquals(Long.valueOf(20), cluster.groupOffset(group, topic, 0));
        assertEquals(Long.valueOf(20), cluster.groupOffset(group, topic, 1));

        cluster.produce(topic, 0, 10);
        cluster.produce(topic, 1, 10);
        Run second = runToEnd(job(group, topic), topic, 2);
        assertSucceeded(second);
        for (int p = 0; p < 2; p++) {
            assertProcessed(topic, p, 0, 30, first, second);
            assertEquals(Action.KEPT, reportOf(second, p).action());
            assertEquals("resumes at the committed offset", 20L,
                    (long) Collections.min(second.offsets(topic, p)));
            assertEquals(Long.valueOf(30), cluster.groupOffset(group, topic, p));
        }
    }

    @Test
    public void retentionPurgeWhileStoppedResumesAtEarliestAndCountsTheLostRecords() {
        String topic = unique("ks-purged");
        String group = unique("ks-g");
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 30);
        Run first = runToEnd(job(group, topic), topic, 1);
        assertSucceeded(first);
        assertEquals(Long.valueOf(30), cluster.groupOffset(group, topic, 0));

        cluster.produce(topic, 0, 30);
        cluster.deleteRecords(topic, 0, 45); // 30..44 purged, never processed
        Run second = runToEnd(job(group, topic), topic, 1);
        assertSucceeded(second);
        PartitionReport report = reportOf(second, 0);
        assertEquals(Action.RESET_BELOW_RANGE, report.action());
        assertEquals(15L, report.recordsLost());
        assertEquals(45L, (long) Collections.min(second.offsets(topic, 0)));
        assertProcessed(topic, 0, 45, 60, second);
    }

    @Test
    public void crashAfterProcessingBeforeCommitReprocessesTheBatch() {
        String topic = unique("ks-crash");
        String group = unique("ks-g");
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 10);
        Run crashed = job(group, topic).run(r -> false, RUN_TIMEOUT, true);
        assertSucceeded(crashed);
        assertTrue("the crashed batch held records", !crashed.processed.isEmpty());
        assertNull("nothing was committed", cluster.groupOffset(group, topic, 0));

        Run restarted = runToEnd(job(group, topic), topic, 1);
        assertSucceeded(restarted);
        assertTrue("the crashed batch is processed again",
                restarted.processed.containsAll(crashed.processed));
        assertProcessed(topic, 0, 0, 10, restarted);
    }

    @Test
    public void aJobThatSubscribesWithTheSameGroupIsRefusedByTheCoordinator() {
        String topic = unique("ks-subscribe");
        String group = unique("ks-g");
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 5);
        Run run = job(group, topic).withSubscribe().run(r -> false, Duration.ofSeconds(20), false);
        assertTrue("Subscribe with the group offsetkeeper holds: " + run.failureText(),
                run.failureText().contains("InconsistentGroupProtocol"));
        assertNull("nothing was committed", cluster.groupOffset(group, topic, 0));
    }
}
