import io.offsetkeeper.OffsetKeeper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.TopicPartition;

/**
 * The bounded soak: one keeper in one JVM commits 20-partition batches and loads, as a
 * long-running Spark driver would, and samples its resident memory, threads and open file
 * descriptors (from /proc/self), the JVM heap's committed size (part of the RSS, grown by the
 * JVM, not by offsetkeeper) and the commit and load latencies.
 *
 * <p>Arguments: zookeeper bootstrap commits loads [maxMinutes]. Bounded by both counts and time.
 */
public final class Soak {
    private static final int PARTITIONS = 20;

    public static void main(String[] args) throws Exception {
        String zookeeper = args[0];
        String bootstrap = args[1];
        int commits = Integer.parseInt(args[2]);
        int loads = Integer.parseInt(args[3]);
        long maxMillis = (args.length > 4 ? Long.parseLong(args[4]) : 45) * 60_000;
        String suffix = Long.toString(System.currentTimeMillis(), 36);
        String topic = "soak-" + suffix;
        String group = "soak-" + suffix;

        Properties admin = new Properties();
        admin.put("bootstrap.servers", bootstrap);
        try (Admin client = Admin.create(admin)) {
            client.createTopics(Collections.singleton(new NewTopic(topic, PARTITIONS, (short) 1)))
                    .all().get();
        }
        Thread.sleep(2000); // leaders elected
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", bootstrap);
        params.put("group.id", group);
        List<String> topics = Collections.singletonList(topic);

        int loadEvery = Math.max(1, commits / Math.max(1, loads));
        int sampleEvery = Math.max(1, commits / 20);
        long[] commitNanos = new long[sampleEvery];
        long[] loadNanos = new long[sampleEvery];
        System.out.printf("%9s %7s %7s %8s %8s %5s %5s %9s %9s %9s %9s%n", "commits", "loads",
                "secs", "rss_mb", "heap_mb", "thr", "fds", "c_p50_ms", "c_p99_ms", "l_p50_ms",
                "l_p99_ms");
        sample(0, 0, 0, commitNanos, 0, loadNanos, 0);
        long start = System.nanoTime();
        int loadsDone = 0;
        int commitsDone = 0;
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(zookeeper)
                .kafkaParams(params).build()) {
            keeper.load(topics);
            loadsDone++;
            Map<TopicPartition, Long> batch = new HashMap<>();
            int c = 0;
            int l = 0;
            for (int i = 1; i <= commits; i++) {
                batch.clear();
                for (int p = 0; p < PARTITIONS; p++) {
                    batch.put(new TopicPartition(topic, p), (long) i);
                }
                long t = System.nanoTime();
                keeper.commit(batch);
                commitNanos[c++] = System.nanoTime() - t;
                commitsDone = i;
                if (i % loadEvery == 0 && loadsDone < loads) {
                    t = System.nanoTime();
                    Map<TopicPartition, Long> loaded = keeper.load(topics);
                    loadNanos[l++] = System.nanoTime() - t;
                    loadsDone++;
                    if (loaded.size() != PARTITIONS) {
                        throw new AssertionError("load returned " + loaded.size() + " partitions");
                    }
                }
                if (i % sampleEvery == 0) {
                    sample(i, loadsDone, System.nanoTime() - start, commitNanos, c, loadNanos, l);
                    c = 0;
                    l = 0;
                }
                if (System.nanoTime() - start > maxMillis * 1_000_000) {
                    System.out.println("time bound reached");
                    break;
                }
            }
        }
        System.gc();
        Thread.sleep(1000);
        System.out.println("after close:");
        sample(commitsDone, loadsDone, System.nanoTime() - start, commitNanos, 0, loadNanos, 0);
        System.out.printf("SOAK %d commits (%d znodes each), %d loads in %.0f s%n", commitsDone,
                PARTITIONS, loadsDone, (System.nanoTime() - start) / 1e9);
    }

    private static void sample(int commits, int loads, long nanos, long[] commitNanos, int c,
            long[] loadNanos, int l) throws IOException {
        Runtime jvm = Runtime.getRuntime();
        System.out.printf("%9d %7d %7.0f %8.1f %8.1f %5d %5d %9s %9s %9s %9s%n", commits, loads,
                nanos / 1e9, status("VmRSS") / 1024.0, jvm.totalMemory() / 1048576.0,
                status("Threads"), fds(),
                percentile(commitNanos, c, 50), percentile(commitNanos, c, 99),
                percentile(loadNanos, l, 50), percentile(loadNanos, l, 99));
        System.out.flush();
    }

    private static String percentile(long[] values, int n, int p) {
        if (n == 0) {
            return "-";
        }
        long[] sorted = Arrays.copyOf(values, n);
        Arrays.sort(sorted);
        return String.format("%.2f", sorted[Math.min(n - 1, n * p / 100)] / 1e6);
    }

    /** A number from /proc/self/status (kB for memory lines). */
    private static long status(String key) throws IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith(key + ":")) {
                return Long.parseLong(line.substring(key.length() + 1).trim().split("\\s+")[0]);
            }
        }
        return -1;
    }

    private static long fds() throws IOException {
        try (java.util.stream.Stream<java.nio.file.Path> fds = Files.list(Paths.get("/proc/self/fd"))) {
            return fds.count();
        }
    }
}
