package io.offsetkeeper;

/**
 * The native methods of {@code liboffsetkeeper_jni}: the whole JNI surface, in bulk arrays.
 * Answers of more than one value are objects of this package that native code makes through
 * their one constructor ({@link NativeLoadResult}, {@link NativeInspectResult},
 * {@link NativeCheckedConfig}, {@link CommitResult}), with named fields; per-partition values
 * are columns, one primitive array each, never one object per partition.
 *
 * <p>Native code also calls back into Java, from its own threads: {@link GssapiClients} and
 * {@link GssapiExchange} (Kerberos), whose method descriptors rust/jni/src/sasl.rs holds.
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
     * @param gssapi Kerberos logins for the connections that authenticate with SASL GSSAPI
     *     (see {@link Kerberos}), or null; native code keeps a global reference until
     *     {@link #close(long)} and calls it from its own threads
     * @return a handle, never 0; free it once with {@link #close(long)}
     */
    static native long open(String[] keys, String[] values, String[] kafkaKeys,
            String[] kafkaValues, GssapiClients gssapi);

    /**
     * Checks a configuration as {@link #open} reads it, and the group name as the calls read it,
     * without opening anything.
     *
     * @param group the keeper's group, refused here when Kafka would refuse it
     * @param gssapi as for {@link #open}; not called here
     * @return the configuration as the engine read it, and both sets of pairs as they may be
     *     shown: {@code {key=value, ...}} in the arrays' order, {@code ****} for the value of a
     *     secret key
     */
    static native NativeCheckedConfig checkConfig(String[] keys, String[] values,
            String[] kafkaKeys, String[] kafkaValues, String group, GssapiClients gssapi);

    /** Frees the engine. Calling it with 0 does nothing. */
    static native void close(long handle);

    /**
     * Loads and validates the offsets of the topics' partitions.
     *
     * @return the partitions (each topic name once, then one element per partition), the
     *     decision for each, and the offsets stored for partitions that no longer exist; see
     *     {@link NativeLoadResult}
     */
    static native NativeLoadResult load(long handle, String group, String[] topics);

    /**
     * Commits next offsets to read, one atomic ZooKeeper multi. Entry i is partition
     * {@code partitions[i]} of topic {@code topicNames[topicIndex[i]]}.
     *
     * @return what the commit did, built by native code through {@link CommitResult}'s
     *     constructor
     */
    static native CommitResult commit(long handle, String group, String[] topicNames,
            int[] topicIndex, int[] partitions, long[] offsets);

    /**
     * Checks a batch as {@link #commit} checks it (names, partitions, offsets, a partition named
     * twice), writing nothing; throws {@link IllegalArgumentException} naming what is wrong.
     */
    static native void checkCommit(String group, String[] topicNames, int[] topicIndex,
            int[] partitions, long[] offsets);

    /**
     * Stored offsets and current ranges, without validation, and the engine's lag.
     *
     * @return the partitions as {@link #load} gives them, and the lag of each; see
     *     {@link NativeInspectResult}
     */
    static native NativeInspectResult inspect(long handle, String group, String[] topics);

    /**
     * The mirror's state during a move between stores, built by native code through
     * {@link MirrorStatus}'s constructor; null with one store.
     */
    static native MirrorStatus mirrorStatus(long handle);

    /**
     * Pure validation, no I/O. Arrays have one element per partition.
     *
     * @return {@code Object[]{long[] chosen, byte[] actions, long[] recordsLost}}, one element
     *     per partition
     */
    static native Object[] validate(byte[] storedKinds, long[] storedOffsets, long[] earliest,
            long[] latest, String onMissing, String onBelowRange, String onAboveRange);

    /**
     * Where a login's ticket cache is and what it holds, in the words the CLI uses too: e.g.
     * {@code the ticket cache /tmp/krb5cc_1000 (KRB5CCNAME) holds a TGT of app@EXAMPLE.COM
     * that expired at 2026-12-06T05:00:00Z: kinit (or k5start) renews it}.
     *
     * @param configured the cache the JAAS options name ({@code ticketCache}), or null for
     *     KRB5CCNAME, else the default
     */
    static native String ticketCacheWords(String configured);
}
