package io.offsetkeeper;

import java.util.HashMap;
import java.util.Map;

/**
 * A driver that commits batches until it is killed, run by {@link KillTest} in a fresh JVM.
 * Batch {@code b} stores offset {@code b} in every one of the partitions, so a stored set that
 * is not all one value is a torn batch. Prints {@code COMMITTED b} after each commit returned.
 * Arguments: zookeeper bootstrap group topic partitions firstBatch lastBatch.
 *
 * <p>Ownership is off: each JVM is killed, and a killed driver's session would hold the
 * partitions until it expires; what is tested here is the atomicity of each batch.
 */
public final class CommitLoop {
    public static void main(String[] args) {
        String topic = args[3];
        int partitions = Integer.parseInt(args[4]);
        long first = Long.parseLong(args[5]);
        long last = Long.parseLong(args[6]);
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", args[1]);
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(args[0]).group(args[2])
                .kafkaParams(params).ownership(false).build()) {
            String[] topics = new String[partitions];
            int[] ids = new int[partitions];
            long[] offsets = new long[partitions];
            java.util.Arrays.fill(topics, topic);
            for (int p = 0; p < partitions; p++) {
                ids[p] = p;
            }
            Map<org.apache.kafka.common.TopicPartition, Long> batch = new HashMap<>();
            for (long b = first; b <= last; b++) {
                batch.clear();
                for (int p = 0; p < partitions; p++) {
                    batch.put(new org.apache.kafka.common.TopicPartition(topic, p), b);
                }
                keeper.commit(batch);
                System.out.println("COMMITTED " + b);
                System.out.flush();
            }
        }
    }
}
