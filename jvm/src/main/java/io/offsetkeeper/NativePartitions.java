package io.offsetkeeper;

/**
 * The columns that {@link NativeBridge#load} and {@link NativeBridge#inspect} answer alike:
 * element {@code i} of each array is partition {@code i}, in topic then partition order. Built
 * by native code through the constructor, whose descriptor rust/jni/src/results.rs holds (its
 * unit test checks it against this file).
 */
final class NativePartitions {
    // Native codes, see NativeBridge.
    static final byte STORED_OFFSET = 2;

    /** Each topic name once. */
    final String[] topicNames;
    /** Partition i's topic is {@code topicNames[topicIndex[i]]}. */
    final int[] topicIndex;
    final int[] partitions;
    /** 0 missing, 1 corrupt, 2 offset. */
    final byte[] storedKinds;
    /** The stored offset where the kind is offset, else -1. */
    final long[] storedOffsets;
    /** The report's text ({@code corrupt "..."}) of corrupt values; null elsewhere. */
    final String[] corruptTexts;
    final long[] earliest;
    final long[] latest;

    NativePartitions(String[] topicNames, int[] topicIndex, int[] partitions, byte[] storedKinds,
            long[] storedOffsets, String[] corruptTexts, long[] earliest, long[] latest) {
        this.topicNames = topicNames;
        this.topicIndex = topicIndex;
        this.partitions = partitions;
        this.storedKinds = storedKinds;
        this.storedOffsets = storedOffsets;
        this.corruptTexts = corruptTexts;
        this.earliest = earliest;
        this.latest = latest;
    }

    int size() {
        return partitions.length;
    }

    String topic(int i) {
        return topicNames[topicIndex[i]];
    }

    /** Partition i's stored offset, or null when nothing usable is stored. */
    Long stored(int i) {
        return storedKinds[i] == STORED_OFFSET ? storedOffsets[i] : null;
    }

    /** Partition i's stored value as the report shows it: its offset, "none" or corrupt text. */
    String storedText(int i) {
        if (storedKinds[i] == STORED_OFFSET) {
            return Long.toString(storedOffsets[i]);
        }
        return corruptTexts[i] != null ? corruptTexts[i] : "none";
    }
}
