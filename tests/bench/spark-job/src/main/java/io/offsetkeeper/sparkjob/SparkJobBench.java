package io.offsetkeeper.sparkjob;

import io.offsetkeeper.OffsetKeeper;
import io.offsetkeeper.e2e.Cluster;
import io.offsetkeeper.e2e.ClusterEnv;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Spark-job benchmark ({@code gradle benchSparkJob}): what offsetkeeper adds to a real Spark
 * Streaming job's batches at P partitions (each of {@code partitions}, default 1,000 and
 * 20,000), with its commit ({@code SparkOffsets.commit}, A) and its {@code commitAsync} (C),
 * against the same job committing with Spark's own {@code commitAsync} (B), from Spark's own
 * batch timings.
 *
 * <p>A cluster of its own (one broker); for each P a topic of P partitions, a producer writing
 * {@code rate} records a second round robin over all of them, and {@link BenchJob} run as a JVM
 * of its own, alternately A, C and B, {@code rounds} times each, {@code batches} batches a run,
 * the first {@code warmup} of each run dropped. Writes {@code summary.txt} (and each run's
 * batches file) under the output folder, with the goal's verdict per P: C's commit call within
 * 0.5 ms of B's (medians), and no C batch that found an earlier batch not yet stored. Fails on
 * real errors only: a job that crashed, fewer than 100 batches measured a contender, a batch
 * whose ranges do not cover the P partitions.
 */
public final class SparkJobBench {
    private static final String TOPIC = "bench-spark-job";
    /** The contenders, in the order each round runs them: BenchJob's mode and the run's letter. */
    private static final String[][] CONTENDERS = {{"keeper", "A"}, {"async", "C"}, {"spark", "B"}};
    /** The goal: C's commit call median at most this much above B's. */
    private static final double GOAL_MS = 0.5;

    private final Path out = Paths.get(requiredProp("sparkJob.out"));
    private final Path clusterDir = out.resolve("cluster");
    private final String clusterScript = requiredProp("sparkJob.clusterScript");
    private final List<String> driverJvmArgs = Arrays.asList(prop("sparkJob.driverJvmArgs", "").trim().split("\\s+"));
    private final int rounds = Integer.parseInt(prop("sparkJob.rounds", "2"));
    private final int batches = Integer.parseInt(prop("sparkJob.batches", "110"));
    private final int warmup = Integer.parseInt(prop("sparkJob.warmup", "10"));
    private final List<Integer> sizes = parseSizes(prop("sparkJob.partitions", "1000,20000"));
    private final int rate = Integer.parseInt(prop("sparkJob.rate", "2000"));
    private final AtomicBoolean producing = new AtomicBoolean();
    private int partitions;
    private String topic;
    private final AtomicLong sendErrors = new AtomicLong();
    private String bootstrap;
    private String zookeeper;

    public static void main(String[] args) throws Exception {
        System.exit(new SparkJobBench().run());
    }

    private static String prop(String key, String fallback) {
        String value = System.getProperty(key);
        return value == null || value.trim().isEmpty() ? fallback : value.trim();
    }

    private static String requiredProp(String key) {
        String value = System.getProperty(key);
        if (value == null || value.trim().isEmpty()) {
            throw new IllegalArgumentException("system property " + key + " is required");
        }
        return value.trim();
    }

    private static List<Integer> parseSizes(String text) {
        List<Integer> sizes = new ArrayList<>();
        for (String size : text.split(",")) {
            sizes.add(Integer.parseInt(size.trim()));
        }
        return sizes;
    }

