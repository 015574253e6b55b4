package io.offsetkeeper.bench;

import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/**
 * One way of loading and committing offsets. Each operation returns the nanoseconds it took,
 * measured around the operation only; set-up the operation does not include (opening the warm
 * clients, closing cold ones) happens outside the clock.
 */
interface Contender extends AutoCloseable {
    /** Short name: B1, B2, F, offsetkeeper. */
    String name();

    /** Whether this contender takes part in {@code op} (one of {@link Bench#OPS}). */
    default boolean measures(String op) {
        return true;
    }

    /** Prepares the warm clients for a workload (not timed). */
    void open(Workload w) throws Exception;

    /** A load with new clients: connecting is part of it. */
    Timed loadCold(Workload w) throws Exception;

    /** A load on the clients of {@link #open}. */
    Timed loadWarm(Workload w) throws Exception;

    /** Commits {@code offsets} (a Spark batch: every partition); {@code changed} lists the ones that differ from what is stored. */
    long commit(Workload w, Map<TopicPartition, Long> offsets, Map<TopicPartition, Long> changed)
            throws Exception;

    @Override
    void close() throws Exception;

    /** A load's time and answer (null answer: the contender does not validate, only counts). */
    final class Timed {
        final long nanos;
        final Map<TopicPartition, Long> offsets;
        final int count;

        Timed(long nanos, Map<TopicPartition, Long> offsets, int count) {
            this.nanos = nanos;
            this.offsets = offsets;
            this.count = count;
        }
    }
}
