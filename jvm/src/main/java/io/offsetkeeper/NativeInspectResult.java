package io.offsetkeeper;

/**
 * {@link NativeBridge#inspect}'s answer: the partitions and, element by element, the engine's
 * lag. Built by native code through the constructor, whose descriptor rust/jni/src/results.rs
 * holds (its unit test checks it against this file).
 */
final class NativeInspectResult {
    /** {@code lag} when it is unknown (nothing usable stored); never a real lag. */
    static final long NO_LAG = Long.MIN_VALUE;

    final NativePartitions partitions;
    /** The log end offset minus the stored offset, or {@link #NO_LAG}. */
    final long[] lag;

    NativeInspectResult(NativePartitions partitions, long[] lag) {
        this.partitions = partitions;
        this.lag = lag;
    }
}
