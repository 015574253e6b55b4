package io.offsetkeeper;

/**
 * ZooKeeper or Kafka did not answer within the configured timeout, whichever layer noticed it;
 * the message names the servers and the operation. {@link OffsetKeeper#commit} throws it only
 * once commits have failed for longer than the commit outage tolerance (the message says for
 * how long), or at once with a tolerance of zero; before that a commit is deferred.
 */
public class ServerTimeoutException extends OffsetKeeperException {
    private static final long serialVersionUID = 1L;

    /** Native code throws this class by name with this constructor. */
    public ServerTimeoutException(String message) {
        super(message);
    }
}
