package io.offsetkeeper.spark;

import io.offsetkeeper.CommitResult;
import io.offsetkeeper.OffsetKeeper;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.streaming.StreamingContext;
import org.apache.spark.streaming.StreamingContextState;
import org.apache.spark.streaming.api.java.JavaStreamingContext;
import org.apache.spark.streaming.kafka010.OffsetRange;
import org.apache.spark.util.ShutdownHookManager;
import scala.runtime.AbstractFunction0;
import scala.runtime.BoxedUnit;

/**
 * Spark's offset types for {@link io.offsetkeeper.OffsetKeeper}, for Java jobs. The keeper
 * itself needs no Spark class, so that jobs outside Spark compile against kafka-clients alone;
 * Spark Streaming jobs commit a batch with
 *
 * <pre>{@code
 * OffsetRange[] ranges = ((HasOffsetRanges) rdd.rdd()).offsetRanges();
 * // ... process the batch ...
 * SparkOffsets.commit(keeper, ranges);
 * }</pre>
 *
 * which commits what {@code keeper.commit(SparkOffsets.untilOffsets(ranges))} commits, without
 * building the map; {@link #commitAsync} commits it without waiting. Scala jobs use
 * {@code SparkOffsetKeeper}, whose {@code commit} takes the ranges directly (and calls
 * {@link #commit}).
 */
public final class SparkOffsets {
    private SparkOffsets() {}

    /**
     * Where {@link #closeOnShutdown} runs among Spark's own shutdown hooks: before them all
     * (a higher priority runs first). Spark stops its local executor at its default priority
     * (100, {@code ShutdownHookManager.DEFAULT_SHUTDOWN_PRIORITY}), its streaming context at 51
     * and the SparkContext at 50; a graceful stop after the executor has stopped waits for
     * batches that can no longer run. A constant, not read from Spark: this class is used by
     * jobs whose class path has Spark's Kafka connector and kafka-clients only.
     */
    static final int SHUTDOWN_PRIORITY = 110;

    /**
     * At the JVM's shutdown (SIGTERM, {@code System.exit}, the end of {@code main}), stops the
     * streaming context gracefully, then closes the keeper. The graceful stop processes the
     * batch that is running and the one Spark generates at the stop, so their commits are
     * written: a restart goes on from the last batch, processing nothing twice. Closing then
     * releases the group's ownership nodes, so a restart on another host does not wait for this
     * driver's ZooKeeper session to expire.
     *
     * <p>It runs in Spark's shutdown hook manager before Spark's own hooks, which stop the
     * executor and the SparkContext: stopping the context from a JVM shutdown hook of one's own
     * races those hooks and can hang (a graceful stop waiting for a batch whose executor has
     * stopped). The stop takes as long as the two batches take, bounded by Spark's
     * {@code spark.streaming.gracefulStopTimeout} (ten batch intervals by default) and by the
     * time Spark's shutdown hooks may take (Hadoop's {@code hadoop.service.shutdown.timeout},
     * 30 s by default); a supervisor that sends SIGKILL sooner ends it earlier, and the batch
     * then running is processed again after the restart (at-least-once).
     *
     * <p>Call it once, after building the keeper and before {@code ssc.start()}. A context
     * already stopped when the JVM shuts down is left as it is; the keeper is closed all the
     * same.
     *
     * @param keeper the job's keeper
     * @param ssc the job's streaming context
     * @throws IllegalArgumentException when an argument is null
     */
    public static void closeOnShutdown(OffsetKeeper keeper, StreamingContext ssc) {
        if (keeper == null) {
            throw new IllegalArgumentException("keeper is null");
        }
        if (ssc == null) {
            throw new IllegalArgumentException("ssc is null");
        }
        ShutdownHookManager.addShutdownHook(SHUTDOWN_PRIORITY, new AbstractFunction0<BoxedUnit>() {
            @Override
            public BoxedUnit apply() {
                try {
                    if (ssc.getState() == StreamingContextState.ACTIVE) {
                        ssc.stop(false, true); // Spark's own hooks stop the SparkContext next
                    }
                } finally {
                    keeper.close();
                }
                return BoxedUnit.UNIT;
            }
        });
    }

    /** {@link #closeOnShutdown(OffsetKeeper, StreamingContext)} for a Java streaming context. */
    public static void closeOnShutdown(OffsetKeeper keeper, JavaStreamingContext ssc) {
        if (ssc == null) {
            throw new IllegalArgumentException("ssc is null");
        }
        closeOnShutdown(keeper, ssc.ssc());
    }

