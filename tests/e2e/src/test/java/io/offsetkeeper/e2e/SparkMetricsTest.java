package io.offsetkeeper.e2e;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.offsetkeeper.e2e.StreamingJob.Record;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongPredicate;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.junit.Test;

/**
 * The metrics and {@code commitAsync} in real Spark drivers (JVMs of their own, Spark 3.5,
 * local[2]) with {@code spark.plugins=io.offsetkeeper.spark.OffsetKeeperPlugin}: the metrics are
 * read over HTTP from each running driver's Prometheus servlet, as a Prometheus server scrapes
 * them, and checked against what the job printed and what ZooKeeper holds: records lost equal to
 * the load's report, the commit timer counting the batches, the lag, and a ZooKeeper outage
 * (reached through a {@link TcpProxy} that is cut) shown by the deferred commits and ended. The
 * asynchronous commit is run through a SIGKILL, a zombie and {@code concurrentJobs=2}.
 */
public class SparkMetricsTest extends ClusterTestBase {
    private static final long DRIVER_WAIT_MS = 120_000;
    private static final AtomicInteger NAMES = new AtomicInteger();
    private static final String PLUGIN = "OffsetKeeperPlugin_";

    private static String unique(String prefix) {
        return prefix + "-" + System.currentTimeMillis() % 1_000_000 + "-" + NAMES.incrementAndGet();
    }

    /** The driver's arguments: the job's, the plugin, the Prometheus servlet, then {@code extra}. */
    private static List<String> driverArgs(String zookeeper, String group, String topic, String... extra) {
        List<String> args = new ArrayList<>(Arrays.asList(zookeeper, cluster.bootstrap, group, topic, "zookeeper",
                "spark.ui.enabled=true",
                "spark.ui.port=0",
                "spark.plugins=io.offsetkeeper.spark.OffsetKeeperPlugin",
                "spark.metrics.conf.*.sink.prometheusServlet.class=org.apache.spark.metrics.sink.PrometheusServlet",
                "spark.metrics.conf.*.sink.prometheusServlet.path=/metrics/prometheus",
                "spark.offsetkeeper.metrics.lagRefresh=500ms"));
        args.addAll(Arrays.asList(extra));
        return args;
    }

