package io.offsetkeeper.bench;

import io.offsetkeeper.OffsetKeeper;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/**
 * A profiling driver, not a benchmark: warm loads of W(P) through the Java API in a loop, for
 * JFR or perf on one JVM. Run on a cluster that {@code gradle bench} left W(P) in:
 * {@code java -cp $(cat build/bench/classpath.txt) io.offsetkeeper.bench.ProfileLoad ZK
 * BOOTSTRAP P ROUNDS}.
 */
public final class ProfileLoad {
    private ProfileLoad() {}

    public static void main(String[] args) throws Exception {
        String zk = args[0];
        String bootstrap = args[1];
        Workload w = new Workload(Integer.parseInt(args[2]));
        int rounds = Integer.parseInt(args[3]);
        Map<String, Object> params = new LinkedHashMap<>();
        params.put("bootstrap.servers", bootstrap);
        params.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        params.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(zk).kafkaParams(params)
                .group(w.loadGroup).build()) {
            long[] nanos = new long[rounds];
            for (int r = 0; r < rounds; r++) {
                long start = System.nanoTime();
                Map<TopicPartition, Long> offsets = keeper.load(w.topics);
                nanos[r] = System.nanoTime() - start;
                if (offsets.size() != w.size) {
                    throw new IllegalStateException(offsets.size() + " partitions, " + w.size + " expected");
                }
            }
            Arrays.sort(nanos);
            System.out.printf("warm load P=%d: median %.2f ms, min %.2f ms over %d rounds%n", w.size,
                    nanos[rounds / 2] / 1e6, nanos[0] / 1e6, rounds);
        }
    }
}
