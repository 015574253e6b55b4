package io.offsetkeeper;

/**
 * {@link NativeBridge#load}'s answer, column by column: the partitions, the decision for each
 * (element {@code i} of {@code chosen}, {@code actions}, {@code recordsLost},
 * {@code recreatedFromIds}, {@code recreatedToIds} and {@code recreatedReasons} is partition {@code i} of
 * {@code partitions}), then the offsets stored for partitions that no longer exist (element
 * {@code j} of the {@code stale*} arrays is stale partition {@code j}), then the partitions where
 * a move's mirror differed (element {@code k} of the {@code mirror*} arrays is difference
 * {@code k}; empty without a mirror). Built by native code
 * through the constructor, whose descriptor rust/jni/src/results.rs holds (its unit test checks
 * it against this file).
 */
final class NativeLoadResult {
    final NativePartitions partitions;
    /** The offset handed to Spark. */
    final long[] chosen;
    /** Action codes, see {@link Action#fromCode}. */
    final byte[] actions;
    final long[] recordsLost;
    /** A re-created topic's stored and current topic IDs when its ID changed; else null. */
    final String[] recreatedFromIds;
    final String[] recreatedToIds;
    /** How the engine knew the topic was re-created, for a re-created action; else null. */
    final String[] recreatedReasons;
    final String[] staleTopics;
    final int[] stalePartitions;
    /** Stored kinds as in {@link NativePartitions#storedKinds}. */
    final byte[] staleKinds;
    /** The stored offset where the kind is offset, else -1. */
    final long[] staleOffsets;
    /** The stored values as the report shows them. */
    final String[] staleTexts;
    final String[] mirrorTopics;
    final int[] mirrorPartitions;
    /** What the authoritative store holds: kinds as in {@link NativePartitions#storedKinds}. */
    final byte[] mirrorAuthoritativeKinds;
    /** The authoritative store's offset where the kind is offset, else -1. */
    final long[] mirrorAuthoritativeOffsets;
    final String[] mirrorAuthoritativeTexts;
    /** What the mirror holds, the same three ways. */
    final byte[] mirrorKinds;
    final long[] mirrorOffsets;
    final String[] mirrorTexts;
    /** 1 where the load started at the mirror's offset, else 0. */
    final byte[] mirrorTaken;

    NativeLoadResult(NativePartitions partitions, long[] chosen, byte[] actions,
            long[] recordsLost, String[] recreatedFromIds, String[] recreatedToIds,
            String[] recreatedReasons, String[] staleTopics, int[] stalePartitions, byte[] staleKinds, long[] staleOffsets,
            String[] staleTexts, String[] mirrorTopics, int[] mirrorPartitions,
            byte[] mirrorAuthoritativeKinds, long[] mirrorAuthoritativeOffsets,
            String[] mirrorAuthoritativeTexts, byte[] mirrorKinds, long[] mirrorOffsets,
            String[] mirrorTexts, byte[] mirrorTaken) {
        this.partitions = partitions;
        this.chosen = chosen;
        this.actions = actions;
        this.recordsLost = recordsLost;
        this.recreatedFromIds = recreatedFromIds;
        this.recreatedToIds = recreatedToIds;
        this.recreatedReasons = recreatedReasons;
        this.staleTopics = staleTopics;
        this.stalePartitions = stalePartitions;
        this.staleKinds = staleKinds;
        this.staleOffsets = staleOffsets;
        this.staleTexts = staleTexts;
        this.mirrorTopics = mirrorTopics;
        this.mirrorPartitions = mirrorPartitions;
        this.mirrorAuthoritativeKinds = mirrorAuthoritativeKinds;
        this.mirrorAuthoritativeOffsets = mirrorAuthoritativeOffsets;
        this.mirrorAuthoritativeTexts = mirrorAuthoritativeTexts;
        this.mirrorKinds = mirrorKinds;
        this.mirrorOffsets = mirrorOffsets;
        this.mirrorTexts = mirrorTexts;
        this.mirrorTaken = mirrorTaken;
    }
}
