package io.offsetkeeper.bench;

import io.offsetkeeper.JniProbe;
import io.offsetkeeper.OffsetKeeper;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.TopicPartition;
import org.apache.zookeeper.ZooKeeper;

/**
 * The side-by-side benchmark: B1 (ZkUtils-style, one round trip per partition), B2 (a careful JVM
 * peer), B3 (Curator and Kafka's Admin, the modern JVM way), F (the protocol floor, Rust,
 * subprocess) and offsetkeeper (its Java API), on one real ZooKeeper + Kafka, in one run,
 * alternating. See tests/bench/README.md.
 *
 * <p>{@code Bench} compares; {@code Bench soak} is the child JVM of the RSS/thread/fd check.
 * Settings are system properties {@code offsetkeeper.bench.*} (see {@link #prop}).
 */
public final class Bench {
    static final String[] OPS = {"load cold", "load warm", "commit P", "commit 1 of P"};
    static final String[] CONTENDERS = {"B1", "B2", "B3", "F", "offsetkeeper"};
    /**
     * B1 runs up to this P: past it, its one synchronous ZooKeeper round trip per partition per
     * operation (20,000 at P=20,000) takes seconds a sample and tells nothing new.
     */
    static final int B1_MAX_SIZE = 5_000;

    /**
     * A full collection before each operation, so no contender pays for the garbage another
     * left (B3 leaves hundreds of MB a round at P=20,000, whose young pauses of 3-130 ms then
     * fell on whichever contender ran next; F, a process of its own, never paid them).
     * {@code -Pbench.gcBeforeEach=false} turns it off.
     */
    static final boolean GC_BEFORE_EACH = Boolean.parseBoolean(prop("gcBeforeEach", "true"));

    private Bench() {}

