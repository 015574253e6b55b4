package io.offsetkeeper;

/** ZooKeeper refused or failed an operation, or its session could not be established. */
public class ZooKeeperException extends OffsetKeeperException {
    private static final long serialVersionUID = 1L;

    /** Native code throws this class by name with this constructor. */
    public ZooKeeperException(String message) {
        super(message);
    }
}
