package io.offsetkeeper;

import java.io.Serializable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.ConcurrentModificationException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.BiConsumer;
import java.util.function.LongFunction;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;
import org.slf4j.LoggerFactory;

/**
 * Loads a Spark Streaming job's (or any Kafka consumer's) offsets from ZooKeeper
 * ({@code /consumers/<group>/offsets/<topic>/<partition>}), validated against the brokers'
 * current [earliest, latest] range, and commits each batch's offsets in one atomic ZooKeeper
 * multi.
 *
 * <pre>{@code
 * OffsetKeeper keeper = OffsetKeeper.builder()
 *         .zookeeper("zk1:2181,zk2:2181")
 *         .kafkaParams(kafkaParams)          // the map given to Spark; group.id is the group
 *         .build();
 * Map<TopicPartition, Long> offsets = keeper.load(topics);
 * // ConsumerStrategies.Assign(new ArrayList<>(offsets.keySet()), kafkaParams, offsets),
 * // then in foreachRDD:
 * SparkOffsets.commit(keeper, ((HasOffsetRanges) rdd.rdd()).offsetRanges());
 * }</pre>
 *
 * <p>{@link #commitAsync(Map)} commits without waiting: a writer thread of the keeper writes the
 * batches in order, merging those handed over while it writes; {@link #flush()} waits for them.
 *
 * <p>This class needs kafka-clients only, no Spark class: a job outside Spark commits its next
 * offsets with {@link #commit(Map)}. Spark's {@code OffsetRange}s are committed with
 * {@link io.offsetkeeper.spark.SparkOffsets#commit}, straight from the array (through
 * {@link #commit(Entries)}); Scala jobs have {@code io.offsetkeeper.spark.SparkOffsetKeeper}.
 *
 * <p>Thread-safe. {@link Serializable} with its configuration only, because Spark serializes
 * {@code foreachRDD} closures when checkpointing is on: the native engine is opened on first
 * use, and again in a deserialized copy. {@link #close()} frees it; later calls throw
 * {@link IllegalStateException}.
 *
 * <p>Reliability, all on by default: commits are fenced (each checks, in its ZooKeeper multi,
 * the versions this keeper last saw, and fails with {@link CommitConflictException} when another
 * writer changed them); a load takes ownership of the group's partitions (ephemeral nodes under
 * {@code /consumers/<group>/ids} and {@code /owners}, in Kafka's old consumer layout), waiting
 * up to the session timeout plus 5 s for a previous driver's session to go, then failing with
 * {@link PartitionOwnedException}; a keeper that commits without having loaded (a job recovered
 * from a checkpoint with {@code StreamingContext.getOrCreate}, whose keeper was deserialized)
 * takes ownership of its first commit's partitions the same way; a previous owner that ran on
 * this host and whose process is gone (killed) is taken over at once, without waiting for its
 * session; and commits are monotonic (an offset below what this keeper
 * already committed is left out with a WARN). {@link #close()} releases the ownership at once.
 *
 * <p>ZooKeeper outages: a commit that cannot reach ZooKeeper (a timeout, a lost connection or
 * session) does not throw but returns a {@link CommitResult#deferred() deferred} result, and its
 * offsets go with the next commit, as Kafka's own {@code commitAsync} treats a failed commit as
 * superseded by the next one. After the first deferred commit the engine reconnects in the
 * background, and the next commits of the same outage return deferred within 250 ms instead of
 * waiting the ZooKeeper timeout each. Only once commits have failed for longer than
 * {@link Builder#commitOutageTolerance(Duration)} (5 minutes by default) does {@code commit}
 * throw {@link ServerTimeoutException}. Deferred offsets are kept in memory only: a job that
 * dies meanwhile restarts from what was stored (at-least-once).
 *
 * <p>Security is configured as for Kafka's and ZooKeeper's Java clients, with the same keys
 * (see {@link Builder#kafkaParams} and {@link Builder#zookeeperProperty}), Kerberos included:
 * its logins and GSSAPI are the JVM's own, through JAAS.
 *
 * <p>Failures: {@link IllegalArgumentException} for bad input (nothing is written), and the
 * {@link OffsetKeeperException} family for servers, conflicts and {@code FAIL} policies.
 */
public final class OffsetKeeper implements AutoCloseable, Serializable {
    private static final long serialVersionUID = 2L;

    // Native codes, see NativeBridge.
    private static final byte STORED_MISSING = 0;
    private static final byte STORED_OFFSET = 2;

    // The configuration: all that is serialized. The engine reads the pairs (its defaults apply
    // to keys not set) and masked the secret values in `shown`.
    private final String group;
    private final LinkedHashMap<String, String> settings;
    private final LinkedHashMap<String, String> kafkaParams;
    private final String shown;
    // Serialized with the rest: a job recovered from a checkpoint keeps its handler. May be null.
    private final CommitFailureHandler onAsyncCommitFailure;

    // Calls hold the read lock and close() the write lock, so the handle is never freed under
    // a running call. The handle is opened under `opening` by whichever call comes first.
    private final transient ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final transient Object opening = new Object();
    private transient long handle;
    // The engine's Kerberos logins (null without Kerberos), released after the engine closes.
    private transient GssapiClients gssapi;
    private transient volatile boolean closed;
    // The last commit's columns, for a next commit of as many entries (a job commits the same
    // partitions batch after batch): new arrays, 16 bytes an entry, would be zeroed first.
    private final transient AtomicReference<Batch> spareBatch = new AtomicReference<>();

    // commitAsync's state, guarded by asyncLock; asyncChanged is signalled on every change. The
    // writer thread takes every queued batch at once and writes them as one: one write in
    // flight, the batches handed meanwhile queued as they came (no copy on the caller's path).
    private static final int MAX_QUEUED = 16;
    private final transient ReentrantLock asyncLock = new ReentrantLock();
    private final transient Condition asyncChanged = asyncLock.newCondition();
    private transient List<Batch> queued = new ArrayList<>();
    private transient boolean writing;
    // commitAsync calls taken, and how many of them the writes so far covered: a flush waits for
    // the calls made before it, not for those that keep coming meanwhile.
    private transient long handedCalls;
    private transient long writtenCalls;
    // A failed write's exception until a caller is told; the writer does not write meanwhile.
    private transient OffsetKeeperException failure;
    // Another writer took the group: thrown for good, and the writer writes nothing more.
    private transient CommitConflictException conflict;
    private transient boolean closing;
    private transient Thread writer;
    // The group's metrics in this JVM, shared by its keepers (JMX, the Spark plugin).
    private final transient GroupMetrics metrics;

    private OffsetKeeper(String group, LinkedHashMap<String, String> settings,
            LinkedHashMap<String, String> kafkaParams, String shown,
            CommitFailureHandler onAsyncCommitFailure) {
        this.group = group;
        this.settings = settings;
        this.kafkaParams = kafkaParams;
        this.shown = shown;
        this.onAsyncCommitFailure = onAsyncCommitFailure;
        this.metrics = GroupMetrics.of(group);
    }

    /** A builder; {@link Builder#zookeeper} and {@link Builder#kafkaParams} are required. */
    public static Builder builder() {
        return new Builder();
    }

