package io.offsetkeeper;

/**
 * A commit was refused because another writer changed one of its partitions since this keeper
 * last saw it (a second job on the same group, a zombie driver, an operator's reset), or took
 * the group over after this keeper's ZooKeeper session expired. Nothing of the commit was
 * written; the message names the partition and the znode versions.
 *
 * <p>A job that meets it should stop: another instance is committing for the group. To take
 * over deliberately, load again (which adopts what is stored) or turn fencing off with
 * {@link OffsetKeeper.Builder#fencing(boolean)}.
 */
public class CommitConflictException extends OffsetKeeperException {
    private static final long serialVersionUID = 1L;

    /** Native code throws this class by name with this constructor. */
    public CommitConflictException(String message) {
        super(message);
    }
}
