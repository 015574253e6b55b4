package io.offsetkeeper.e2e;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import io.offsetkeeper.Action;
import io.offsetkeeper.PartitionReport;
import io.offsetkeeper.e2e.StreamingJob.Offsets;
import io.offsetkeeper.e2e.StreamingJob.Record;
import io.offsetkeeper.e2e.StreamingJob.Run;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;

/**
 * A real Spark Streaming job, stopped, changed under and restarted: with offsetkeeper it
 * survives what kills today's jobs and skips nothing Kafka still holds; without it (offsets read
 * raw from ZooKeeper, as hand-written offset code does) it fails the way users reported.
 */
public class RestartScenariosTest extends ClusterTestBase {
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(90);
    private static final AtomicInteger NAMES = new AtomicInteger();

    private static String unique(String prefix) {
        return prefix + "-" + System.currentTimeMillis() % 1_000_000 + "-" + NAMES.incrementAndGet();
    }

    private static StreamingJob job(String group, Offsets source, String... topics) {
        List<String> list = new ArrayList<>();
        Collections.addAll(list, topics);
        return new StreamingJob(cluster, group, list, source);
    }

    /** Runs until every partition of the topics is processed up to its current end. */
    private static Run runToEnd(StreamingJob job, String... topics) {
        return job.run(StreamingJob.reached(ends(topics)), RUN_TIMEOUT, false);
    }

    private static Map<TopicPartition, Long> ends(String... topics) {
        Map<TopicPartition, Long> ends = new HashMap<>();
        for (String topic : topics) {
            for (int p = 0; p < cluster.partitionCount(topic); p++) {
                ends.put(new TopicPartition(topic, p), cluster.latest(topic, p));
            }
        }
        return ends;
    }

    private static void assertSucceeded(Run run) {
        assertNull("the job failed: " + run.failureText(), run.failure);
    }

    /** Every offset in [from, to) of the partition was processed in one of the runs. */
    private static void assertProcessed(String topic, int partition, long from, long to, Run... runs) {
        TreeSet<Long> seen = new TreeSet<>();
        for (Run run : runs) {
            seen.addAll(run.offsets(topic, partition));
        }
        List<Long> missing = LongStream.range(from, to).filter(o -> !seen.contains(o)).boxed()
                .collect(Collectors.toList());
        assertTrue(topic + "-" + partition + " skipped offsets " + missing, missing.isEmpty());
    }

    private static PartitionReport reportOf(Run run, String topic, int partition) {
        for (PartitionReport r : run.report.partitions()) {
            if (r.topic().equals(topic) && r.partition() == partition) {
                return r;
            }
        }
        throw new AssertionError("no report for " + topic + "-" + partition + ": " + run.report);
    }

    /** Holds once `done` has held for a few batches, so that a job that would skip has time to. */
    private static Predicate<List<Record>> afterSettling(Predicate<List<Record>> done) {
        long[] since = {0};
        return processed -> {
            if (!done.test(processed)) {
                return false;
            }
            if (since[0] == 0) {
                since[0] = System.nanoTime();
            }
            return System.nanoTime() - since[0] > Duration.ofSeconds(3).toNanos();
        };
    }

    @Test
    public void cleanRestartProcessesEveryRecordAndResumesWhereItStopped() {
        String topic = unique("clean");
        String group = unique("g");
        cluster.createTopic(topic, 2);
        cluster.produce(topic, 0, 20);
        cluster.produce(topic, 1, 20);
        Run first = runToEnd(job(group, Offsets.OFFSETKEEPER, topic), topic);
        assertSucceeded(first);

        cluster.produce(topic, 0, 10);
        cluster.produce(topic, 1, 10);
        Run second = runToEnd(job(group, Offsets.OFFSETKEEPER, topic), topic);
        assertSucceeded(second);
        for (int p = 0; p < 2; p++) {
            assertProcessed(topic, p, 0, 30, first, second);
            assertEquals(Action.KEPT, reportOf(second, topic, p).action());
            assertEquals("resumes at the committed offset", 20L,
                    (long) Collections.min(second.offsets(topic, p)));
        }
    }

    @Test
    public void retentionPurgeWhileStoppedResumesAtEarliestAndCountsTheLostRecords() {
        String topic = unique("purged");
        String group = unique("g");
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 30);
        Run first = runToEnd(job(group, Offsets.OFFSETKEEPER, topic), topic);
        assertSucceeded(first);
        assertEquals("30", cluster.readZnode(Cluster.offsetPath(group, topic, 0)));

        cluster.produce(topic, 0, 30);
        cluster.deleteRecords(topic, 0, 45); // 30..44 purged, never processed

