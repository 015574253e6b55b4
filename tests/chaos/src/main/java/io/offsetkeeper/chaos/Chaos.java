package io.offsetkeeper.chaos;

import io.offsetkeeper.e2e.Cluster;
import io.offsetkeeper.e2e.ClusterEnv;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

/**
 * The chaos soak: a real ZooKeeper + Kafka of its own, a producer, the {@link ChaosJob} driver as
 * a separate JVM started and restarted by this supervisor the way a YARN or Kubernetes restart
 * policy would, and a rotation of faults. At the end it verifies what the job processed against
 * what Kafka holds, prints a table, and exits non-zero when an invariant broke.
 *
 * <p>Invariants (any failure fails the run): no record missing except those purged; the records
 * lost that the load reports equal those purged; stored offsets never moved backwards; the stored
 * offsets reach the log ends after the drain; every acknowledged record is in the log; the job
 * survives ZooKeeper and broker faults without exiting. Under a rolling restart of the offsets'
 * ZooKeeper ensemble or a quorum loss (faults {@code zk-rolling-restart}, {@code zk-quorum-loss},
 * which run the job's offsets on an ensemble of {@code chaos.ensemble} nodes of their own while
 * Kafka keeps its own ZooKeeper): no batch delayed by more than one ZooKeeper timeout and a
 * margin; every ZooKeeper session of the job told the same server version (none assumed); the
 * group's ownership back within 5 s of ZooKeeper answering. Expectations (reported; they fail
 * the run only with {@code strict=true}): a restart after a SIGKILL processes again within 10 s
 * of the dead driver's session expiring, and {@code ids/} then holds one consumer (the dead
 * one's node went in the take-over); the checkpoint-recovered instance holds the group's
 * ownership ({@code /consumers/<group>/ids} not empty while it runs); batches not delayed by
 * more than one ZooKeeper timeout and a margin in other ZooKeeper faults.
 *
 * <p>Settings are system properties {@code chaos.*} (see {@code gradle/chaos.gradle}).
 */
public final class Chaos {
    private static final String TOPIC = "chaos";
    private static final String GROUP = "chaos-job";
    private static final int PARTITIONS = 6;
    /** The keeper's default ZooKeeper session timeout, which the job keeps. */
    private static final long SESSION_TIMEOUT_MS = 30_000;
    /** The keeper's default ZooKeeper timeout, which the job keeps: the most a commit waits. */
    private static final long ZOOKEEPER_TIMEOUT_MS = 10_000;
    /** A batch's delay (end minus batch time) allowed beyond one ZooKeeper timeout. */
    private static final long DELAY_MARGIN_MS = 5_000;
    /** How soon the group's ownership is expected back once ZooKeeper answers again. */
    private static final long OWNERSHIP_BACK_MS = 5_000;
    private static final List<String> FAULT_KINDS = Arrays.asList("zk-stop", "zk-sigstop", "zk-rolling-restart",
            "zk-quorum-loss", "broker-stop", "driver-sigkill", "driver-sigterm", "purge", "checkpoint-recovery");
    private static final List<String> ENSEMBLE_FAULTS = Arrays.asList("zk-rolling-restart", "zk-quorum-loss");
    private static final long READY_TIMEOUT_MS = 240_000;

    // Settings.
    private final double minutes = Double.parseDouble(prop("chaos.minutes", "25"));
    private final long faultEveryMs = (long) (Double.parseDouble(prop("chaos.faultEverySeconds", "120")) * 1000);
    private final List<String> rotation = Arrays.asList(prop("chaos.faults", "zk-stop,driver-sigkill,zk-sigstop,purge,"
            + "broker-stop,driver-sigterm,checkpoint-recovery,zk-rolling-restart,zk-quorum-loss").split(","));
    private final boolean ensembleFaults = !Collections.disjoint(rotation, ENSEMBLE_FAULTS);
    /** Nodes of the offsets' own ZooKeeper ensemble; 0: the offsets live in Kafka's ZooKeeper. */
    private final int ensembleNodes = Integer.parseInt(prop("chaos.ensemble", ensembleFaults ? "3" : "0"));
    /** When above 0: exactly this many faults, whatever the minutes (the slice). */
    private final int faultCount = Integer.parseInt(prop("chaos.faultCount", "0"));
    private final long outageMs = (long) (Double.parseDouble(prop("chaos.outageSeconds", "20")) * 1000);
    private final int rate = Integer.parseInt(prop("chaos.rate", "200"));
    private final String strategy = prop("chaos.strategy", "assign");
    private final boolean strict = Boolean.parseBoolean(prop("chaos.strict", "false"));
    private final Path out = Paths.get(prop("chaos.out", "build/chaos")).toAbsolutePath();
    private final Path clusterDir = out.resolve("cluster");
    private final String clusterScript = requiredProp("chaos.clusterScript");
    private final String ensembleScript = Paths.get(clusterScript).resolveSibling("ensemble.sh").toString();
    private final Path ensembleDir = out.resolve("ensemble");
    private final List<String> driverJvmArgs = Arrays.asList(prop("chaos.driverJvmArgs", "").trim().split("\\s+"));

    private final long t0 = System.currentTimeMillis();
    private Cluster cluster;
    private String zookeeper;
    private String bootstrap;

    // The driver, as the supervisor runs it.
    private final Object driverLock = new Object();
    private Process driver;
    private int instance;
    private String checkpointDir; // null: the plain job
    private boolean stopping; // a deliberate stop: the exit is no failure
    private final List<Fault> faults = Collections.synchronizedList(new ArrayList<>());
    private volatile Fault current;
    private final List<String> unexpectedExits = Collections.synchronizedList(new ArrayList<>());

    // The producer.
    private final AtomicLong acked = new AtomicLong();
    private final AtomicLong sendErrors = new AtomicLong();
    private final AtomicBoolean producing = new AtomicBoolean(true);

