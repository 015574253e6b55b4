package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.offsetkeeper.e2e.ClusterEnv;
import java.io.File;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;
import org.junit.function.ThrowingRunnable;

/**
 * ZooKeeper deadlines across JNI, against real servers: a ZooKeeper frozen with SIGSTOP (a
 * ZooKeeper of the test's own, {@code tests/cluster/ensemble.sh}) makes load and commit throw
 * {@link ServerTimeoutException} within the ZooKeeper timeout plus 20%, whichever layer noticed; a
 * chroot that does not exist makes them throw one {@link ZooKeeperException} naming it.
 */
public class ZooKeeperDeadlineTest {
    private static final Duration TIMEOUT = Duration.ofMillis(2000);
    /** JNI, thread wake-ups and scheduling on a small shared machine. */
    private static final long SLACK_MS = 500;
    private static final long BOUND_MS = TIMEOUT.toMillis() * 12 / 10 + SLACK_MS;

    @Test
    public void aFrozenZooKeeperIsAServerTimeoutOnLoadAndCommit() throws Exception {
        String topic = TestCluster.createTopic(2);
        Set<String> topics = Collections.singleton(topic);
        String group = TestCluster.unique("frozen");
        File root = new File(System.getProperty("offsetkeeper.test.root"));
        File dir = new File(root, "build/" + TestCluster.unique("jvm-freeze"));
        ensemble(root, "start", dir.getPath(), "1");
        try {
            String connect = ClusterEnv.load(new File(dir, "ensemble.env").toPath()).zookeeper();
            assertTrue("ensemble.env has no OFFSETKEEPER_ZK", connect != null);
            try (OffsetKeeper open = keeper(connect, group, true)) {
                open.load(topics);
                open.commit(batch(topic, 1));
                ensemble(root, "freeze", dir.getPath(), "1");
                try (OffsetKeeper fresh = keeper(connect, group, true);
                        OffsetKeeper plain = keeper(connect, group, false)) {
                    List<ThrowingRunnable> calls = Arrays.asList(
                            () -> open.commit(batch(topic, 2)),
                            () -> open.load(topics),
                            () -> fresh.load(topics),
                            () -> fresh.commit(batch(topic, 3)),
                            () -> plain.load(topics),
                            () -> plain.commit(batch(topic, 4)));
                    for (int i = 0; i < calls.size(); i++) {
                        long started = System.nanoTime();
                        ServerTimeoutException e =
                                assertThrows(ServerTimeoutException.class, calls.get(i));
                        long tookMs = (System.nanoTime() - started) / 1_000_000;
                        assertTrue("call " + i + " took " + tookMs + " ms: " + e.getMessage(),
                                tookMs <= BOUND_MS);
                        assertTrue(e.getMessage(),
                                e.getMessage().startsWith("ZooKeeper at " + connect));
                    }
                }
                ensemble(root, "thaw", dir.getPath(), "1");
            }
        } finally {
            ensemble(root, "stop", dir.getPath());
        }
    }

    @Test
    public void aMissingChrootIsOneZooKeeperExceptionNamingIt() throws Exception {
        String topic = TestCluster.createTopic(1);
        Set<String> topics = Collections.singleton(topic);
        String chroot = "/" + TestCluster.unique("newroot");
        String connect = TestCluster.zookeeper() + chroot;
        String group = TestCluster.unique("chroot");
        try (OffsetKeeper owning = keeper(connect, group, true);
                OffsetKeeper plain = keeper(connect, group, false)) {
            for (ThrowingRunnable call : Arrays.<ThrowingRunnable>asList(
                    () -> owning.load(topics), () -> plain.load(topics),
                    () -> owning.commit(batch(topic, 1)))) {
                long started = System.nanoTime();
                ZooKeeperException e = assertThrows(ZooKeeperException.class, call);
                long tookMs = (System.nanoTime() - started) / 1_000_000;
                assertTrue(e.getMessage(), e.getMessage().contains(
                        "ZooKeeper chroot '" + chroot + "' of connect string '" + connect + "'"));
                assertTrue(e.getMessage(), e.getMessage().contains("zkCli.sh create " + chroot));
                assertTrue("took " + tookMs + " ms", tookMs <= BOUND_MS);
            }
        }
        assertFalse("the chroot was created", TestCluster.exists(chroot));
    }

    private static OffsetKeeper keeper(String connect, String group, boolean ownership) {
        Map<String, Object> params = TestCluster.kafkaParams(group);
        return OffsetKeeper.builder().zookeeper(connect).kafkaParams(params)
                .zookeeperTimeout(TIMEOUT).sessionTimeout(Duration.ofSeconds(6))
                .ownership(ownership).ownershipWait(Duration.ofSeconds(1))
                .commitOutageTolerance(Duration.ZERO).build();
    }

    private static Map<TopicPartition, Long> batch(String topic, long offset) {
        return Collections.singletonMap(new TopicPartition(topic, 0), offset);
    }

    /** Runs {@code tests/cluster/ensemble.sh} with the arguments; it must succeed. */
    private static void ensemble(File root, String... args) throws Exception {
        List<String> command = new java.util.ArrayList<>();
        command.add("bash");
        command.add(new File(root, "tests/cluster/ensemble.sh").getPath());
        command.addAll(Arrays.asList(args));
        Process process = new ProcessBuilder(command).directory(root).inheritIO().start();
        assertEquals("ensemble.sh " + String.join(" ", args), 0, process.waitFor());
    }
}
