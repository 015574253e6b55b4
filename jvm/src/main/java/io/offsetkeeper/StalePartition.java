package io.offsetkeeper;

import java.io.Serializable;

/**
 * An offset stored for a partition the topic no longer has (it was re-created with fewer
 * partitions): never handed to Spark, reported by {@link LoadReport#stalePartitions()} and in
 * a WARN line, and left in ZooKeeper until {@code offsetkeeper delete --stale} removes it.
 */
public final class StalePartition implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String topic;
    private final int partition;
    private final Long stored;
    private final String storedText;

    StalePartition(String topic, int partition, Long stored, String storedText) {
        this.topic = topic;
        this.partition = partition;
        this.stored = stored;
        this.storedText = storedText;
    }

    public String topic() {
        return topic;
    }

    public int partition() {
        return partition;
    }

    /** The stored offset, or null when the stored value is not an offset. */
    public Long stored() {
        return stored;
    }

    /** The stored value as the report shows it: the offset or {@code corrupt "..."}. */
    public String storedText() {
        return storedText;
    }

    @Override
    public String toString() {
        return topic + "-" + partition + ": stored " + storedText
                + ", partition no longer exists";
    }
}
