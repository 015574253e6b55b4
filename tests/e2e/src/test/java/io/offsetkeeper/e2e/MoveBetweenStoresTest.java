package io.offsetkeeper.e2e;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import io.offsetkeeper.PartitionReport;
import io.offsetkeeper.e2e.StreamingJob.Offsets;
import io.offsetkeeper.e2e.StreamingJob.Record;
import io.offsetkeeper.e2e.StreamingJob.Run;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;

/**
 * A real Spark Streaming job moved from ZooKeeper to Kafka's group store through the four phases
 * of docs/migration.md, one restart a phase ({@code offsetkeeper.store} {@code zookeeper},
 * {@code zookeeper,kafka}, {@code kafka,zookeeper}, {@code kafka}), while a producer writes to
 * both partitions of its topic: phases 1, 2 and 3, the phase-3 driver (a JVM of its own) killed
 * with SIGKILL mid-run and restarted in phase 3, back to 2 and 1, and forward again through 2 and
 * 3 to 4 (a phase is undone by the phase before it, and a move goes forward one phase a restart:
 * from 1 straight to 4 the job would start at Kafka's stale offsets).
 *
 * <p>Both stores are read after every stop (ZooKeeper's znode, Kafka's AdminClient). After a
 * clean stop (the harness's: the last batch commits, {@code close()} flushes the mirror) the
 * authoritative store holds the end of the last batch processed, the mirror of a dual phase holds
 * the same offsets and a single-store phase leaves the other store as it was. No store's offset
 * ever moves backwards, nor the authoritative store's from one step to the next; each run starts
 * where the stores say (the higher of the two in a dual phase). Records are told apart by
 * partition and offset (the topic is never purged or re-created), as in the restart scenarios:
 * none is lost, and only those of the batch in flight at the SIGKILL are processed twice.
 */
public class MoveBetweenStoresTest extends ClusterTestBase {
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(90);
    /** How long the driver JVM may take to start and commit its batches, as CheckpointRecoveryTest waits. */
    private static final long DRIVER_WAIT_MS = 120_000;
    private static final AtomicInteger NAMES = new AtomicInteger();
    private static final int PARTITIONS = 2;
    /** The producer writes one record to each partition this often. */
    private static final long PRODUCE_EVERY_MS = 20;
    /**
     * A run goes on until it processed this many records a partition past the topic's end at its
     * start: a few 500 ms batches under the producer.
     */
    private static final long AHEAD = 100;
    /** The driver JVM is killed at the first batch it processed after this many commits. */
    private static final int COMMITS_BEFORE_KILL = 3;
    private static final String ZOOKEEPER = "zookeeper";
    private static final String KAFKA = "kafka";

    private String topic;
    private String group;
    /** Every record every run processed, in order. */
    private final List<Record> processed = new ArrayList<>();
    /** Each store's offsets at the last observation, by store; -1 where it holds none. */
    private final Map<String, long[]> stored = new HashMap<>();
    /** The authoritative store's offsets at the last observation. */
    private long[] authoritative;
    /** Every partition's end once the producer stopped. */
    private long[] produced;
    /** One line a step: what the stores held after it. */
    private final List<String> steps = new ArrayList<>();

    private static String unique(String prefix) {
        return prefix + "-" + System.currentTimeMillis() % 1_000_000 + "-" + NAMES.incrementAndGet();
    }

