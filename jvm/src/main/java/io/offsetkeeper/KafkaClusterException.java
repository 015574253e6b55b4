package io.offsetkeeper;

/** A Kafka request (metadata, list offsets) failed. */
public class KafkaClusterException extends OffsetKeeperException {
    private static final long serialVersionUID = 1L;

    /** Native code throws this class by name with this constructor. */
    public KafkaClusterException(String message) {
        super(message);
    }
}
