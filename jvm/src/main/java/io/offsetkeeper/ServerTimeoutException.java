package io.offsetkeeper;

/** ZooKeeper or Kafka did not answer within the configured timeout. */
public class ServerTimeoutException extends OffsetKeeperException {
    private static final long serialVersionUID = 1L;

    /** Native code throws this class by name with this constructor. */
    public ServerTimeoutException(String message) {
        super(message);
    }
}
