package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.KeeperException;
import org.junit.Test;

/**
 * A driver JVM committing 500-partition batches, killed with SIGKILL 50 times at random
 * moments: after each kill the stored offsets are exactly one batch's set, never a mix, and
 * never older than the last batch whose commit returned.
 */
public class KillTest {
    private static final int PARTITIONS = 500;
    private static final int KILLS = 50;

    @Test
    public void killedDriversLeaveExactlyOneBatch() throws Exception {
        String classpath = System.getProperty("offsetkeeper.test.standaloneClasspath");
        assertTrue("offsetkeeper.test.standaloneClasspath is not set (Gradle sets it)",
                classpath != null && classpath.contains(".jar"));
        String group = TestCluster.unique("killed");
        String topic = TestCluster.unique("kill");
        Random random = new Random(7);
        long stored = 0; // the batch stored now, 0 for none
        long totalCommitted = 0;
        int killedMidRun = 0;
        long started = System.nanoTime();
        for (int kill = 1; kill <= KILLS; kill++) {
            List<String> command = new ArrayList<>(Arrays.asList(
                    System.getProperty("java.home") + File.separator + "bin" + File.separator
                            + "java",
                    "-Xmx96m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classpath,
                    CommitLoop.class.getName(), TestCluster.zookeeper(), TestCluster.bootstrap(),
                    group, topic, String.valueOf(PARTITIONS), String.valueOf(stored + 1),
                    String.valueOf(stored + 100_000)));
            // Output goes to a file: destroying a process closes its pipes, losing lines.
            Path output = Files.createTempFile("commit-loop-", ".out");
            Process process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(output.toFile()).start();
            // Start-up takes about half a second; some kills land before the first commit.
            Thread.sleep(150 + random.nextInt(1500));
            process.destroyForcibly(); // SIGKILL
            assertTrue("the driver did not die", process.waitFor(30, TimeUnit.SECONDS));
            long acked = stored;
            for (String line : Files.readAllLines(output, StandardCharsets.UTF_8)) {
                if (line.startsWith("COMMITTED ")) {
                    acked = Long.parseLong(line.substring(10).trim());
                } else if (!line.trim().isEmpty() && !line.startsWith("SLF4J")) {
                    System.out.println("driver " + kill + ": " + line);
                }
            }
            Files.delete(output);
            long before = stored;
            stored = storedBatch(group, topic);
            assertTrue("kill " + kill + ": batch " + acked + " was acknowledged, yet " + stored
                    + " is stored", stored >= acked);
            assertTrue("kill " + kill + ": stored " + stored + " was never committed (acked "
                    + acked + ")", stored <= acked + 1);
            if (stored > before) {
                killedMidRun++;
            }
            totalCommitted += stored - before;
        }
        System.out.println("FAULT SIGKILL of a committing JVM x" + KILLS + ": " + totalCommitted
                + " batches of " + PARTITIONS + " partitions committed, " + killedMidRun
                + " runs killed after committing; every kill left exactly one batch; "
                + (System.nanoTime() - started) / 1_000_000 + " ms");
        assertTrue("no run got to commit: the kills came too early", killedMidRun > KILLS / 2);
    }

    /** The batch every partition holds (0 when none is stored); a mix fails the test. */
    private static long storedBatch(String group, String topic) throws Exception {
        String dir = "/consumers/" + group + "/offsets/" + topic;
        List<String> children;
        try {
            children = TestCluster.zk().getChildren(dir, false);
        } catch (KeeperException.NoNodeException e) {
            return 0;
        }
        assertEquals("partitions stored", PARTITIONS, children.size());
        Long batch = null;
        for (int p = 0; p < PARTITIONS; p++) {
            long value = Long.parseLong(TestCluster.read(dir + "/" + p));
            if (batch == null) {
                batch = value;
            }
            assertEquals("partition " + p + " holds another batch than partition 0", (long) batch,
                    value);
        }
        return batch;
    }
}
