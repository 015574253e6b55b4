package io.offsetkeeper;

/**
 * A load, or the first commit of a keeper that did not load (one deserialized from a Spark
 * checkpoint), found partitions of the group owned by another running instance (ephemeral nodes under
 * {@code /consumers/<group>/owners}, as Kafka's old consumer kept them), and the owner did not
 * go within the configured wait ({@link OffsetKeeper.Builder#ownershipWait}). The message names
 * the owner: its consumer id, host, pid, since when and ZooKeeper session.
 */
public class PartitionOwnedException extends OffsetKeeperException {
    private static final long serialVersionUID = 1L;

    /** Native code throws this class by name with this constructor. */
    public PartitionOwnedException(String message) {
        super(message);
    }
}
