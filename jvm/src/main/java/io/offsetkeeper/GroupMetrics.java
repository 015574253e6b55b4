package io.offsetkeeper;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import javax.management.JMException;
import javax.management.ObjectName;
import org.slf4j.LoggerFactory;

/**
 * One consumer group's metrics in this JVM: what every {@link OffsetKeeper} of the group loaded
 * and committed, counted since the first keeper of the group was built. Registered as a JMX
 * MXBean, {@code io.offsetkeeper:type=GroupMetrics,group=<group>}, when the first keeper of the
 * group is built; a Spark driver with {@code spark.plugins=io.offsetkeeper.spark.OffsetKeeperPlugin}
 * also has them in Spark's metrics system (every configured sink). docs/operations.md names each.
 *
 * <p>Recording costs a few atomic additions per load and commit; nothing here sends a request
 * on a load's or commit's path. The lag is refreshed by one daemon thread of the JVM
 * ({@code offsetkeeper-metrics}) every {@link #lagRefreshInterval(Duration)} (30 s by default),
 * through an open keeper of the group, for the topics it loaded; not during a commit outage.
 */
public final class GroupMetrics implements GroupMetricsMXBean {
    private static final ConcurrentHashMap<String, GroupMetrics> GROUPS = new ConcurrentHashMap<>();
    private static final List<Consumer<GroupMetrics>> WATCHERS = new CopyOnWriteArrayList<>();
    private static final Object REFRESH_LOCK = new Object();
    private static ScheduledExecutorService refresher;
    private static ScheduledFuture<?> refreshing;
    private static long refreshMillis = 30_000;

    /** Told of each load, commit and lag refresh, for another metrics system (Spark's). */
    public interface Listener {
        /** A load returned, after {@code nanos}. */
        default void load(long nanos) {}

        /** A commit ended, stored or deferred, after {@code nanos}. */
        default void commit(long nanos) {}

        /** The lag was refreshed: each topic's, as {@link GroupMetrics#getLag()} now returns. */
        default void lag(Map<String, Long> byTopic) {}
    }

    private final String group;
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private final LongAdder loads = new LongAdder();
    private final LongAdder loadNanos = new LongAdder();
    private final LongAdder commits = new LongAdder();
    private final LongAdder commitNanos = new LongAdder();
    private volatile long lastCommitNanos;
    private final LongAdder deferred = new LongAdder();
    private final LongAdder failures = new LongAdder();
    private volatile long outageMillis;
    private volatile long lastStoredAt = -1; // System.nanoTime() of the last stored commit
    private final LongAdder recordsLost = new LongAdder();
    private final LongAdder belowRange = new LongAdder();
    private final LongAdder aboveRange = new LongAdder();
    private final LongAdder recreated = new LongAdder();
    private final LongAdder missing = new LongAdder();
    private volatile int stale;
    private volatile Map<String, Long> lag = Collections.emptyMap();
    private final LongAdder handed = new LongAdder();
    private final AtomicLong asyncPending = new AtomicLong();
    // Open keepers holding the group's ownership, each with the topics it loaded (for the lag).
    private final Map<OffsetKeeper, Collection<String>> owners = new ConcurrentHashMap<>();

    private GroupMetrics(String group) {
        this.group = group;
    }

    /** The group's metrics, made (and registered in JMX) on first use. */
    static GroupMetrics of(String group) {
        GroupMetrics existing = GROUPS.get(group);
        if (existing != null) {
            return existing;
        }
        GroupMetrics made = new GroupMetrics(group);
        existing = GROUPS.putIfAbsent(group, made);
        if (existing != null) {
            return existing;
        }
        made.registerMBean();
        for (Consumer<GroupMetrics> watcher : WATCHERS) {
            watcher.accept(made);
        }
        return made;
    }

    /**
     * Calls {@code watcher} with the metrics of every group there is and of every group that
     * comes later (the Spark plugin registers each in Spark's metrics system this way).
     */
    public static void forEachGroup(Consumer<GroupMetrics> watcher) {
        if (watcher == null) {
            throw new IllegalArgumentException("watcher is null");
        }
        WATCHERS.add(watcher);
        for (GroupMetrics metrics : GROUPS.values()) {
            watcher.accept(metrics);
        }
    }

    /** Stops calling a watcher given to {@link #forEachGroup}. */
    public static void stopWatching(Consumer<GroupMetrics> watcher) {
        WATCHERS.remove(watcher);
    }