    /** The consumer group whose offsets this keeper loads and commits. */
    public String group() {
        return group;
    }

    /**
     * Loads and validates the offsets of every partition of the topics.
     *
     * @return the offsets to give {@code ConsumerStrategies.Assign}: its partitions are the
     *     keys, each starting at its value
     * @see #loadWithReport
     */
    public Map<TopicPartition, Long> load(Collection<String> topics) {
        return loadWithReport(topics).offsets();
    }

    /**
     * Loads and validates the offsets of every partition of the topics, with what was stored
     * and why each offset was chosen. Corrections are also logged at WARN by the engine.
     *
     * @throws PolicyViolationException when a {@code FAIL} policy applies to any partition
     * @throws UnknownTopicException when a topic does not exist
     * @throws PartitionOwnedException when another running instance owns partitions of the
     *     group and does not go within the ownership wait
     */
    public LoadReport loadWithReport(Collection<String> topics) {
        String[] names = topicNames(topics);
        long started = System.nanoTime();
        NativeLoadResult r = call(h -> NativeBridge.load(h, group, names));
        NativePartitions p = r.partitions;
        List<PartitionReport> reports = new ArrayList<>(p.size());
        for (int i = 0; i < p.size(); i++) {
            reports.add(new PartitionReport(p.topic(i), p.partitions[i], p.stored(i),
                    p.storedText(i), p.earliest[i], p.latest[i], r.chosen[i],
                    Action.fromCode(r.actions[i]), r.recordsLost[i], r.recreatedFromIds[i],
                    r.recreatedToIds[i], r.recreatedReasons[i]));
        }
        List<StalePartition> stale = new ArrayList<>(r.stalePartitions.length);
        for (int i = 0; i < r.stalePartitions.length; i++) {
            stale.add(new StalePartition(r.staleTopics[i], r.stalePartitions[i],
                    r.staleKinds[i] == STORED_OFFSET ? r.staleOffsets[i] : null, r.staleTexts[i]));
        }
        List<MirrorDifference> mirror = new ArrayList<>(r.mirrorPartitions.length);
        for (int i = 0; i < r.mirrorPartitions.length; i++) {
            mirror.add(new MirrorDifference(r.mirrorTopics[i], r.mirrorPartitions[i],
                    r.mirrorAuthoritativeKinds[i] == STORED_OFFSET
                            ? r.mirrorAuthoritativeOffsets[i] : null,
                    r.mirrorAuthoritativeTexts[i],
                    r.mirrorKinds[i] == STORED_OFFSET ? r.mirrorOffsets[i] : null,
                    r.mirrorTexts[i], r.mirrorTaken[i] != 0));
        }
        LoadReport report = new LoadReport(reports, stale, mirror);
        metrics.loaded(this, Collections.unmodifiableList(Arrays.asList(names)), report,
                System.nanoTime() - started);
        return report;
    }

    /**
     * Loads and validates the offsets as {@link #loadWithReport} does (same policies, same
     * ownership, corrections logged), in the JSON of Spark Structured Streaming's Kafka option
     * {@code startingOffsets}, {@code {"topic":{"0":23,"1":42}}}:
     *
     * <pre>{@code
     * spark.readStream().format("kafka").option("subscribe", "orders")
     *         .option("startingOffsets", keeper.startingOffsetsJson(topics))
     * }</pre>
     *
     * Spark reads the option only when the query has no checkpoint yet. For the report as well,
     * call {@code loadWithReport(topics).startingOffsetsJson()}.
     *
     * @throws PolicyViolationException when a {@code FAIL} policy applies to any partition
     * @throws UnknownTopicException when a topic does not exist
     * @throws PartitionOwnedException as for {@link #loadWithReport}
     */
    public String startingOffsetsJson(Collection<String> topics) {
        return loadWithReport(topics).startingOffsetsJson();
    }