    // The sampler of stored offsets and ownership.
    private final long[] lastStored = new long[PARTITIONS];
    private final List<String> backwards = Collections.synchronizedList(new ArrayList<>());
    private final AtomicLong samples = new AtomicLong();
    private volatile int idsChildren = -1; // -1: ZooKeeper not reachable at the last sample
    /** Every sample of the group's ids: {millis, children (-1: ZooKeeper not reachable)}. */
    private final List<long[]> idsTimeline = Collections.synchronizedList(new ArrayList<>());

    // Purges: per partition, the [stored, earliest) ranges dropped while the job was stopped.
    private final List<long[]> purged = Collections.synchronizedList(new ArrayList<>());
    private long purgedExpected;

    /** One fault and what the supervisor saw of it. */
    private static final class Fault {
        final int number;
        final String kind;
        final long startMs;
        long endMs;
        final List<Integer> instancesStarted = new ArrayList<>();
        int unexpectedExits;
        String restart = "-"; // kill to first batch, with load and start times
        long restartMs = -1;
        String lost = "-";
        String ownership = "-";
        Boolean ownershipHeld;
        String note = "";
        long answeredMs = -1; // when ZooKeeper served again (quorum loss)
        Boolean oneConsumer; // ids/ after a SIGKILL restart
        String delays = "";
        long maxDelayMs = -1;
        Long ownershipBackMs; // see ownershipBack

        Fault(int number, String kind, long startMs) {
            this.number = number;
            this.kind = kind;
            this.startMs = startMs;
        }
    }

    public static void main(String[] args) throws Exception {
        int code;
        Chaos chaos = new Chaos();
        try {
            code = chaos.run();
        } catch (Throwable t) {
            t.printStackTrace();
            code = 2;
        }
        System.exit(code);
    }

    private static String prop(String key, String fallback) {
        String value = System.getProperty(key);
        return value == null || value.isEmpty() ? fallback : value;
    }

