package io.offsetkeeper.e2e;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.offsetkeeper.OffsetKeeper;
import io.offsetkeeper.PartitionOwnedException;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.Test;

/**
 * A checkpointed job ({@code StreamingContext.getOrCreate}, the keeper serialized into the
 * checkpoint) whose driver is killed with SIGKILL and recovered from the checkpoint: the
 * recovered job, whose keeper never loads, owns the group's partitions, so a second instance
 * is refused while it runs; and it takes them over from the dead driver (same host) at once,
 * without waiting for the dead driver's ZooKeeper session to expire.
 */
public class CheckpointRecoveryTest extends ClusterTestBase {
    private static final long WAIT_MS = 120_000;

    /** A driver JVM and every line it printed (stdout and stderr). */
    private static final class Driver implements AutoCloseable {
        final Process process;
        final List<String> lines = new CopyOnWriteArrayList<>();

        Driver(String group, String topic, File checkpoint) throws IOException {
            String classpath = System.getProperty("offsetkeeper.e2e.classpath");
            String jvmArgs = System.getProperty("offsetkeeper.e2e.jvmArgs");
            assertTrue("offsetkeeper.e2e.classpath is not set (Gradle sets it)", classpath != null);
            List<String> command = new ArrayList<>();
            command.add(new File(System.getProperty("java.home"), "bin/java").getPath());
            command.addAll(Arrays.asList(jvmArgs.split(" ")));
            command.addAll(Arrays.asList("-cp", classpath, CheckpointedJob.class.getName(),
                    cluster.zookeeper, cluster.bootstrap, group, topic, checkpoint.getPath()));
            process = new ProcessBuilder(command).redirectErrorStream(true).start();
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
        }

        boolean printed(String exactLine) {
            return lines.contains(exactLine);
        }

        void await(String exactLine, String what) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
            while (!printed(exactLine)) {
                if (!process.isAlive() || System.nanoTime() > deadline) {
                    fail("the driver did not " + what + (process.isAlive() ? " in time" : ", it exited")
                            + "; its output:\n" + String.join("\n", lines));
                }
                Thread.sleep(100);
            }
        }

        String pid() {
            for (String line : lines) {
                if (line.startsWith("PID ")) {
                    return line.substring(4).trim();
                }
            }
            throw new AssertionError("no PID line: " + lines);
        }

        /** SIGKILL, as the OS or an operator's kill -9 does. */
        void kill() throws InterruptedException {
            process.destroyForcibly();
            assertTrue("the driver did not die", process.waitFor(30, TimeUnit.SECONDS));
        }

        @Override
        public void close() throws InterruptedException {
            if (process.isAlive()) {
                kill();
            }
        }
    }

    private long stored(String group, String topic, int partition) {
        String value = cluster.readZnode(Cluster.offsetPath(group, topic, partition));
        return value == null ? -1 : Long.parseLong(value.trim());
    }

    @Test
    public void aRecoveredJobOwnsTheGroupAtOnceAndASecondInstanceIsRefused() throws Exception {
        String topic = "recover-" + System.currentTimeMillis() % 1_000_000;
        String group = "g-" + topic;
        cluster.createTopic(topic, 2);
        cluster.produce(topic, 0, 10);
        cluster.produce(topic, 1, 10);
        File checkpoint = Files.createTempDirectory("offsetkeeper-checkpoint").toFile();
        String ids = "/consumers/" + group + "/ids";

        String deadId;
        String deadPid;
        try (Driver first = new Driver(group, topic, checkpoint)) {
            first.await("CREATED", "start");
            Cluster.waitFor(() -> stored(group, topic, 0) == 10 && stored(group, topic, 1) == 10,
                    "the first driver to commit what was produced");
            List<String> registered = cluster.children(ids);
            assertEquals(registered.toString(), 1, registered.size());
            deadId = registered.get(0);
            deadPid = first.pid();
            // Spark writes the checkpoint after a batch, not with the commit: kill the driver
            // only once there is one to recover from.
            Cluster.waitFor(() -> {
                String[] names = checkpoint.list();
                return names != null && java.util.Arrays.stream(names)
                        .anyMatch(name -> name.matches("checkpoint-\\d+"));
            }, "Spark to write a checkpoint");
            first.kill();
        }
        // Its ZooKeeper session lives on after the kill: so do its ownership nodes.
        assertTrue(cluster.children(ids).contains(deadId));
        cluster.produce(topic, 0, 5);
        cluster.produce(topic, 1, 5);

        long restarted = System.nanoTime();
        try (Driver recovered = new Driver(group, topic, checkpoint)) {
            Cluster.waitFor(() -> stored(group, topic, 0) == 15 && stored(group, topic, 1) == 15,
                    "the recovered driver to commit the new records");
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restarted);
            System.out.println("recovered driver committed " + tookMs + " ms after it started");
            assertFalse("the driver started afresh instead of recovering: " + recovered.lines,
                    recovered.printed("CREATED"));
            // It took the partitions over from the dead driver, naming it, without waiting for
            // its session: the WARN is only possible while that session still lives.
            boolean tookOver = false;
            for (String line : recovered.lines) {
                tookOver |= line.contains("took over ") && line.contains(deadId)
                        && line.contains("pid " + deadPid);
            }
            assertTrue("no take-over from pid " + deadPid + " logged: " + recovered.lines, tookOver);

            // The recovered job owns the group: ids and owners name it, not the dead driver.
            List<String> now = new ArrayList<>(cluster.children(ids));
            now.remove(deadId);
            assertEquals(now.toString(), 1, now.size());
            for (int p = 0; p < 2; p++) {
                assertEquals(now.get(0) + "-0",
                        cluster.readZnode("/consumers/" + group + "/owners/" + topic + "/" + p));
            }
            assertTrue(cluster.readZnode(ids + "/" + now.get(0))
                    .contains("\"pid\":" + recovered.pid()));

            // A second instance on the group is refused while the recovered job runs.
            Map<String, Object> params = new HashMap<>();
            params.put("bootstrap.servers", cluster.bootstrap);
            params.put("group.id", group);
            try (OffsetKeeper second = OffsetKeeper.builder().zookeeper(cluster.zookeeper)
                    .kafkaParams(params).ownershipWait(1000).build()) {
                second.load(Collections.singleton(topic));
                fail("a second instance loaded while the recovered job runs");
            } catch (PartitionOwnedException expected) {
                assertTrue(expected.getMessage(),
                        expected.getMessage().contains("pid " + recovered.pid()));
            }
            assertTrue("the recovered driver died: " + recovered.lines, recovered.process.isAlive());
        }
    }
}
