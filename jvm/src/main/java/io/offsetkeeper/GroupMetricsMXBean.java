package io.offsetkeeper;

import java.util.Map;

/**
 * One consumer group's metrics as JMX sees them, under
 * {@code io.offsetkeeper:type=GroupMetrics,group=<group>}: the attributes of
 * {@link GroupMetrics}. docs/operations.md lists each with its type and unit.
 */
public interface GroupMetricsMXBean {
    /** Loads that returned offsets. */
    long getLoads();

    /** Milliseconds all those loads took together. */
    double getLoadMillisTotal();

    /** Commits that ended, stored or deferred: commit calls and commitAsync's writes. */
    long getCommits();

    /** Milliseconds all those commits took together. */
    double getCommitMillisTotal();

    /** Milliseconds the last commit took. */
    double getLastCommitMillis();

    /** Commits deferred because the store could not be reached. */
    long getCommitsDeferred();

    /** Commits that threw (a conflict, a refusal, the outage tolerance passed). */
    long getCommitFailures();

    /** Milliseconds the stored offsets have been behind in the current outage; 0 when none. */
    long getCommitOutageMillis();

    /** Milliseconds since the last commit that stored its offsets; -1 before the first. */
    long getMillisSinceLastStoredCommit();

    /** Records lost to retention, as the loads reported them. */
    long getRecordsLost();

    /** Partitions whose stored offset was below the earliest, moved up by a load. */
    long getPartitionsResetBelowRange();

    /** Partitions whose stored offset was above the latest, moved by a load. */
    long getPartitionsResetAboveRange();

    /** Partitions of a re-created topic (a new topic ID), started over by a load. */
    long getPartitionsResetRecreated();

    /** Partitions with nothing stored (or a value that was not an offset), started by policy. */
    long getPartitionsResetMissing();

    /** Stored partitions that no longer exist, as the last load found them. */
    int getStalePartitions();

    /** Each topic's lag: the log end offset minus the committed offset, summed over its partitions. */
    Map<String, Long> getLag();

    /** Keepers of the group in this JVM that hold its ownership (loaded or committed, not closed). */
    int getOwnershipHeld();

    /** Batches handed to commitAsync. */
    long getAsyncCommitsHanded();

    /**
     * Offsets handed to commitAsync and not yet written (the pending batch; a partition counts
     * once for each batch handed with it).
     */
    int getAsyncPendingOffsets();

    /**
     * During a move between stores, partitions whose newest committed offset the mirror does not
     * hold yet, summed over the open keepers of the group that loaded or committed; 0 without a
     * mirror.
     */
    int getMirrorPendingPartitions();

    /**
     * During a move between stores, writes to the mirror that failed, summed over the open
     * keepers of the group that loaded or committed (each counts from its opening).
     */
    long getMirrorFailures();

    /**
     * During a move between stores, how long the mirror has lacked a committed offset (the
     * longest of those keepers); 0 when it holds every one, and without a mirror.
     */
    long getMirrorBehindMillis();
}
