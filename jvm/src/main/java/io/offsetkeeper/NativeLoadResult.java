package io.offsetkeeper;

/**
 * {@link NativeBridge#load}'s answer, column by column: the partitions, the decision for each
 * (element {@code i} of {@code chosen}, {@code actions}, {@code recordsLost},
 * {@code recreatedFromIds}, {@code recreatedToIds} and {@code recreatedReasons} is partition {@code i} of
 * {@code partitions}), then the offsets stored for partitions that no longer exist (element
 * {@code j} of the {@code stale*} arrays is stale partition {@code j}). Built by native code
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

    NativeLoadResult(NativePartitions partitions, long[] chosen, byte[] actions,
            long[] recordsLost, String[] recreatedFromIds, String[] recreatedToIds,
            String[] recreatedReasons, String[] staleTopics, int[] stalePartitions, byte[] staleKinds, long[] staleOffsets,
            String[] staleTexts) {
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
    }
}
