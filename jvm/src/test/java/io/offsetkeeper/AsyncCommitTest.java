package io.offsetkeeper;

import static io.offsetkeeper.TestCluster.tp;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.offsetkeeper.spark.SparkOffsets;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.streaming.kafka010.OffsetRange;
import org.junit.Test;

/**
 * {@code commitAsync}: batches written in order by the keeper's writer thread, merged while one
 * is in flight, flushed by {@code flush()} and {@code close()}, failures thrown by the next call.
 * Checked against what ZooKeeper holds.
 */
public class AsyncCommitTest {

    @Test
    public void theLastOfManyBatchesIsStoredAndLoaded() throws Exception {
        String topic = TestCluster.createTopic(2);
        TestCluster.produce(topic, 0, 200);
        TestCluster.produce(topic, 1, 400);
        String group = TestCluster.unique("group");
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            keeper.load(Collections.singleton(topic));
            for (long i = 1; i <= 200; i++) {
                if (i % 2 == 0) { // the array path, as a job's foreachRDD commits
                    SparkOffsets.commitAsync(keeper, new OffsetRange[] {
                        OffsetRange.create(topic, 0, i - 1, i),
                        OffsetRange.create(topic, 1, 2 * i - 2, 2 * i)});
                } else {
                    Map<TopicPartition, Long> batch = new LinkedHashMap<>();
                    batch.put(tp(topic, 0), i);
                    batch.put(tp(topic, 1), 2 * i);
                    keeper.commitAsync(batch);
                }
            }
            keeper.flush();
            assertEquals("200", TestCluster.readOffset(group, topic, 0));
            assertEquals("400", TestCluster.readOffset(group, topic, 1));
            assertTrue("nothing is pending", keeper.flush(Duration.ZERO));
        }
        try (OffsetKeeper next = TestCluster.keeper(group)) {
            Map<TopicPartition, Long> loaded = next.load(Collections.singleton(topic));
            assertEquals(Long.valueOf(200), loaded.get(tp(topic, 0)));
            assertEquals(Long.valueOf(400), loaded.get(tp(topic, 1)));
        }
    }

    @Test
    public void closeWritesTheLastBatch() throws Exception {
        String topic = TestCluster.createTopic(1);
        TestCluster.produce(topic, 0, 10);
        String group = TestCluster.unique("group");
        OffsetKeeper keeper = TestCluster.keeper(group);
        keeper.load(Collections.singleton(topic));
        keeper.commitAsync(Collections.singletonMap(tp(topic, 0), 5L));
        keeper.commitAsync(Collections.singletonMap(tp(topic, 0), 9L));
        keeper.close();
        assertEquals("9", TestCluster.readOffset(group, topic, 0));
        try {
            keeper.commitAsync(Collections.singletonMap(tp(topic, 0), 10L));
            fail("a closed keeper took a batch");
        } catch (IllegalStateException expected) {
            assertTrue(expected.getMessage(), expected.getMessage().contains("is closed"));
        }
        try (OffsetKeeper next = TestCluster.keeper(group)) {
            assertEquals(Long.valueOf(9), next.load(Collections.singleton(topic)).get(tp(topic, 0)));
        }
    }

    /** The fencing recipe of rust/core/tests/reliability.rs: an operator's write behind the job. */
    @Test
    public void aConflictReachesTheHandlerAndEveryLaterCallAndNothingMoreIsWritten()
            throws Exception {
        String topic = TestCluster.createTopic(2);
        TestCluster.produce(topic, 0, 100);
        TestCluster.produce(topic, 1, 100);
        String group = TestCluster.unique("group");
        BlockingQueue<OffsetKeeperException> failures = new LinkedBlockingQueue<>();
        OffsetKeeper keeper = TestCluster.keeperBuilder(group)
                .onAsyncCommitFailure(failures::add).build();
        // The handler is serialized with the keeper (Spark checkpoints); the queue is Serializable.
        SerializationTest.roundTrip(keeper).close();
        try {
            keeper.load(Collections.singleton(topic));
            keeper.commitAsync(offsets(topic, 10));
            keeper.flush();
            assertEquals("10", TestCluster.readOffset(group, topic, 0));

            TestCluster.write(TestCluster.offsetPath(group, topic, 1), "3");
            keeper.commitAsync(offsets(topic, 20));
            OffsetKeeperException failure = failures.poll(60, TimeUnit.SECONDS);
            assertNotNull("the handler got no failure", failure);
            assertTrue(failure.toString(), failure instanceof CommitConflictException);
            for (int call = 0; call < 2; call++) { // for good, not once
                try {
                    keeper.commitAsync(offsets(topic, 30));
                    fail("commitAsync took a batch after a conflict");
                } catch (CommitConflictException expected) {
                    assertSame(failure, expected);
                }
            }
            try {
                keeper.flush();
                fail("flush returned after a conflict");
            } catch (CommitConflictException expected) {
                assertSame(failure, expected);
            }
            assertEquals("10", TestCluster.readOffset(group, topic, 0));
            assertEquals("3", TestCluster.readOffset(group, topic, 1));
        } finally {
            keeper.close(); // the conflict was thrown already: close does not throw it again
        }
        assertEquals("10", TestCluster.readOffset(group, topic, 0));
        assertEquals("3", TestCluster.readOffset(group, topic, 1));
        assertTrue("one failure, one write: " + failures, failures.isEmpty());
    }

    /**
     * A keeper that did not load takes ownership at its first commit (as one deserialized from a
     * checkpoint does): refused while another keeper holds the group, then retried.
     */
    @Test
    public void aFailedWriteIsThrownOnceAndItsOffsetsAreWrittenLater() throws Exception {
        String topic = TestCluster.createTopic(1);
        TestCluster.produce(topic, 0, 10);
        String group = TestCluster.unique("group");
        OffsetKeeper owner = TestCluster.keeper(group);
        owner.load(Collections.singleton(topic));
        BlockingQueue<OffsetKeeperException> failures = new LinkedBlockingQueue<>();
        try (OffsetKeeper second = TestCluster.keeperBuilder(group).ownershipWait(0)
                .onAsyncCommitFailure(failures::add).build()) {
            second.commitAsync(Collections.singletonMap(tp(topic, 0), 4L));
            OffsetKeeperException failure = failures.poll(60, TimeUnit.SECONDS);
            assertTrue(String.valueOf(failure), failure instanceof PartitionOwnedException);
            try {
                second.commitAsync(Collections.singletonMap(tp(topic, 0), 7L));
                fail("the failure was not thrown by the next call");
            } catch (PartitionOwnedException expected) {
                assertSame(failure, expected); // and 7 was not taken
            }
            owner.close();
            // The writer wrote 4 again once the failure was thrown, perhaps before the owner
            // closed: each such failure is thrown once, and a next flush writes again.
            int refused = 0;
            while (true) {
                try {
                    second.flush();
                    break;
                } catch (PartitionOwnedException before) {
                    assertTrue("flush failed " + refused + " times", ++refused < 5);
                }
            }
            assertEquals("4", TestCluster.readOffset(group, topic, 0));
            second.commitAsync(Collections.singletonMap(tp(topic, 0), 8L));
        } finally {
            owner.close();
        }
        assertEquals("8", TestCluster.readOffset(group, topic, 0));
    }

    @Test
    public void aLowerOffsetNeverMovesTheStoredOneBack() throws Exception {
        String topic = TestCluster.createTopic(1);
        TestCluster.produce(topic, 0, 100);
        String group = TestCluster.unique("group");
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            keeper.load(Collections.singleton(topic));
            keeper.commitAsync(Collections.singletonMap(tp(topic, 0), 50L));
            keeper.flush();
            keeper.commitAsync(Collections.singletonMap(tp(topic, 0), 20L)); // after the write
            keeper.flush();
            assertEquals("50", TestCluster.readOffset(group, topic, 0));
            keeper.commitAsync(Collections.singletonMap(tp(topic, 0), 80L));
            keeper.commitAsync(Collections.singletonMap(tp(topic, 0), 60L)); // merged or after
            keeper.flush();
            assertEquals("80", TestCluster.readOffset(group, topic, 0));
        }
    }

    @Test
    public void badInputIsRefusedAtOnce() {
        // No server listens on port 1: nothing may be handed to the writer.
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", "127.0.0.1:1");
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper("127.0.0.1:1").group("g")
                .kafkaParams(params).build()) {
            refused("offset -1 for t-0 is negative",
                    () -> keeper.commitAsync(Collections.singletonMap(tp("t", 0), -1L)));
            refused("partition -2 of topic 't' is negative",
                    () -> keeper.commitAsync(Collections.singletonMap(tp("t", -2), 1L)));
            refused("topic name 'a/b' contains '/'; allowed: [a-zA-Z0-9._-]",
                    () -> keeper.commitAsync(Collections.singletonMap(tp("a/b", 0), 1L)));
            refused("offsets value of t-0 is null",
                    () -> keeper.commitAsync(Collections.singletonMap(tp("t", 0), null)));
            refused("partition t-0 appears twice, in ranges[0] and ranges[1]",
                    () -> SparkOffsets.commitAsync(keeper, new OffsetRange[] {
                        OffsetRange.create("t", 0, 0, 1), OffsetRange.create("t", 0, 1, 2)}));
            refused("ranges[1] is null", () -> SparkOffsets.commitAsync(keeper,
                    new OffsetRange[] {OffsetRange.create("t", 0, 0, 1), null}));
            SparkOffsets.commitAsync(keeper, new OffsetRange[0]); // takes nothing
            assertTrue("nothing was taken", keeper.flush(Duration.ZERO));
        }
    }

    private static void refused(String needle, Runnable call) {
        try {
            call.run();
            fail("taken: " + needle);
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains(needle));
        }
    }

    private static Map<TopicPartition, Long> offsets(String topic, long offset) {
        Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
        offsets.put(tp(topic, 0), offset);
        offsets.put(tp(topic, 1), offset);
        return offsets;
    }
}
