package io.offsetkeeper;

import java.io.Serializable;
import java.time.Duration;

/**
 * What the mirror of a move between stores is doing, as {@link OffsetKeeper#mirrorStatus()}
 * returns it: during {@code offsetkeeper.store=zookeeper,kafka} (or {@code kafka,zookeeper})
 * each commit stored in the first (authoritative) store is handed to the second store, the
 * mirror, by a writer of its own; the offsets the mirror could not take yet wait there (each
 * partition's newest) and are written again until it takes them. docs/migration.md, "What to
 * watch", says what to do about a mirror that stays behind.
 *
 * <p>A snapshot of this keeper's mirror at the call; the group's metrics
 * ({@code mirror_pending_partitions}, {@code mirror_failures}, {@code mirror_behind_ms}) show
 * the same for every open keeper of the group.
 */
public final class MirrorStatus implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String store;
    private final int pendingPartitions;
    private final long failures;
    private final String lastError;
    private final long behindMs;

    // Made by the native mirrorStatus through this constructor (rust/jni/src/results.rs holds
    // its descriptor; a unit test there checks it against this file).
    MirrorStatus(String store, int pendingPartitions, long failures, String lastError,
            long behindMs) {
        this.store = store;
        this.pendingPartitions = pendingPartitions;
        this.failures = failures;
        this.lastError = lastError;
        this.behindMs = behindMs;
    }

    /** The mirror's store: {@code kafka} or {@code zookeeper}. */
    public String store() {
        return store;
    }

    /**
     * Partitions whose newest committed offset the mirror does not hold yet (waiting, or in the
     * write under way); 0 when it holds every offset committed through this keeper.
     */
    public int pendingPartitions() {
        return pendingPartitions;
    }

    /** Writes to the mirror that failed since this keeper opened. */
    public long failures() {
        return failures;
    }

    /** The last failure while the mirror is behind because of it; null when it is not. */
    public String lastError() {
        return lastError;
    }

    /**
     * How long the mirror has lacked an offset committed through this keeper: since the oldest
     * batch it does not hold yet was stored; zero when it holds every one.
     */
    public Duration behind() {
        return Duration.ofMillis(behindMs);
    }

    /** Whether the mirror holds every offset committed through this keeper. */
    public boolean caughtUp() {
        return pendingPartitions == 0;
    }

    @Override
    public String toString() {
        return "MirrorStatus{store=" + store + ", pendingPartitions=" + pendingPartitions
                + ", failures=" + failures + ", behindMs=" + behindMs
                + (lastError == null ? "" : ", lastError=" + lastError) + "}";
    }
}
