package io.offsetkeeper;

import static io.offsetkeeper.TestCluster.tp;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;

/** One keeper shared by 8 threads, as a driver's batches and monitoring threads would. */
public class ConcurrencyTest {
    private static final int THREADS = 8;
    private static final int ROUNDS = 15;

    @Test
    public void eightThreadsLoadAndCommitAtOnce() throws Exception {
        String topic = TestCluster.createTopic(THREADS);
        for (int p = 0; p < THREADS; p++) {
            TestCluster.produce(topic, p, ROUNDS * 10);
        }
        String group = TestCluster.unique("group");
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            CyclicBarrier start = new CyclicBarrier(THREADS);
            List<Future<?>> results = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                TopicPartition mine = tp(topic, t);
                results.add(pool.submit((Callable<Void>) () -> {
                    start.await();
                    for (int round = 1; round <= ROUNDS; round++) {
                        long offset = round * 10L - mine.partition(); // distinct per thread
                        keeper.commit(Collections.singletonMap(mine, offset));
                        Map<TopicPartition, Long> loaded = keeper.load(Collections.singleton(topic));
                        assertEquals(THREADS, loaded.size());
                        assertEquals(mine + " round " + round, Long.valueOf(offset), loaded.get(mine));
                    }
                    return null;
                }));
            }
            for (Future<?> result : results) {
                result.get(120, TimeUnit.SECONDS); // rethrows a thread's failure
            }
            for (int t = 0; t < THREADS; t++) {
                assertEquals(String.valueOf(ROUNDS * 10L - t), TestCluster.readOffset(group, topic, t));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    public void closeWaitsForCallsInFlight() throws Exception {
        String topic = TestCluster.createTopic(2);
        OffsetKeeper keeper = TestCluster.keeper(TestCluster.unique("group"));
        keeper.load(Collections.singleton(topic));
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        CountDownLatch running = new CountDownLatch(THREADS);
        List<Future<Integer>> results = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            results.add(pool.submit(() -> {
                int calls = 0;
                running.countDown();
                while (true) {
                    try {
                        keeper.lag(Collections.singleton(topic));
                        calls++;
                    } catch (IllegalStateException closed) {
                        return calls; // the only way out: anything else fails the test
                    }
                }
            }));
        }
        running.await();
        Thread.sleep(300);
        keeper.close();
        try {
            for (Future<Integer> result : results) {
                assertTrue(result.get(60, TimeUnit.SECONDS) >= 0);
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
