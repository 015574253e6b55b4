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
 * Streaming job's batches at P partitions, against the same job committing with Spark's own
 * {@code commitAsync}, from Spark's own batch timings.
 *
 * <p>A cluster of its own (one broker), a topic of P partitions, a producer writing
 * {@code rate} records a second round robin over all of them, and {@link BenchJob} run as a JVM
 * of its own, alternately with offsetkeeper (A) and with Spark's commitAsync (B), {@code rounds}
 * times each (A, B, A, B, ...), {@code batches} batches a run, the first {@code warmup} of each
 * run dropped. Writes {@code summary.txt} (and each run's batches file) under the output folder.
 * Fails on real errors only: a job that crashed, fewer than 100 batches measured a contender, a
 * batch whose ranges do not cover the P partitions.
 */
public final class SparkJobBench {
    private static final String TOPIC = "bench-spark-job";
    private static final String GROUP_A = "bench-spark-job-keeper";
    private static final String GROUP_B = "bench-spark-job-commitasync";

    private final Path out = Paths.get(requiredProp("sparkJob.out"));
    private final Path clusterDir = out.resolve("cluster");
    private final String clusterScript = requiredProp("sparkJob.clusterScript");
    private final List<String> driverJvmArgs = Arrays.asList(prop("sparkJob.driverJvmArgs", "").trim().split("\\s+"));
    private final int rounds = Integer.parseInt(prop("sparkJob.rounds", "2"));
    private final int batches = Integer.parseInt(prop("sparkJob.batches", "110"));
    private final int warmup = Integer.parseInt(prop("sparkJob.warmup", "10"));
    private final int partitions = Integer.parseInt(prop("sparkJob.partitions", "1000"));
    private final int rate = Integer.parseInt(prop("sparkJob.rate", "2000"));
    private final AtomicBoolean producing = new AtomicBoolean(true);
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

    private int run() throws Exception {
        deleteRecursively(out.toFile());
        Files.createDirectories(out);
        String loadBefore = machineLoad();
        log("machine load before: " + loadBefore);
        cluster("start");
        List<Run> runs = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        String loadAfter;
        try {
            ClusterEnv env = ClusterEnv.load(clusterDir.resolve("cluster.env"));
            zookeeper = env.zookeeper();
            bootstrap = env.bootstrap();
            try (Cluster cluster = new Cluster(zookeeper, bootstrap)) {
                cluster.createTopic(TOPIC, partitions);
            }
            log("topic " + TOPIC + " with " + partitions + " partitions created");
            Thread producer = new Thread(this::produce, "producer");
            producer.setDaemon(true);
            producer.start();
            Thread.sleep(5_000);
            seedKeeperGroup();
            for (int round = 1; round <= rounds; round++) {
                for (String mode : new String[] {"keeper", "spark"}) {
                    Run r = runJob(mode, round);
                    runs.add(r);
                    if (r.error != null) {
                        errors.add(r.name + ": " + r.error);
                    }
                }
            }
            producing.set(false);
            producer.join(30_000);
            loadAfter = machineLoad();
        } finally {
            cluster("stop");
        }
        log("machine load after: " + loadAfter);
        String summary = summary(runs, errors, loadBefore, loadAfter);
        Files.write(out.resolve("summary.txt"), summary.getBytes(StandardCharsets.UTF_8));
        System.out.print(summary);
        if (!errors.isEmpty()) {
            System.out.println("FAILED:");
            errors.forEach(e -> System.out.println("  " + e));
            return 1;
        }
        return 0;
    }

    /** Job A's group starts with P stored offsets, so that every A run's load reads P znodes. */
    private void seedKeeperGroup() {
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", bootstrap);
        params.put("key.deserializer", StringDeserializer.class);
        params.put("value.deserializer", StringDeserializer.class);
        params.put("group.id", GROUP_A);
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(zookeeper).kafkaParams(params).build()) {
            Map<TopicPartition, Long> offsets = keeper.load(Collections.singletonList(TOPIC));
            keeper.commit(offsets);
            log("group " + GROUP_A + ": " + offsets.size() + " offsets stored in ZooKeeper");
        }
    }

    private Run runJob(String mode, int round) throws IOException, InterruptedException {
        Run r = new Run((mode.equals("keeper") ? "A" : "B") + round);
        Path batchesFile = out.resolve("batches-" + r.name + ".txt");
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
        command.addAll(Arrays.asList(mode, zookeeper, bootstrap, TOPIC, mode.equals("keeper") ? GROUP_A : GROUP_B,
                Integer.toString(batches), batchesFile.toString()));
        log("run " + r.name + " (" + mode + ") starts: " + batches + " batches");
        Process job = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(out.resolve("job-" + r.name + ".log").toFile()).start();
        if (!job.waitFor(batches * 3L + 180, TimeUnit.SECONDS)) {
            job.destroyForcibly().waitFor();
            r.error = "did not finish in " + (batches * 3L + 180) + " s; see job-" + r.name + ".log";
        } else if (job.exitValue() != 0) {
            r.error = "the job exited with " + job.exitValue() + "; see job-" + r.name + ".log";
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

    private String summary(List<Run> runs, List<String> errors, String loadBefore, String loadAfter) {
        Run a = new Run("A");
        Run b = new Run("B");
        for (Run r : runs) {
            (r.name.startsWith("A") ? a : b).addAll(r);
        }
        for (Run c : new Run[] {a, b}) {
            if (c.processing.size() < 100) {
                errors.add(c.name + ": only " + c.processing.size() + " batches measured (at least 100 needed)");
            }
        }
        StringBuilder s = new StringBuilder();
        s.append("Spark-job benchmark: offsetkeeper (A) against Spark's commitAsync (B), P = ").append(partitions)
                .append('\n');
        s.append("date (UTC): ").append(Instant.now()).append('\n');
        s.append("machine: ").append(cpuModel()).append(", ").append(Runtime.getRuntime().availableProcessors())
                .append(" CPUs\n");
        s.append("machine load before: ").append(loadBefore).append('\n');
        s.append("machine load after:  ").append(loadAfter).append('\n');
        s.append(String.format(Locale.ROOT, "settings: local[2], 1 s batches, Assign over %d partitions, rdd.count(); "
                + "producer %d records/s round robin (%.1f records a partition a batch); "
                + "runs %s, %d batches each, first %d dropped%n", partitions, rate, rate / (double) partitions,
                names(runs), batches, warmup));
        s.append("A: keeper.load before the stream, SparkOffsets.commit(keeper, ranges) in foreachRDD\n");
        s.append("B: ((CanCommitOffsets) stream.inputDStream()).commitAsync(ranges), offsets in the Kafka group\n\n");
        s.append(String.format(Locale.ROOT, "%-34s %14s %14s%n", "per batch (Spark's BatchInfo)", "A offsetkeeper",
                "B commitAsync"));
        row(s, "batches measured", a.processing.size(), b.processing.size());
        row(s, "processing time median (ms)", median(a.processing), median(b.processing));
        row(s, "processing time p90 (ms)", p90(a.processing), p90(b.processing));
        row(s, "scheduling delay median (ms)", median(a.scheduling), median(b.scheduling));
        row(s, "total delay median (ms)", median(a.total), median(b.total));
        row(s, "total delay p90 (ms)", p90(a.total), p90(b.total));
        row(s, "commit call median (us)", median(a.commitMicros), median(b.commitMicros));
        row(s, "records a batch median", median(a.records), median(b.records));
        s.append("\nprocessing time median per run (ms):");
        for (Run r : runs) {
            s.append(' ').append(r.name).append('=').append(fmt(median(r.processing)));
        }
        s.append('\n');
        double diff = median(a.processing) - median(b.processing);
        double ratio = median(a.processing) / median(b.processing);
        s.append(String.format(Locale.ROOT, "per-batch cost offsetkeeper adds (median A - median B): %s ms; "
                + "ratio A/B: %.2fx%n", fmt(diff), ratio));
        s.append("load (A, keeper.load of ").append(partitions).append(" stored offsets, once at start), ms:");
        for (Run r : runs) {
            if (r.name.startsWith("A")) {
                s.append(' ').append(r.name).append('=').append(r.loadMicros < 0 ? "-" : fmt(r.loadMicros / 1000.0));
            }
        }
        s.append('\n');
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

    private static void row(StringBuilder s, String what, double a, double b) {
        s.append(String.format(Locale.ROOT, "%-34s %14s %14s%n", what, fmt(a), fmt(b)));
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
                producer.send(new ProducerRecord<>(TOPIC, (int) (seq % partitions), null, Long.toString(seq)),
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
        // One broker holds the P partitions' files (P well under the descriptor limit); a larger heap.
        pb.environment().put("OFFSETKEEPER_CLUSTER_BROKERS", "1");
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
        }
    }
}