    private int run() throws Exception {
        deleteRecursively(out.toFile());
        Files.createDirectories(out);
        String loadBefore = machineLoad();
        log("machine load before: " + loadBefore);
        cluster("start");
        StringBuilder summary = new StringBuilder();
        List<String> allErrors = new ArrayList<>();
        String loadAfter;
        try {
            ClusterEnv env = ClusterEnv.load(clusterDir.resolve("cluster.env"));
            zookeeper = env.zookeeper();
            bootstrap = env.bootstrap();
            for (int size : sizes) {
                partitions = size;
                topic = TOPIC + "-" + size;
                List<Run> runs = new ArrayList<>();
                List<String> errors = new ArrayList<>();
                try (Cluster cluster = new Cluster(zookeeper, bootstrap)) {
                    // A thousand partitions a request: one broker creating 20,000 at once
                    // outlasts the admin client's timeout.
                    cluster.createTopic(topic, Math.min(partitions, 1000));
                    for (int total = 2000; total < partitions + 1000; total += 1000) {
                        cluster.addPartitions(topic, Math.min(total, partitions));
                    }
                }
                log("topic " + topic + " with " + partitions + " partitions created");
                producing.set(true);
                Thread producer = new Thread(this::produce, "producer");
                producer.setDaemon(true);
                producer.start();
                Thread.sleep(5_000);
                seedKeeperGroup(group("keeper"));
                seedKeeperGroup(group("async"));
                for (int round = 1; round <= rounds; round++) {
                    for (String[] contender : CONTENDERS) {
                        Run r = runJob(contender[0], contender[1], round);
                        runs.add(r);
                        if (r.error != null) {
                            errors.add(r.name + ": " + r.error);
                        }
                    }
                }
                producing.set(false);
                producer.join(30_000);
                String table = summary(runs, errors);
                summary.append(table).append('\n');
                // Kept at once: a later size that fails does not take this one with it.
                Files.write(out.resolve("summary-" + size + ".txt"), table.getBytes(StandardCharsets.UTF_8));
                System.out.print(table);
                errors.forEach(e -> allErrors.add("P=" + size + " " + e));
            }
            loadAfter = machineLoad();
        } finally {
            cluster("stop");
        }
        log("machine load after: " + loadAfter);
        String header = "Spark-job benchmark: offsetkeeper's commit (A) and commitAsync (C) against Spark's commitAsync (B)\n"
                + "date (UTC): " + Instant.now() + "\n"
                + "machine: " + cpuModel() + ", " + Runtime.getRuntime().availableProcessors() + " CPUs\n"
                + "machine load before: " + loadBefore + "\n"
                + "machine load after:  " + loadAfter + "\n\n";
        String text = header + summary;
        List<String> errors = allErrors;
        Files.write(out.resolve("summary.txt"), text.getBytes(StandardCharsets.UTF_8));
        String summaryText = text;
        System.out.print(summaryText);
        if (!errors.isEmpty()) {
            System.out.println("FAILED:");
            errors.forEach(e -> System.out.println("  " + e));
            return 1;
        }
        return 0;
    }

    /** The group of a BenchJob mode at this P. */
    private String group(String mode) {
        return TOPIC + "-" + mode + "-" + partitions;
    }