    @Test
    public void aJobMovesThroughThePhasesAndBackUnderAProducerAndASigkill() throws Exception {
        topic = unique("move");
        group = unique("move-g");
        cluster.createTopic(topic, PARTITIONS);
        stored.putAll(observe());
        for (Map.Entry<String, long[]> store : stored.entrySet()) {
            assertArrayEquals("a fresh group in " + store.getKey(), new long[] {-1, -1}, store.getValue());
        }
        long began = System.nanoTime();
        List<Record> inFlight;
        try (Producer producer = new Producer(topic)) {
            cleanRun("zookeeper", null);               // phase 1
            cleanRun("zookeeper,kafka", null);         // phase 2: Kafka gets every batch
            inFlight = killedRun("kafka,zookeeper");   // phase 3: Kafka decides; the driver SIGKILLed
            cleanRun("kafka,zookeeper", null);         // phase 3 again, from where Kafka says
            cleanRun("zookeeper,kafka", null);         // back to phase 2
            cleanRun("zookeeper", null);               // back to phase 1
            cleanRun("zookeeper,kafka", null);         // forward again: phase 2
            cleanRun("kafka,zookeeper", null);         // phase 3
            cleanRun("kafka", producer);               // phase 4; the producer stops in it
        }
        assertNotNull("the producer was not stopped", produced);

        // Nothing lost: every record produced was processed.
        for (int p = 0; p < PARTITIONS; p++) {
            TreeSet<Long> seen = new TreeSet<>();
            for (Record r : processed) {
                if (r.partition == p) {
                    seen.add(r.offset);
                }
            }
            List<Long> missing = LongStream.range(0, produced[p]).filter(o -> !seen.contains(o)).boxed()
                    .collect(Collectors.toList());
            assertTrue(topic + "-" + p + " skipped offsets " + missing + "; steps: " + steps, missing.isEmpty());
        }
        assertArrayEquals("Kafka holds the topic's end", produced, stored.get(KAFKA));

        // Twice: exactly the records the SIGKILL left processed but not committed; nothing else,
        // nothing three times.
        Map<Record, Integer> times = new HashMap<>();
        for (Record r : processed) {
            times.merge(r, 1, Integer::sum);
        }
        Set<Record> twice = new HashSet<>();
        for (Map.Entry<Record, Integer> e : times.entrySet()) {
            assertTrue(e.getKey() + " processed " + e.getValue() + " times", e.getValue() <= 2);
            if (e.getValue() == 2) {
                twice.add(e.getKey());
            }
        }
        Set<Record> outside = new HashSet<>(twice);
        outside.removeAll(inFlight);
        assertTrue(outside.size() + " record(s) processed twice outside the batch in flight at the SIGKILL, e.g. "
                + first(outside) + "; steps: " + steps, outside.isEmpty());
        Set<Record> notAgain = new HashSet<>(inFlight);
        notAgain.removeAll(twice);
        assertTrue(notAgain.size() + " record(s) the killed driver processed without committing were not"
                + " processed again, e.g. " + first(notAgain), notAgain.isEmpty());

        System.out.println("offsetkeeper-e2e: a Spark job moved zookeeper -> zookeeper,kafka -> kafka,zookeeper"
                + " (SIGKILL, restart) -> zookeeper,kafka -> zookeeper -> zookeeper,kafka -> kafka,zookeeper -> kafka"
                + " in " + TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - began) + " s under a producer: "
                + times.size() + " records, " + twice.size() + " processed twice (the batch in flight at the"
                + " SIGKILL); " + String.join("; ", steps));
    }

    /**
     * Runs the job in this JVM in {@code phase} until it processed {@link #AHEAD} records a
     * partition past the topic's end at its start, then stops it cleanly (the harness's stop: the
     * batch running finishes and commits, {@code close()} flushes the mirror), and checks the
     * stores. With {@code last}, the producer then stops and the run goes on to the topic's end.
     */
    private void cleanRun(String phase, Producer last) {
        String[] stores = phase.split(",");
        long[] start = expectedStart(phase);
        Map<TopicPartition, Long> target = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            target.put(new TopicPartition(topic, p), cluster.latest(topic, p) + AHEAD);
        }
        Predicate<List<Record>> done = StreamingJob.reached(target);
        if (last != null) {
            done = thenToTheEnd(done, last);
        }
        long began = System.nanoTime();
        Run run = new StreamingJob(cluster, group, Collections.singletonList(topic), Offsets.OFFSETKEEPER)
                .withStore(phase).run(done, RUN_TIMEOUT, false);
        assertNull(phase + ": the job failed: " + run.failureText(), run.failure);
        assertTrue(phase + ": the job did not get to " + target + (last == null ? "" : " and the topic's end")
                + " in " + RUN_TIMEOUT.getSeconds() + " s", done.test(run.processed));
        for (int p = 0; p < PARTITIONS; p++) {
            assertEquals(phase + ": where the load started partition " + p + "; steps so far: " + steps,
                    start[p], reportOf(run, p).chosen());
            assertEquals(phase + ": the first record read of partition " + p,
                    start[p], (long) Collections.min(run.offsets(topic, p)));
        }
        processed.addAll(run.processed);

        Map<String, long[]> now = observe();
        assertArrayEquals(phase + ": after a clean stop " + stores[0] + " (authoritative) holds the end of the"
                + " last batch; steps so far: " + steps, nextToProcess(), now.get(stores[0]));
        if (stores.length == 2) {
            assertArrayEquals(phase + ": after a clean stop the mirror (" + stores[1] + ") holds what "
                    + stores[0] + " holds", now.get(stores[0]), now.get(stores[1]));
        } else {
            String other = ZOOKEEPER.equals(stores[0]) ? KAFKA : ZOOKEEPER;
            assertArrayEquals(phase + ": " + other + " is not written", stored.get(other), now.get(other));
        }
        step(phase + " (clean stop)", phase, now, began);
    }

    /**
     * Runs the job in {@code phase} as a driver JVM of its own and kills it with SIGKILL at the
     * first batch it processed after {@link #COMMITS_BEFORE_KILL} commits, as soon as it printed
     * that batch (before or during its commit). Returns the records the kill left processed but
     * not committed: of that batch alone.
     */
    private List<Record> killedRun(String phase) throws Exception {
        long[] start = expectedStart(phase);
        long began = System.nanoTime();
        List<List<Record>> batches;
        AtomicInteger commits = new AtomicInteger();
        // Called by the one thread that reads the driver's stdout, line by line in order.
        Predicate<String> killOn = line -> {
            if (line.startsWith("COMMITTED ")) {
                commits.incrementAndGet();
                return false;
            }
            // At once: the driver is in that batch, before or in its commit.
            return line.startsWith("PROCESSED ") && commits.get() >= COMMITS_BEFORE_KILL;
        };
        try (DriverProcess driver = new DriverProcess(
                Arrays.asList(cluster.zookeeper, cluster.bootstrap, group, topic, phase), killOn)) {
            driver.awaitKilled(DRIVER_WAIT_MS);
            batches = driver.batches();
            assertTrue("the driver printed no batch: " + driver.output(), !batches.isEmpty());
        }
        List<Record> records = new ArrayList<>();
        batches.forEach(records::addAll);
        for (int p = 0; p < PARTITIONS; p++) {
            long lowest = Long.MAX_VALUE;
            for (Record r : records) {
                if (r.partition == p) {
                    lowest = Math.min(lowest, r.offset);
                }
            }
            assertEquals(phase + ": the killed driver's first record of partition " + p, start[p], lowest);
        }
        processed.addAll(records);

        Map<String, long[]> now = observeSettled();
        long[] kafka = now.get(KAFKA);
        long[] zookeeper = now.get(ZOOKEEPER);
        long[] next = nextToProcess();
        for (int p = 0; p < PARTITIONS; p++) {
            assertTrue(phase + ": the mirror (zookeeper, " + zookeeper[p] + ") is ahead of kafka (" + kafka[p]
                    + ") on partition " + p, zookeeper[p] <= kafka[p]);
            assertTrue(phase + ": kafka holds " + kafka[p] + " for partition " + p + ", past what was processed ("
                    + next[p] + ")", kafka[p] <= next[p]);
        }
        // Every batch before the one in flight was committed.
        List<Record> uncommitted = records.stream().filter(r -> r.offset >= kafka[r.partition])
                .collect(Collectors.toList());
        Set<Record> earlier = new HashSet<>(uncommitted);
        earlier.removeAll(batches.get(batches.size() - 1));
        assertTrue(phase + ": the SIGKILL left " + earlier.size() + " record(s) of earlier batches uncommitted, e.g. "
                + first(earlier), earlier.isEmpty());
        step(phase + " (SIGKILL, " + batches.size() + " batches, " + uncommitted.size() + " records not committed)",
                phase, now, began);
        return uncommitted;
    }

    /** {@code reached}, then the producer stops and the run goes on until it processed every record. */
    private Predicate<List<Record>> thenToTheEnd(Predicate<List<Record>> reached, Producer producer) {
        Map<TopicPartition, Long> end = new HashMap<>();
        return records -> {
            if (end.isEmpty()) {
                if (!reached.test(records)) {
                    return false;
                }
                producer.stop();
                produced = new long[PARTITIONS];
                for (int p = 0; p < PARTITIONS; p++) {
                    produced[p] = cluster.latest(topic, p);
                    end.put(new TopicPartition(topic, p), produced[p]);
                }
            }
            return StreamingJob.reached(end).test(records);
        };
    }

    /**
     * Checks an observation of both stores against the last one and keeps it: no store's offset
     * moved backwards, nor the authoritative store's from the last step's authoritative store.
     */
    private void step(String what, String phase, Map<String, long[]> now, long began) {
        for (String store : Arrays.asList(ZOOKEEPER, KAFKA)) {
            long[] before = stored.get(store);
            long[] after = now.get(store);
            for (int p = 0; p < PARTITIONS; p++) {
                assertTrue(what + ": " + store + "'s offset of partition " + p + " moved backwards, from " + before[p]
                        + " to " + after[p] + "; steps so far: " + steps, after[p] >= before[p]);
            }
        }
        long[] decides = now.get(phase.split(",")[0]);
        if (authoritative != null) {
            for (int p = 0; p < PARTITIONS; p++) {
                assertTrue(what + ": the authoritative store holds " + decides[p] + " for partition " + p
                        + ", behind the last step's " + authoritative[p] + "; steps so far: " + steps,
                        decides[p] >= authoritative[p]);
            }
        }
        authoritative = decides;
        stored.putAll(now);
        compared(what, now);
        steps.add(what + " in " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began) + " ms: zookeeper "
                + Arrays.toString(now.get(ZOOKEEPER)) + ", kafka " + Arrays.toString(now.get(KAFKA)));
    }

    /**
     * Where a run in {@code phase} starts: the authoritative store's offset, or the mirror's where
     * it is ahead (never behind the mirror); the earliest, 0, where neither holds one.
     */
    private long[] expectedStart(String phase) {
        String[] stores = phase.split(",");
        long[] start = new long[PARTITIONS];
        for (int p = 0; p < PARTITIONS; p++) {
            long at = stored.get(stores[0])[p];
            if (stores.length == 2) {
                at = Math.max(at, stored.get(stores[1])[p]);
            }
            start[p] = Math.max(at, 0);
        }
        return start;
    }

    /** Each partition's offset after the highest processed so far. */
    private long[] nextToProcess() {
        long[] next = new long[PARTITIONS];
        for (Record r : processed) {
            next[r.partition] = Math.max(next[r.partition], r.offset + 1);
        }
        return next;
    }

    /** Both stores' offsets of the group: ZooKeeper's znodes, Kafka's through AdminClient. */
    private Map<String, long[]> observe() {
        long[] zookeeper = new long[PARTITIONS];
        long[] kafka = new long[PARTITIONS];
        for (int p = 0; p < PARTITIONS; p++) {
            String value = cluster.readZnode(Cluster.offsetPath(group, topic, p));
            zookeeper[p] = value == null ? -1 : Long.parseLong(value.trim());
            Long committed = cluster.groupOffset(group, topic, p);
            kafka[p] = committed == null ? -1 : committed;
        }
        Map<String, long[]> now = new HashMap<>();
        now.put(ZOOKEEPER, zookeeper);
        now.put(KAFKA, kafka);
        return now;
    }

    /**
     * Both stores once they hold still (two reads 500 ms apart agree): a commit a killed driver
     * sent just before it died may still land.
     */
    private Map<String, long[]> observeSettled() {
        Map<String, long[]> last = observe();
        for (int i = 0; i < 20; i++) {
            Cluster.sleep(500);
            Map<String, long[]> now = observe();
            if (Arrays.equals(last.get(ZOOKEEPER), now.get(ZOOKEEPER))
                    && Arrays.equals(last.get(KAFKA), now.get(KAFKA))) {
                return now;
            }
            last = now;
        }
        throw new AssertionError("the stores still change 10 s after the driver died: zookeeper "
                + Arrays.toString(last.get(ZOOKEEPER)) + ", kafka " + Arrays.toString(last.get(KAFKA)));
    }

    private PartitionReport reportOf(Run run, int partition) {
        assertNotNull("no load report", run.report);
        for (PartitionReport r : run.report.partitions()) {
            if (r.topic().equals(topic) && r.partition() == partition) {
                return r;
            }
        }
        throw new AssertionError("no report for " + topic + "-" + partition + ": " + run.report);
    }

    /**
     * The operator's view of the step: the CLI's {@code compare} shows both stores as read, each
     * partition's verdict, and exits with 0 when they agree, 3 when they differ.
     */
    private void compared(String what, Map<String, long[]> now) {
        String cli = System.getProperty("offsetkeeper.e2e.cli");
        assertNotNull("Gradle sets offsetkeeper.e2e.cli (the CLI built by :jvm:cargoBuildCli)", cli);
        long[] zk = now.get(ZOOKEEPER);
        long[] kafka = now.get(KAFKA);
        try {
            Process process = new ProcessBuilder(cli, "--zookeeper", cluster.zookeeper, "--bootstrap-servers",
                    cluster.bootstrap, "--group", group, "compare", "--topic", topic, "--format", "csv")
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(what + ": compare did not end", process.waitFor(60, TimeUnit.SECONDS));
            boolean agree = Arrays.equals(zk, kafka);
            assertEquals(what + ": compare's exit status; it printed " + out, agree ? 0 : 3, process.exitValue());
            String[] lines = out.trim().split("\n");
            assertEquals(what + ": " + out, PARTITIONS + 1, lines.length);
            for (int p = 0; p < PARTITIONS; p++) {
                String[] cells = lines[p + 1].split(",", 7);
                String verdict = zk[p] == kafka[p] ? "equal"
                        : zk[p] < 0 ? "only in kafka"
                        : kafka[p] < 0 ? "only in zookeeper"
                        : zk[p] < kafka[p] ? "zookeeper behind by " + (kafka[p] - zk[p])
                        : "kafka behind by " + (zk[p] - kafka[p]);
                assertEquals(what + ": " + out, Arrays.asList(topic, String.valueOf(p), cell(zk[p]), cell(kafka[p]),
                        verdict), Arrays.asList(cells[0], cells[1], cells[2], cells[3], cells[6]));
            }
        } catch (java.io.IOException | InterruptedException e) {
            throw new AssertionError(what + ": compare could not run: " + e, e);
        }
    }

    private static String cell(long stored) {
        return stored < 0 ? "" : String.valueOf(stored); // the CSV leaves a missing offset empty
    }

    private static List<Record> first(Set<Record> records) {
        return records.stream().sorted((a, b) -> a.partition != b.partition
                ? Integer.compare(a.partition, b.partition) : Long.compare(a.offset, b.offset))
                .limit(20).collect(Collectors.toList());
    }

    /** Writes one record to each partition every {@link #PRODUCE_EVERY_MS}, each acknowledged, until stopped. */
    private static final class Producer implements AutoCloseable {
        private final Thread thread;
        private volatile boolean stopping;
        private volatile RuntimeException failure;

        Producer(String topic) {
            thread = new Thread(() -> {
                try {
                    for (long i = 0; !stopping; i++) {
                        for (int p = 0; p < PARTITIONS; p++) {
                            cluster.produce(topic, p, 1, "move-" + p + "-" + i + "-");
                        }
                        Thread.sleep(PRODUCE_EVERY_MS);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } catch (RuntimeException e) {
                    failure = e;
                }
            }, "move-between-stores-producer");
            thread.setDaemon(true);
            thread.start();
        }

        void stop() {
            stopping = true;
            try {
                thread.join(60_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
            assertTrue("the producer did not stop", !thread.isAlive());
            if (failure != null) {
                throw new AssertionError("the producer failed: " + failure, failure);
            }
        }

        @Override
        public void close() {
            stop();
        }
    }
}