    static String prop(String name, String fallback) {
        return System.getProperty("offsetkeeper.bench." + name, fallback);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> env = clusterEnv();
        String zk = env.get("OFFSETKEEPER_ZK");
        String bootstrap = env.get("OFFSETKEEPER_BOOTSTRAP");
        if (args.length > 0 && args[0].equals("soak")) {
            Soak.child(zk, bootstrap, Integer.parseInt(prop("soak.size", "100")),
                    Integer.parseInt(prop("soak.cycles", "10000")));
            return;
        }
        File out = new File(prop("out", "build/bench"));
        out.mkdirs();
        int[] sizes = Arrays.stream(prop("sizes", "10,100,1000,5000,20000").split(","))
                .mapToInt(s -> Integer.parseInt(s.trim())).toArray();
        // 21 rounds: a ratio's 95% interval over 11 rounds was often wider than a goal's margin.
        int runs = Integer.parseInt(prop("runs", "21"));
        // Sizes up to 100 take milliseconds a round, and their medians need more rounds to
        // settle on a shared machine (7 rounds moved a P=10 median 2x between runs).
        int smallRuns = Integer.parseInt(prop("smallRuns", "21"));
        int warmup = Integer.parseInt(prop("warmup", "1"));
        // B1 in the first rounds only: its goals' margins are wide (its ratios are 50x and
        // more against bounds of 20x and 30x), and at P=5000 a round of it takes 10 s.
        int b1Runs = Integer.parseInt(prop("b1Runs", "7"));
        int soakCycles = Integer.parseInt(prop("soak.cycles", "10000"));
        int soakSize = Integer.parseInt(prop("soak.size", "100"));

        Machine machine = Machine.now();
        System.out.printf("offsetkeeper bench: ZooKeeper %s, Kafka %s; %d cores (%s), load %s%n",
                zk, bootstrap, machine.cores, machine.cpu, machine.loadAverage);
        long started = System.nanoTime();

        List<Report.Section> stores = new ArrayList<>();
        for (String store : prop("stores", "zookeeper,kafka").split(",")) {
            switch (store.trim()) {
                case "zookeeper":
                    stores.add(Report.ZOOKEEPER);
                    break;
                case "kafka":
                    stores.add(Report.KAFKA);
                    break;
                default:
                    throw new IllegalArgumentException("bench.stores: '" + store
                            + "' is not a store (zookeeper, kafka)");
            }
        }
        Map<Integer, Workload> workloads = createWorkloads(zk, bootstrap, sizes,
                soakCycles > 0 ? soakSize : 0, stores.contains(Report.KAFKA));
        waitForQuietMachine(Integer.parseInt(prop("settle.seconds", "300")));

        // ---- contenders, alternating -----------------------------------------------------
        Map<String, Object> kafkaParams = new LinkedHashMap<>();
        kafkaParams.put("bootstrap.servers", bootstrap);
        kafkaParams.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        kafkaParams.put("value.deserializer",
                "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        JniProbe.loadLibrary();
        Results results = new Results();
        File floorBinary = new File(prop("floor", "target/release/offsetkeeper-floor"));
        try (Admin admin = Workload.admin(bootstrap)) {
            for (int size : sizes) {
                Workload w = workloads.get(size);
                Map<String, Object> params = new LinkedHashMap<>(kafkaParams);
                params.put("group.id", w.loadGroup);
                boolean zooKeeperRan = false;
                for (Report.Section store : stores) {
                    if (store == Report.KAFKA && zooKeeperRan) {
                        // B1's consumers of the ZooKeeper table committed their positions into
                        // the load group in Kafka (see replantLoadGroupsInKafka); untimed.
                        w.replantLoadGroupsInKafka(admin);
                    }
                    zooKeeperRan |= store == Report.ZOOKEEPER;
                    List<Contender> contenders = store == Report.KAFKA
                            ? kafkaContenders(zk, bootstrap, params, floorBinary)
                            : contenders(size, zk, bootstrap, params, floorBinary);
                    for (Contender c : contenders) {
                        c.open(w);
                    }
                    long t0 = System.nanoTime();
                    int sizeRuns = size <= 100 ? Math.max(runs, smallRuns) : runs;
                    for (int round = 0; round < warmup + sizeRuns; round++) {
                        measureRound(zk, admin, store, w, contenders, round, warmup, b1Runs, results);
                    }
                    for (Contender c : contenders) {
                        c.close();
                    }
                    System.out.printf("P=%d, %s: %d warm-up + %d measured rounds in %.1f s%n", size, store.title,
                            warmup, sizeRuns, (System.nanoTime() - t0) / 1e9);
                    System.out.print(Report.table(results, new int[] {size}, store));
                }
            }
        }

        // ---- JNI -----------------------------------------------------------------------
        Map<String, Double> jni = jni();
        System.out.printf("JNI: validate 10,000 (one bulk call) %.3f ms; 10,000 single "
                        + "OffsetKeeper.validate calls %.3f ms; empty round trip %.0f ns%n",
                jni.get("validate10kBulkMs"), jni.get("validate10kSingleCallsMs"),
                jni.get("emptyRoundTripNs"));

        // ---- soak in a JVM of its own ----------------------------------------------------
        String soak = soakCycles > 0 ? Soak.runChild(soakSize, soakCycles) : null;

        Machine after = Machine.now();
        double minutes = (System.nanoTime() - started) / 60e9;
        String json = Report.json(machine, after, sizes, runs, smallRuns, b1Runs, warmup, results, jni, soak,
                minutes);
        Files.write(new File(out, "results.json").toPath(), json.getBytes(StandardCharsets.UTF_8));
        Chart.draw(results, sizes, new File(out, "chart.png"));
        String table = Report.table(results, sizes) + Report.jniAndSoak(jni, soak)
                + Report.goals(results, sizes, jni, soak);
        Files.write(new File(out, "table.txt").toPath(), table.getBytes(StandardCharsets.UTF_8));
        Files.write(new File(out, "table.md").toPath(),
                Report.markdown(results, sizes).getBytes(StandardCharsets.UTF_8));
        System.out.println();
        System.out.printf("Machine: %d cores, %s; load average before %s, after %s (shared, noisy)%n",
                machine.cores, machine.cpu, machine.loadAverage, after.loadAverage);
        System.out.printf("Medians of %d runs (%d at P <= 100; B1 in the first %d) after %d warm-up round(s), "
                + "milliseconds; total %.1f min%n", runs, Math.max(runs, smallRuns), b1Runs, warmup, minutes);
        System.out.print(table);
        System.out.println("Wrote " + new File(out, "results.json") + ", " + new File(out, "chart.png")
                + ", " + new File(out, "table.txt") + ", " + new File(out, "table.md"));
    }

    /**
     * The workloads of each size, made once before any contender runs (and the soak's, when
     * {@code soakSize} is not 0 and no workload has its size).
     */
    private static Map<Integer, Workload> createWorkloads(String zk, String bootstrap, int[] sizes,
            int soakSize, boolean inKafka) throws Exception {
        List<String> committers = new ArrayList<>(Arrays.asList(CONTENDERS));
        committers.add(FloorProcess.TOLD);
        committers.add(Report.OK_SPARK);
        committers.add("soak");
        Map<Integer, Workload> workloads = new LinkedHashMap<>();
        try (Admin admin = Workload.admin(bootstrap)) {
            ZooKeeper zkClient = Soak.connect(zk);
            Workload.ensureNode(zkClient, "/consumers");
            for (int size : sizes) {
                long t0 = System.nanoTime();
                Workload w = new Workload(size);
                w.create(admin, bootstrap, zkClient, committers);
                if (inKafka) {
                    w.plantInKafka(admin, Arrays.asList(KafkaStorePeer.NAME, FloorProcess.KAFKA_FLOOR,
                            Report.OK_KAFKA, Report.OK_KAFKA_SPARK));
                }
                workloads.put(size, w);
                System.out.printf("W(%d): %d topics, %d partitions ready in %.1f s%n", size,
                        w.topics.size(), w.partitions.size(), (System.nanoTime() - t0) / 1e9);
            }
            if (soakSize > 0 && !workloads.containsKey(soakSize)) {
                Workload w = new Workload(soakSize);
                w.create(admin, bootstrap, zkClient, committers);
            }
            zkClient.close();
        }
        return workloads;
    }

    /** The contenders at one size, in the order the rounds rotate them (B1 only up to B1_MAX_SIZE). */
    private static List<Contender> contenders(int size, String zk, String bootstrap,
            Map<String, Object> params, File floorBinary) throws Exception {
        List<Contender> contenders = new ArrayList<>();
        if (size <= B1_MAX_SIZE) {
            contenders.add(new ZkUtilsStyleCoordinator(zk, params));
        }
        contenders.add(new CarefulPeer(zk, bootstrap));
        contenders.add(new CuratorPeer(zk, bootstrap));
        FloorProcess floor = new FloorProcess(floorBinary, zk, bootstrap);
        contenders.add(floor);
        contenders.add(floor.toldTheChangedOne());
        contenders.add(KeeperContender.withDefaults(zk, params, Report.ZOOKEEPER));
        contenders.add(KeeperContender.withoutOwnership(zk, params, Report.ZOOKEEPER));
        contenders.add(KeeperContender.sparkPath(zk, params, Report.ZOOKEEPER));
        return contenders;
    }

    /** The contenders on Kafka's group store: KP, KF and offsetkeeper with offsetkeeper.store=kafka. */
    private static List<Contender> kafkaContenders(String zk, String bootstrap, Map<String, Object> params,
            File floorBinary) throws Exception {
        List<Contender> contenders = new ArrayList<>();
        contenders.add(new KafkaStorePeer(bootstrap));
        contenders.add(FloorProcess.groupStore(floorBinary, zk, bootstrap));
        contenders.add(KeeperContender.withDefaults(zk, params, Report.KAFKA));
        contenders.add(KeeperContender.withoutOwnership(zk, params, Report.KAFKA));
        contenders.add(KeeperContender.sparkPath(zk, params, Report.KAFKA));
        return contenders;
    }

    /**
     * One round: every operation by every contender, starting one further along the rotation
     * each round; recorded once past the warm-up. The first round also checks that each
     * contender's commits reached ZooKeeper.
     */
    private static void measureRound(String zk, Admin admin, Report.Section store, Workload w,
            List<Contender> contenders, int round, int warmup, int b1Runs, Results results) throws Exception {
        boolean measured = round >= warmup;
        long base = 1_000 + 2L * round + 1;
        Map<TopicPartition, Long> all = w.allAt(base);
        Map<TopicPartition, Long> one = w.allAt(base);
        TopicPartition first = w.partitions.get(0);
        one.put(first, base + 1);
        for (String op : OPS) {
            for (int k = 0; k < contenders.size(); k++) {
                Contender c = contenders.get((k + round) % contenders.size());
                if (!c.measures(op) || (c.name().equals("B1") && round >= warmup + b1Runs)) {
                    continue;
                }
                if (GC_BEFORE_EACH) {
                    System.gc();
                }
                long nanos;
                switch (op) {
                    case "load cold":
                        nanos = checked(w, c, c.loadCold(w));
                        break;
                    case "load warm":
                        nanos = checked(w, c, c.loadWarm(w));
                        break;
                    case "commit P":
                        nanos = c.commit(w, all, all);
                        break;
                    default:
                        nanos = c.commit(w, one, Collections.singletonMap(first, base + 1));
                        break;
                }
                if (measured) {
                    results.add(w.size, op, c.name(), round, nanos);
                }
            }
        }
        if (round == 0 && store == Report.KAFKA) {
            w.checkCommittedInKafka(admin, contenders, first, base + 1, base);
        } else if (round == 0) {
            Soak.checkCommitted(zk, w, contenders, first, base + 1, base);
        }
    }

    /** Fails the run on a wrong answer: a fast wrong load is no result. */
    private static long checked(Workload w, Contender c, Contender.Timed t) {
        if (t.offsets != null) {
            String wrong = w.check(t.offsets);
            if (wrong != null) {
                throw new IllegalStateException(c.name() + " loaded wrong offsets for W(" + w.size
                        + "): " + wrong);
            }
        } else if (t.count != w.size) {
            throw new IllegalStateException(c.name() + " saw " + t.count + " partitions of " + w.size);
        }
        return t.nanos;
    }

    /** validate over 10,000 entries (bulk, and one public call each) and an empty round trip. */
    static Map<String, Double> jni() {
        int n = 10_000;
        byte[] kinds = new byte[n];
        long[] stored = new long[n];
        long[] earliest = new long[n];
        long[] latest = new long[n];
        for (int i = 0; i < n; i++) {
            int kind = i % 20;
            kinds[i] = (byte) (kind == 3 ? 0 : 2);
            stored[i] = kind < 2 ? 3 : kind == 2 ? 1_000 : kind == 3 ? -1 : 15;
            earliest[i] = kind < 2 ? 10 : 0;
            latest[i] = 20;
        }
        long[] bulk = new long[200];
        for (int r = -200; r < bulk.length; r++) {
            long t0 = System.nanoTime();
            long[] chosen = JniProbe.validate(kinds, stored, earliest, latest);
            long t = System.nanoTime() - t0;
            if (chosen.length != n || chosen[0] != 10 || chosen[2] != 0 || chosen[5] != 15) {
                throw new IllegalStateException("validate answered wrongly");
            }
            if (r >= 0) {
                bulk[r] = t;
            }
        }
        long[] single = new long[7];
        for (int r = -3; r < single.length; r++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                OffsetKeeper.validate(kinds[i] == 0 ? null : stored[i], earliest[i], latest[i],
                        null, null, null);
            }
            long t = System.nanoTime() - t0;
            if (r >= 0) {
                single[r] = t;
            }
        }
        int calls = 100_000;
        long[] empty = new long[21];
        for (int r = -5; r < empty.length; r++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                JniProbe.emptyRoundTrip();
            }
            long t = System.nanoTime() - t0;
            if (r >= 0) {
                empty[r] = t;
            }
        }
        Map<String, Double> m = new LinkedHashMap<>();
        m.put("validate10kBulkMs", Results.median(bulk) / 1e6);
        m.put("validate10kSingleCallsMs", Results.median(single) / 1e6);
        m.put("emptyRoundTripNs", Results.median(empty) / (double) calls);
        return m;
    }

    static Map<String, String> clusterEnv() throws IOException {
        String path = System.getProperty("offsetkeeper.cluster.env", "build/bench-cluster/cluster.env");
        Map<String, String> env = new LinkedHashMap<>();
        for (String line : Files.readAllLines(new File(path).toPath(), StandardCharsets.UTF_8)) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                env.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
            }
        }
        if (!env.containsKey("OFFSETKEEPER_ZK") || !env.containsKey("OFFSETKEEPER_BOOTSTRAP")) {
            throw new IllegalStateException(path + " lacks OFFSETKEEPER_ZK or OFFSETKEEPER_BOOTSTRAP");
        }
        return env;
    }

    /** What the run ran on. */
    static final class Machine {
        final int cores;
        final String cpu;
        final String loadAverage;

        private Machine(int cores, String cpu, String loadAverage) {
            this.cores = cores;
            this.cpu = cpu;
            this.loadAverage = loadAverage;
        }

        static Machine now() {
            String cpu = "unknown CPU";
            String load = "?";
            try {
                for (String line : Files.readAllLines(new File("/proc/cpuinfo").toPath())) {
                    if (line.startsWith("model name")) {
                        cpu = line.substring(line.indexOf(':') + 1).trim();
                        break;
                    }
                }
                String[] l = new String(Files.readAllBytes(new File("/proc/loadavg").toPath()),
                        StandardCharsets.US_ASCII).split(" ");
                load = l[0] + " " + l[1] + " " + l[2];
            } catch (IOException e) {
                // not Linux: leave the defaults
            }
            return new Machine(Runtime.getRuntime().availableProcessors(), cpu, load);
        }
    }

    /**
     * Waits until the machine's CPUs are at most 25% busy over 5 seconds, or {@code maxSeconds}
     * passed: after the workloads are created the brokers keep working for minutes (20,000 new
     * partitions): F's warm load at P=5000 took 21 ms in a full run, 12.4 ms on a cluster left idle.
     */
    static void waitForQuietMachine(int maxSeconds) throws Exception {
        File stat = new File("/proc/stat");
        if (!stat.exists() || maxSeconds <= 0) {
            return;
        }
        long t0 = System.nanoTime();
        double busy = 1;
        while (true) {
            long[] before = cpuTicks(stat);
            Thread.sleep(5_000);
            long[] after = cpuTicks(stat);
            long total = after[0] - before[0];
            busy = total == 0 ? 0 : (double) (after[1] - before[1]) / total;
            double waited = (System.nanoTime() - t0) / 1e9;
            if (busy <= 0.25 || waited >= maxSeconds) {
                System.out.printf("settle: CPUs %.0f%% busy over the last 5 s after %.0f s%s%n",
                        busy * 100, waited, busy <= 0.25 ? "" : " (gave up waiting for 25%)");
                return;
            }
        }
    }

    /** {total, busy} jiffies of all CPUs from /proc/stat's first line (busy: not idle or iowait). */
    private static long[] cpuTicks(File stat) throws IOException {
        String[] f = Files.readAllLines(stat.toPath()).get(0).trim().split("\\s+");
        long total = 0;
        for (int i = 1; i < f.length && i <= 8; i++) {
            total += Long.parseLong(f[i]);
        }
        long idle = Long.parseLong(f[4]) + Long.parseLong(f[5]);
        return new long[] {total, total - idle};
    }

    /** Runs a command, returns its stdout lines (for the soak child). */
    static List<String> run(List<String> command, long timeoutMinutes) throws Exception {
        Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        List<String> lines = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                lines.add(line);
            }
        }
        if (!p.waitFor(timeoutMinutes, TimeUnit.MINUTES) || p.exitValue() != 0) {
            p.destroy();
            throw new IllegalStateException(command.get(0) + " failed: " + lines);
        }
        return lines;
    }

    static double number(String json, String key) {
        Matcher m = Pattern.compile("\"" + Pattern.quote(key) + "\"\\s*:\\s*(-?[0-9.]+)").matcher(json);
        return m.find() ? Double.parseDouble(m.group(1)) : Double.NaN;
    }

    static String fmt(double v) {
        if (Double.isNaN(v)) {
            return "-";
        }
        if (v >= 100) {
            return String.format(Locale.ROOT, "%.0f", v);
        }
        if (v >= 10) {
            return String.format(Locale.ROOT, "%.1f", v);
        }
        return String.format(Locale.ROOT, "%.2f", v);
    }
}
