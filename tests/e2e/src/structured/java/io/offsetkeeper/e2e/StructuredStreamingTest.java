package io.offsetkeeper.e2e;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import io.offsetkeeper.Action;
import io.offsetkeeper.LoadReport;
import io.offsetkeeper.OffsetKeeper;
import io.offsetkeeper.PartitionLag;
import io.offsetkeeper.PartitionReport;
import io.offsetkeeper.spark.SparkOffsetKeeper;
import io.offsetkeeper.spark.ZooKeeperProgressListener;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import scala.collection.JavaConverters;

/**
 * A DStream job's offsets in ZooKeeper, the topic purged meanwhile, and the job moved to
 * Structured Streaming: the query starts at the validated offsets ({@code startingOffsetsJson}),
 * its progress is mirrored into ZooKeeper ({@link ZooKeeperProgressListener}), a restart with its
 * checkpoint continues from the checkpoint, and a restart with the checkpoint deleted continues
 * from ZooKeeper; every record Kafka still holds reaches the sink exactly once. The same start
 * after a purge with the offsets in Kafka's group store ({@code kafkaStore()}), whose commits
 * Kafka's AdminClient reads back.
 */
public class StructuredStreamingTest {
    private static final long WAIT_MS = 90_000;
    // What foreachBatch saw, "partition:offset", over every run (local mode: the driver's JVM).
    private static final ConcurrentLinkedQueue<String> SINK = new ConcurrentLinkedQueue<>();
    private static Cluster cluster;
    private static SparkSession spark;

    @BeforeClass
    public static void start() {
        cluster = Cluster.fromBuild();
        spark = SparkSession.builder().master("local[2]").appName("offsetkeeper-structured")
                .config("spark.ui.enabled", "false")
                .config("spark.sql.shuffle.partitions", "2")
                .getOrCreate();
        System.out.println("offsetkeeper-e2e: Structured Streaming on Spark " + spark.version()
                + ", Scala " + scala.util.Properties.versionNumberString() + ", "
                + jarOf(OffsetKeeper.class));
        String expected = System.getProperty("offsetkeeper.e2e.spark");
        assertNotNull("Gradle sets offsetkeeper.e2e.spark", expected);
        assertEquals(expected, spark.version());
    }

