package io.offsetkeeper.bench;

import io.offsetkeeper.OffsetKeeper;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/**
 * A profiling driver, not a benchmark: the bench's "commit 1 of P" through the Java API in a
 * loop (every partition of W(P) in the map, one changed), for JFR or perf on one JVM. Run on a
 * cluster that {@code gradle bench} left W(P) in: {@code java -cp $(cat
 * build/bench/classpath.txt) io.offsetkeeper.bench.ProfileCommit ZK BOOTSTRAP P GROUP ROUNDS}.
 * Prints the median of each tenth of the rounds, to show the JIT warming up.
 */
public final class ProfileCommit {
    private ProfileCommit() {}

    public static void main(String[] args) throws Exception {
        String zk = args[0];
        String bootstrap = args[1];
        Workload w = new Workload(Integer.parseInt(args[2]));
        String group = args[3];
        int rounds = Integer.parseInt(args[4]);
        Map<String, Object> params = new LinkedHashMap<>();
        params.put("bootstrap.servers", bootstrap);
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(zk).kafkaParams(params)
                .group(group).build()) {
            keeper.load(w.topics);
            long base = System.currentTimeMillis();
            keeper.commit(w.allAt(base));
            long[] nanos = new long[rounds];
            for (int r = 0; r < rounds; r++) {
                Map<TopicPartition, Long> one = w.allAt(base);
                one.put(w.partitions.get(0), base + 1 + r);
                long start = System.nanoTime();
                long written = keeper.commit(one).written();
                nanos[r] = System.nanoTime() - start;
                if (written != 1) {
                    throw new IllegalStateException(written + " written, 1 expected");
                }
            }
            int tenth = Math.max(1, rounds / 10);
            StringBuilder medians = new StringBuilder();
            for (int from = 0; from + tenth <= rounds; from += tenth) {
                long[] part = Arrays.copyOfRange(nanos, from, from + tenth);
                Arrays.sort(part);
                medians.append(String.format(" %.2f", part[tenth / 2] / 1e6));
            }
            System.out.printf("commit 1 of P=%d: medians per tenth of %d rounds (ms):%s%n", w.size,
                    rounds, medians);
        }
    }
}
