package io.offsetkeeper;

import java.io.Serializable;
import org.apache.kafka.common.TopicPartition;

/**
 * How far a group's committed offset trails a partition's latest offset, as the engine computes
 * it for the Java and Scala APIs and the CLI's {@code describe} alike.
 */
public final class PartitionLag implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String topic;
    private final int partition;
    private final Long committed;
    private final long earliest;
    private final long latest;
    private final Long lag;

    PartitionLag(String topic, int partition, Long committed, long earliest, long latest,
            Long lag) {
        this.topic = topic;
        this.partition = partition;
        this.committed = committed;
        this.earliest = earliest;
        this.latest = latest;
        this.lag = lag;
    }

    public String topic() {
        return topic;
    }

    public int partition() {
        return partition;
    }

    /** This partition as Kafka's type (needs kafka-clients on the class path). */
    public TopicPartition topicPartition() {
        return new TopicPartition(topic, partition);
    }

    /** The stored offset, or null when none (or no usable one) is stored. */
    public Long committed() {
        return committed;
    }

    public long earliest() {
        return earliest;
    }

    public long latest() {
        return latest;
    }

    /**
     * {@code latest - committed}, as {@code kafka-consumer-groups} computes a lag: the records
     * the group has yet to read. Null (unknown; the CLI shows {@code -}) when nothing usable is
     * committed. Negative when the committed offset is above the latest, as after a topic was
     * re-created; the next load resets such a partition.
     */
    public Long lag() {
        return lag;
    }

    @Override
    public String toString() {
        return topic + "-" + partition + ": committed " + committed + ", range [" + earliest
                + ", " + latest + "], lag " + (lag == null ? "-" : lag);
    }
}