    /**
     * The {@code untilOffset} (the next offset to read) of every range, by partition, in the
     * order of the ranges.
     *
     * <p>A partition named by two ranges is refused: Spark gives each partition one range per
     * batch, so a duplicate means the input was put together wrongly (two batches concatenated,
     * say), and committing either offset could skip or repeat records.
     *
     * @param ranges a batch's ranges, {@code ((HasOffsetRanges) rdd.rdd()).offsetRanges()}
     * @return a new mutable map, empty for an empty array
     * @throws IllegalArgumentException when {@code ranges}, one of its elements or a topic is
     *     null (naming the index), or when a partition appears twice (naming both indexes)
     */
    public static Map<TopicPartition, Long> untilOffsets(OffsetRange[] ranges) {
        if (ranges == null) {
            throw new IllegalArgumentException("ranges is null");
        }
        Map<TopicPartition, Long> offsets = new LinkedHashMap<>(ranges.length * 2);
        for (int i = 0; i < ranges.length; i++) {
            OffsetRange range = ranges[i];
            if (range == null) {
                throw new IllegalArgumentException("ranges[" + i + "] is null");
            }
            if (range.topic() == null) {
                throw new IllegalArgumentException("ranges[" + i + "].topic is null");
            }
            TopicPartition tp = new TopicPartition(range.topic(), range.partition());
            if (offsets.put(tp, range.untilOffset()) != null) {
                throw new IllegalArgumentException("partition " + tp + " appears twice, in ranges["
                        + firstIndex(ranges, tp) + "] and ranges[" + i
                        + "]; a batch has one range per partition");
            }
        }
        return offsets;
    }

    /**
     * Commits the {@code untilOffset} (the next offset to read) of every range, all or nothing,
     * as {@code keeper.commit(untilOffsets(ranges))} does, with the same results and the same
     * errors, but reading the ranges straight into the columns that cross to the engine, with
     * no map in between. An empty array does nothing.
     *
     * <p>A partition named by two ranges is refused before anything is written, as by
     * {@link #untilOffsets}.
     *
     * @param keeper the job's keeper
     * @param ranges a batch's ranges, {@code ((HasOffsetRanges) rdd.rdd()).offsetRanges()}
     * @return what {@link OffsetKeeper#commit(Map)} returns
     * @throws IllegalArgumentException when {@code keeper}, {@code ranges}, one of its elements
     *     or a topic is null, or a partition appears twice (with {@link #untilOffsets}'s
     *     messages), or for an offset or partition the keeper refuses; nothing was written
     * @see OffsetKeeper#commit(Map) for the other exceptions
     */
    public static CommitResult commit(OffsetKeeper keeper, OffsetRange[] ranges) {
        if (keeper == null) {
            throw new IllegalArgumentException("keeper is null");
        }
        if (ranges == null) {
            throw new IllegalArgumentException("ranges is null");
        }
        try {
            return keeper.commit(new Ranges(ranges));
        } catch (RuntimeException e) {
            // The commit threw: untilOffsets' own refusals come first, as
            // when the map is built before the commit, so that a null range or a partition
            // named twice is reported with its index, ahead of what the engine found.
            untilOffsets(ranges);
            throw e;
        }
    }

    /**
     * Commits the {@code untilOffset} of every range without waiting, as
     * {@code keeper.commitAsync(untilOffsets(ranges))} does, reading the ranges straight from the
     * array: the keeper's writer thread writes them, in order, merging batches handed over while
     * it writes (each partition keeping its highest offset). Returns at once. An empty array
     * takes nothing.
     *
     * <p>The guarantee: after a crash, at most the pending and in-flight batches are processed
     * again (at-least-once); the stored offsets are never more than the in-flight plus the
     * pending batch behind what was handed to {@code commitAsync}. A failed write is thrown by
     * the next call (see {@link OffsetKeeper#commitAsync(Map)}); {@link OffsetKeeper#flush()}
     * waits for the writes, and {@link OffsetKeeper#close()} writes what is left.
     *
     * @param keeper the job's keeper
     * @param ranges a batch's ranges, {@code ((HasOffsetRanges) rdd.rdd()).offsetRanges()}
     * @throws IllegalArgumentException when {@code keeper}, {@code ranges}, one of its elements
     *     or a topic is null, or a partition appears twice (with {@link #untilOffsets}'s
     *     messages), or for an offset or partition the keeper refuses; nothing is taken
     * @see OffsetKeeper#commitAsync(Map) for the other exceptions
     */
    public static void commitAsync(OffsetKeeper keeper, OffsetRange[] ranges) {
        if (keeper == null) {
            throw new IllegalArgumentException("keeper is null");
        }
        if (ranges == null) {
            throw new IllegalArgumentException("ranges is null");
        }
        try {
            keeper.commitAsync(new Ranges(ranges));
        } catch (IllegalArgumentException e) {
            untilOffsets(ranges); // its messages name the indexes, as for commit
            throw e;
        }
    }

    /** The ranges as the keeper reads a batch; a null range or topic is left to untilOffsets. */
    private static final class Ranges implements OffsetKeeper.Entries {
        private final OffsetRange[] ranges;

        Ranges(OffsetRange[] ranges) {
            this.ranges = ranges;
        }

        @Override
        public int size() {
            return ranges.length;
        }

        @Override
        public String topic(int i) {
            OffsetRange range = ranges[i];
            return range == null ? null : range.topic();
        }

        @Override
        public int partition(int i) {
            return ranges[i].partition();
        }

        @Override
        public long offset(int i) {
            return ranges[i].untilOffset();
        }
    }

    /** The first range of the partition: searched only to name it in the error. */
    private static int firstIndex(OffsetRange[] ranges, TopicPartition tp) {
        int i = 0;
        while (!ranges[i].topic().equals(tp.topic()) || ranges[i].partition() != tp.partition()) {
            i++;
        }
        return i;
    }
}