    @AfterClass
    public static void stop() throws InterruptedException {
        if (spark != null) {
            spark.stop();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    private static String jarOf(Class<?> c) {
        return new File(c.getProtectionDomain().getCodeSource().getLocation().getPath()).getName();
    }

    private static OffsetKeeper keeper(String group) {
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", cluster.bootstrap);
        params.put("group.id", group);
        params.put("auto.offset.reset", "earliest"); // where a partition with nothing stored starts
        return OffsetKeeper.builder().zookeeper(cluster.zookeeper).kafkaParams(params).build();
    }

    /** The same job's keeper on Kafka's group store ({@code kafkaStore()}): no ZooKeeper setting. */
    private static OffsetKeeper kafkaStoreKeeper(String group) {
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", cluster.bootstrap);
        params.put("group.id", group);
        params.put("auto.offset.reset", "earliest");
        return OffsetKeeper.builder().kafkaStore().kafkaParams(params).build();
    }

    /** The job: a Kafka source at {@code startingOffsets}, 40 records per partition a batch. */
    private static StreamingQuery startQuery(String topic, String startingOffsets, Path checkpoint)
            throws Exception {
        Dataset<Row> records = spark.readStream().format("kafka")
                .option("kafka.bootstrap.servers", cluster.bootstrap)
                .option("subscribe", topic)
                .option("startingOffsets", startingOffsets)
                .option("failOnDataLoss", "true") // a purged offset asked for fails the query
                .option("maxOffsetsPerTrigger", "80")
                .load();
        VoidFunction2<Dataset<Row>, Long> sink = (batch, id) -> {
            for (Row row : batch.select("partition", "offset").collectAsList()) {
                SINK.add(row.getInt(0) + ":" + row.getLong(1));
            }
        };
        return records.writeStream().foreachBatch(sink)
                .option("checkpointLocation", checkpoint.toString())
                .trigger(Trigger.ProcessingTime(300, TimeUnit.MILLISECONDS))
                .start();
    }

    private static List<String> drain() {
        List<String> seen = new ArrayList<>();
        for (String s; (s = SINK.poll()) != null; ) {
            seen.add(s);
        }
        return seen;
    }

    private static List<String> range(int partition, long from, long to) {
        return LongStream.range(from, to).mapToObj(o -> partition + ":" + o).collect(Collectors.toList());
    }

    private static void waitFor(java.util.function.BooleanSupplier done, StreamingQuery query, String what)
            throws InterruptedException {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (!done.getAsBoolean()) {
            if (query.exception().isDefined()) {
                throw new AssertionError("the query failed waiting for " + what, query.exception().get());
            }
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(100);
        }
    }

    private static boolean stored(String group, String topic, long p0, long p1) {
        return String.valueOf(p0).equals(cluster.readZnode(Cluster.offsetPath(group, topic, 0)))
                && String.valueOf(p1).equals(cluster.readZnode(Cluster.offsetPath(group, topic, 1)));
    }

    /**
     * One start of the job as a user writes it: keeper, {@code startingOffsetsJson}, listener;
     * runs until ZooKeeper holds the topic's end offsets, then stops and closes the keeper.
     *
     * @return the JSON the job computed and what the sink received in this run
     */
    private static String[] run(String group, String topic, Path checkpoint, List<String> seen)
            throws Exception {
        long end0 = cluster.latest(topic, 0);
        long end1 = cluster.latest(topic, 1);
        try (OffsetKeeper keeper = keeper(group)) {
            String json = keeper.startingOffsetsJson(Collections.singletonList(topic));
            ZooKeeperProgressListener listener = new ZooKeeperProgressListener(keeper);
            spark.streams().addListener(listener);
            StreamingQuery query = startQuery(topic, json, checkpoint);
            try {
                waitFor(() -> stored(group, topic, end0, end1), query,
                        "ZooKeeper to hold " + end0 + "/" + end1 + " for " + group);
            } finally {
                query.stop();
                spark.streams().removeListener(listener);
            }
            assertEquals("failed mirror commits", 0, listener.failures());
            assertTrue("commits: " + listener.commits(), listener.commits() >= 1);
            seen.addAll(drain());
            return new String[] {json, String.valueOf(listener.commits())};
        }
    }

    /**
     * The operator CLI's {@code describe --format csv} of the group's topic, as monitoring reads
     * it: the rows without the header, {@code topic,partition,current,log start,log end,lag,status}.
     */
    private static List<String> describe(String group, String topic) throws Exception {
        String cli = System.getProperty("offsetkeeper.e2e.cli");
        assertNotNull("Gradle sets offsetkeeper.e2e.cli (the CLI built by :jvm:cargoBuildCli)", cli);
        Process process = new ProcessBuilder(cli, "--zookeeper", cluster.zookeeper,
                "--bootstrap-servers", cluster.bootstrap, "--group", group, "describe",
                "--topic", topic, "--format", "csv").redirectErrorStream(true).start();
        byte[] out = readAll(process.getInputStream());
        assertTrue("describe did not end", process.waitFor(60, TimeUnit.SECONDS));
        String text = new String(out, java.nio.charset.StandardCharsets.UTF_8);
        assertEquals("describe failed: " + text, 0, process.exitValue());
        List<String> rows = new ArrayList<>(java.util.Arrays.asList(text.trim().split("\n")));
        System.out.println("offsetkeeper-e2e: describe --format csv: " + String.join(" | ", rows));
        assertEquals(text, "topic,partition,current_offset,log_start_offset,log_end_offset,lag,status", rows.remove(0));
        return rows;
    }

    private static byte[] readAll(java.io.InputStream in) throws IOException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        byte[] buffer = new byte[8192];
        for (int n; (n = in.read(buffer)) > 0; ) {
            out.write(buffer, 0, n);
        }
        return out.toByteArray();
    }

    private static Path tempDir(String prefix) throws IOException {
        File base = new File(System.getProperty("offsetkeeper.e2e.tmp", System.getProperty("java.io.tmpdir")));
        base.mkdirs();
        return Files.createTempDirectory(base.toPath(), prefix);
    }

    @Test
    public void movedFromDStreamsAfterAPurgeThenRestartedWithAndWithoutCheckpoint() throws Exception {
        String topic = "ss-" + System.currentTimeMillis() % 1_000_000;
        String group = topic + "-group";
        cluster.createTopic(topic, 2);
        cluster.produce(topic, 0, 100);
        cluster.produce(topic, 1, 100);
        // What the DStream job stored when it stopped, then retention purged partition 0 past it.
        try (OffsetKeeper dstreamJob = keeper(group)) {
            dstreamJob.load(Collections.singletonList(topic)); // as the DStream job did at its start
            Map<org.apache.kafka.common.TopicPartition, Long> stored = new HashMap<>();
            stored.put(new org.apache.kafka.common.TopicPartition(topic, 0), 30L);
            stored.put(new org.apache.kafka.common.TopicPartition(topic, 1), 40L);
            assertEquals(2, dstreamJob.commit(stored).written());
        }
        cluster.deleteRecords(topic, 0, 60);
        assertEquals(60, cluster.earliest(topic, 0));

        // Without offsetkeeper: the stored offsets as they are, and the query fails on the purge.
        Path rawCheckpoint = tempDir("raw-");
        StreamingQuery raw = startQuery(topic, "{\"" + topic + "\":{\"0\":30,\"1\":40}}", rawCheckpoint);
        try {
            raw.awaitTermination(WAIT_MS);
        } catch (org.apache.spark.sql.streaming.StreamingQueryException expected) {
            // checked below
        }
        assertTrue("the query at the raw stored offsets should fail on the purged offset 30",
                raw.exception().isDefined());
        System.out.println("offsetkeeper-e2e: raw stored offsets fail as expected: "
                + raw.exception().get().getMessage().split("\n")[0]);
        raw.stop();
        drain();

        // 1. First start on Structured Streaming: validated offsets, progress mirrored.
        Path checkpoint = tempDir("checkpoint-");
        List<String> first = new ArrayList<>();
        String[] run1 = run(group, topic, checkpoint, first);
        assertEquals("{\"" + topic + "\":{\"0\":60,\"1\":40}}", run1[0]);
        List<String> expected1 = new ArrayList<>(range(0, 60, 100));
        expected1.addAll(range(1, 40, 100));
        assertEquals(new TreeSet<>(expected1), new TreeSet<>(first));
        assertEquals("duplicates in run 1", expected1.size(), first.size());
        // 40 + 60 records, 80 a batch at most: at least two batches, each mirrored.
        assertTrue("mirror commits in run 1: " + run1[1], Long.parseLong(run1[1]) >= 2);
        try (OffsetKeeper monitor = keeper(group)) {
            for (PartitionLag lag : monitor.lag(Collections.singletonList(topic))) {
                assertEquals(lag.toString(), Long.valueOf(100), lag.committed());
                assertEquals(lag.toString(), Long.valueOf(0), lag.lag());
            }
        }
        assertEquals(java.util.Arrays.asList(topic + ",0,100,60,100,0,ok", topic + ",1,100,0,100,0,ok"),
                describe(group, topic));

        // 2. Restart with the checkpoint: Spark continues from it (startingOffsets is ignored).
        cluster.produce(topic, 0, 50);
        cluster.produce(topic, 1, 50);
        List<String> second = new ArrayList<>();
        String[] run2 = run(group, topic, checkpoint, second);
        assertEquals("{\"" + topic + "\":{\"0\":100,\"1\":100}}", run2[0]);
        List<String> expected2 = new ArrayList<>(range(0, 100, 150));
        expected2.addAll(range(1, 100, 150));
        assertEquals(new TreeSet<>(expected2), new TreeSet<>(second));
        assertEquals("duplicates in run 2", expected2.size(), second.size());

        // 3. Checkpoint lost: the query starts from what the listener mirrored into ZooKeeper.
        cluster.produce(topic, 0, 50);
        cluster.produce(topic, 1, 50);
        deleteRecursively(checkpoint.toFile());
        List<String> third = new ArrayList<>();
        String[] run3 = run(group, topic, tempDir("checkpoint-new-"), third);
        assertEquals("{\"" + topic + "\":{\"0\":150,\"1\":150}}", run3[0]);
        List<String> expected3 = new ArrayList<>(range(0, 150, 200));
        expected3.addAll(range(1, 150, 200));
        assertEquals(new TreeSet<>(expected3), new TreeSet<>(third));
        assertEquals("duplicates in run 3", expected3.size(), third.size());
        assertEquals(java.util.Arrays.asList(topic + ",0,200,60,200,0,ok", topic + ",1,200,0,200,0,ok"),
                describe(group, topic));

        // Over the three runs: every record Kafka still held, once (40 + 60 + 100 + 100).
        List<String> all = new ArrayList<>(first);
        all.addAll(second);
        all.addAll(third);
        assertEquals(300, new TreeSet<>(all).size());
        assertEquals(300, all.size());
        System.out.println("offsetkeeper-e2e: structured streaming: " + first.size() + " + "
                + second.size() + " (checkpoint) + " + third.size()
                + " (no checkpoint, from ZooKeeper) records, none twice, none purged");
    }

    @Test
    public void aFencedMirrorCommitIsCountedAndTheQueryGoesOn() throws Exception {
        String topic = "ss-fenced-" + System.currentTimeMillis() % 1_000_000;
        String group = topic + "-group";
        String path = Cluster.offsetPath(group, topic, 0);
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 50);
        // The listener's WARN lines, through Spark's log4j 2 (logger "offsetkeeper", at WARN).
        ConcurrentLinkedQueue<String> warnings = new ConcurrentLinkedQueue<>();
        org.apache.logging.log4j.core.LoggerContext logs =
                (org.apache.logging.log4j.core.LoggerContext) org.apache.logging.log4j.LogManager.getContext(false);
        org.apache.logging.log4j.core.appender.AbstractAppender capture =
                new org.apache.logging.log4j.core.appender.AbstractAppender("captured", null, null, true,
                        org.apache.logging.log4j.core.config.Property.EMPTY_ARRAY) {
                    @Override
                    public void append(org.apache.logging.log4j.core.LogEvent event) {
                        warnings.add(event.getLevel() + " " + event.getLoggerName() + " "
                                + event.getMessage().getFormattedMessage());
                    }
                };
        capture.start();
        logs.getConfiguration().getLoggerConfig("offsetkeeper.spark.progress").addAppender(capture, null, null);
        logs.updateLoggers();
        try (OffsetKeeper keeper = keeper(group)) {
            String json = keeper.startingOffsetsJson(Collections.singletonList(topic));
            assertEquals("{\"" + topic + "\":{\"0\":0}}", json);
            // The Scala facade's startingOffsets: the same load, the same JSON.
            assertEquals(json, new SparkOffsetKeeper(keeper).startingOffsets(
                    JavaConverters.collectionAsScalaIterableConverter(Collections.singletonList(topic)).asScala()));
            ZooKeeperProgressListener listener = new ZooKeeperProgressListener(keeper);
            spark.streams().addListener(listener);
            StreamingQuery query = startQuery(topic, json, tempDir("fenced-"));
            try {
                waitFor(() -> "50".equals(cluster.readZnode(path)), query, "ZooKeeper to hold 50");
                // Another writer (an operator's reset, a second job) changes the offset behind
                // the keeper: the listener's next commit is fenced and must not stop the query.
                cluster.writeZnode(path, "10");
                cluster.produce(topic, 0, 50);
                waitFor(() -> listener.failures() >= 1, query, "a fenced mirror commit");
                waitFor(() -> SINK.contains("0:99"), query, "the query to go on to offset 99");
                assertTrue("the query is still running", query.isActive());
                assertFalse(query.exception().isDefined());
                assertEquals("the fenced commit wrote nothing", "10", cluster.readZnode(path));
                String warning = warnings.stream().filter(w -> w.contains("CommitConflictException"))
                        .findFirst().orElse(null);
                assertNotNull("no WARN of the fenced commit in " + warnings, warning);
                assertTrue(warning, warning.startsWith("WARN offsetkeeper.spark.progress ")
                        && warning.contains(group) && warning.contains("the query goes on"));
                System.out.println("offsetkeeper-e2e: fenced mirror commits: " + listener.failures()
                        + " counted (WARN logged), the query went on to offset 99");
            } finally {
                query.stop();
                spark.streams().removeListener(listener);
                logs.getConfiguration().getLoggerConfig("offsetkeeper.spark.progress").removeAppender("captured");
                logs.updateLoggers();
            }
        }
        drain();
    }