    /**
     * A keeper job's group starts with P stored offsets, so that every run's load reads P znodes.
     * Tried for up to 5 minutes: one broker takes a while to serve a topic's 20,000 new partitions.
     */
    private void seedKeeperGroup(String group) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        while (true) {
            try {
                seedOnce(group);
                return;
            } catch (io.offsetkeeper.OffsetKeeperException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                log("group " + group + " not seeded yet (" + e.getMessage() + "); trying again");
                Thread.sleep(5_000);
            }
        }
    }

    private void seedOnce(String group) {
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", bootstrap);
        params.put("key.deserializer", StringDeserializer.class);
        params.put("value.deserializer", StringDeserializer.class);
        params.put("group.id", group);
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(zookeeper).kafkaParams(params).build()) {
            Map<TopicPartition, Long> offsets = keeper.load(Collections.singletonList(topic));
            keeper.commit(offsets);
            log("group " + group + ": " + offsets.size() + " offsets stored in ZooKeeper");
        }
    }

    private Run runJob(String mode, String letter, int round) throws IOException, InterruptedException {
        Run r = new Run(letter + round);
        Path batchesFile = out.resolve("batches-" + partitions + "-" + r.name + ".txt");
        Path jobLog = out.resolve("job-" + partitions + "-" + r.name + ".log");
        List<String> command = new ArrayList<>();
        command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        for (String arg : driverJvmArgs) {
            if (!arg.isEmpty()) {
                command.add(arg);
            }
        }
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(BenchJob.class.getName());
        command.addAll(Arrays.asList(mode, zookeeper, bootstrap, topic, group(mode),
                Integer.toString(batches), batchesFile.toString()));
        log("run " + r.name + " (" + mode + ") starts: " + batches + " batches");
        Process job = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(jobLog.toFile()).start();
        if (!job.waitFor(batches * 3L + 180, TimeUnit.SECONDS)) {
            job.destroyForcibly().waitFor();
            r.error = "did not finish in " + (batches * 3L + 180) + " s; see " + jobLog;
        } else if (job.exitValue() != 0) {
            r.error = "the job exited with " + job.exitValue() + "; see " + jobLog;
        }
        int seen = 0;
        if (Files.exists(batchesFile)) {
            for (String line : Files.readAllLines(batchesFile, StandardCharsets.US_ASCII)) {
                Map<String, String> f = fields(line);
                if (line.startsWith("load ")) {
                    r.loadMicros = Long.parseLong(f.get("micros"));
                    if (Integer.parseInt(f.get("partitions")) != partitions) {
                        r.error = "the load returned " + f.get("partitions") + " partitions, not " + partitions;
                    }
                } else if (line.startsWith("batch=")) {
                    seen++;
                    if (Integer.parseInt(f.get("ranges")) != partitions && r.error == null) {
                        r.error = "batch " + f.get("batch") + " has " + f.get("ranges") + " ranges, not " + partitions;
                    }
                    if (seen > warmup && seen <= batches) {
                        r.processing.add(Long.parseLong(f.get("processing")));
                        r.scheduling.add(Long.parseLong(f.get("scheduling")));
                        r.total.add(Long.parseLong(f.get("total")));
                        r.commitMicros.add(Long.parseLong(f.get("commitMicros")));
                        r.records.add(Long.parseLong(f.get("records")));
                        r.behind.add(Long.parseLong(f.get("behind")));
                    }
                }
            }
        }
        if (r.error == null && seen < batches) {
            r.error = "only " + seen + " of " + batches + " batches completed";
        }
        log("run " + r.name + " ended: " + seen + " batches, processing median "
                + fmt(median(r.processing)) + " ms" + (r.error == null ? "" : "; ERROR " + r.error));
        return r;
    }

    private static Map<String, String> fields(String line) {
        Map<String, String> f = new HashMap<>();
        for (String part : line.split(" ")) {
            int eq = part.indexOf('=');
            if (eq > 0) {
                f.put(part.substring(0, eq), part.substring(eq + 1));
            }
        }
        return f;
    }

    /** One P's table: the three contenders side by side, the goal's verdict. */
    private String summary(List<Run> runs, List<String> errors) {
        Run a = new Run("A");
        Run b = new Run("B");
        Run c = new Run("C");
        for (Run r : runs) {
            (r.name.startsWith("A") ? a : r.name.startsWith("B") ? b : c).addAll(r);
        }
        for (Run contender : new Run[] {a, c, b}) {
            if (contender.processing.size() < 100) {
                errors.add(contender.name + ": only " + contender.processing.size()
                        + " batches measured (at least 100 needed)");
            }
        }
        StringBuilder s = new StringBuilder();
        s.append("P = ").append(partitions).append('\n');
        s.append(String.format(Locale.ROOT, "settings: local[2], 1 s batches, Assign over %d partitions, rdd.count(); "
                + "producer %d records/s round robin (%.1f records a partition a batch); "
                + "runs %s, %d batches each, first %d dropped%n", partitions, rate, rate / (double) partitions,
                names(runs), batches, warmup));
        s.append("A: keeper.load before the stream, SparkOffsets.commit(keeper, ranges) in foreachRDD\n");
        s.append("C: keeper.load before the stream, SparkOffsets.commitAsync(keeper, ranges) in foreachRDD\n");
        s.append("B: ((CanCommitOffsets) stream.inputDStream()).commitAsync(ranges), offsets in the Kafka group\n\n");
        s.append(String.format(Locale.ROOT, "%-34s %14s %14s %14s%n", "per batch (Spark's BatchInfo)", "A commit",
                "C commitAsync", "B Spark's"));
        row(s, "batches measured", a.processing.size(), c.processing.size(), b.processing.size());
        row(s, "processing time median (ms)", median(a.processing), median(c.processing), median(b.processing));
        row(s, "processing time p90 (ms)", p90(a.processing), p90(c.processing), p90(b.processing));
        row(s, "scheduling delay median (ms)", median(a.scheduling), median(c.scheduling), median(b.scheduling));
        row(s, "total delay median (ms)", median(a.total), median(c.total), median(b.total));
        row(s, "total delay p90 (ms)", p90(a.total), p90(c.total), p90(b.total));
        row(s, "commit call median (us)", median(a.commitMicros), median(c.commitMicros), median(b.commitMicros));
        row(s, "commit call p90 (us)", p90(a.commitMicros), p90(c.commitMicros), p90(b.commitMicros));
        row(s, "records a batch median", median(a.records), median(c.records), median(b.records));
        s.append("\nprocessing time median per run (ms):");
        for (Run r : runs) {
            s.append(' ').append(r.name).append('=').append(fmt(median(r.processing)));
        }
        s.append('\n');
        s.append("load (A and C, keeper.load of ").append(partitions).append(" stored offsets, once at start), ms:");
        for (Run r : runs) {
            if (!r.name.startsWith("B")) {
                s.append(' ').append(r.name).append('=').append(r.loadMicros < 0 ? "-" : fmt(r.loadMicros / 1000.0));
            }
        }
        s.append('\n');
        double over = (median(c.commitMicros) - median(b.commitMicros)) / 1000.0;
        long behind = c.behind.stream().filter(v -> v > 0).count();
        s.append(String.format(Locale.ROOT, "goal: C's commit call within %.1f ms of B's (medians): %s ms over: %s%n",
                GOAL_MS, fmt3(over), over <= GOAL_MS ? "met" : "missed"));
        s.append(String.format(Locale.ROOT, "goal: C never more than one batch behind: %d of %d batches found an "
                + "earlier batch not yet stored: %s%n", behind, c.behind.size(), behind == 0 ? "met" : "missed"));
        if (!errors.isEmpty()) {
            s.append("errors:\n");
            errors.forEach(e -> s.append("  ").append(e).append('\n'));
        }
        return s.toString();
    }

    private static String names(List<Run> runs) {
        List<String> names = new ArrayList<>();
        runs.forEach(r -> names.add(r.name));
        return String.join(" ", names);
    }

    private static void row(StringBuilder s, String what, double a, double c, double b) {
        s.append(String.format(Locale.ROOT, "%-34s %14s %14s %14s%n", what, fmt(a), fmt(c), fmt(b)));
    }

    private static String fmt3(double v) {
        return String.format(Locale.ROOT, "%.3f", v);
    }

    private static String fmt(double v) {
        if (Double.isNaN(v)) {
            return "-";
        }
        return v == Math.rint(v) && Math.abs(v) < 1e9 ? Long.toString((long) v) : String.format(Locale.ROOT, "%.1f", v);
    }

    static double median(List<Long> values) {
        if (values.isEmpty()) {
            return Double.NaN;
        }
        List<Long> v = new ArrayList<>(values);
        Collections.sort(v);
        int n = v.size();
        return n % 2 == 1 ? v.get(n / 2) : (v.get(n / 2 - 1) + v.get(n / 2)) / 2.0;
    }

    /** Nearest rank. */
    static double p90(List<Long> values) {
        if (values.isEmpty()) {
            return Double.NaN;
        }
        List<Long> v = new ArrayList<>(values);
        Collections.sort(v);
        return v.get((int) Math.ceil(0.9 * v.size()) - 1);
    }

    /** {@code rate} records a second, round robin over the partitions. */
    private void produce() {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.ACKS_CONFIG, "1");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            long start = System.nanoTime();
            long seq = 0;
            while (producing.get()) {
                long wait = start + seq * 1_000_000_000L / rate - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
                producer.send(new ProducerRecord<>(topic, (int) (seq % partitions), null, Long.toString(seq)),
                        (meta, error) -> {
                            if (error != null) {
                                sendErrors.incrementAndGet();
                            }
                        });
                seq++;
            }
            producer.flush();
            log("producer stopped: " + seq + " records sent, " + sendErrors.get() + " send errors");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String machineLoad() {
        try {
            String loadavg = new String(Files.readAllBytes(Paths.get("/proc/loadavg")), StandardCharsets.US_ASCII).trim();
            return "loadavg " + loadavg;
        } catch (IOException e) {
            return "unknown (" + e + ")";
        }
    }

    private static String cpuModel() {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/cpuinfo"), StandardCharsets.US_ASCII)) {
                if (line.startsWith("model name")) {
                    return line.substring(line.indexOf(':') + 1).trim();
                }
            }
        } catch (IOException e) {
            // below
        }
        return "unknown CPU";
    }

    private void cluster(String command) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder("bash", clusterScript, command, clusterDir.toString())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(out.resolve("cluster.log").toFile()));
        // A broker keeps a descriptor open per partition: at most about 8,000 partitions a broker
        // keeps it under a 20,000-descriptor limit; a larger heap.
        int partitionsInAll = sizes.stream().mapToInt(Integer::intValue).sum();
        pb.environment().put("OFFSETKEEPER_CLUSTER_BROKERS", Integer.toString((partitionsInAll + 7_999) / 8_000));
        pb.environment().put("OFFSETKEEPER_KAFKA_HEAP", "1g");
        Process p = pb.start();
        if (!p.waitFor(300, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("cluster.sh " + command + " did not end in 300 s");
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException("cluster.sh " + command + " failed with " + p.exitValue() + "; see "
                    + out.resolve("cluster.log"));
        }
    }

    private static void log(String message) {
        System.out.println(Instant.now() + " benchSparkJob: " + message);
    }

    private static void deleteRecursively(File file) {
        File[] children = file.listFiles();
        if (children != null) {
            for (File child : children) {
                deleteRecursively(child);
            }
        }
        file.delete();
    }

    /** One run's measured batches (after the warm-up), or a contender's, all runs together. */
    private static final class Run {
        final String name;
        final List<Long> processing = new ArrayList<>();
        final List<Long> scheduling = new ArrayList<>();
        final List<Long> total = new ArrayList<>();
        final List<Long> commitMicros = new ArrayList<>();
        final List<Long> records = new ArrayList<>();
        final List<Long> behind = new ArrayList<>();
        long loadMicros = -1;
        String error;

        Run(String name) {
            this.name = name;
        }

        void addAll(Run r) {
            processing.addAll(r.processing);
            scheduling.addAll(r.scheduling);
            total.addAll(r.total);
            commitMicros.addAll(r.commitMicros);
            records.addAll(r.records);
            behind.addAll(r.behind);
        }
    }
}
