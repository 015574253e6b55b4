package io.offsetkeeper;

import java.io.Serializable;
import org.apache.kafka.common.TopicPartition;

/** What {@link OffsetKeeper#loadWithReport} found and decided for one partition. */
public final class PartitionReport implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String topic;
    private final int partition;
    private final Long stored;
    private final String storedText;
    private final long earliest;
    private final long latest;
    private final long chosen;
    private final Action action;
    private final long recordsLost;
    private final String recreatedFromId;
    private final String recreatedToId;
    private final String recreatedReason;

    PartitionReport(String topic, int partition, Long stored, String storedText, long earliest,
            long latest, long chosen, Action action, long recordsLost, String recreatedFromId,
            String recreatedToId, String recreatedReason) {
        this.recreatedFromId = recreatedFromId;
        this.recreatedToId = recreatedToId;
        this.recreatedReason = recreatedReason;
        this.topic = topic;
        this.partition = partition;
        this.stored = stored;
        this.storedText = storedText;
        this.earliest = earliest;
        this.latest = latest;
        this.chosen = chosen;
        this.action = action;
        this.recordsLost = recordsLost;
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

    /** The stored offset, or null when nothing usable was stored (see {@link #storedText()}). */
    public Long stored() {
        return stored;
    }

    /** The stored value as the report shows it: {@code none}, the offset, or {@code corrupt "..."}. */
    public String storedText() {
        return storedText;
    }

    /** The partition's log start offset when loaded. */
    public long earliest() {
        return earliest;
    }

    /** The partition's log end offset when loaded (the offset of the next record). */
    public long latest() {
        return latest;
    }

    /** The offset handed to Spark. */
    public long chosen() {
        return chosen;
    }

    public Action action() {
        return action;
    }

    /** Records the job will never see because of this decision. */
    public long recordsLost() {
        return recordsLost;
    }

    /**
     * The topic ID the stored offsets were written for, when the topic was re-created since
     * and its recorded ID told so (the brokers' ID is {@link #recreatedToId()}); null
     * otherwise, including a re-creation told by record timestamps (see
     * {@link #recreatedReason()}).
     */
    public String recreatedFromId() {
        return recreatedFromId;
    }

    /** The brokers' topic ID when the topic was re-created since the offsets were stored; else null. */
    public String recreatedToId() {
        return recreatedToId;
    }

    /**
     * How offsetkeeper knew the topic was re-created, for a {@link Action#RECREATED} action:
     * {@code re-created (id A -> B)} when the recorded topic ID differs from the brokers', or
     * {@code re-created (no topic ID stored; partition P's offset S was committed at T, yet its
     * record at offset X is timestamped at or after T', N s later)} when no ID was recorded;
     * null for other actions.
     */
    public String recreatedReason() {
        return recreatedReason;
    }

    /**
     * The action as the report shows it: {@link #recreatedReason()} for a stored offset of a
     * re-created topic, else {@link Action#label()}.
     */
    public String actionText() {
        if (action == Action.RECREATED && recreatedReason != null) {
            return recreatedReason;
        }
        return action.label();
    }

    @Override
    public String toString() {
        return topic + "-" + partition + ": stored " + storedText + ", range [" + earliest + ", "
                + latest + "], chosen " + chosen + " (" + actionText() + ", " + recordsLost
                + " records lost)";
    }
}