    @Test
    public void startsFromKafkasGroupStoreAfterAPurgeAndMirrorsItsProgressThere() throws Exception {
        String topic = "ss-kafka-store-" + System.currentTimeMillis() % 1_000_000;
        String group = topic + "-group";
        List<String> topics = Collections.singletonList(topic);
        cluster.createTopic(topic, 2);
        cluster.produce(topic, 0, 100);
        cluster.produce(topic, 1, 100);
        // What the job committed to Kafka's group store when it stopped, then retention purged
        // partition 0 past it.
        try (OffsetKeeper previous = kafkaStoreKeeper(group)) {
            previous.load(topics);
            Map<org.apache.kafka.common.TopicPartition, Long> stored = new HashMap<>();
            stored.put(new org.apache.kafka.common.TopicPartition(topic, 0), 30L);
            stored.put(new org.apache.kafka.common.TopicPartition(topic, 1), 40L);
            assertEquals(2, previous.commit(stored).written());
        }
        assertEquals(Long.valueOf(30), cluster.groupOffset(group, topic, 0));
        assertEquals(Long.valueOf(40), cluster.groupOffset(group, topic, 1));
        cluster.deleteRecords(topic, 0, 60);
        assertEquals(60, cluster.earliest(topic, 0));
        long end0 = cluster.latest(topic, 0);
        long end1 = cluster.latest(topic, 1);
        assertEquals(100, end0);
        assertEquals(100, end1);

        drain();
        List<String> seen;
        try (OffsetKeeper keeper = kafkaStoreKeeper(group)) {
            LoadReport report = keeper.loadWithReport(topics);
            PartitionReport p0 = report.partitions().get(0);
            assertEquals(p0.toString(), Action.RESET_BELOW_RANGE, p0.action());
            assertEquals(p0.toString(), 60, p0.chosen());
            assertEquals(p0.toString(), 30, p0.recordsLost());
            PartitionReport p1 = report.partitions().get(1);
            assertEquals(p1.toString(), Action.KEPT, p1.action());
            assertEquals(p1.toString(), 40, p1.chosen());
            String json = report.startingOffsetsJson();
            assertEquals("{\"" + topic + "\":{\"0\":60,\"1\":40}}", json);
            // Each batch's end offsets go through the keeper's commit, into Kafka's group store.
            // The source's consumers keep Spark's generated group ids (no kafka.group.id): a
            // consumer joining the group the keeper holds would be refused by the coordinator.
            ZooKeeperProgressListener listener = new ZooKeeperProgressListener(keeper);
            spark.streams().addListener(listener);
            StreamingQuery query = startQuery(topic, json, tempDir("kafka-store-"));
            try {
                waitFor(() -> {
                    if (listener.failures() > 0) {
                        throw new AssertionError(listener.failures() + " commit(s) to Kafka's group store failed"
                                + " (logged at WARN under offsetkeeper.spark.progress)");
                    }
                    return Long.valueOf(end0).equals(cluster.groupOffset(group, topic, 0))
                            && Long.valueOf(end1).equals(cluster.groupOffset(group, topic, 1));
                }, query, "Kafka's group store to hold " + end0 + "/" + end1 + " for " + group);
            } finally {
                query.stop();
                spark.streams().removeListener(listener);
            }
            assertEquals("failed commits", 0, listener.failures());
            // 40 + 60 records, 80 a batch at most: at least two batches, each committed.
            assertTrue("commits: " + listener.commits(), listener.commits() >= 2);
            seen = drain();
        }

        // The first record read of the purged partition is the earliest Kafka still holds, of the
        // other the committed one; then every remaining record once.
        assertEquals(seen.toString(), "0:60", seen.stream().filter(s -> s.startsWith("0:")).findFirst().orElse(null));
        assertEquals(seen.toString(), "1:40", seen.stream().filter(s -> s.startsWith("1:")).findFirst().orElse(null));
        List<String> expected = new ArrayList<>(range(0, 60, 100));
        expected.addAll(range(1, 40, 100));
        assertEquals(new TreeSet<>(expected), new TreeSet<>(seen));
        assertEquals("duplicates", expected.size(), seen.size());

        // Kafka's AdminClient reads the query's end offsets from the group store, with the
        // keeper's commit metadata; ZooKeeper holds nothing of the group.
        Map<org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> committed =
                cluster.admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                        .get(60, TimeUnit.SECONDS);
        for (int p = 0; p < 2; p++) {
            org.apache.kafka.clients.consumer.OffsetAndMetadata offset =
                    committed.get(new org.apache.kafka.common.TopicPartition(topic, p));
            assertNotNull("Kafka's group store holds no offset of partition " + p + ": " + committed, offset);
            assertEquals(committed.toString(), 100, offset.offset());
            assertTrue(offset.metadata(), offset.metadata().startsWith("{\"offsetkeeper\":1,\"topic_id\":\""));
        }
        assertFalse("ZooKeeper holds offsets of " + group, cluster.exists("/consumers/" + group));
        System.out.println("offsetkeeper-e2e: structured streaming on Kafka's group store: " + seen.size()
                + " records read from 0:60 (30 lost to the purge) and 1:40, none twice; AdminClient reads "
                + committed.size() + " committed offsets of " + group);
    }

    private static void deleteRecursively(File file) {
        File[] children = file.listFiles();
        if (children != null) {
            for (File child : children) {
                deleteRecursively(child);
            }
        }
        assertTrue("delete " + file, file.delete());
    }
}
