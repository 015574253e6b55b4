package io.offsetkeeper;

import java.io.Serializable;
import org.apache.kafka.common.TopicPartition;

/** How far a group's committed offset trails a partition's latest offset. */
public final class PartitionLag implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String topic;
    private final int partition;
    private final Long committed;
    private final long earliest;
    private final long latest;

    PartitionLag(String topic, int partition, Long committed, long earliest, long latest) {
        this.topic = topic;
        this.partition = partition;
        this.committed = committed;
        this.earliest = earliest;
        this.latest = latest;
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
     * {@code latest - committed}, or {@code latest - earliest} when nothing is committed (all
     * that is left in the log). Negative when the committed offset is above the latest, as after
     * a topic was re-created; the next load resets such a partition.
     */
    public long lag() {
        return latest - (committed != null ? committed : earliest);
    }

    @Override
    public String toString() {
        return topic + "-" + partition + ": committed " + committed + ", range [" + earliest
                + ", " + latest + "], lag " + lag();
    }
}