    /** The metrics of a group that has had a keeper in this JVM, or null. */
    public static GroupMetrics find(String group) {
        return GROUPS.get(group);
    }

    /**
     * How often the lag is refreshed, for every group of this JVM (30 s by default); zero stops
     * refreshing. Each refresh reads the group's stored offsets and the topics' log ends, as
     * {@link OffsetKeeper#lag} does.
     *
     * @throws IllegalArgumentException when {@code interval} is null or negative
     */
    public static void lagRefreshInterval(Duration interval) {
        if (interval == null || interval.isNegative()) {
            throw new IllegalArgumentException("lag refresh interval " + interval
                    + " is not allowed: give zero (off) or a positive duration");
        }
        synchronized (REFRESH_LOCK) {
            refreshMillis = interval.toMillis();
            if (refreshing != null) {
                refreshing.cancel(false);
                refreshing = null;
                if (refreshMillis > 0) {
                    scheduleRefresh();
                }
            }
        }
    }

    /** The consumer group. */
    public String group() {
        return group;
    }

    /** Adds a listener of each load, commit and lag refresh from now on. */
    public void addListener(Listener listener) {
        if (listener == null) {
            throw new IllegalArgumentException("listener is null");
        }
        listeners.add(listener);
    }

    /** Removes a listener given to {@link #addListener}. */
    public void removeListener(Listener listener) {
        listeners.remove(listener);
    }

    // ---- Recorded by OffsetKeeper -----------------------------------------------------------

    void loaded(OffsetKeeper keeper, Collection<String> topics, LoadReport report, long nanos) {
        loads.increment();
        loadNanos.add(nanos);
        for (PartitionReport p : report.partitions()) {
            recordsLost.add(p.recordsLost());
            switch (p.action()) {
                case RESET_BELOW_RANGE:
                    belowRange.increment();
                    break;
                case RESET_ABOVE_RANGE:
                    aboveRange.increment();
                    break;
                case RECREATED:
                    recreated.increment();
                    break;
                case INITIALIZED:
                case CORRUPT_REPLACED:
                    missing.increment();
                    break;
                default:
                    break;
            }
        }
        stale = report.stalePartitions().size();
        owners.put(keeper, topics);
        startRefreshing();
        for (Listener l : listeners) {
            l.load(nanos);
        }
    }

    void committed(OffsetKeeper keeper, CommitResult result, long nanos) {
        commits.increment();
        commitNanos.add(nanos);
        lastCommitNanos = nanos;
        if (result.deferred()) {
            deferred.increment();
            outageMillis = Math.max(1, result.behind().toMillis());
        } else {
            outageMillis = 0;
            lastStoredAt = System.nanoTime();
            owners.putIfAbsent(keeper, Collections.emptyList());
        }
        for (Listener l : listeners) {
            l.commit(nanos);
        }
    }

    void commitFailed() {
        failures.increment();
    }

    void handed(int pendingOffsets) {
        handed.increment();
        asyncPending.set(pendingOffsets);
    }

    void asyncPending(int offsets) {
        asyncPending.set(offsets);
    }

    void closed(OffsetKeeper keeper) {
        owners.remove(keeper);
    }

    // ---- The attributes ---------------------------------------------------------------------

    @Override
    public long getLoads() {
        return loads.sum();
    }

    @Override
    public double getLoadMillisTotal() {
        return loadNanos.sum() / 1e6;
    }

    @Override
    public long getCommits() {
        return commits.sum();
    }

    @Override
    public double getCommitMillisTotal() {
        return commitNanos.sum() / 1e6;
    }

    @Override
    public double getLastCommitMillis() {
        return lastCommitNanos / 1e6;
    }

    @Override
    public long getCommitsDeferred() {
        return deferred.sum();
    }

    @Override
    public long getCommitFailures() {
        return failures.sum();
    }

    @Override
    public long getCommitOutageMillis() {
        return outageMillis;
    }

