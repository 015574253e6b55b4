package io.offsetkeeper;

/**
 * The native methods of {@code liboffsetkeeper_jni}: the whole JNI surface, in bulk arrays.
 *
 * <p>Only this package calls it. Arguments are checked on both sides; the native side throws
 * {@link IllegalArgumentException} for bad input (naming the argument and the value),
 * {@link IllegalStateException} for a zero handle, and the {@link OffsetKeeperException}
 * family for server and policy failures. A native panic becomes an {@link OffsetKeeperException}.
 *
 * <p>Codes shared with Rust: stored kinds 0 = missing, 1 = corrupt, 2 = offset; actions
 * 0 = kept, 1 = initialized, 2 = reset below range, 3 = reset above range, 4 = corrupt replaced,
 * 5 = re-created.
 */
final class NativeBridge {
    private NativeBridge() {}

    /**
     * Opens an engine on a configuration: the keeper's settings ({@code zookeeper.connect},
     * {@code zookeeper.*}, {@code offsetkeeper.*}, Kafka keys) as key/value arrays, then the
     * job's kafkaParams, whose {@code zookeeper.*} and {@code offsetkeeper.*} keys are not read.
     * The engine applies its defaults to what is not set, and refuses an unknown
     * {@code zookeeper.*} or {@code offsetkeeper.*} key or a bad value naming the key.
     *
     * @return a handle, never 0; free it once with {@link #close(long)}
     */
    static native long open(String[] keys, String[] values, String[] kafkaKeys,
            String[] kafkaValues);

    /**
     * Checks a configuration as {@link #open} reads it, without opening anything.
     *
     * @return {@code Object[]{String description, String[] shownValues,
     *     String[] shownKafkaValues}}: the configuration as the engine read it, and the values
     *     as they may be shown, {@code ****} for secret keys
     */
    static native Object[] checkConfig(String[] keys, String[] values, String[] kafkaKeys,
            String[] kafkaValues);

    /** Frees the engine. Calling it with 0 does nothing. */
    static native void close(long handle);

    /**
     * Loads and validates the offsets of the topics' partitions.
     *
     * @return {@code Object[]{String[] topicNames, int[] topicIndex, int[] partitions,
     *     byte[] storedKinds, long[] storedOffsets, String[] corruptTexts, long[] earliest,
     *     long[] latest, long[] chosen, byte[] actions, long[] recordsLost}}: each topic name
     *     once, then one element per partition, whose topic is {@code topicNames[topicIndex[i]]};
     *     storedOffsets is -1 unless the kind is offset; corruptTexts holds the report's text
     *     ({@code corrupt "..."}) of corrupt values and null elsewhere
     */
    static native Object[] load(long handle, String group, String[] topics);

    /**
     * Commits next offsets to read, one atomic ZooKeeper multi. Entry i is partition
     * {@code partitions[i]} of topic {@code topicNames[topicIndex[i]]}.
     *
     * @return {@code long[]{written, unchanged, requests, skipped, deferred (1 or 0), pending,
     *     behindMs}}
     */
    static native long[] commit(long handle, String group, String[] topicNames, int[] topicIndex,
            int[] partitions, long[] offsets);

    /**
     * Stored offsets and current ranges, without validation, and the engine's lag.
     *
     * @return the first eight columns of {@link #load}'s answer, then {@code long[] lag}: the
     *     log end offset minus the stored offset, {@code Long.MIN_VALUE} when unknown (nothing
     *     usable stored)
     */
    static native Object[] inspect(long handle, String group, String[] topics);

    /**
     * Pure validation, no I/O. Arrays have one element per partition.
     *
     * @return {@code Object[]{long[] chosen, byte[] actions, long[] recordsLost}}
     */
    static native Object[] validate(byte[] storedKinds, long[] storedOffsets, long[] earliest,
            long[] latest, String onMissing, String onBelowRange, String onAboveRange);

    /**
     * Test hook: panics inside native code, which must arrive as an exception. Only the tests'
     * build of the library has it (cargo feature {@code test-panic}); in the shipped one a call
     * throws {@link UnsatisfiedLinkError}.
     */
    static native void panicForTest();
}