    /**
     * Commits next offsets to read, all or nothing. Empty input does nothing. A Spark batch's
     * offsets are {@code SparkOffsets.untilOffsets(ranges)}.
     *
     * @param offsets partition to the offset of the next record to read (a Spark range's
     *     {@code untilOffset})
     * <p>When ZooKeeper cannot be reached (a timeout, a lost connection or session) the commit
     * waits up to the ZooKeeper timeout (opening its session again included), then
     * returns a result that is {@link CommitResult#deferred() deferred}, with a WARN saying how
     * far behind the stored offsets are: nothing was written, and the next commit writes these
     * offsets (unless it carries newer ones for the same partitions) with its own in one multi.
     * {@link #close()} tries once to write them.
     *
     * @throws CommitConflictException when another writer changed a partition since this keeper
     *     last saw it (fencing), or took the group over after this keeper's session expired;
     *     nothing was written
     * @throws PartitionOwnedException on the first commit of a keeper that did not load the
     *     group (one deserialized from a checkpoint), which takes ownership of the batch's
     *     partitions as a load would, when another running instance owns them and does not go
     *     within the ownership wait; nothing was written
     * @throws ServerTimeoutException when ZooKeeper could not be reached and commits have failed
     *     for longer than the commit outage tolerance (the message says how long), or at once
     *     with a tolerance of zero
     * @throws ZooKeeperException when ZooKeeper refused the write (an ACL, for instance)
     * @throws java.util.ConcurrentModificationException when another thread changed
     *     {@code offsets} while this call read it; nothing was written
     */
    public CommitResult commit(Map<TopicPartition, Long> offsets) {
        require(offsets, "offsets");
        Batch batch = Batch.reuse(spareBatch.getAndSet(null), offsets.size());
        for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
            TopicPartition tp = require(e.getKey(), "offsets key");
            Long offset = e.getValue();
            if (offset == null) {
                // Named here: the message is built only when it is thrown.
                throw new IllegalArgumentException("offsets value of " + tp + " is null");
            }
            batch.add(tp.topic(), tp.partition(), offset);
        }
        if (batch.size != batch.offsets.length) {
            throw Batch.changed(batch.size + " entries read, " + offsets.size() + " now");
        }
        CommitResult result = commit(batch);
        spareBatch.set(batch);
        return result;
    }

    /**
     * A batch's entries read by position, for callers that hold a batch in arrays rather than a
     * map ({@link io.offsetkeeper.spark.SparkOffsets#commit} reads Spark's {@code OffsetRange[]}
     * through one): {@link #commit(Entries)} copies them straight into the columns that cross
     * to the engine, with no map in between.
     */
    public interface Entries {
        /** The number of entries. */
        int size();

        /** The topic of entry {@code i} (0 to {@code size() - 1}). */
        String topic(int i);

        /** The partition of entry {@code i}. */
        int partition(int i);

        /** The next offset to read of entry {@code i}. */
        long offset(int i);
    }

    /**
     * Commits next offsets to read, all or nothing, as {@link #commit(Map)} does, read by
     * position from {@code entries}. A partition named twice is refused before anything is
     * written. Empty input does nothing.
     *
     * @throws IllegalArgumentException when {@code entries} or a topic is null (naming the
     *     entry), or for an entry the engine refuses (a negative partition or offset, a bad
     *     topic name, a partition named twice); nothing was written
     * @see #commit(Map) for the other exceptions
     */
    public CommitResult commit(Entries entries) {
        require(entries, "entries");
        int n = entries.size();
        Batch batch = Batch.reuse(spareBatch.getAndSet(null), n);
        for (int i = 0; i < n; i++) {
            String topic = entries.topic(i);
            if (topic == null) {
                throw new IllegalArgumentException("topic of entry " + i + " is null");
            }
            batch.add(topic, entries.partition(i), entries.offset(i));
        }
        CommitResult result = commit(batch);
        spareBatch.set(batch);
        return result;
    }

    private CommitResult commit(Batch batch) {
        if (batch.partitions.length == 0) {
            checkOpen();
            return CommitResult.EMPTY;
        }
        String[] names = batch.names.toArray(new String[0]);
        long started = System.nanoTime();
        CommitResult result;
        try {
            result = call(h -> NativeBridge.commit(h, group, names, batch.topicIndex,
                    batch.partitions, batch.offsets));
        } catch (OffsetKeeperException e) {
            metrics.commitFailed();
            throw e;
        }
        metrics.committed(this, result, System.nanoTime() - started);
        return result;
    }

    /**
     * Commits next offsets to read without waiting: hands them to this keeper's writer thread
     * and returns at once. The writer (a daemon thread named {@code offsetkeeper-commit-<group>},
     * started by the first call) writes each batch with {@link #commit(Map)}, so each write is
     * atomic, fenced, takes ownership as a commit does, leaves out offsets below what was
     * committed (monotonic commits) and is deferred through ZooKeeper outages as a commit is.
     *
     * <p>Order and merging: one write is in flight at a time. Batches handed over while it runs
     * are kept as they are (this call copies nothing but the entries into columns) and merged by
     * the writer into its next write, each partition keeping its highest offset: together they
     * are the pending batch. A caller that runs ahead of the writer never waits: past 16 kept
     * batches it merges them into one itself, so memory stays bounded.
     *
     * <p>The guarantee: after a crash, at most the pending and in-flight batches are processed
     * again (at-least-once); the stored offsets are never more than the in-flight plus the
     * pending batch behind what was handed to {@code commitAsync}. Two cases add to that, both
     * as for {@link #commit(Map)}: while ZooKeeper cannot be reached, a write is
     * {@link CommitResult#deferred() deferred} and its offsets are kept in memory until a later
     * write or {@link #close()} stores them; and after a failed write (below) its offsets stay
     * in the pending batch.
     *
     * <p>Failures: a write that throws is given to the handler of
     * {@link Builder#onAsyncCommitFailure}, if any, and the next {@code commitAsync},
     * {@link #flush()} or {@link #close()} throws it, once. Its offsets go back into the pending
     * batch (newer offsets of the same partitions win), and the writer writes them again once
     * the failure was thrown. A {@link CommitConflictException} (another writer took the group)
     * ends it: {@code commitAsync} and {@code flush} throw it from then on, and the writer writes
     * nothing more.
     *
     * <p>Input is checked here, with {@link #commit(Map)}'s rules: null keys or values, illegal
     * topic names and negative partitions or offsets are refused at once. A call that throws
     * takes none of its offsets. {@link #commit(Map)} on the same keeper writes at once, before
     * batches still pending here.
     *
     * @param offsets partition to the offset of the next record to read
     * @throws IllegalArgumentException for bad input, as {@link #commit(Map)}
     * @throws IllegalStateException when the keeper is closed or closing
     * @throws CommitConflictException when a write met a conflict, at this call and every later
     *     one
     * @throws OffsetKeeperException the failure of an earlier write, once (the exceptions of
     *     {@link #commit(Map)})
     * @see #flush()
     */
    public void commitAsync(Map<TopicPartition, Long> offsets) {
        require(offsets, "offsets");
        Batch batch = Batch.reuse(null, offsets.size());
        for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
            TopicPartition tp = require(e.getKey(), "offsets key");
            Long offset = e.getValue();
            if (offset == null) {
                throw new IllegalArgumentException("offsets value of " + tp + " is null");
            }
            batch.add(tp.topic(), tp.partition(), offset);
        }
        if (batch.size != batch.offsets.length) {
            throw Batch.changed(batch.size + " entries read, " + offsets.size() + " now");
        }
        hand(checked(batch));
    }

    /**
     * Commits next offsets to read without waiting, as {@link #commitAsync(Map)} does, read by
     * position from {@code entries} (as {@link #commit(Entries)} reads them). A partition named
     * twice is refused.
     *
     * @throws IllegalArgumentException when {@code entries} or a topic is null (naming the
     *     entry), or for bad input as {@link #commitAsync(Map)}; nothing is taken
     * @see #commitAsync(Map) for the guarantee and the other exceptions
     */
    public void commitAsync(Entries entries) {
        require(entries, "entries");
        int n = entries.size();
        Batch batch = Batch.reuse(null, n);
        for (int i = 0; i < n; i++) {
            String topic = entries.topic(i);
            if (topic == null) {
                throw new IllegalArgumentException("topic of entry " + i + " is null");
            }
            batch.add(topic, entries.partition(i), entries.offset(i));
        }
        hand(checked(batch));
    }

    /**
     * The batch as a map, once the engine checked it as a commit checks it: the writer must
     * never hold offsets that no retry can write.
     */
    private Batch checked(Batch batch) {
        checkOpen();
        String[] names = batch.names.toArray(new String[0]);
        NativeBridge.checkCommit(group, names, batch.topicIndex, batch.partitions, batch.offsets);
        return batch;
    }

    /**
     * Waits until every batch handed to {@link #commitAsync(Map)} before this call was written
     * (batches handed over meanwhile are not waited for). Each write ends as a
     * {@link #commit(Map)} does (within the ZooKeeper timeout, or deferred); so this waits at
     * most for the write in flight and one more. A deferred write counts as written:
     * its offsets are kept as for a deferred commit. Returns at once when nothing is pending.
     *
     * @throws CommitConflictException when a write met a conflict (every time)
     * @throws OffsetKeeperException the failure of a write, once; the offsets it did not write
     *     are pending again, and a next {@code flush} writes them
     * @throws IllegalStateException when the keeper is closed, or when called from the
     *     {@link Builder#onAsyncCommitFailure} handler (it would wait for itself)
     */
    public void flush() {
        flush(Duration.ofNanos(Long.MAX_VALUE));
    }

    /**
     * {@link #flush()}, waiting at most {@code timeout}.
     *
     * @return true when every batch handed over before this call was written; false when the
     *     timeout passed first (the writer goes on with them)
     * @throws IllegalArgumentException when {@code timeout} is null
     * @see #flush() for the other exceptions
     */
    public boolean flush(Duration timeout) {
        long nanos;
        try {
            nanos = require(timeout, "timeout").toNanos();
        } catch (ArithmeticException e) {
            nanos = Long.MAX_VALUE;
        }
        long start = System.nanoTime();
        boolean interrupted = false;
        asyncLock.lock();
        try {
            checkOpen();
            if (Thread.currentThread() == writer) {
                throw new IllegalStateException("flush() called from the onAsyncCommitFailure"
                        + " handler, which runs on the writer thread it would wait for");
            }
            long calls = handedCalls;
            while (true) {
                reportFailure();
                if (writtenCalls >= calls) {
                    return true;
                }
                long left = nanos - (System.nanoTime() - start);
                if (left <= 0) {
                    return false;
                }
                try {
                    asyncChanged.awaitNanos(left);
                } catch (InterruptedException e) {
                    interrupted = true; // waited out all the same, as close() waits
                }
            }
        } finally {
            asyncLock.unlock();
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Receives each failed write of {@link #commitAsync(Map)}, on the keeper's writer thread
     * (see {@link Builder#onAsyncCommitFailure}). {@link Serializable}, so that it is kept when
     * Spark checkpoints the keeper: a lambda or method reference of this type is serializable
     * when what it captures is.
     */
    @FunctionalInterface
    public interface CommitFailureHandler extends Serializable {
        /**
         * Called once per failed write, which the next {@code commitAsync}, {@code flush} or
         * {@code close} also throws. It should return soon: the writer waits for it.
         */
        void handle(OffsetKeeperException failure);
    }

    /** Queues a checked batch and wakes the writer, started on first use. */
    private void hand(Batch batch) {
        asyncLock.lock();
        try {
            if (closing) {
                throw closedError();
            }
            reportFailure();
            if (batch.size == 0) {
                return;
            }
            queued.add(batch);
            if (queued.size() > MAX_QUEUED) {
                Batch merged = Batch.of(merged(queued)); // far behind: bound the memory
                queued.clear();
                queued.add(merged);
            }
            handedCalls++;
            metrics.handed(queuedOffsets());
            if (writer == null) {
                writer = new Thread(this::writeLoop, "offsetkeeper-commit-" + group);
                writer.setDaemon(true); // close() ends it; a daemon does not keep the JVM up
                writer.start();
            }
            asyncChanged.signalAll();
        } finally {
            asyncLock.unlock();
        }
    }

    /** The batches as one, each partition keeping its highest offset: a lower one is older work. */
    private static Map<TopicPartition, Long> merged(List<Batch> batches) {
        Map<TopicPartition, Long> merged = new LinkedHashMap<>();
        for (Batch b : batches) {
            for (int i = 0; i < b.size; i++) {
                merged.merge(new TopicPartition(b.names.get(b.topicIndex[i]), b.partitions[i]),
                        b.offsets[i], Long::max);
            }
        }
        return merged;
    }

    /** The entries queued for the writer (a partition counted once per batch). Holds asyncLock. */
    private int queuedOffsets() {
        int entries = 0;
        for (Batch b : queued) {
            entries += b.size;
        }
        return entries;
    }

    /** Throws a failed write's exception: a conflict every time, any other once. Holds the lock. */
    private void reportFailure() {
        if (conflict != null) {
            failure = null;
            throw conflict;
        }
        OffsetKeeperException f = failure;
        if (f != null) {
            failure = null;
            asyncChanged.signalAll(); // the writer writes the pending offsets again
            throw f;
        }
    }

    /** Whether the writer has something to write and may. Holds asyncLock. */
    private boolean canWrite() {
        return !queued.isEmpty() && failure == null && conflict == null;
    }

    /** The writer thread: commits what is pending, one write at a time, until close(). */
    private void writeLoop() {
        while (true) {
            Batch batch;
            long calls;
            asyncLock.lock();
            try {
                while (!canWrite()) {
                    if (closing) {
                        return;
                    }
                    asyncChanged.awaitUninterruptibly();
                }
                batch = queued.size() == 1 ? queued.get(0) : Batch.of(merged(queued));
                queued = new ArrayList<>();
                calls = handedCalls;
                writing = true;
                metrics.asyncPending(0);
            } finally {
                asyncLock.unlock();
            }
            OffsetKeeperException failed = null;
            try {
                commit(batch);
            } catch (Throwable t) {
                // Any throwable: flush() and close() must never wait for a writer that died.
                failed = t instanceof OffsetKeeperException ? (OffsetKeeperException) t
                        : (OffsetKeeperException) new OffsetKeeperException(
                                "commitAsync's write failed: " + t).initCause(t);
            }
            asyncLock.lock();
            try {
                writing = false;
                if (failed == null) {
                    writtenCalls = calls;
                } else {
                    queued.add(0, batch); // not lost: written by the next write
                    metrics.asyncPending(queuedOffsets());
                    failure = failed;
                    if (failed instanceof CommitConflictException) {
                        conflict = (CommitConflictException) failed;
                    }
                }
                asyncChanged.signalAll();
            } finally {
                asyncLock.unlock();
            }
            if (failed != null && onAsyncCommitFailure != null) {
                try {
                    onAsyncCommitFailure.handle(failed);
                } catch (RuntimeException e) {
                    LoggerFactory.getLogger(NativeLog.ROOT_LOGGER)
                            .warn("onAsyncCommitFailure threw; the writer goes on", e);
                }
            }
        }
    }

    /**
     * Stops commitAsync for close(): lets the writer write what was handed over, with one more
     * try of offsets whose write failed, and returns the failure close() throws, if any.
     */
    private OffsetKeeperException finishAsyncWrites() {
        asyncLock.lock();
        try {
            closing = true;
            if (Thread.currentThread() == writer) {
                return null; // close() from the failure handler: it has the failure
            }
            OffsetKeeperException unreported = failure;
            failure = null; // reported by close(): the writer tries the pending offsets once more
            asyncChanged.signalAll();
            while (writing || canWrite()) {
                asyncChanged.awaitUninterruptibly();
            }
            return failure != null ? failure : unreported;
        } finally {
            asyncLock.unlock();
        }
    }

    /**
     * A commit's entries as the bridge takes them: each topic name once, and per entry the
     * index of its name (a string costs more to cross JNI than the rest of an entry).
     */
    private static final class Batch {
        private final Map<String, Integer> ids = new HashMap<>();
        final List<String> names = new ArrayList<>();
        final int[] topicIndex;
        final int[] partitions;
        final long[] offsets;
        private int size;
        // The last entry's topic: entries come in runs of one topic's partitions, sharing one
        // String, and a run needs no map lookup (which counts before the JIT compiles this).
        private String lastTopic;
        private int lastId;

        Batch(int entries) {
            topicIndex = new int[entries];
            partitions = new int[entries];
            offsets = new long[entries];
        }

        /** The map changed while read (another thread): none of its entries is committed. */
        static ConcurrentModificationException changed(String how) {
            return new ConcurrentModificationException(
                    "offsets changed while being committed: " + how);
        }

        /** A batch of the map's entries. */
        static Batch of(Map<TopicPartition, Long> offsets) {
            Batch batch = new Batch(offsets.size());
            for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
                batch.add(e.getKey().topic(), e.getKey().partition(), e.getValue());
            }
            return batch;
        }

        /** An empty batch for {@code entries}: {@code spare} (may be null) if it fits. */
        static Batch reuse(Batch spare, int entries) {
            if (spare == null || spare.offsets.length != entries) {
                return new Batch(entries);
            }
            spare.ids.clear();
            spare.names.clear();
            spare.size = 0;
            spare.lastTopic = null;
            return spare;
        }

        void add(String topic, int partition, long offset) {
            if (size == offsets.length) {
                throw changed("more than the " + size + " entries it had");
            }
            if (topic != lastTopic) {
                Integer id = ids.get(topic);
                if (id == null) {
                    id = names.size();
                    ids.put(topic, id);
                    names.add(topic);
                }
                lastTopic = topic;
                lastId = id;
            }
            topicIndex[size] = lastId;
            partitions[size] = partition;
            offsets[size] = offset;
            size++;
        }
    }

    /**
     * The committed offset, the current range and the lag of every partition of the topics. The
     * lag is the engine's, as {@code kafka-consumer-groups} and the CLI's {@code describe} show
     * it: the log end offset minus the committed offset, null (unknown) when nothing usable is
     * committed.
     */
    public List<PartitionLag> lag(Collection<String> topics) {
        String[] names = topicNames(topics);
        NativeInspectResult r = call(h -> NativeBridge.inspect(h, group, names));
        NativePartitions p = r.partitions;
        List<PartitionLag> lags = new ArrayList<>(p.size());
        for (int i = 0; i < p.size(); i++) {
            long lag = r.lag[i];
            lags.add(new PartitionLag(p.topic(i), p.partitions[i], p.stored(i), p.earliest[i],
                    p.latest[i], lag == NativeInspectResult.NO_LAG ? null : lag));
        }
        return Collections.unmodifiableList(lags);
    }

    /**
     * The mirror's state during a move between stores ({@code offsetkeeper.store=zookeeper,kafka}
     * or {@code kafka,zookeeper}; docs/migration.md): how many partitions' newest committed
     * offsets it does not hold yet, its failed writes, the last error, and for how long it has
     * been behind. Asks no server. The mirror takes a commit's offsets after the commit returns
     * (on a writer of its own), so right after a commit it may show them pending for a moment.
     *
     * @return null when no move is configured (one store), else this keeper's mirror now
     * @throws IllegalStateException when the keeper is closed
     */
    public MirrorStatus mirrorStatus() {
        return call(NativeBridge::mirrorStatus);
    }

    /**
     * {@link #mirrorStatus()} for the metrics: null instead of waiting for a close under way,
     * of a closed keeper, or of one whose engine is not open yet (it never opens it).
     */
    MirrorStatus mirrorStatusIfOpen() {
        Lock read = lock.readLock();
        if (!read.tryLock()) {
            return null;
        }
        try {
            if (closed) {
                return null;
            }
            long h;
            synchronized (opening) {
                h = handle;
            }
            return h == 0 ? null : NativeBridge.mirrorStatus(h);
        } finally {
            read.unlock();
        }
    }

    /**
     * Decides where one partition starts, for offsets stored elsewhere: the same pure function
     * {@link #loadWithReport} applies, without servers. A null policy takes the default
     * ({@code EARLIEST}).
     *
     * @param stored the stored next offset to read, or null when none is stored
     * @param earliest the partition's log start offset
     * @param latest the partition's log end offset
     * @throws PolicyViolationException when a {@code FAIL} policy applies
     */
    public static Decision validate(Long stored, long earliest, long latest, OnMissing onMissing,
            OnBelowRange onBelowRange, OnAboveRange onAboveRange) {
        NativeLibrary.load();
        Object[] r = NativeBridge.validate(
                new byte[] {stored == null ? STORED_MISSING : STORED_OFFSET},
                new long[] {stored == null ? -1 : stored}, new long[] {earliest},
                new long[] {latest}, nativeName(onMissing), nativeName(onBelowRange),
                nativeName(onAboveRange));
        return new Decision(((long[]) r[0])[0], Action.fromCode(((byte[]) r[1])[0]),
                ((long[]) r[2])[0]);
    }

    /**
     * Frees the native engine, once; waits for calls in flight. Tries once to write the offsets
     * of deferred commits, then releases this keeper's ownership of its partitions at once
     * (deletes its ownership nodes and closes its ZooKeeper session), so that a restarted job
     * does not wait. Once calls in flight ended, it returns within the ZooKeeper timeout (and a
     * moment to close the session), whether ZooKeeper answers or not; what it could not write or
     * delete is named in a WARN, and the ownership nodes then go when the session expires, within
     * the session timeout. Later calls of this keeper throw {@link IllegalStateException};
     * closing again does nothing.
     *
     * <p>First, {@link #commitAsync(Map)} is refused from now on and what was handed to it is
     * written: the write in flight, then the pending batch, which includes the offsets of a
     * failed write (tried once more, unless the failure was a conflict). That adds at most two
     * writes, each ending as a {@link #commit(Map)} does (within the ZooKeeper timeout, or
     * deferred; then closing tries once more, as above). The guarantee of
     * {@link #commitAsync(Map)} holds for a crash during close.
     *
     * @throws OffsetKeeperException the failure of a {@code commitAsync} write not yet thrown
     *     by another call (the last one, when the write tried here failed too), after the
     *     keeper was closed all the same
     */
    @Override
    public void close() {
        OffsetKeeperException unreported = finishAsyncWrites();
        closeEngine();
        if (unreported != null) {
            throw unreported;
        }
    }

    private void closeEngine() {
        Lock write = lock.writeLock();
        write.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            metrics.closed(this);
            if (handle != 0) {
                long h = handle;
                handle = 0;
                NativeBridge.close(h);
            }
            if (gssapi != null) {
                gssapi.close();
                gssapi = null;
            }
        } finally {
            write.unlock();
        }
    }

    /** The group and the settings, with the values of secret settings masked by the engine. */
    @Override
    public String toString() {
        return shown;
    }

    /** A deserialized copy is a fresh keeper with the same configuration, not yet opened. */
    private Object readResolve() {
        return new OffsetKeeper(group, settings, kafkaParams, shown, onAsyncCommitFailure);
    }

    private <T> T call(LongFunction<T> nativeCall) {
        Lock read = lock.readLock();
        read.lock();
        try {
            checkOpen();
            return nativeCall.apply(handle());
        } finally {
            read.unlock();
        }
    }

    /** The engine, opened by the first call. Caller holds the read lock. */
    private long handle() {
        synchronized (opening) {
            if (handle == 0) {
                NativeLibrary.load();
                // Java keystores are read here, at each open, and never kept (see KeyStores);
                // Kerberos is decided here too (see Kerberos).
                Map<String, String> engineSettings = KeyStores.asPem(settings, "zookeeper.");
                Map<String, String> engineKafka = KeyStores.asPem(kafkaParams, "");
                GssapiClients logins = Kerberos.configure(engineSettings, engineKafka);
                boolean opened = false;
                try {
                    handle = NativeBridge.open(keys(engineSettings), values(engineSettings),
                            keys(engineKafka), values(engineKafka), logins);
                    gssapi = logins;
                    opened = true;
                } finally {
                    if (!opened && logins != null) {
                        logins.close();
                    }
                }
            }
            return handle;
        }
    }

    private void checkOpen() {
        if (closed) {
            throw closedError();
        }
    }

    private IllegalStateException closedError() {
        return new IllegalStateException("this OffsetKeeper (group " + group + ") is closed");
    }

    /** Null and emptiness only: the engine checks names and reports duplicates. */
    private static String[] topicNames(Collection<String> topics) {
        require(topics, "topics");
        if (topics.isEmpty()) {
            throw new IllegalArgumentException("topics is empty; give at least one topic");
        }
        String[] names = topics.toArray(new String[0]);
        for (int i = 0; i < names.length; i++) {
            require(names[i], "topics[" + i + "]");
        }
        return names;
    }

    private static String nativeName(Enum<?> policy) {
        return policy == null ? null : policy.name().toLowerCase(Locale.ROOT);
    }

    private static String[] keys(Map<String, String> pairs) {
        return pairs.keySet().toArray(new String[0]);
    }

    private static String[] values(Map<String, String> pairs) {
        return pairs.values().toArray(new String[0]);
    }

    private static <T> T require(T value, String name) {
        if (value == null) {
            throw new IllegalArgumentException(name + " is null");
        }
        return value;
    }

    private static String requireText(String value, String name) {
        if (require(value, name).isEmpty()) {
            throw new IllegalArgumentException(name + " is empty");
        }
        return value;
    }

    /**
     * Configures an {@link OffsetKeeper}. {@link #group} names the consumer group and
     * {@link #kafkaParams} takes the Kafka parameters; each other setter sets one key of the
     * engine's configuration, the same keys as the CLI's {@code --command-config} (see
     * {@link #property}); a setting not given takes the engine's default. Setters refuse null,
     * except that a null policy means the default: {@code EARLIEST}, and for {@code onMissing}
     * the {@code auto.offset.reset} of the Kafka parameters when set. Values are checked by the
     * engine in {@link #build()}.
     */
    public static final class Builder {
        private String group;
        private LinkedHashMap<String, String> kafkaParams;
        private final LinkedHashMap<String, String> settings = new LinkedHashMap<>();
        private CommitFailureHandler onAsyncCommitFailure;

        private Builder() {}

        /**
         * ZooKeeper's connect string, {@code host:port[,host:port...][/chroot]}. Required,
         * unless offsets are kept in Kafka ({@link #kafkaStore()}).
         */
        public Builder zookeeper(String connect) {
            settings.put("zookeeper.connect", requireText(connect, "zookeeper"));
            return this;
        }

        /**
         * Keeps the offsets in Kafka's group store ({@code __consumer_offsets}), where Kafka's
         * consumers keep theirs, instead of ZooKeeper ({@code offsetkeeper.store=kafka}): no
         * ZooKeeper is needed. Loads, reports and policies are the same; the keeper joins the
         * group as its only member, and the group coordinator refuses the commits of an
         * instance that lost its place. See docs/kafka-store.md.
         */
        public Builder kafkaStore() {
            settings.put("offsetkeeper.store", "kafka");
            return this;
        }

        /** The consumer group; defaults to the Kafka parameters' {@code group.id}. */
        public Builder group(String group) {
            this.group = requireText(group, "group");
            return this;
        }

        /**
         * One setting by its key, as in the CLI's {@code --command-config} file; the typed
         * setters below set the same keys. Keys:
         * <ul>
         *   <li>{@code zookeeper.connect}, and the {@code zookeeper.*} security keys (see
         *       {@link #zookeeperProperty});
         *   <li>the {@code offsetkeeper.*} keys, listed with their values and defaults in
         *       docs/configuration.md (generated from the engine's list of keys, {@code KEYS} in
         *       rust/core/src/config.rs);
         *   <li>any other key is a Kafka consumer setting, read as a {@link #kafkaParams} entry
         *       and winning over it.
         * </ul>
         * An unknown {@code zookeeper.*} or {@code offsetkeeper.*} key, or a bad value, makes
         * {@link #build()} throw {@link IllegalArgumentException} naming the key and what is
         * allowed (never a secret value).
         */
        public Builder property(String key, String value) {
            settings.put(requireText(key, "property key"),
                    require(value, "property value of " + key));
            return this;
        }

        /** Every entry as {@link #property}; values are taken as {@code String.valueOf}. */
        public Builder properties(Map<String, ?> properties) {
            return each(properties, "properties", this::property);
        }

        /**
         * Calls {@code setter} with every entry of {@code map}, the value as
         * {@code String.valueOf}; {@code name} names the map in the null checks' messages.
         */
        private Builder each(Map<String, ?> map, String name, BiConsumer<String, String> setter) {
            require(map, name);
            for (Map.Entry<String, ?> e : map.entrySet()) {
                String key = require(e.getKey(), name + " key");
                Object value = require(e.getValue(), name + " value of " + key);
                setter.accept(key, String.valueOf(value));
            }
            return this;
        }

        private Builder setting(String key, Object value) {
            if (value == null) {
                settings.remove(key);
            } else {
                settings.put(key, value.toString());
            }
            return this;
        }

        /**
         * The Kafka parameters given to Spark, read as {@code KafkaConsumer} reads them: a
         * consumer setting's value is parsed by the consumer's {@code ConfigDef} (a
         * {@code List} or a comma-separated {@code String} for a list, a {@code Class} or its
         * name, a {@code Password}, a number or its text); other keys are taken as
         * {@code String.valueOf}. {@code bootstrap.servers} is required; security settings are
         * passed on; keys with no meaning for offsetkeeper (deserializers and the like) are
         * ignored. Required.
         *
         * <p>Kerberos is configured as for Kafka's Java client: {@code security.protocol}
         * {@code SASL_PLAINTEXT} or {@code SASL_SSL}, {@code sasl.mechanism} {@code GSSAPI} (or
         * unset), {@code sasl.kerberos.service.name} (or the JAAS option {@code serviceName}),
         * and the login from {@code sasl.jaas.config}
         * ({@code com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true
         * keyTab="..." principal="...";} or {@code useTicketCache=true}), else from the JVM's
         * {@code KafkaClient} JAAS section. The JVM's own login and GSSAPI do the work, with the
         * JVM's {@code java.security.krb5.conf}; logins are shared per JAAS configuration,
         * happen on first use and are renewed as Kafka's client renews them, attempts at least
         * {@code sasl.kerberos.min.time.before.relogin} ms apart (default 60000).
         *
         * @throws IllegalArgumentException when a value is not of its setting's type
         */
        public Builder kafkaParams(Map<String, ?> params) {
            require(params, "kafkaParams");
            Map<String, ConfigDef.ConfigKey> consumerKeys = ConsumerConfig.configDef().configKeys();
            LinkedHashMap<String, String> copy = new LinkedHashMap<>();
            for (Map.Entry<String, ?> e : params.entrySet()) {
                String key = require(e.getKey(), "kafkaParams key");
                Object value = require(e.getValue(), "kafkaParams value of " + key);
                ConfigDef.ConfigKey known = consumerKeys.get(key);
                copy.put(key, known == null ? String.valueOf(value) : kafkaString(key, value, known.type));
            }
            this.kafkaParams = copy;
            return this;
        }

        /** A consumer setting's value as text, the way kafka-clients parses it. */
        private static String kafkaString(String key, Object value, ConfigDef.Type type) {
            Object parsed;
            try {
                parsed = ConfigDef.parseType(key, value, type);
            } catch (ConfigException e) {
                // Kafka's message quotes the value: not for a secret (Kafka's type PASSWORD).
                throw new IllegalArgumentException("kafkaParams value of " + key + " is not a "
                        + type.toString().toLowerCase(Locale.ROOT)
                        + (type == ConfigDef.Type.PASSWORD ? "" : ": " + e.getMessage()));
            }
            if (parsed instanceof Password) {
                return ((Password) parsed).value();
            }
            return ConfigDef.convertToString(parsed, type);
        }

        /**
         * One ZooKeeper setting, the same keys as the CLI's {@code --command-config}:
         * <ul>
         *   <li>{@code zookeeper.auth}: {@code scheme:credentials} sent as {@code addauth} on
         *       every session, e.g. {@code digest:alice:secret};
         *   <li>{@code zookeeper.acl}: the ACL of every node offsetkeeper creates:
         *       {@code open} (default), {@code creator}, or {@code scheme:id:perms[,...]} with
         *       perms from {@code crwda};
         *   <li>{@code zookeeper.sasl.mechanism} ({@code DIGEST-MD5}),
         *       {@code zookeeper.sasl.username}, {@code zookeeper.sasl.password}: a SASL login;
         *   <li>Kerberos (SASL GSSAPI), as ZooKeeper's Java client does it: when the JVM's JAAS
         *       configuration ({@code -Djava.security.auth.login.config}) has a {@code Client}
         *       section with {@code com.sun.security.auth.module.Krb5LoginModule} (a keytab or a
         *       ticket cache), and no DIGEST-MD5 login is set. These keys, else the system
         *       properties of the same names, adjust it: {@code zookeeper.sasl.client}
         *       ({@code false} turns SASL off), {@code zookeeper.sasl.clientconfig} (the section,
         *       default {@code Client}; a section named here must exist),
         *       {@code zookeeper.server.principal} (the server's principal, instead of:)
         *       {@code zookeeper.sasl.client.username} (default {@code zookeeper}) {@code /} the
         *       server's host, canonicalized when
         *       {@code zookeeper.sasl.client.canonicalize.hostname} is {@code true} (the
         *       default), and {@code zookeeper.server.realm} (default: the client's realm).
         *       {@code zookeeper.sasl.mechanism=GSSAPI} requires Kerberos. Login attempts are at
         *       least the system property {@code zookeeper.kerberos.minReLoginTimeMs} apart
         *       (default 60000 ms; a system property only, as for ZooKeeper's client);
         *   <li>{@code zookeeper.ssl.client.enable} ({@code true}),
         *       {@code zookeeper.ssl.truststore.location} / {@code .type} ({@code PEM},
         *       {@code JKS} or {@code PKCS12}) / {@code .password},
         *       {@code zookeeper.ssl.keystore.location} / {@code .type} / {@code .password}: TLS
         *       (Java keystores are read with the JVM's {@code KeyStore} each time the keeper
         *       opens);
         *   <li>{@code zookeeper.server.version}: the servers' version, e.g. {@code 3.4.14},
         *       instead of asking them with the {@code srvr} four-letter word.
         * </ul>
         * Values are checked when the keeper opens; secrets never appear in messages or
         * {@link #toString()}.
         *
         * @throws IllegalArgumentException when the key does not start with {@code zookeeper.}
         */
        public Builder zookeeperProperty(String key, String value) {
            requireText(key, "zookeeper property key");
            if (!key.startsWith("zookeeper.")) {
                throw new IllegalArgumentException("zookeeper property '" + key
                        + "' does not start with 'zookeeper.'; Kafka settings go to kafkaParams");
            }
            settings.put(key, require(value, "zookeeper property value of " + key));
            return this;
        }

        /** Every entry as {@link #zookeeperProperty}; values are taken as {@code String.valueOf}. */
        public Builder zookeeperProperties(Map<String, ?> properties) {
            return each(properties, "zookeeperProperties", this::zookeeperProperty);
        }

        /**
         * The ZooKeeper folder holding the groups ({@code offsetkeeper.base.path}); default
         * {@code /consumers}, as Kafka's old consumer laid it out.
         */
        public Builder basePath(String basePath) {
            return setting("offsetkeeper.base.path", requireText(basePath, "basePath"));
        }

        /**
         * Where a partition with no usable stored offset starts ({@code offsetkeeper.on.missing});
         * null for the default.
         */
        public Builder onMissing(OnMissing policy) {
            return setting("offsetkeeper.on.missing", nativeName(policy));
        }

        /**
         * What to do with a stored offset below the earliest
         * ({@code offsetkeeper.on.below.range}); null for the default.
         */
        public Builder onBelowRange(OnBelowRange policy) {
            return setting("offsetkeeper.on.below.range", nativeName(policy));
        }

        /**
         * What to do with a stored offset above the latest ({@code offsetkeeper.on.above.range});
         * null for the default.
         */
        public Builder onAboveRange(OnAboveRange policy) {
            return setting("offsetkeeper.on.above.range", nativeName(policy));
        }

        /**
         * What to do with every stored offset of a topic re-created since the offsets were
         * stored ({@code offsetkeeper.on.recreated}): the topic ID recorded beside them differs
         * from the brokers' (Kafka 2.8 and later), whatever the new topic's range says; null for
         * the default, {@link OnRecreated#EARLIEST}. Commits record the topic ID in the topic's
         * folder, {@code <basePath>/<group>/offsets/<topic>}.
         */
        public Builder onRecreated(OnRecreated policy) {
            return setting("offsetkeeper.on.recreated", nativeName(policy));
        }

        /** ZooKeeper's session timeout ({@code offsetkeeper.session.timeout.ms}); default 30 s. */
        public Builder sessionTimeout(Duration timeout) {
            return sessionTimeout(millis(timeout, "sessionTimeout"));
        }

        /** ZooKeeper's session timeout in milliseconds. */
        public Builder sessionTimeout(long millis) {
            return setting("offsetkeeper.session.timeout.ms", millis);
        }

        /**
         * The deadline of the ZooKeeper work of each call (load, commit), opening the session
         * included; a load that takes ownership adds the ownership wait
         * ({@code offsetkeeper.zookeeper.timeout.ms}). Default 10 s.
         */
        public Builder zookeeperTimeout(Duration timeout) {
            return zookeeperTimeout(millis(timeout, "zookeeperTimeout"));
        }

        /** {@link #zookeeperTimeout(Duration)} in milliseconds. */
        public Builder zookeeperTimeout(long millis) {
            return setting("offsetkeeper.zookeeper.timeout.ms", millis);
        }

        /**
         * The deadline of each Kafka operation of a load (metadata, list offsets, retries
         * included). Set here, it wins over kafkaParams' {@code default.api.timeout.ms}; unset,
         * that parameter applies, else 60 s as in Kafka's clients, which outlasts the ~9 s Kafka
         * takes to fence a dead broker and move its partitions' leadership. Each single request
         * is bounded by kafkaParams' {@code request.timeout.ms} (default 30 s).
         * ({@code offsetkeeper.kafka.timeout.ms})
         */
        public Builder kafkaTimeout(Duration timeout) {
            return kafkaTimeout(millis(timeout, "kafkaTimeout"));
        }

        /** The deadline of each Kafka operation in milliseconds; see {@link #kafkaTimeout(Duration)}. */
        public Builder kafkaTimeout(long millis) {
            return setting("offsetkeeper.kafka.timeout.ms", millis);
        }

        /**
         * Fencing: each commit checks, in its ZooKeeper multi, the znode versions this keeper
         * last saw (from its load or its last commit), and fails with
         * {@link CommitConflictException}, writing nothing, when another writer changed them.
         * Default on ({@code offsetkeeper.fencing}).
         */
        public Builder fencing(boolean enabled) {
            return setting("offsetkeeper.fencing", enabled);
        }

        /**
         * Monotonic commits: an offset below what this keeper already committed for its
         * partition (a batch finishing after a later one, with
         * {@code spark.streaming.concurrentJobs > 1}) is left out with a WARN and counted in
         * {@link CommitResult#skipped()}. Default on ({@code offsetkeeper.monotonic.commits}).
         */
        public Builder monotonicCommits(boolean enabled) {
            return setting("offsetkeeper.monotonic.commits", enabled);
        }

        /**
         * One active instance per group: a load registers this keeper under
         * {@code /consumers/<group>/ids} and takes {@code /consumers/<group>/owners/<topic>/<p>}
         * (ephemeral nodes, as Kafka's old consumer did); another instance's load waits for them
         * to go, then fails with {@link PartitionOwnedException}. A keeper that commits without
         * having loaded (deserialized from a checkpoint) takes the partitions of its first commit
         * the same way. An owner that registered from this host whose process is gone is taken
         * over at once. Default on ({@code offsetkeeper.ownership}).
         */
        public Builder ownership(boolean enabled) {
            return setting("offsetkeeper.ownership", enabled);
        }

        /**
         * How long a load waits for another instance's ownership to go (a crashed driver's
         * ZooKeeper session lingers up to its session timeout). Default: the session timeout
         * plus 5 s. Zero fails at once. ({@code offsetkeeper.ownership.wait.ms})
         */
        public Builder ownershipWait(Duration wait) {
            return ownershipWait(millis(wait, "ownershipWait"));
        }

        /** The ownership wait in milliseconds, 0 to 24 h. */
        public Builder ownershipWait(long millis) {
            return setting("offsetkeeper.ownership.wait.ms", millis);
        }

        /**
         * How long commits may fail because ZooKeeper cannot be reached (a timeout, a lost
         * connection or session) before {@link OffsetKeeper#commit} throws
         * {@link ServerTimeoutException}. Until then such a commit returns a
         * {@link CommitResult#deferred() deferred} result and the next commit writes its
         * offsets; the time counts from the start of the first deferred commit. Conflicts, lost
         * ownership and bad input throw at once whatever this is.
         *
         * <p>Default 5 minutes: a rolling restart of a 3-node ensemble (each node stopped,
         * restarted and caught up in turn, with an election of some seconds for the leader)
         * makes commits fail for a minute or two at most, while a job whose ZooKeeper is gone for
         * good still stops with little to reprocess. Zero: fail fast, every such failure throws
         * at once (the behaviour before deferred commits).
         * ({@code offsetkeeper.commit.outage.tolerance.ms})
         */
        public Builder commitOutageTolerance(Duration tolerance) {
            return commitOutageTolerance(millis(tolerance, "commitOutageTolerance"));
        }

        /** The commit outage tolerance in milliseconds, 0 (fail fast) to 24 h. */
        public Builder commitOutageTolerance(long millis) {
            return setting("offsetkeeper.commit.outage.tolerance.ms", millis);
        }

        /**
         * Called with each failed write of {@link OffsetKeeper#commitAsync(Map)}, on the keeper's
         * writer thread, as soon as the write failed; the next {@code commitAsync},
         * {@code flush} or {@code close} throws the same exception. For a job that wants to
         * know before its next batch (to alert, or to stop on a
         * {@link CommitConflictException}). The handler may call {@code close()}, which then
         * does not throw this failure again; {@code flush()} from it throws
         * {@link IllegalStateException}. An exception it throws is logged at WARN. Without a
         * handler, failures reach the calls only.
         *
         * <p>The handler is serialized with the keeper (Spark checkpoints), so what it captures
         * must be serializable when checkpointing is on.
         */
        public Builder onAsyncCommitFailure(CommitFailureHandler handler) {
            this.onAsyncCommitFailure = require(handler, "onAsyncCommitFailure");
            return this;
        }

        /**
         * The keeper. The engine checks the configuration here (loading the native library);
         * servers are not contacted: the engine opens on first use.
         *
         * @throws IllegalArgumentException when a setting is missing or refused, naming its key
         *     and what is allowed
         */
        public OffsetKeeper build() {
            if (!settings.containsKey("zookeeper.connect")
                    && !"kafka".equals(settings.get("offsetkeeper.store"))) {
                throw new IllegalArgumentException(
                        "zookeeper is not set (required unless offsets are kept in Kafka: kafkaStore())");
            }
            if (kafkaParams == null) {
                throw new IllegalArgumentException("kafkaParams is not set");
            }
            String group = this.group;
            if (group == null) {
                group = kafkaParams.get("group.id");
                if (group == null) {
                    throw new IllegalArgumentException(
                            "group is not set and kafkaParams has no group.id");
                }
                requireText(group, "group (kafkaParams group.id)");
            }
            LinkedHashMap<String, String> settings = new LinkedHashMap<>(this.settings);
            LinkedHashMap<String, String> kafkaParams = new LinkedHashMap<>(this.kafkaParams);
            NativeLibrary.load();
            Map<String, String> engineSettings = KeyStores.asPem(settings, "zookeeper.");
            Map<String, String> engineKafka = KeyStores.asPem(kafkaParams, "");
            NativeCheckedConfig checked;
            // Nothing logs in here: the logins are counted, then released.
            try (GssapiClients logins = Kerberos.configure(engineSettings, engineKafka)) {
                checked = NativeBridge.checkConfig(keys(engineSettings), values(engineSettings),
                        keys(engineKafka), values(engineKafka), group, logins);
            }
            String shown = "OffsetKeeper{group=" + group + ", settings=" + checked.shownSettings
                    + ", kafkaParams=" + checked.shownKafkaParams + "}";
            return new OffsetKeeper(group, settings, kafkaParams, shown, onAsyncCommitFailure);
        }

        /** Milliseconds of a duration; one too long for a long is refused by the engine. */
        private static long millis(Duration timeout, String name) {
            try {
                return require(timeout, name).toMillis();
            } catch (ArithmeticException e) {
                return Long.MAX_VALUE;
            }
        }
    }
}