    @Test
    public void aDriversMetricsShowTheLoadItsCommitsAndTheLag() throws Exception {
        String topic = unique("metrics");
        String group = unique("metrics-g");
        cluster.createTopic(topic, 2);
        cluster.produce(topic, 0, 100);
        cluster.produce(topic, 1, 100);
        // Stored 10 and 10, then retention takes partition 0's records before 40: 30 lost.
        cluster.writeZnode(Cluster.offsetPath(group, topic, 0), "10");
        cluster.writeZnode(Cluster.offsetPath(group, topic, 1), "10");
        cluster.deleteRecords(topic, 0, 40);
        try (DriverProcess driver = new DriverProcess(driverArgs(cluster.zookeeper, group, topic), null)) {
            try {
                String ui = driver.await("UI ", DRIVER_WAIT_MS).substring(3);
                long lost = Long.parseLong(driver.await("LOST ", DRIVER_WAIT_MS).substring(5));
                assertEquals("the load's report", 30, lost);
                Scrape loaded = Scrape.of(ui, group);
                assertEquals(lost, loaded.counter("records_lost"));
                assertEquals(1, loaded.counter("partitions_reset_below_range"));
                assertEquals(0, loaded.counter("partitions_reset_missing"));
                assertEquals(1, loaded.timerCount("load_time"));
                assertEquals(1, loaded.gauge("ownership_held"));

                // Every record processed and committed: the commit timer counts the batches.
                awaitStored(group, topic, 0, 100);
                awaitStored(group, topic, 1, 100);
                long printedBefore = driver.count("COMMITTED ");
                Scrape running = Scrape.of(ui, group);
                Thread.sleep(200); // the line of a commit that ended before the scrape
                long printedAfter = driver.count("COMMITTED ");
                long timed = running.timerCount("commit_time");
                assertTrue("commit_time counted " + timed + " commits, the job printed " + printedBefore + " to "
                        + printedAfter, printedBefore <= timed && timed <= printedAfter);
                assertEquals(0, running.counter("commits_deferred"));
                assertEquals(0, running.gauge("commit_outage_ms"));
                awaitMetric(ui, group, "lag_" + topic.replaceAll("[^a-zA-Z0-9]", "_"), s -> s == 0, "the lag once every record was committed");
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "\nthe driver's last lines:\n" + driver.tail(40), e);
            }
        }
    }

    @Test
    public void aZooKeeperOutageShowsAsDeferredCommitsAndEnds() throws Exception {
        String topic = unique("outage");
        String group = unique("outage-g");
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 10);
        try (TcpProxy zookeeper = new TcpProxy(cluster.zookeeper);
                DriverProcess driver = new DriverProcess(driverArgs(zookeeper.address(), group, topic,
                        "offsetkeeper.zookeeper.timeout.ms=2000"), null)) {
            try {
                String ui = driver.await("UI ", DRIVER_WAIT_MS).substring(3);
                awaitStored(group, topic, 0, 10);
                // Cut while there is more to commit (a batch with nothing new writes nothing).
                zookeeper.cut();
                cluster.produce(topic, 0, 20);
                Scrape outage = awaitMetric(ui, group, "commit_outage_ms", ms -> ms > 0, "an outage during the cut");
                assertTrue("deferred commits during the cut", outage.counter("commits_deferred") > 0);
                assertEquals("10", cluster.readZnode(Cluster.offsetPath(group, topic, 0)));
                zookeeper.restore();
                Scrape after = awaitMetric(ui, group, "commit_outage_ms", ms -> ms == 0, "the outage's end");
                assertTrue(after.counter("commits_deferred") >= outage.counter("commits_deferred"));
                assertEquals(0, after.counter("commit_failures"));
                awaitStored(group, topic, 0, 30);
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "\n" + zookeeper + "\nthe driver's last lines:\n"
                        + driver.tail(60), e);
            }
        }
    }

    @Test
    public void asyncCommitsLoseNothingAndNeverGoBackThroughASigkillAndAZombie() throws Exception {
        String topic = unique("async");
        String group = unique("async-g");
        cluster.createTopic(topic, 2);
        cluster.produce(topic, 0, 200);
        cluster.produce(topic, 1, 200);
        List<Record> processed = new ArrayList<>();
        // Records keep coming, so that every driver has batches to process when it is killed.
        AtomicBoolean producing = new AtomicBoolean(true);
        Thread producer = new Thread(() -> {
            while (producing.get()) {
                cluster.produce(topic, 0, 1);
                cluster.produce(topic, 1, 1);
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "producer");
        producer.setDaemon(true);
        producer.start();
        String[] async = {"commit=async", "spark.streaming.concurrentJobs=2",
            "offsetkeeper.session.timeout.ms=6000"};
        long[] before;

        // 1. SIGKILL in the batch after the third handed to commitAsync.
        AtomicInteger handed = new AtomicInteger();
        try (DriverProcess killed = new DriverProcess(driverArgs(cluster.zookeeper, group, topic, async),
                line -> (line.startsWith("HANDED ") ? handed.incrementAndGet() : handed.get()) >= 3
                        && line.startsWith("PROCESSED "))) {
            killed.awaitKilled(DRIVER_WAIT_MS);
            killed.batches().forEach(processed::addAll);
        }
        before = stored(group, topic);

        // 2. A zombie: a driver stopped (SIGSTOP) while a second takes the group over, then
        // resumed: its writer's next write is refused and the job fails, writing nothing.
        try (DriverProcess zombie = new DriverProcess(driverArgs(cluster.zookeeper, group, topic, async), null)) {
            String ui = zombie.await("UI ", DRIVER_WAIT_MS).substring(3);
            awaitMetric(ui, group, "async_commits_handed", n -> n >= 3, "three batches handed");
            assertNeverBehind(before, stored(group, topic));
            zombie.signal("STOP");
            try (DriverProcess successor = new DriverProcess(driverArgs(cluster.zookeeper, group, topic, async),
                    null)) {
                String next = successor.await("UI ", DRIVER_WAIT_MS).substring(3);
                successor.await("LOADED ", DRIVER_WAIT_MS);
                awaitMetric(next, group, "async_commits_handed", n -> n >= 3, "the successor's batches");
                zombie.signal("CONT");
                assertEquals("the zombie's job did not fail", 1, zombie.awaitExit(DRIVER_WAIT_MS));
                assertTrue(zombie.output(), zombie.out.stream().anyMatch(
                        l -> l.startsWith("FAILED") && l.contains("CommitConflictException")));
                zombie.batches().forEach(processed::addAll);
                long[] afterZombie = stored(group, topic);

                // 3. The successor goes on to the end: every record processed, stored at the end.
                producing.set(false);
                producer.join(30_000);
                long end0 = cluster.latest(topic, 0);
                long end1 = cluster.latest(topic, 1);
                awaitStored(group, topic, 0, end0);
                awaitStored(group, topic, 1, end1);
                assertNeverBehind(afterZombie, stored(group, topic));
                Scrape last = Scrape.of(next, group);
                assertTrue("the writer's commits are no more than the batches handed",
                        last.timerCount("commit_time") <= last.counter("async_commits_handed"));
                successor.kill();
                successor.batches().forEach(processed::addAll);
                for (int p = 0; p < 2; p++) {
                    int partition = p;
                    TreeSet<Long> seen = processed.stream().filter(r -> r.partition == partition)
                            .map(r -> r.offset).collect(Collectors.toCollection(TreeSet::new));
                    long end = p == 0 ? end0 : end1;
                    List<Long> missing = LongStream.range(0, end).filter(o -> !seen.contains(o)).boxed()
                            .collect(Collectors.toList());
                    assertTrue(topic + "-" + p + " lost " + missing, missing.isEmpty());
                }
            }
        }
    }

    private static void assertNeverBehind(long[] before, long[] now) {
        for (int p = 0; p < before.length; p++) {
            assertTrue("partition " + p + " went back from " + before[p] + " to " + now[p], now[p] >= before[p]);
        }
    }

    /** Both partitions' stored offsets; -1 where none is stored. */
    private static long[] stored(String group, String topic) {
        long[] offsets = new long[2];
        for (int p = 0; p < 2; p++) {
            String text = cluster.readZnode(Cluster.offsetPath(group, topic, p));
            offsets[p] = text == null ? -1 : Long.parseLong(text.trim());
        }
        return offsets;
    }

    private static void awaitStored(String group, String topic, int partition, long offset) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(DRIVER_WAIT_MS);
        String text = null;
        while (System.nanoTime() < deadline) {
            text = cluster.readZnode(Cluster.offsetPath(group, topic, partition));
            if (text != null && Long.parseLong(text.trim()) >= offset) {
                return;
            }
            Thread.sleep(100);
        }
        fail(topic + "-" + partition + " stored " + text + ", not " + offset + ", after " + DRIVER_WAIT_MS + " ms");
    }

    /** Scrapes until the metric meets {@code wanted}, up to 60 s; the scrape that did. */
    private static Scrape awaitMetric(String ui, String group, String metric, LongPredicate wanted, String what)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Scrape scrape = null;
        while (System.nanoTime() < deadline) {
            scrape = Scrape.of(ui, group);
            Long value = scrape.find(metric);
            if (value != null && wanted.test(value)) {
                return scrape;
            }
            Thread.sleep(200);
        }
        String plugin = Arrays.stream(scrape.text.split("\n")).filter(l -> l.contains(PLUGIN))
                .collect(Collectors.joining("\n"));
        fail("no " + what + " in 60 s: " + metric + " of the last scrape:\n" + plugin);
        return null;
    }

    /** One read of the driver's {@code /metrics/prometheus}, the group's metrics by name. */
    private static final class Scrape {
        final String text;
        private final Map<String, Long> values = new HashMap<>();

        private Scrape(String text, String group) {
            this.text = text;
            String prefix = PLUGIN + group.replaceAll("[^a-zA-Z0-9]", "_") + "_";
            for (String line : text.split("\n")) {
                int at = line.indexOf(prefix);
                int space = line.lastIndexOf(' ');
                if (at < 0 || space < 0) {
                    continue;
                }
                String name = line.substring(at + prefix.length(), space);
                String value = line.substring(space + 1).trim();
                // Timers' means and rates are decimals; the counts this test reads are whole.
                if (value.matches("-?\\d+")) {
                    values.put(name, Long.parseLong(value));
                }
            }
        }

        static Scrape of(String ui, String group) throws IOException {
            HttpURLConnection http = (HttpURLConnection) new URL(ui + "/metrics/prometheus").openConnection();
            http.setConnectTimeout(5_000);
            http.setReadTimeout(10_000);
            try (InputStream in = http.getInputStream()) {
                assertEquals(200, http.getResponseCode());
                return new Scrape(new String(readAll(in), StandardCharsets.UTF_8), group);
            } finally {
                http.disconnect();
            }
        }

        private static byte[] readAll(InputStream in) throws IOException {
            java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
            byte[] buffer = new byte[8192];
            int n;
            while ((n = in.read(buffer)) >= 0) {
                bytes.write(buffer, 0, n);
            }
            return bytes.toByteArray();
        }

        /** A metric's value by its Prometheus name after the group (counter, gauge or timer count). */
        Long find(String metric) {
            for (String suffix : new String[] {"_Count{type=\"counters\"}", "_Value{type=\"gauges\"}",
                "_Count{type=\"timers\"}"}) {
                Long v = values.get(metric + suffix);
                if (v != null) {
                    return v;
                }
            }
            return null;
        }

        long counter(String metric) {
            return require(metric, "_Count{type=\"counters\"}");
        }

        long gauge(String metric) {
            return require(metric, "_Value{type=\"gauges\"}");
        }

        long timerCount(String metric) {
            return require(metric, "_Count{type=\"timers\"}");
        }

        private long require(String metric, String suffix) {
            Long v = values.get(metric + suffix);
            if (v == null) {
                fail("no " + metric + suffix + " in the scrape:\n" + text);
            }
            return v;
        }
    }
}
