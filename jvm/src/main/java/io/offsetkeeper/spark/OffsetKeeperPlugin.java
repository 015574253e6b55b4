package io.offsetkeeper.spark;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import com.codahale.metrics.Timer;
import io.offsetkeeper.GroupMetrics;
import java.time.Duration;
import java.util.Collections;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * offsetkeeper's metrics in Spark's metrics system, for every sink Spark is configured with
 * (JMX, the Prometheus servlet, Graphite, CSV...): one line turns them on,
 *
 * <pre>{@code
 * spark-submit --conf spark.plugins=io.offsetkeeper.spark.OffsetKeeperPlugin ...
 * }</pre>
 *
 * <p>The driver's metrics, under {@code <namespace>.driver.plugin.io.offsetkeeper.spark.OffsetKeeperPlugin}
 * ({@code <namespace>} is {@code spark.metrics.namespace}, by default the application ID), hold
 * each group's {@link GroupMetrics} as {@code <group>.<name>}: timers {@code load_time} and
 * {@code commit_time}, counters such as {@code records_lost} and {@code commits_deferred},
 * gauges such as {@code commit_outage_ms} and {@code lag.<topic>}; docs/operations.md lists
 * them all. Executors add nothing: the keeper lives on the driver.
 *
 * <p>{@code spark.offsetkeeper.metrics.lagRefresh} (a Spark time, default {@code 30s};
 * {@code 0} turns it off) sets how often the lag is read, on a thread of its own.
 */
public final class OffsetKeeperPlugin implements SparkPlugin {
    /** The Spark setting of the lag's refresh interval. */
    public static final String LAG_REFRESH = "spark.offsetkeeper.metrics.lagRefresh";

    @Override
    public DriverPlugin driverPlugin() {
        return new Driver();
    }

    @Override
    public ExecutorPlugin executorPlugin() {
        return null;
    }

    /**
     * Registers every group's metrics, now and to come, in the plugin's registry, until the
     * SparkContext stops.
     */
    static final class Driver implements DriverPlugin {
        private final Map<GroupMetrics, GroupMetrics.Listener> listening = new ConcurrentHashMap<>();
        private Consumer<GroupMetrics> watcher;

        @Override
        public Map<String, String> init(SparkContext sc, PluginContext context) {
            GroupMetrics.lagRefreshInterval(
                    Duration.ofMillis(sc.conf().getTimeAsMs(LAG_REFRESH, "30s")));
            MetricRegistry registry = context.metricRegistry();
            Set<String> groups = ConcurrentHashMap.newKeySet();
            // Spark adds the plugin's registry to its metrics system only when it holds a
            // metric by then; metrics added later reach the sinks through it.
            registry.register("groups", (Gauge<Integer>) groups::size);
            watcher = metrics -> {
                if (groups.add(metrics.group())) {
                    listening.put(metrics, register(registry, metrics));
                }
            };
            GroupMetrics.forEachGroup(watcher);
            return Collections.emptyMap();
        }

        @Override
        public void shutdown() {
            GroupMetrics.stopWatching(watcher);
            listening.forEach(GroupMetrics::removeListener);
        }
    }

    /** Registers the group's metrics; returns the listener that feeds its timers and lag. */
    private static GroupMetrics.Listener register(MetricRegistry registry, GroupMetrics m) {
        String prefix = MetricRegistry.name(m.group());
        Timer loads = registry.timer(prefix + ".load_time");
        Timer commits = registry.timer(prefix + ".commit_time");
        Set<String> lagTopics = ConcurrentHashMap.newKeySet();
        GroupMetrics.Listener listener = new GroupMetrics.Listener() {
            @Override
            public void load(long nanos) {
                loads.update(nanos, TimeUnit.NANOSECONDS);
            }

            @Override
            public void commit(long nanos) {
                commits.update(nanos, TimeUnit.NANOSECONDS);
            }

            @Override
            public void lag(Map<String, Long> byTopic) {
                for (String topic : byTopic.keySet()) {
                    if (lagTopics.add(topic)) {
                        registry.register(prefix + ".lag." + topic,
                                (Gauge<Long>) () -> m.getLag().getOrDefault(topic, 0L));
                    }
                }
            }
        };
        m.addListener(listener);
        counter(registry, prefix + ".commits_deferred", m::getCommitsDeferred);
        counter(registry, prefix + ".commit_failures", m::getCommitFailures);
        counter(registry, prefix + ".records_lost", m::getRecordsLost);
        counter(registry, prefix + ".partitions_reset.below_range", m::getPartitionsResetBelowRange);
        counter(registry, prefix + ".partitions_reset.above_range", m::getPartitionsResetAboveRange);
        counter(registry, prefix + ".partitions_reset.recreated", m::getPartitionsResetRecreated);
        counter(registry, prefix + ".partitions_reset.missing", m::getPartitionsResetMissing);
        counter(registry, prefix + ".async_commits_handed", m::getAsyncCommitsHanded);
        registry.register(prefix + ".commit_outage_ms", (Gauge<Long>) m::getCommitOutageMillis);
        registry.register(prefix + ".since_last_stored_commit_ms",
                (Gauge<Long>) m::getMillisSinceLastStoredCommit);
        registry.register(prefix + ".stale_partitions", (Gauge<Integer>) m::getStalePartitions);
        registry.register(prefix + ".ownership_held", (Gauge<Integer>) m::getOwnershipHeld);
        registry.register(prefix + ".async_pending_offsets",
                (Gauge<Integer>) m::getAsyncPendingOffsets);
        registry.register(prefix + ".mirror_pending_partitions",
                (Gauge<Integer>) m::getMirrorPendingPartitions);
        registry.register(prefix + ".mirror_failures", (Gauge<Long>) m::getMirrorFailures);
        registry.register(prefix + ".mirror_behind_ms", (Gauge<Long>) m::getMirrorBehindMillis);
        return listener;
    }

    /** A counter whose count is the group's running total (sinks report it as a counter). */
    private static void counter(MetricRegistry registry, String name, LongSupplier total) {
        registry.register(name, new Counter() {
            @Override
            public long getCount() {
                return total.getAsLong();
            }
        });
    }
}