        Run raw = job(group, Offsets.RAW_ZOOKEEPER, topic).run(r -> false, RUN_TIMEOUT, false);
        assertTrue("without offsetkeeper: " + raw.failureText(),
                raw.failureText().contains("OffsetOutOfRangeException"));

        Run second = runToEnd(job(group, Offsets.OFFSETKEEPER, topic), topic);
        assertSucceeded(second);
        PartitionReport report = reportOf(second, topic, 0);
        assertEquals(Action.RESET_BELOW_RANGE, report.action());
        assertEquals(15L, report.recordsLost());
        assertEquals(45L, (long) Collections.min(second.offsets(topic, 0)));
        assertProcessed(topic, 0, 0, 30, first);
        assertProcessed(topic, 0, 45, 60, second);
    }

    @Test
    public void topicRecreatedWhileStoppedProcessesTheWholeNewTopic() {
        String topic = unique("recreated");
        String group = unique("g");
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 50);
        assertSucceeded(runToEnd(job(group, Offsets.OFFSETKEEPER, topic), topic));

        cluster.deleteTopic(topic);
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 10);

        Run raw = job(group, Offsets.RAW_ZOOKEEPER, topic).run(r -> false, RUN_TIMEOUT, false);
        assertTrue("without offsetkeeper: " + raw.failureText(),
                raw.failureText().contains("numRecords must not be negative"));

        Run second = runToEnd(job(group, Offsets.OFFSETKEEPER, topic), topic);
        assertSucceeded(second);
        // The first run's commits recorded the topic ID: the new ID tells the re-creation.
        assertEquals(Action.RECREATED, reportOf(second, topic, 0).action());
        assertProcessed(topic, 0, 0, 10, second);
    }

    @Test
    public void topicRecreatedAndFilledPastTheStoredOffsetIsCaughtByItsTopicId() {
        String topic = unique("reborn");
        String group = unique("g");
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 50);
        assertSucceeded(runToEnd(job(group, Offsets.OFFSETKEEPER, topic), topic));
        assertEquals("50", cluster.readZnode(Cluster.offsetPath(group, topic, 0)));

        // Deleted, re-created and filled past the stored offset before the job restarts: 50 is
        // within the new topic's range [0, 80], which no range check can tell from a kept one.
        cluster.deleteTopic(topic);
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 80);

        Map<TopicPartition, Long> end = Collections.singletonMap(new TopicPartition(topic, 0), 80L);
        Run raw = job(group, Offsets.RAW_ZOOKEEPER, topic)
                .run(afterSettling(StreamingJob.reached(end)), RUN_TIMEOUT, false);
        assertSucceeded(raw);
        assertTrue("without offsetkeeper the job starts at the old topic's offset 50 and silently"
                + " skips the new topic's first 50 records: " + new TreeSet<>(raw.offsets(topic, 0)),
                !raw.offsets(topic, 0).isEmpty()
                        && Collections.min(raw.offsets(topic, 0)) == 50L);

        Run second = runToEnd(job(group, Offsets.OFFSETKEEPER, topic), topic);
        assertSucceeded(second);
        PartitionReport report = reportOf(second, topic, 0);
        assertEquals(Action.RECREATED, report.action());
        assertEquals(0L, report.chosen());
        assertTrue(report.actionText(), report.actionText().startsWith("re-created (id "));
        assertProcessed(topic, 0, 0, 80, second);
    }

    @Test
    public void topicRecreatedAfterAHandWrittenCoordinatorsCommitIsCaughtByRecordTimestamps() {
        String topic = unique("moved");
        String group = unique("g");
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 50);
        // The job's offsets as a hand-written coordinator left them: a bare 50, no topic ID.
        cluster.writeZnode(Cluster.offsetPath(group, topic, 0), "50");
        long committed = System.currentTimeMillis();

        // Deleted, re-created and refilled past 50 by producers that went on 6 minutes after
        // that commit (beyond the default 5-minute tolerance): 50 is within [0, 80].
        cluster.deleteTopic(topic);
        cluster.createTopic(topic, 1);
        cluster.produceAt(topic, 0, 80, committed + Duration.ofMinutes(6).toMillis());

        Run moved = runToEnd(job(group, Offsets.OFFSETKEEPER, topic), topic);
        assertSucceeded(moved);
        PartitionReport report = reportOf(moved, topic, 0);
        assertEquals(Action.RECREATED, report.action());
        assertEquals(0L, report.chosen());
        assertNull(report.recreatedFromId());
        assertTrue(report.actionText(), report.actionText().startsWith(
                "re-created (no topic ID stored; partition 0's offset 50 was committed at "));
        assertEquals(report.actionText(), report.recreatedReason());
        assertProcessed(topic, 0, 0, 80, moved);
    }

    @Test
    public void partitionsAddedWhileStoppedAreProcessedFromTheirFirstOffset() {
        String topic = unique("grown");
        String group = unique("g");
        cluster.createTopic(topic, 2);
        cluster.produce(topic, 0, 10);
        cluster.produce(topic, 1, 10);
        Run first = runToEnd(job(group, Offsets.OFFSETKEEPER, topic), topic);
        assertSucceeded(first);

        cluster.addPartitions(topic, 4);
        for (int p = 0; p < 4; p++) {
            cluster.produce(topic, p, 5);
        }
        Map<TopicPartition, Long> oldEnds = new HashMap<>();
        oldEnds.put(new TopicPartition(topic, 0), 15L);
        oldEnds.put(new TopicPartition(topic, 1), 15L);
        Run raw = job(group, Offsets.RAW_ZOOKEEPER, topic)
                .run(afterSettling(StreamingJob.reached(oldEnds)), RUN_TIMEOUT, false);
        assertSucceeded(raw);
        assertTrue("without offsetkeeper the new partitions start at latest and lose their records",
                raw.offsets(topic, 2).isEmpty() && raw.offsets(topic, 3).isEmpty());

        Run second = runToEnd(job(group, Offsets.OFFSETKEEPER, topic), topic);
        assertSucceeded(second);
        assertEquals(Action.INITIALIZED, reportOf(second, topic, 2).action());
        assertProcessed(topic, 2, 0, 5, second);
        assertProcessed(topic, 3, 0, 5, second);
        assertProcessed(topic, 0, 10, 15, second);
    }

    @Test
    public void partitionsAddedWhileRunningArePickedUpFromTheirFirstOffset() {
        String topic = unique("growing");
        String group = unique("g");
        cluster.createTopic(topic, 2);
        cluster.produce(topic, 0, 5);
        cluster.produce(topic, 1, 5);
        Map<TopicPartition, Long> ends = new HashMap<>();
        for (int p = 0; p < 3; p++) {
            ends.put(new TopicPartition(topic, p), 5L);
        }
        boolean[] grown = {false};
        Run run = job(group, Offsets.OFFSETKEEPER, topic).run(processed -> {
            if (!grown[0] && StreamingJob.reached(Collections.singletonMap(new TopicPartition(topic, 1), 5L)).test(processed)) {
                grown[0] = true; // the job is running: grow the topic under it
                cluster.addPartitions(topic, 3);
                cluster.produce(topic, 2, 5);
            }
            return StreamingJob.reached(ends).test(processed);
        }, RUN_TIMEOUT, false);
        assertSucceeded(run);
        assertProcessed(topic, 2, 0, 5, run);
    }

    @Test
    public void corruptZnodeFollowsThePolicyAndOtherPartitionsKeepTheirPosition() {
        String topic = unique("corrupt");
        String group = unique("g");
        cluster.createTopic(topic, 3);
        for (int p = 0; p < 3; p++) {
            cluster.produce(topic, p, 10);
        }
        assertSucceeded(runToEnd(job(group, Offsets.OFFSETKEEPER, topic), topic));
        for (int p = 0; p < 3; p++) {
            cluster.produce(topic, p, 5);
        }
        cluster.writeZnode(Cluster.offsetPath(group, topic, 1), "not-a-number");
        cluster.writeZnode(Cluster.offsetPath(group, topic, 2), "");

        Run second = runToEnd(job(group, Offsets.OFFSETKEEPER, topic), topic);
        assertSucceeded(second);
        assertEquals(Action.KEPT, reportOf(second, topic, 0).action());
        assertEquals(Action.CORRUPT_REPLACED, reportOf(second, topic, 1).action());
        assertEquals(Action.CORRUPT_REPLACED, reportOf(second, topic, 2).action());
        assertEquals(10L, (long) Collections.min(second.offsets(topic, 0)));
        assertProcessed(topic, 1, 0, 15, second);
        assertProcessed(topic, 2, 0, 15, second);
    }

    @Test
    public void crashAfterProcessingBeforeCommitReprocessesTheBatch() {
        String topic = unique("crash");
        String group = unique("g");
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 10);
        Run crashed = job(group, Offsets.OFFSETKEEPER, topic).run(r -> false, RUN_TIMEOUT, true);
        assertSucceeded(crashed);
        assertTrue("the crashed batch held records", !crashed.processed.isEmpty());
        assertNull("nothing was committed", cluster.readZnode(Cluster.offsetPath(group, topic, 0)));

        Run restarted = runToEnd(job(group, Offsets.OFFSETKEEPER, topic), topic);
        assertSucceeded(restarted);
        assertTrue("the crashed batch is processed again",
                restarted.processed.containsAll(crashed.processed));
        assertProcessed(topic, 0, 0, 10, restarted);
    }
}
