package io.offsetkeeper.bench;

import io.offsetkeeper.CommitResult;
import io.offsetkeeper.OffsetKeeper;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/**
 * A profiling driver, not a benchmark: the bench's "commit 1 of P" through the Java API in a
 * loop (every partition of W(P) in the map, one changed), for JFR or perf on one JVM. Run on a
 * cluster that {@code gradle bench} left W(P) in: {@code java -cp $(cat
 * build/bench/classpath.txt) io.offsetkeeper.bench.ProfileCommit ZK BOOTSTRAP P GROUP ROUNDS
 * [EVICT_MB [hash]]}. Prints the median of each tenth of the rounds, to show the JIT warming up.
 * The map is the bench's, topic by topic; with {@code hash} a {@code HashMap}, whose order
 * interleaves the topics as Spark's offset ranges do.
 *
 * <p>In the bench the other contenders run between two commits and evict this one's data from
 * the CPU caches. With {@code EVICT_MB} each measurement follows a write of that many MB, and the
 * driver also prints, as medians, the parts of a commit of P entries: a map of one entry (the
 * round trip and what every commit pays), the walk of the P-entry map alone, and a commit of
 * a P-entry map as stored (the walk, the bridge and the engine's pass; no request).
 */
public final class ProfileCommit {
    private ProfileCommit() {}

    public static void main(String[] args) throws Exception {
        String zk = args[0];
        String bootstrap = args[1];
        Workload w = new Workload(Integer.parseInt(args[2]));
        String group = args[3];
        int rounds = Integer.parseInt(args[4]);
        byte[] evict = new byte[(args.length > 5 ? Integer.parseInt(args[5]) : 0) << 20];
        boolean hashOrder = args.length > 6 && args[6].equals("hash");
        Map<String, Object> params = new LinkedHashMap<>();
        params.put("bootstrap.servers", bootstrap);
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(zk).kafkaParams(params)
                .group(group).build()) {
            keeper.load(w.topics);
            long base = System.currentTimeMillis();
            keeper.commit(w.allAt(base));
            TopicPartition first = w.partitions.get(0);
            long[] nanos = new long[rounds];
            long[] oneEntry = new long[rounds];
            long[] walk = new long[rounds];
            long[] noWrite = new long[rounds];
            long sum = 0;
            for (int r = 0; r < rounds; r++) {
                Map<TopicPartition, Long> one =
                        hashOrder ? new HashMap<>(w.allAt(base)) : w.allAt(base);
                one.put(first, base + 1 + 2 * r);
                evict(evict);
                long start = System.nanoTime();
                long written = keeper.commit(one).written();
                nanos[r] = System.nanoTime() - start;
                if (written != 1) {
                    throw new IllegalStateException(written + " written, 1 expected");
                }
                if (evict.length == 0) {
                    continue;
                }
                evict(evict);
                start = System.nanoTime();
                written = keeper.commit(Collections.singletonMap(first, base + 2 + 2 * r)).written();
                oneEntry[r] = System.nanoTime() - start;
                if (written != 1) {
                    throw new IllegalStateException(written + " written of a 1-entry map, 1 expected");
                }
                evict(evict);
                start = System.nanoTime();
                for (Map.Entry<TopicPartition, Long> e : one.entrySet()) {
                    sum += e.getKey().partition() + e.getKey().topic().length() + e.getValue();
                }
                walk[r] = System.nanoTime() - start;
                // Every entry as stored now (the 1-entry commit wrote the first): no request.
                one.put(first, base + 2 + 2 * r);
                evict(evict);
                start = System.nanoTime();
                CommitResult none = keeper.commit(one);
                noWrite[r] = System.nanoTime() - start;
                if (none.written() != 0 || none.unchanged() != w.size) {
                    throw new IllegalStateException(none.written() + " written and "
                            + none.unchanged() + " unchanged of a map as stored, 0 and " + w.size
                            + " expected");
                }
            }
            int tenth = Math.max(1, rounds / 10);
            StringBuilder medians = new StringBuilder();
            for (int from = 0; from + tenth <= rounds; from += tenth) {
                medians.append(String.format(" %.2f",
                        median(Arrays.copyOfRange(nanos, from, from + tenth))));
            }
            System.out.printf("commit 1 of P=%d: medians per tenth of %d rounds (ms):%s%n", w.size,
                    rounds, medians);
            if (evict.length > 0) {
                System.out.printf("after writing %d MB each: commit 1 of P %.3f ms; a map of 1 entry"
                        + " %.3f ms; walking the map alone %.3f ms; a map as stored (no request)"
                        + " %.3f ms (checksum %d)%n", evict.length >> 20, median(nanos),
                        median(oneEntry), median(walk), median(noWrite), sum);
            }
        }
    }

    private static void evict(byte[] bytes) {
        for (int i = 0; i < bytes.length; i += 64) {
            bytes[i]++;
        }
    }

    private static double median(long[] nanos) {
        return Results.median(nanos) / 1e6;
    }
}