    @Override
    public long getMillisSinceLastStoredCommit() {
        long at = lastStoredAt;
        return at == -1 ? -1 : TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - at);
    }

    @Override
    public long getRecordsLost() {
        return recordsLost.sum();
    }

    @Override
    public long getPartitionsResetBelowRange() {
        return belowRange.sum();
    }

    @Override
    public long getPartitionsResetAboveRange() {
        return aboveRange.sum();
    }

    @Override
    public long getPartitionsResetRecreated() {
        return recreated.sum();
    }

    @Override
    public long getPartitionsResetMissing() {
        return missing.sum();
    }

    @Override
    public int getStalePartitions() {
        return stale;
    }

    @Override
    public Map<String, Long> getLag() {
        return lag;
    }

    @Override
    public int getOwnershipHeld() {
        return owners.size();
    }

    @Override
    public long getAsyncCommitsHanded() {
        return handed.sum();
    }

    @Override
    public int getAsyncPendingOffsets() {
        return (int) asyncPending.get();
    }

    @Override
    public int getMirrorPendingPartitions() {
        long pending = 0;
        for (MirrorStatus status : mirrors()) {
            pending += status.pendingPartitions();
        }
        return (int) Math.min(Integer.MAX_VALUE, pending);
    }

    @Override
    public long getMirrorFailures() {
        long failures = 0;
        for (MirrorStatus status : mirrors()) {
            failures += status.failures();
        }
        return failures;
    }

    @Override
    public long getMirrorBehindMillis() {
        long behind = 0;
        for (MirrorStatus status : mirrors()) {
            behind = Math.max(behind, status.behind().toMillis());
        }
        return behind;
    }

    /**
     * The mirrors of the open keepers of the group that loaded or committed, read now (a lock
     * and a copy in the engine, no request); none with one store.
     */
    private List<MirrorStatus> mirrors() {
        List<MirrorStatus> mirrors = new ArrayList<>();
        for (OffsetKeeper keeper : owners.keySet()) {
            try {
                MirrorStatus status = keeper.mirrorStatusIfOpen();
                if (status != null) {
                    mirrors.add(status);
                }
            } catch (RuntimeException e) {
                // A keeper closing meanwhile: it has no mirror to show any more.
            }
        }
        return mirrors;
    }

    @Override
    public String toString() {
        return "GroupMetrics{group=" + group + ", loads=" + getLoads() + ", commits=" + getCommits()
                + ", deferred=" + getCommitsDeferred() + ", recordsLost=" + getRecordsLost() + "}";
    }

    // ---- JMX and the lag --------------------------------------------------------------------

    private void registerMBean() {
        try {
            ObjectName name = new ObjectName("io.offsetkeeper:type=GroupMetrics,group="
                    + ObjectName.quote(group));
            ManagementFactory.getPlatformMBeanServer().registerMBean(this, name);
        } catch (JMException | RuntimeException e) {
            // Metrics must never stop a job: say so once and go on without the MBean.
            LoggerFactory.getLogger(NativeLog.ROOT_LOGGER)
                    .warn("group " + group + "'s metrics are not in JMX: " + e);
        }
    }

    private static void startRefreshing() {
        synchronized (REFRESH_LOCK) {
            if (refreshing == null && refreshMillis > 0) {
                scheduleRefresh();
            }
        }
    }

    /** Holds REFRESH_LOCK. */
    private static void scheduleRefresh() {
        if (refresher == null) {
            refresher = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "offsetkeeper-metrics");
                t.setDaemon(true);
                return t;
            });
        }
        refreshing = refresher.scheduleWithFixedDelay(GroupMetrics::refreshAll, refreshMillis,
                refreshMillis, TimeUnit.MILLISECONDS);
    }

    private static void refreshAll() {
        for (GroupMetrics metrics : GROUPS.values()) {
            metrics.refreshLag();
        }
    }

    /** Through one open keeper of the group that loaded topics; not during an outage. */
    private void refreshLag() {
        if (outageMillis > 0) {
            return;
        }
        for (Map.Entry<OffsetKeeper, Collection<String>> owner : owners.entrySet()) {
            if (owner.getValue().isEmpty()) {
                continue;
            }
            try {
                Map<String, Long> byTopic = new TreeMap<>();
                for (PartitionLag p : owner.getKey().lag(owner.getValue())) {
                    if (p.lag() != null) {
                        byTopic.merge(p.topic(), p.lag(), Long::sum);
                    }
                }
                lag = Collections.unmodifiableMap(byTopic);
                for (Listener l : listeners) {
                    l.lag(lag);
                }
            } catch (RuntimeException e) {
                // A closed keeper or a server that did not answer: the next refresh tries again.
                LoggerFactory.getLogger(NativeLog.ROOT_LOGGER)
                        .debug("group " + group + "'s lag was not refreshed: " + e);
            }
            return;
        }
    }
}