    private static String requiredProp(String key) {
        String value = System.getProperty(key);
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("system property " + key + " is required");
        }
        return value;
    }

    private void log(String message) {
        System.out.printf(Locale.ROOT, "[chaos %7.1fs] %s%n", (System.currentTimeMillis() - t0) / 1000.0, message);
        System.out.flush();
    }

    private int run() throws Exception {
        for (String kind : rotation) {
            if (!FAULT_KINDS.contains(kind)) {
                throw new IllegalArgumentException("unknown fault '" + kind + "' in chaos.faults; allowed: "
                        + String.join(", ", FAULT_KINDS));
            }
        }
        if (ensembleFaults && ensembleNodes < 3) {
            throw new IllegalArgumentException("chaos.ensemble=" + ensembleNodes + ": the faults "
                    + ENSEMBLE_FAULTS + " need an ensemble of 3 to 7 nodes");
        }
        deleteRecursively(out.toFile());
        Files.createDirectories(out);
        log(String.format(Locale.ROOT, "%s, a fault every %d s from %s, %d records/s over %d partitions, %s",
                faultCount > 0 ? faultCount + " faults" : minutes + " min", faultEveryMs / 1000, rotation, rate,
                PARTITIONS, strategy) + (ensembleNodes > 0 ? ", offsets on a ZooKeeper ensemble of "
                + ensembleNodes : ""));
        try {
            cluster("start");
            if (ensembleNodes > 0) {
                exec("bash", ensembleScript, "start", ensembleDir.toString(), Integer.toString(ensembleNodes));
            }
            return soak();
        } finally {
            synchronized (driverLock) {
                stopping = true;
                if (driver != null) {
                    driver.destroyForcibly();
                }
            }
            if (ensembleNodes > 0) {
                exec("bash", ensembleScript, "stop", ensembleDir.toString());
            }
            cluster("stop");
        }
    }

    private int soak() throws Exception {
        ClusterEnv env = ClusterEnv.load(clusterDir.resolve("cluster.env"));
        zookeeper = ensembleNodes > 0 ? ClusterEnv.load(ensembleDir.resolve("ensemble.env")).zookeeper()
                : env.zookeeper();
        bootstrap = env.bootstrap();
        cluster = new Cluster(zookeeper, bootstrap);
        try {
            cluster.createTopic(TOPIC, PARTITIONS);
            Arrays.fill(lastStored, -1);

            Thread producer = daemon("producer", this::produce);
            Thread sampler = daemon("sampler", this::sample);
            Thread supervisor = daemon("supervisor", this::supervise);
            startDriver();
            String aborted = null;
            try {
                awaitBatchAfter(System.currentTimeMillis(), READY_TIMEOUT_MS, "the first batch");
                log("the job processes batches");
                // The minutes are the job's time under faults, from its first batch on.
                faultLoop(System.currentTimeMillis() + (long) (minutes * 60_000));
            } catch (IllegalStateException e) {
                aborted = e.getMessage();
                log("soak aborted: " + aborted);
            }
            current = null;

            producing.set(false);
            producer.join(120_000);
            log("producer stopped: " + acked.get() + " records acknowledged, " + sendErrors.get() + " send errors");
            Map<Integer, Long> ends = new HashMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                ends.put(p, cluster.latest(TOPIC, p));
            }
            boolean drained = awaitDrained(ends, aborted == null ? 180_000 : 30_000);
            log(drained ? "the stored offsets reached the log ends" : "the stored offsets did NOT reach the log ends");
            stopDriver(false);
            supervisor.interrupt();
            sampler.interrupt();
            sampler.join(30_000);
            return verify(ends, drained, aborted);
        } finally {
            cluster.close();
        }
    }

    /** Faults in rotation, one every faultEvery (once the job processes again), until the end. */
    private void faultLoop(long end) throws Exception {
        int next = 0;
        long lastFault = System.currentTimeMillis();
        while (true) {
            long at = Math.max(lastFault + faultEveryMs, System.currentTimeMillis() + 5_000);
            if (faultCount > 0 ? faults.size() >= faultCount : at + 30_000 > end) {
                return;
            }
            sleepUntil(at);
            String kind = rotation.get(next++ % rotation.size());
            Fault fault = new Fault(faults.size() + 1, kind, System.currentTimeMillis());
            faults.add(fault);
            current = fault;
            lastFault = fault.startMs;
            log("fault " + fault.number + ": " + kind);
            inject(fault);
            fault.endMs = System.currentTimeMillis();
            awaitBatchAfter(fault.endMs, READY_TIMEOUT_MS, "a batch after fault " + fault.number);
            log("fault " + fault.number + " (" + kind + ") over; the job processes batches again");
        }
    }

    // ---- faults --------------------------------------------------------------------------------

    private void inject(Fault fault) throws Exception {
        switch (fault.kind) {
            case "zk-stop":
                if (ensembleNodes > 0) {
                    onNodes("stop-node", allNodes());
                    sleep(outageMs);
                    onNodes("start-node", allNodes()); // together: a node serves once a quorum runs
                } else {
                    cluster("stop-zk");
                    sleep(outageMs);
                    cluster("start-zk");
                }
                fault.answeredMs = System.currentTimeMillis();
                break;
            case "zk-sigstop":
                if (ensembleNodes > 0) {
                    onNodes("freeze", allNodes());
                    sleep(outageMs);
                    onNodes("thaw", allNodes());
                } else {
                    String pid = new String(Files.readAllBytes(clusterDir.resolve("zk.pid")), StandardCharsets.US_ASCII)
                            .trim();
                    exec("kill", "-STOP", pid);
                    sleep(outageMs);
                    exec("kill", "-CONT", pid);
                }
                fault.answeredMs = System.currentTimeMillis();
                break;
            case "zk-rolling-restart":
                // As an operator restarts an ensemble: one node at a time, each back before the next.
                for (int node = 1; node <= ensembleNodes; node++) {
                    onNodes("stop-node", Collections.singletonList(node));
                    sleep(5_000);
                    onNodes("start-node", Collections.singletonList(node));
                    log("ZooKeeper node " + node + " of " + ensembleNodes + " restarted");
                    sleep(10_000);
                }
                break;
            case "zk-quorum-loss": {
                // A majority down: the node left up does not serve either.
                List<Integer> down = new ArrayList<>();
                for (int node = ensembleNodes / 2 + 1; node <= ensembleNodes; node++) {
                    down.add(node);
                }
                onNodes("stop-node", down);
                log("ZooKeeper nodes " + down + " of " + ensembleNodes + " stopped: no quorum for "
                        + outageMs / 1000 + " s");
                sleep(outageMs);
                onNodes("start-node", down);
                fault.answeredMs = System.currentTimeMillis();
                log("ZooKeeper serves again (quorum back)");
                break;
            }
            case "broker-stop":
                cluster("stop-kafka");
                sleep(outageMs);
                cluster("start-kafka");
                break;
            case "driver-sigkill": {
                long killed = stopDriver(true);
                int started = startDriver();
                fault.instancesStarted.add(started);
                timeRestart(fault, started, killed);
                countConsumersAfterRestart(fault, started);
                break;
            }
            case "driver-sigterm": {
                long stopped = stopDriver(false);
                int started = startDriver();
                fault.instancesStarted.add(started);
                timeRestart(fault, started, stopped);
                break;
            }
            case "purge":
                purge(fault);
                break;
            case "checkpoint-recovery":
                checkpointRecovery(fault);
                break;
            default:
                throw new IllegalArgumentException(fault.kind);
        }
    }

    /** Stopped (SIGTERM), records produced meanwhile, then everything up to the log end purged. */
    private void purge(Fault fault) throws Exception {
        stopDriver(false);
        sleep(5_000);
        long expected = 0;
        StringBuilder ranges = new StringBuilder();
        for (int p = 0; p < PARTITIONS; p++) {
            String stored = readZnode(offsetPath(p));
            long from = stored == null ? 0 : Long.parseLong(stored.trim());
            long to = cluster.latest(TOPIC, p);
            cluster.deleteRecords(TOPIC, p, to);
            if (to > from) {
                purged.add(new long[] {p, from, to});
                expected += to - from;
            }
            ranges.append(p).append(":[").append(from).append(',').append(to).append(") ");
        }
        purgedExpected += expected;
        log("purged " + expected + " unprocessed records: " + ranges);
        int started = startDriver();
        fault.instancesStarted.add(started);
        Map<String, String> load = awaitEvent(started, "LOAD_END", READY_TIMEOUT_MS);
        long reported = load == null ? -1 : Long.parseLong(load.get("lost"));
        fault.lost = reported + "/" + expected;
        if (reported != expected) {
            fault.note += "load reported " + reported + " records lost, " + expected + " were purged; ";
        }
        awaitBatchAfter(fault.startMs, READY_TIMEOUT_MS, "a batch after the purge");
    }

    /**
     * The job runs checkpointed (getOrCreate, the keeper inside the create function), is
     * SIGKILLed and comes back from its checkpoint: the create function, and so the load, does
     * not run again. Watches /consumers/<group>/ids while the recovered instance runs, then puts
     * the plain job back.
     */
    private void checkpointRecovery(Fault fault) throws Exception {
        stopDriver(false);
        String dir = out.resolve("checkpoint-" + fault.number).toString();
        int created = startDriver(dir);
        fault.instancesStarted.add(created);
        awaitEvent(created, "STARTED", READY_TIMEOUT_MS);
        awaitBatchAfter(System.currentTimeMillis(), READY_TIMEOUT_MS, "a batch of the checkpointed job");
        sleep(10_000); // some checkpoints written
        long killed = stopDriver(true);
        int recovered = startDriver(dir);
        fault.instancesStarted.add(recovered);
        timeRestart(fault, recovered, killed);
        boolean loaded = awaitEvent(recovered, "LOAD_END", 1) != null;
        // Ownership while the recovered instance runs, after the dead instance's session is gone.
        sleepUntil(killed + SESSION_TIMEOUT_MS + 5_000);
        // The sampler's last value may predate the recovered instance's first commit (a BATCH
        // event follows it): look only at samples taken from now on.
        long sampledBefore = samples.get();
        long sampleDeadline = System.currentTimeMillis() + 30_000;
        while (samples.get() < sampledBefore + 2 && System.currentTimeMillis() < sampleDeadline) {
            sleep(100);
        }
        int held = 0;
        int seen = 0;
        for (int i = 0; i < 20; i++) {
            int ids = idsChildren;
            if (ids >= 0) {
                seen++;
                if (ids > 0) {
                    held++;
                }
            }
            sleep(500);
        }
        fault.ownershipHeld = seen > 0 && held == seen;
        fault.ownership = "ids non-empty in " + held + "/" + seen + " samples" + (loaded ? "" : ", no load ran");
        log("checkpoint-recovered instance " + recovered + ": " + fault.ownership);
        stopDriver(false);
        checkpointDir = null;
        fault.instancesStarted.add(startDriver());
    }

    /**
     * After a same-host SIGKILL restart, {@code ids/} should hold the new instance alone: the dead
     * driver's node goes in the take-over, not when its session expires. Samples 3 to 8 s after
     * the new instance's first batch.
     */
    private void countConsumersAfterRestart(Fault fault, int started) throws Exception {
        Long first = eventTimes(started).get("BATCH");
        if (first == null) {
            fault.oneConsumer = false;
            return;
        }
        sleepUntil(first + 8_500);
        List<Long> counts = new ArrayList<>();
        synchronized (idsTimeline) {
            for (long[] sample : idsTimeline) {
                if (sample[0] >= first + 3_000 && sample[0] <= first + 8_000 && sample[1] >= 0) {
                    counts.add(sample[1]);
                }
            }
        }
        fault.oneConsumer = !counts.isEmpty() && counts.stream().allMatch(c -> c == 1);
        fault.ownership = "ids/ 3-8 s after the first batch: " + counts;
        log("instance " + started + ": " + fault.ownership);
    }

    private List<Integer> allNodes() {
        List<Integer> nodes = new ArrayList<>();
        for (int node = 1; node <= ensembleNodes; node++) {
            nodes.add(node);
        }
        return nodes;
    }

    /** ensemble.sh COMMAND on each node, all at once; returns when every one has ended. */
    private void onNodes(String command, List<Integer> nodes) throws Exception {
        List<Process> running = new ArrayList<>();
        for (int node : nodes) {
            running.add(new ProcessBuilder("bash", ensembleScript, command, ensembleDir.toString(),
                    Integer.toString(node)).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(out.resolve("cluster.log").toFile())).start());
        }
        for (int i = 0; i < running.size(); i++) {
            Process p = running.get(i);
            if (!p.waitFor(300, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("ensemble.sh " + command + " " + nodes.get(i) + " did not end in 300 s");
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException("ensemble.sh " + command + " " + nodes.get(i) + " failed with "
                        + p.exitValue() + "; see " + out.resolve("cluster.log"));
            }
        }
    }

    /** Restart time: from the kill or stop to the first batch of the new instance. */
    private void timeRestart(Fault fault, int started, long stoppedAt) throws Exception {
        Map<String, String> batch = awaitEvent(started, "BATCH", READY_TIMEOUT_MS);
        Map<String, Long> times = eventTimes(started);
        if (batch == null) {
            fault.note += "instance " + started + " processed no batch in " + READY_TIMEOUT_MS / 1000 + " s; ";
            return;
        }
        long first = times.get("BATCH");
        fault.restartMs = first - stoppedAt;
        fault.restart = String.format(Locale.ROOT, "%.1f s (load %s, start %s)", fault.restartMs / 1000.0,
                span(times, "LOAD_BEGIN", "LOAD_END"), span(times, "START_BEGIN", "STARTED"));
        log("instance " + started + " processes again " + fault.restart + " after the stop");
    }

    private static String span(Map<String, Long> times, String from, String to) {
        Long a = times.get(from);
        Long b = times.get(to);
        return a == null || b == null ? "-" : String.format(Locale.ROOT, "%.1f s", (b - a) / 1000.0);
    }

    // ---- the driver and its supervisor ---------------------------------------------------------

    private int startDriver() throws IOException {
        return startDriver(null);
    }

    private int startDriver(String checkpoint) throws IOException {
        synchronized (driverLock) {
            checkpointDir = checkpoint;
            return launch();
        }
    }

    /** Starts instance n+1 with the current settings; the caller holds driverLock. */
    private int launch() throws IOException {
        int n = ++instance;
        List<String> command = new ArrayList<>();
        command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        for (String arg : driverJvmArgs) {
            if (!arg.isEmpty()) {
                command.add(arg);
            }
        }
        command.add("-Doffsetkeeper.log.level=info"); // the engine's waits, sessions and recoveries
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(ChaosJob.class.getName());
        command.addAll(Arrays.asList(zookeeper, bootstrap, TOPIC, GROUP, sinkFile(n).toString(),
                eventsFile(n).toString(), strategy));
        if (checkpointDir != null) {
            command.add(checkpointDir);
        }
        driver = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(out.resolve("driver-" + n + ".log").toFile())
                .start();
        stopping = false;
        log("driver instance " + n + " started" + (checkpointDir == null ? "" : " (checkpoint " + checkpointDir + ")"));
        return n;
    }

    /** SIGKILL or SIGTERM (60 s grace, then SIGKILL); returns when the signal was sent. */
    private long stopDriver(boolean kill) throws InterruptedException {
        Process p;
        synchronized (driverLock) {
            stopping = true;
            p = driver;
        }
        long at = System.currentTimeMillis();
        if (kill) {
            p.destroyForcibly();
        } else {
            p.destroy();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                log("driver ignored SIGTERM for 60 s; SIGKILL");
                p.destroyForcibly();
            }
        }
        p.waitFor();
        log("driver instance " + instance + (kill ? " SIGKILLed" : " stopped by SIGTERM") + ", exit " + p.exitValue());
        return at;
    }

    /** The restart policy: a driver that exits on its own is started again after 2 s. */
    private void supervise() {
        try {
            while (true) {
                Process p;
                synchronized (driverLock) {
                    p = driver;
                }
                if (p != null && p.waitFor(500, TimeUnit.MILLISECONDS)) {
                    synchronized (driverLock) {
                        if (p == driver && !stopping) {
                            Fault f = current;
                            String what = "instance " + instance + " exited with " + p.exitValue() + " during "
                                    + (f == null ? "no fault" : "fault " + f.number + " (" + f.kind + ")");
                            unexpectedExits.add(what);
                            if (f != null) {
                                f.unexpectedExits++;
                            }
                            log(what + "; restarting it in 2 s");
                            driverLock.wait(2_000);
                            if (p != driver || stopping) {
                                continue; // the soak started or stopped a driver meanwhile
                            }
                            int n = launch();
                            if (f != null) {
                                f.instancesStarted.add(n);
                            }
                        }
                    }
                } else if (p == null) {
                    Thread.sleep(500);
                }
            }
        } catch (InterruptedException e) {
            // the soak is over
        } catch (IOException e) {
            log("cannot restart the driver: " + e);
        }
    }

    private Path sinkFile(int n) {
        return out.resolve("sink-" + n + ".txt");
    }

    private Path eventsFile(int n) {
        return out.resolve("events-" + n + ".txt");
    }

    /** Each event's first time, and the detail of the last one of each name. */
    private Map<String, Long> eventTimes(int n) throws IOException {
        Map<String, Long> times = new HashMap<>();
        for (String line : readLines(eventsFile(n))) {
            String[] parts = line.split(" ", 3);
            if (parts.length >= 2) {
                times.putIfAbsent(parts[1], Long.parseLong(parts[0]));
            }
        }
        return times;
    }

    /** The key=value details of the instance's first event of that name, or null after the timeout. */
    private Map<String, String> awaitEvent(int n, String name, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        do {
            for (String line : readLines(eventsFile(n))) {
                String[] parts = line.split(" ", 3);
                if (parts.length >= 2 && parts[1].equals(name)) {
                    Map<String, String> detail = new HashMap<>();
                    if (parts.length == 3) {
                        for (String kv : parts[2].split(" ")) {
                            int eq = kv.indexOf('=');
                            if (eq > 0) {
                                detail.put(kv.substring(0, eq), kv.substring(eq + 1));
                            }
                        }
                    }
                    return detail;
                }
            }
            Thread.sleep(200);
        } while (System.currentTimeMillis() < deadline);
        return null;
    }

    /** Waits for a batch with records committed after the time, by whatever instance runs then. */
    private void awaitBatchAfter(long since, long timeoutMs, String what) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            int n;
            synchronized (driverLock) {
                n = instance;
            }
            for (String line : readLines(eventsFile(n))) {
                String[] parts = line.split(" ", 3);
                if (parts.length >= 2 && parts[1].equals("BATCH") && Long.parseLong(parts[0]) > since) {
                    return;
                }
            }
            Thread.sleep(500);
        }
        throw new IllegalStateException("no " + what + " within " + timeoutMs / 1000 + " s; see " + out);
    }

    private boolean awaitDrained(Map<Integer, Long> ends, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            boolean all = true;
            for (int p = 0; p < PARTITIONS && all; p++) {
                String stored = readZnode(offsetPath(p));
                all = stored != null && Long.parseLong(stored.trim()) >= ends.get(p);
            }
            if (all) {
                return true;
            }
            Thread.sleep(1_000);
        }
        return false;
    }

    // ---- producer and sampler ------------------------------------------------------------------

    /** `rate` records a second, round robin over the partitions; value: a sequence number. */
    private void produce() {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        // Broker and ZooKeeper outages: records wait in the producer rather than fail.
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "600000");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "600000");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            long start = System.nanoTime();
            long seq = 0;
            while (producing.get()) {
                long due = start + seq * 1_000_000_000L / rate;
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
                producer.send(new ProducerRecord<>(TOPIC, (int) (seq % PARTITIONS), null, Long.toString(seq)),
                        (meta, error) -> {
                            if (error == null) {
                                acked.incrementAndGet();
                            } else {
                                sendErrors.incrementAndGet();
                            }
                        });
                seq++;
            }
            producer.flush();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private ZooKeeper samplerZk;

    /** Every 500 ms: each stored offset (never below the last seen) and the group's ids. */
    private void sample() {
        try {
            samplerZk = connect();
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    if (!samplerZk.getState().isAlive()) {
                        samplerZk.close();
                        samplerZk = connect();
                    }
                    for (int p = 0; p < PARTITIONS; p++) {
                        String value = new String(samplerZk.getData(offsetPath(p), false, null), StandardCharsets.US_ASCII);
                        long stored = Long.parseLong(value.trim());
                        synchronized (lastStored) {
                            if (stored < lastStored[p]) {
                                String what = "partition " + p + ": " + lastStored[p] + " -> " + stored + " at "
                                        + (System.currentTimeMillis() - t0) / 1000 + " s";
                                backwards.add(what);
                                log("STORED OFFSET MOVED BACKWARDS: " + what);
                            }
                            lastStored[p] = stored;
                        }
                    }
                    idsChildren = samplerZk.getChildren("/consumers/" + GROUP + "/ids", false).size();
                    samples.incrementAndGet();
                } catch (KeeperException.NoNodeException e) {
                    idsChildren = 0; // nothing committed yet, or no ids folder
                } catch (KeeperException | IllegalStateException e) {
                    idsChildren = -1; // ZooKeeper away: nothing to sample
                }
                idsTimeline.add(new long[] {System.currentTimeMillis(), idsChildren});
                Thread.sleep(500);
            }
        } catch (InterruptedException e) {
            // over
        } finally {
            if (samplerZk != null) {
                try {
                    samplerZk.close();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    private ZooKeeper connect() throws InterruptedException {
        try {
            CountDownLatch connected = new CountDownLatch(1);
            ZooKeeper zk = new ZooKeeper(zookeeper, 30_000, event -> {
                if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            });
            if (!connected.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("ZooKeeper at " + zookeeper + " did not answer in 60 s");
            }
            return zk;
        } catch (IOException e) {
            throw new IllegalStateException("cannot connect to ZooKeeper at " + zookeeper, e);
        }
    }

    private ZooKeeper readerZk;

    /**
     * A stored offset, or null when none is stored; retried for up to 60 s while ZooKeeper does
     * not answer (on a new session when the last one expired).
     */
    private synchronized String readZnode(String path) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            try {
                if (readerZk == null || !readerZk.getState().isAlive()) {
                    readerZk = connect();
                }
                return new String(readerZk.getData(path, false, null), StandardCharsets.US_ASCII);
            } catch (KeeperException.NoNodeException e) {
                return null;
            } catch (KeeperException | IllegalStateException e) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("cannot read " + path + " from ZooKeeper", e);
                }
                Thread.sleep(1_000);
            }
        }
    }

    private static String offsetPath(int partition) {
        return "/consumers/" + GROUP + "/offsets/" + TOPIC + "/" + partition;
    }

    // ---- verification --------------------------------------------------------------------------

    private int verify(Map<Integer, Long> ends, boolean drained, String aborted) throws IOException, InterruptedException {
        BitSet[] seen = new BitSet[PARTITIONS];
        for (int p = 0; p < PARTITIONS; p++) {
            seen[p] = new BitSet();
        }
        long lines = 0;
        long torn = 0;
        long lostReported = 0;
        for (int n = 1; n <= instance; n++) {
            for (String line : readLines(sinkFile(n))) {
                String[] parts = line.split(" ");
                try {
                    if (parts.length != 2) {
                        throw new NumberFormatException(line);
                    }
                    seen[Integer.parseInt(parts[0])].set(Math.toIntExact(Long.parseLong(parts[1])));
                    lines++;
                } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
                    torn++; // the tail of a batch cut by a kill: not committed, so processed again
                }
            }
            for (String line : readLines(eventsFile(n))) {
                String[] parts = line.split(" ");
                if (parts.length >= 3 && parts[1].equals("LOAD_END")) {
                    lostReported += Long.parseLong(parts[2].substring("lost=".length()));
                }
            }
        }
        long logTotal = 0;
        long distinct = 0;
        long missing = 0;
        long purgedUnprocessed = 0;
        List<String> missingExamples = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            long end = ends.get(p);
            logTotal += end;
            distinct += seen[p].cardinality();
            for (int o = seen[p].nextClearBit(0); o < end; o = seen[p].nextClearBit(o + 1)) {
                if (isPurged(p, o)) {
                    purgedUnprocessed++;
                } else {
                    missing++;
                    if (missingExamples.size() < 10) {
                        missingExamples.add(p + "@" + o);
                    }
                }
            }
        }
        long duplicates = lines - distinct;
        List<long[]> batches = batchEnds();
        writeBatchTimeline(batches);
        for (Fault f : faults) {
            if (f.kind.startsWith("zk-")) {
                f.delays = delaySummary(f, batches);
                f.ownershipBackMs = ownershipBack(f);
                Long back = f.ownershipBackMs;
                f.ownership = back == null ? (f.answeredMs < 0 ? "-" : "ownership not back in 60 s")
                        : String.format(Locale.ROOT, "ownership back %.1f s after ZooKeeper answered", back / 1000.0);
            }
        }
        SessionVersions versions = sessionVersions();
        long deferredCommits = 0;
        for (int n = 1; n <= instance; n++) {
            for (String line : readLines(eventsFile(n))) {
                if (line.contains(" COMMIT_DEFERRED ")) {
                    deferredCommits++;
                }
            }
        }

        StringBuilder t = new StringBuilder();
        t.append(String.format(Locale.ROOT, "%nChaos soak: %.1f min, %d faults, %s, %d records/s over %d partitions, "
                + "driver instances %d%n", (System.currentTimeMillis() - t0) / 60_000.0, faults.size(), strategy, rate,
                PARTITIONS, instance));
        t.append(String.format(Locale.ROOT, "%-3s %-20s %7s %9s %6s %-36s %-11s %s%n", "#", "fault", "at", "instances",
                "exits", "restart (stop -> first batch)", "lost/purged", "ownership / notes"));
        for (Fault f : faults) {
            t.append(String.format(Locale.ROOT, "%-3d %-20s %6.0fs %9s %6d %-36s %-11s %s%n", f.number, f.kind,
                    (f.startMs - t0) / 1000.0, f.instancesStarted.isEmpty() ? "-" : f.instancesStarted.toString(),
                    f.unexpectedExits, f.restart, f.lost, (f.ownership.equals("-") ? "" : f.ownership + " ") + f.note));
            if (!f.delays.isEmpty()) {
                t.append("    batch delay (end - batch time): ").append(f.delays).append('\n');
            }
        }
        t.append(String.format(Locale.ROOT, "records produced (acknowledged)   %,d (send errors %d)%n", acked.get(),
                sendErrors.get()));
        t.append(String.format(Locale.ROOT, "records in the log (offsets)      %,d%n", logTotal));
        t.append(String.format(Locale.ROOT, "records processed (distinct)      %,d%n", distinct));
        t.append(String.format(Locale.ROOT, "duplicates (processed again)      %,d%n", duplicates));
        t.append(String.format(Locale.ROOT, "purged while stopped              %,d (never processed: %,d)%n",
                purgedExpected, purgedUnprocessed));
        t.append(String.format(Locale.ROOT, "records lost reported by loads    %,d%n", lostReported));
        t.append(String.format(Locale.ROOT, "missing (not processed, not purged) %,d %s%n", missing,
                missingExamples.isEmpty() ? "" : missingExamples));
        t.append(String.format(Locale.ROOT, "stored offsets moved backwards    %d times in %,d samples %s%n",
                backwards.size(), samples.get(), backwards.isEmpty() ? "" : backwards));
        t.append(String.format(Locale.ROOT, "commits deferred (ZooKeeper away) %,d%n", deferredCommits));
        t.append(String.format(Locale.ROOT, "unexpected driver exits           %d %s%n", unexpectedExits.size(),
                unexpectedExits.isEmpty() ? "" : unexpectedExits));
        t.append(String.format(Locale.ROOT, "ZooKeeper sessions of the job     %d; server versions told %s; assumed %d; "
                + "kept from an earlier session %d%n", versions.sessions, versions.told, versions.assumed, versions.kept));

        List<String> failed = new ArrayList<>();
        check(t, failed, true, aborted == null, "the soak ran to its end" + (aborted == null ? "" : ": " + aborted));
        check(t, failed, true, missing == 0, "no record missing except those purged");
        check(t, failed, true, lostReported == purgedExpected, "records lost reported = records purged ("
                + lostReported + " = " + purgedExpected + ")");
        check(t, failed, true, backwards.isEmpty() && samples.get() > 0, "stored offsets never moved backwards");
        check(t, failed, true, drained, "stored offsets reached the log ends after the drain");
        check(t, failed, true, acked.get() <= logTotal && sendErrors.get() == 0, "every acknowledged record is in the log");
        check(t, failed, true, torn <= instance, "sink lines readable (" + torn + " torn by kills)");
        long faultExits = 0;
        for (Fault f : faults) {
            if (f.kind.startsWith("zk-") || f.kind.equals("broker-stop")) {
                faultExits += f.unexpectedExits;
            }
        }
        check(t, failed, true, faultExits == 0, "the job survived every ZooKeeper and broker fault without a restart");
        checkFaults(t, failed, versions);
        System.out.print(t);
        Files.write(out.resolve("table.txt"), t.toString().getBytes(StandardCharsets.UTF_8));
        if (failed.isEmpty()) {
            log("all invariants hold; table in " + out.resolve("table.txt"));
            return 0;
        }
        log("FAILED: " + failed);
        return 1;
    }

    /** The checks of each fault, and of the job's ZooKeeper sessions across them. */
    private void checkFaults(StringBuilder t, List<String> failed, SessionVersions versions) {
        for (Fault f : faults) {
            if (f.kind.equals("driver-sigkill")) {
                long limit = SESSION_TIMEOUT_MS + 10_000;
                check(t, failed, strict, f.restartMs >= 0 && f.restartMs <= limit, "fault " + f.number
                        + ": processing again within 10 s of the dead session expiring (" + f.restartMs / 1000.0
                        + " s <= " + limit / 1000 + " s)");
            }
            if (f.kind.equals("driver-sigkill") && f.oneConsumer != null) {
                check(t, failed, strict, f.oneConsumer, "fault " + f.number
                        + ": ids/ holds one consumer 3-8 s after the restarted instance's first batch");
            }
            if (f.kind.startsWith("zk-")) {
                boolean hard = ENSEMBLE_FAULTS.contains(f.kind) || strict;
                long limit = ZOOKEEPER_TIMEOUT_MS + DELAY_MARGIN_MS;
                check(t, failed, hard, f.maxDelayMs >= 0 && f.maxDelayMs <= limit, String.format(Locale.ROOT,
                        "fault %d: no batch delayed more than one ZooKeeper timeout + %d s (worst %.1f s <= %d s)",
                        f.number, DELAY_MARGIN_MS / 1000, f.maxDelayMs / 1000.0, limit / 1000));
                if (f.answeredMs >= 0) {
                    Long back = f.ownershipBackMs;
                    check(t, failed, hard, back != null && back <= OWNERSHIP_BACK_MS, "fault " + f.number
                            + ": ownership back within " + OWNERSHIP_BACK_MS / 1000 + " s of ZooKeeper answering ("
                            + (back == null ? "not in 60 s" : back / 1000.0 + " s") + ")");
                }
            }
            if (f.kind.equals("checkpoint-recovery")) {
                check(t, failed, strict, Boolean.TRUE.equals(f.ownershipHeld), "fault " + f.number
                        + ": the checkpoint-recovered instance holds ownership");
            }
        }
        if (faults.stream().anyMatch(f -> f.kind.startsWith("zk-"))) {
            check(t, failed, ensembleFaults || strict, versions.sessions > 0 && versions.told.size() == 1
                    && !versions.told.contains("unknown") && versions.assumed == 0,
                    "every ZooKeeper session of the job told one server version " + versions.told
                    + ", none assumed, across the ZooKeeper faults");
        }
    }

    /** Every batch that ended with records or a deferred commit: {batch time, end, instance}. */
    private List<long[]> batchEnds() throws IOException {
        List<long[]> batches = new ArrayList<>();
        for (int n = 1; n <= instance; n++) {
            for (String line : readLines(eventsFile(n))) {
                String[] parts = line.split(" ");
                if (line.endsWith("<torn>") || parts.length < 3
                        || !(parts[1].equals("BATCH") || parts[1].equals("COMMIT_DEFERRED"))) {
                    continue;
                }
                for (String kv : parts) {
                    if (kv.startsWith("batch=")) {
                        batches.add(new long[] {Long.parseLong(kv.substring("batch=".length())),
                            Long.parseLong(parts[0]), n});
                    }
                }
            }
        }
        batches.sort((a, b) -> Long.compare(a[0], b[0]));
        return batches;
    }

    /** build/chaos.../batches.txt: each batch's time, delay and instance, and the faults between. */
    private void writeBatchTimeline(List<long[]> batches) throws IOException {
        StringBuilder text = new StringBuilder("# batch time (s from start)  delay (s)  instance  [event]\n");
        int nextFault = 0;
        for (long[] b : batches) {
            while (nextFault < faults.size() && faults.get(nextFault).startMs <= b[0]) {
                Fault f = faults.get(nextFault++);
                text.append(String.format(Locale.ROOT, "%8.1f  fault %d %s (%.1f s)%n", (f.startMs - t0) / 1000.0,
                        f.number, f.kind, (f.endMs - f.startMs) / 1000.0));
            }
            text.append(String.format(Locale.ROOT, "%8.1f  %6.2f  %d%n", (b[0] - t0) / 1000.0, (b[1] - b[0]) / 1000.0,
                    b[2]));
        }
        Files.write(out.resolve("batches.txt"), text.toString().getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Batch delays around a fault: the median of the 30 s before it, the worst of those from its
     * start to 30 s after its end, the median of the 30 s after that (up to the next fault). Sets
     * the fault's worst.
     */
    private String delaySummary(Fault f, List<long[]> batches) {
        int index = faults.indexOf(f);
        long next = index + 1 < faults.size() ? faults.get(index + 1).startMs : Long.MAX_VALUE;
        List<Long> before = new ArrayList<>();
        List<Long> during = new ArrayList<>();
        List<Long> after = new ArrayList<>();
        for (long[] b : batches) {
            long delay = b[1] - b[0];
            if (b[0] >= f.startMs - 30_000 && b[0] < f.startMs) {
                before.add(delay);
            } else if (b[0] >= f.startMs && b[0] < f.endMs + 30_000) {
                during.add(delay);
            } else if (b[0] >= f.endMs + 30_000 && b[0] < Math.min(f.endMs + 60_000, next)) {
                after.add(delay);
            }
        }
        f.maxDelayMs = during.isEmpty() ? -1 : Collections.max(during);
        long late = during.stream().filter(d -> d > 3_000).count();
        return String.format(Locale.ROOT, "median %s in the 30 s before; worst %s of %d batches from the start to "
                + "30 s after the end (%d over 3 s); median %s in the 30 s after that (before the next fault)",
                seconds(median(before)),
                seconds(f.maxDelayMs), during.size(), late, seconds(median(after)));
    }

    private static long median(List<Long> values) {
        if (values.isEmpty()) {
            return -1;
        }
        List<Long> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }

    private static String seconds(long millis) {
        return millis < 0 ? "-" : String.format(Locale.ROOT, "%.2f s", millis / 1000.0);
    }

    /**
     * Milliseconds from ZooKeeper answering again to the group's ids/ holding its consumer for
     * good (the first sample after the last empty one within 60 s); 0 when it never went empty,
     * null when it did not come back or nothing could be sampled.
     */
    private Long ownershipBack(Fault f) {
        if (f.answeredMs < 0) {
            return null;
        }
        List<long[]> window = new ArrayList<>();
        synchronized (idsTimeline) {
            for (long[] sample : idsTimeline) {
                if (sample[0] >= f.answeredMs && sample[0] <= f.answeredMs + 60_000 && sample[1] >= 0) {
                    window.add(sample);
                }
            }
        }
        if (window.isEmpty()) {
            return null;
        }
        int lastEmpty = -1;
        for (int i = 0; i < window.size(); i++) {
            if (window.get(i)[1] == 0) {
                lastEmpty = i;
            }
        }
        if (lastEmpty == window.size() - 1) {
            return null;
        }
        return lastEmpty < 0 ? 0L : window.get(lastEmpty + 1)[0] - f.answeredMs;
    }

    /** What the drivers' logs say of their ZooKeeper sessions' server versions. */
    private static final class SessionVersions {
        int sessions;
        int assumed;
        int kept;
        final java.util.SortedSet<String> told = new java.util.TreeSet<>();
    }

    private SessionVersions sessionVersions() throws IOException {
        SessionVersions v = new SessionVersions();
        java.util.regex.Pattern session = java.util.regex.Pattern.compile("ZooKeeper session 0x\\w+ at \\S+: server "
                + "version (\\d+\\.\\d+\\.\\d+|unknown)");
        for (int n = 1; n <= instance; n++) {
            Path log = out.resolve("driver-" + n + ".log");
            for (String line : readLines(log)) {
                java.util.regex.Matcher m = session.matcher(line);
                if (m.find()) {
                    v.sessions++;
                    v.told.add(m.group(1));
                }
                if (line.contains("told its version") && line.contains("assuming")) {
                    v.assumed++;
                }
                if (line.contains("told its version") && line.contains("keeping")) {
                    v.kept++;
                }
            }
        }
        return v;
    }

    private static void check(StringBuilder t, List<String> failed, boolean hard, boolean ok, String what) {
        t.append(ok ? "PASS  " : hard ? "FAIL  " : "WARN  ").append(what).append(hard ? "" : " (expectation)")
                .append('\n');
        if (!ok && hard) {
            failed.add(what);
        }
    }

    private boolean isPurged(int partition, long offset) {
        synchronized (purged) {
            for (long[] r : purged) {
                if (r[0] == partition && offset >= r[1] && offset < r[2]) {
                    return true;
                }
            }
        }
        return false;
    }

    // ---- plumbing ------------------------------------------------------------------------------

    private void cluster(String command) throws IOException, InterruptedException {
        exec("bash", clusterScript, command, clusterDir.toString());
    }

    private void exec(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(out.resolve("cluster.log").toFile())).start();
        if (!p.waitFor(300, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(String.join(" ", command) + " did not end in 300 s");
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed with " + p.exitValue()
                    + "; see " + out.resolve("cluster.log"));
        }
    }

    private static List<String> readLines(Path file) throws IOException {
        if (!Files.exists(file)) {
            return Collections.emptyList();
        }
        String text = new String(Files.readAllBytes(file), StandardCharsets.US_ASCII);
        List<String> lines = new ArrayList<>(Arrays.asList(text.split("\n")));
        if (!text.endsWith("\n") && !lines.isEmpty()) {
            lines.set(lines.size() - 1, lines.get(lines.size() - 1) + " <torn>");
        }
        lines.removeIf(String::isEmpty);
        return lines;
    }

    private static Thread daemon(String name, Runnable body) {
        Thread thread = new Thread(body, name);
        thread.setDaemon(true);
        thread.start();
        return thread;
    }

    private static void sleep(long millis) throws InterruptedException {
        Thread.sleep(millis);
    }

    private static void sleepUntil(long at) throws InterruptedException {
        long wait = at - System.currentTimeMillis();
        if (wait > 0) {
            Thread.sleep(wait);
        }
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
}
