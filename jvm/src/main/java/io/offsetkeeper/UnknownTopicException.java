package io.offsetkeeper;

/** A topic asked for does not exist on the brokers. */
public class UnknownTopicException extends KafkaClusterException {
    private static final long serialVersionUID = 1L;

    /** Native code throws this class by name with this constructor. */
    public UnknownTopicException(String message) {
        super(message);
    }
}
