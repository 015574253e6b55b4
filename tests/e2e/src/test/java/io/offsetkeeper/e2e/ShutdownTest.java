package io.offsetkeeper.e2e;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.Test;

/**
 * The README's quick-start job (examples/scala/QuickStartJob.scala, exactly as the README shows
 * it), run as its own driver JVM (local[2]) and stopped with SIGTERM, as YARN, Kubernetes and
 * an operator's kill stop a driver: the JVM exits within {@link #EXIT_BOUND_MS}, the last
 * batch's offsets (records produced just before the signal) are stored, and the keeper has
 * released the group (its ownership nodes are gone as the JVM exits, so a restart on another
 * host does not wait for this driver's ZooKeeper session).
 */
public class ShutdownTest extends ClusterTestBase {
    /** The quick start's group (its code names it). */
    private static final String GROUP = "click-count";
    /**
     * The stated bound: a graceful stop finishes the running batch and one more that Spark
     * generates at its next batch time (the quick start's batches are 10 s), then Spark stops;
     * Spark's shutdown hooks may take 30 s in all (Hadoop's hadoop.service.shutdown.timeout).
     */
    private static final long EXIT_BOUND_MS = 45_000;
    private static final long START_WAIT_MS = 120_000;

    private long stored(String topic, int partition) {
        String value = cluster.readZnode(Cluster.offsetPath(GROUP, topic, partition));
        return value == null ? -1 : Long.parseLong(value.trim());
    }

    /** The quick start as a driver JVM of its own, every line it prints kept. */
    private static Process start(String topic, List<String> lines) throws IOException {
        String classpath = System.getProperty("offsetkeeper.e2e.classpath");
        String examples = System.getProperty("offsetkeeper.e2e.examples");
        String jvmArgs = System.getProperty("offsetkeeper.e2e.jvmArgs");
        assertTrue("offsetkeeper.e2e.classpath/examples are not set (Gradle sets them)",
                classpath != null && examples != null && jvmArgs != null);
        List<String> command = new ArrayList<>();
        command.add(new File(System.getProperty("java.home"), "bin/java").getPath());
        command.addAll(Arrays.asList(jvmArgs.split(" ")));
        // What spark-submit --master local[2] would set; the job's own code sets the rest.
        command.addAll(Arrays.asList("-Dspark.master=local[2]", "-Dspark.ui.enabled=false",
                "-Dspark.driver.host=127.0.0.1", "-Dspark.driver.bindAddress=127.0.0.1"));
        command.addAll(Arrays.asList("-cp", examples + File.pathSeparator + classpath, "QuickStartJob",
                cluster.zookeeper, cluster.bootstrap, topic));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        Thread reader = new Thread(() -> {
            try (BufferedReader out = new BufferedReader(
                    new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = out.readLine()) != null) {
                    lines.add(line);
                }
            } catch (IOException e) {
                lines.add("(output lost: " + e + ")");
            }
        });
        reader.setDaemon(true);
        reader.start();
        return process;
    }

    @Test
    public void sigtermCommitsTheLastBatchReleasesTheGroupAndExits() throws Exception {
        String topic = "shutdown-" + System.currentTimeMillis() % 1_000_000;
        cluster.createTopic(topic, 2);
        cluster.produce(topic, 0, 30);
        cluster.produce(topic, 1, 30);
        List<String> lines = new CopyOnWriteArrayList<>();
        Process job = start(topic, lines);
        try {
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(START_WAIT_MS);
            while (stored(topic, 0) != 30 || stored(topic, 1) != 30) {
                assertTrue("the job did not commit its first batch; its output:\n" + String.join("\n", lines),
                        job.isAlive() && System.nanoTime() < deadline);
                Thread.sleep(100);
            }
            assertEquals("one keeper registered: " + cluster.children(ids()), 1, cluster.children(ids()).size());

            // Records for the next batch, then the signal before (or as) it runs.
            cluster.produce(topic, 0, 20);
            cluster.produce(topic, 1, 20);
            long signalled = System.nanoTime();
            job.toHandle().destroy(); // SIGTERM (Process.destroy would also close its output)
            boolean exited = job.waitFor(EXIT_BOUND_MS, TimeUnit.MILLISECONDS);
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - signalled);
            assertTrue("the driver was still alive " + EXIT_BOUND_MS + " ms after SIGTERM; its output:\n"
                    + String.join("\n", lines), exited);
            System.out.println("ShutdownTest: the driver exited " + tookMs + " ms after SIGTERM");

            assertEquals("the last batch's offset of partition 0", 50, stored(topic, 0));
            assertEquals("the last batch's offset of partition 1", 50, stored(topic, 1));
            // Released by close(), not by a session expiry (that takes 30 s): gone at exit.
            assertEquals("ownership nodes left: " + cluster.children(ids()), 0, cluster.children(ids()).size());
            assertFalse(cluster.exists("/consumers/" + GROUP + "/owners/" + topic + "/0"));
        } finally {
            if (job.isAlive()) {
                job.destroyForcibly();
                job.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    private static String ids() {
        return "/consumers/" + GROUP + "/ids";
    }
}
