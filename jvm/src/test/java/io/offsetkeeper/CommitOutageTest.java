package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.net.ServerSocket;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;

/**
 * Commits while ZooKeeper cannot be reached, across JNI: a ZooKeeper address nothing listens on
 * (a real refused connection, no mock) stands for the outage.
 */
public class CommitOutageTest {
    @Test
    public void aResultCarriesWhetherItWasDeferred() {
        CommitResult deferred = new CommitResult(0, 0, 0, 0, true, 3, 1_500);
        assertTrue(deferred.deferred());
        assertEquals(3, deferred.pending());
        assertEquals(Duration.ofMillis(1_500), deferred.behind());
        assertTrue(deferred.toString(), deferred.toString().contains("deferred, pending=3"));
        assertFalse(CommitResult.EMPTY.deferred());
        assertEquals(0, CommitResult.EMPTY.pending());
        assertEquals(Duration.ZERO, CommitResult.EMPTY.behind());
        assertFalse(CommitResult.EMPTY.toString().contains("deferred"));
    }

    @Test
    public void theToleranceIsChecked() {
        // The engine checks it when the keeper is built; no server is asked.
        OffsetKeeper.Builder builder = OffsetKeeper.builder().zookeeper("zk:2181").group("g")
                .kafkaParams(Collections.singletonMap("bootstrap.servers", "b:9092"));
        try {
            builder.commitOutageTolerance(-1).build();
            fail("a negative tolerance was taken");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains(
                    "offsetkeeper.commit.outage.tolerance.ms '-1' is not allowed; allowed: whole"
                    + " milliseconds from 0 to 86400000"));
        }
        builder.commitOutageTolerance(Duration.ZERO).build().close();
    }

    @Test
    public void commitsAreDeferredThenFailPastTheToleranceAndCloseIsBounded() throws Exception {
        Duration tolerance = Duration.ofSeconds(3);
        OffsetKeeper keeper = keeper(tolerance);
        long started = System.nanoTime();
        CommitResult first = keeper.commit(offsets(5, 0, 1));
        assertTrue(first.toString(), first.deferred());
        assertEquals(2, first.pending());
        assertEquals(0, first.written());
        CommitResult second = keeper.commit(offsets(6, 0));
        assertTrue(second.toString(), second.deferred());
        assertEquals("partition 1 is still pending", 2, second.pending());
        assertTrue(second.toString(), second.behind().compareTo(first.behind()) > 0);
        ServerTimeoutException thrown = null;
        while (thrown == null) {
            assertTrue("no commit failed 15 s into the outage",
                    System.nanoTime() - started < Duration.ofSeconds(15).toNanos());
            try {
                keeper.commit(offsets(7, 0));
            } catch (ServerTimeoutException e) {
                thrown = e;
            }
        }
        assertTrue("thrown before the tolerance passed",
                System.nanoTime() - started >= tolerance.toNanos());
        assertTrue(thrown.getMessage(), thrown.getMessage().contains("commit outage tolerance"));
        long closing = System.nanoTime();
        keeper.close();
        long tookMs = (System.nanoTime() - closing) / 1_000_000;
        // The bound: the ZooKeeper timeout (500 ms) and a moment to close the session.
        assertTrue("close took " + tookMs + " ms", tookMs < 2_000);
    }

    @Test
    public void onceACommitWasDeferredTheNextOnesOfTheOutageDoNotWaitTheTimeout() throws Exception {
        // A ZooKeeper timeout of 2 s: the first commit of the outage waits it out; the engine
        // then reconnects in the background, and the next commits are deferred within its
        // probe bound (250 ms) instead.
        OffsetKeeper keeper = keeper(Duration.ofMinutes(1), Duration.ofSeconds(2));
        long started = System.nanoTime();
        CommitResult first = keeper.commit(offsets(5, 0, 1));
        long firstMs = (System.nanoTime() - started) / 1_000_000;
        assertTrue(first.toString(), first.deferred());
        assertTrue("the first deferred commit took " + firstMs + " ms", firstMs >= 1_500);
        for (long offset = 6; offset <= 8; offset++) {
            long t = System.nanoTime();
            CommitResult next = keeper.commit(offsets(offset, 0));
            long tookMs = (System.nanoTime() - t) / 1_000_000;
            assertTrue(next.toString(), next.deferred());
            assertEquals(2, next.pending());
            assertTrue("a commit during the known outage took " + tookMs + " ms", tookMs < 1_000);
        }
        long closing = System.nanoTime();
        keeper.close();
        long closeMs = (System.nanoTime() - closing) / 1_000_000;
        // Closing still tries once to write the deferred offsets, within the timeout.
        assertTrue("close took " + closeMs + " ms", closeMs < 3_500);
    }

    @Test
    public void aToleranceOfZeroFailsAtOnce() throws Exception {
        try (OffsetKeeper keeper = keeper(Duration.ZERO)) {
            keeper.commit(offsets(5, 0));
            fail("a commit went through without ZooKeeper");
        } catch (ServerTimeoutException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("ZooKeeper at 127.0.0.1:"));
        }
    }

    /** A keeper whose ZooKeeper address refuses connections, with a ZooKeeper timeout of 500 ms. */
    private static OffsetKeeper keeper(Duration tolerance) throws Exception {
        return keeper(tolerance, Duration.ofMillis(500));
    }

    private static OffsetKeeper keeper(Duration tolerance, Duration zookeeperTimeout)
            throws Exception {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        Map<String, Object> kafkaParams = new HashMap<>();
        kafkaParams.put("bootstrap.servers", "127.0.0.1:1");
        kafkaParams.put("group.id", "outage");
        return OffsetKeeper.builder().zookeeper("127.0.0.1:" + port).kafkaParams(kafkaParams)
                .zookeeperTimeout(zookeeperTimeout).commitOutageTolerance(tolerance)
                .build();
    }

    private static Map<TopicPartition, Long> offsets(long offset, int... partitions) {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        for (int p : partitions) {
            offsets.put(new TopicPartition("t", p), offset);
        }
        return offsets;
    }
}
