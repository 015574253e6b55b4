package io.offsetkeeper.spark;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.streaming.kafka010.OffsetRange;

/**
 * Spark's offset types turned into what {@link io.offsetkeeper.OffsetKeeper} takes, for Java
 * jobs. The keeper itself needs no Spark class, so that jobs outside Spark compile against
 * kafka-clients alone; Spark Streaming jobs commit a batch with
 *
 * <pre>{@code
 * OffsetRange[] ranges = ((HasOffsetRanges) rdd.rdd()).offsetRanges();
 * // ... process the batch ...
 * keeper.commit(SparkOffsets.untilOffsets(ranges));
 * }</pre>
 *
 * Scala jobs use {@code SparkOffsetKeeper}, whose {@code commit} takes the ranges directly.
 */
public final class SparkOffsets {
    private SparkOffsets() {}

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

    /** The first range of the partition: searched only to name it in the error. */
    private static int firstIndex(OffsetRange[] ranges, TopicPartition tp) {
        int i = 0;
        while (!ranges[i].topic().equals(tp.topic()) || ranges[i].partition() != tp.partition()) {
            i++;
        }
        return i;
    }
}
