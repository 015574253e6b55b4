package io.offsetkeeper.bench;

import io.offsetkeeper.OffsetKeeper;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicPartition;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

/**
 * The resource check: N load+commit cycles through offsetkeeper in one JVM, with RSS, threads
 * and open file descriptors read from /proc/self before and after. The child JVM has a fixed,
 * pre-touched heap, so RSS growth is native memory, metaspace and code, not the heap sizing
 * itself.
 */
final class Soak {
    static final int WARMUP_CYCLES = 500;
    static final int SAMPLE_EVERY = 1_000;

    private Soak() {}

    /** Starts the child JVM and returns its JSON line. */
    static String runChild(int size, int cycles) throws Exception {
        List<String> command = new ArrayList<>(Arrays.asList(
                new File(System.getProperty("java.home"), "bin/java").getPath(),
                "-Xms256m", "-Xmx256m", "-XX:+AlwaysPreTouch", "-XX:+UseG1GC"));
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.equals("offsetkeeper.bench.log")) {
                // A log of its own: the parent's is open, and the appender truncates.
                File log = new File(System.getProperty(name));
                command.add("-D" + name + "=" + new File(log.getParentFile(), "soak.log"));
            } else if (name.startsWith("offsetkeeper.") || name.startsWith("logback.")) {
                command.add("-D" + name + "=" + System.getProperty(name));
            }
        }
        command.addAll(Arrays.asList("-cp", System.getProperty("java.class.path"),
                Bench.class.getName(), "soak"));
        System.out.printf("soak: %d load+commit cycles at P=%d in a child JVM (%d warm-up cycles first)%n",
                cycles, size, WARMUP_CYCLES);
        for (String line : Bench.run(command, 60)) {
            if (line.startsWith("SOAK ")) {
                return line.substring(5);
            }
        }
        throw new IllegalStateException("the soak JVM printed no result");
    }

    /** The child: prints one line {@code SOAK {json}}. */
    static void child(String zk, String bootstrap, int size, int cycles) throws Exception {
        Workload w = new Workload(size);
        Map<String, Object> params = new LinkedHashMap<>();
        params.put("bootstrap.servers", bootstrap);
        params.put("group.id", w.loadGroup);
        StringBuilder samples = new StringBuilder();
        long[] first = null;
        long[] last = null;
        long t0 = 0;
        try (OffsetKeeper loader = OffsetKeeper.builder().zookeeper(zk).kafkaParams(params).build();
                OffsetKeeper committer = OffsetKeeper.builder().zookeeper(zk).kafkaParams(params)
                        .group(w.commitGroup("soak")).build()) {
            for (int c = -WARMUP_CYCLES; c <= cycles; c++) {
                if (c >= 0 && c % SAMPLE_EVERY == 0) {
                    long[] now = resources();
                    if (c == 0) {
                        first = now;
                        t0 = System.nanoTime();
                    }
                    last = now;
                    samples.append(samples.length() == 0 ? "" : ",").append(String.format(
                            "{\"cycle\":%d,\"rssKb\":%d,\"threads\":%d,\"fds\":%d}", c, now[0], now[1], now[2]));
                    System.err.printf("soak: cycle %d, RSS %d kB, %d threads, %d fds%n", c, now[0],
                            now[1], now[2]);
                }
                if (c == cycles) {
                    break;
                }
                Map<TopicPartition, Long> loaded = loader.load(w.topics);
                if (loaded.size() != size) {
                    throw new IllegalStateException("soak load saw " + loaded.size() + " partitions");
                }
                committer.commit(w.allAt(100_000 + c));
            }
        }
        double perCycleMs = (System.nanoTime() - t0) / 1e6 / cycles;
        long[] closed = resources();
        System.out.printf("SOAK {\"size\":%d,\"cycles\":%d,\"warmupCycles\":%d,\"msPerCycle\":%.2f,"
                        + "\"rssStartKb\":%d,\"rssEndKb\":%d,\"rssGrowthMb\":%.2f,"
                        + "\"threadsStart\":%d,\"threadsEnd\":%d,\"fdsStart\":%d,\"fdsEnd\":%d,"
                        + "\"afterCloseThreads\":%d,\"afterCloseFds\":%d,\"samples\":[%s]}%n",
                size, cycles, WARMUP_CYCLES, perCycleMs, first[0], last[0],
                (last[0] - first[0]) / 1024.0, first[1], last[1], first[2], last[2], closed[1],
                closed[2], samples);
    }

    /** {rss kB, threads, open fds} of this process. */
    static long[] resources() throws IOException {
        long rss = -1;
        for (String line : Files.readAllLines(new File("/proc/self/status").toPath(),
                StandardCharsets.US_ASCII)) {
            if (line.startsWith("VmRSS:")) {
                rss = Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        String[] tasks = new File("/proc/self/task").list();
        String[] fds = new File("/proc/self/fd").list();
        return new long[] {rss, tasks == null ? -1 : tasks.length, fds == null ? -1 : fds.length};
    }

    static ZooKeeper connect(String zk) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper client = new ZooKeeper(zk, 30_000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        if (!connected.await(10, TimeUnit.SECONDS)) {
            client.close();
            throw new IllegalStateException("no ZooKeeper at " + zk);
        }
        return client;
    }

    /** After the first round: each contender's commit group holds what its commits wrote. */
    static void checkCommitted(String zk, Workload w, List<Contender> contenders,
            TopicPartition changed, long changedValue, long value) throws Exception {
        ZooKeeper client = connect(zk);
        try {
            TopicPartition lastTp = w.partitions.get(w.partitions.size() - 1);
            for (Contender c : contenders) {
                if (!c.measures("commit P")) {
                    continue;
                }
                String group = w.commitGroup(c.name());
                String a = new String(client.getData(Workload.offsetPath(group, changed), false, null),
                        StandardCharsets.UTF_8);
                String b = new String(client.getData(Workload.offsetPath(group, lastTp), false, null),
                        StandardCharsets.UTF_8);
                if (!a.equals(Long.toString(changedValue)) || (w.size > 1 && !b.equals(Long.toString(value)))) {
                    throw new IllegalStateException(c.name() + " committed " + a + "/" + b + ", expected "
                            + changedValue + "/" + value);
                }
            }
        } finally {
            client.close();
        }
    }
}
