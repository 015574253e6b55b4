package io.offsetkeeper.bench;

import io.offsetkeeper.OffsetKeeper;
import io.offsetkeeper.spark.SparkOffsets;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.streaming.kafka010.OffsetRange;

/**
 * offsetkeeper through its Java API, as a Spark job calls it: with its defaults, or with
 * ownership off for cold loads only ({@link #withoutOwnership}), which shows what ownership
 * costs a cold load in the same run, or committing Spark's {@code OffsetRange[]} with
 * {@code SparkOffsets.commit} in commits only ({@link #sparkPath}).
 */
final class KeeperContender implements Contender {
    /** offsetkeeper's default (on); {@code -Pbench.ownership=false} turns it off everywhere. */
    private static final boolean OWNERSHIP =
            Boolean.parseBoolean(System.getProperty("offsetkeeper.bench.ownership", "true"));

    private final String zkConnect;
    private final Map<String, Object> kafkaParams;
    private final boolean ownership;
    private final String name;
    /** Which store, and which of its three contenders this is. */
    private final Report.Section section;
    private OffsetKeeper loader;
    private OffsetKeeper committer;

    private KeeperContender(String zkConnect, Map<String, Object> kafkaParams, boolean ownership,
            String name, Report.Section section) {
        this.zkConnect = zkConnect;
        this.kafkaParams = kafkaParams;
        this.ownership = ownership;
        this.name = name;
        this.section = section;
    }

    /** offsetkeeper with its defaults, in every operation, on the section's store. */
    static KeeperContender withDefaults(String zkConnect, Map<String, Object> kafkaParams,
            Report.Section section) {
        return new KeeperContender(zkConnect, kafkaParams, OWNERSHIP, section.ok, section);
    }

    /** offsetkeeper with ownership off, in cold loads only. */
    static KeeperContender withoutOwnership(String zkConnect, Map<String, Object> kafkaParams,
            Report.Section section) {
        return new KeeperContender(zkConnect, kafkaParams, false, section.okNoOwnership, section);
    }

    /**
     * offsetkeeper with its defaults, in commits only, committing the batch as Spark hands it
     * over, an {@code OffsetRange[]} (made before the clock starts), with
     * {@code SparkOffsets.commit}: what a job's {@code foreachRDD} calls.
     */
    static KeeperContender sparkPath(String zkConnect, Map<String, Object> kafkaParams,
            Report.Section section) {
        return new KeeperContender(zkConnect, kafkaParams, OWNERSHIP, section.okSpark, section);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public boolean measures(String op) {
        if (name.equals(section.okSpark)) {
            return op.startsWith("commit");
        }
        return name.equals(section.ok) || op.equals("load cold");
    }

    private OffsetKeeper keeper(String group) {
        OffsetKeeper.Builder builder = OffsetKeeper.builder().kafkaParams(kafkaParams).group(group)
                .ownership(ownership);
        return (section == Report.KAFKA ? builder.kafkaStore() : builder.zookeeper(zkConnect)).build();
    }

    /** Opens the warm keepers and makes each connect with one untimed call. */
    @Override
    public void open(Workload w) throws Exception {
        close();
        if (!measures("commit P")) {
            return;
        }
        if (measures("load warm")) {
            loader = keeper(w.loadGroup);
            loader.load(w.topics);
        }
        committer = keeper(w.commitGroup(name()));
        committer.lag(w.topics);
    }

    @Override
    public Timed loadCold(Workload w) throws Exception {
        long start = System.nanoTime();
        OffsetKeeper keeper = keeper(w.coldGroup);
        Map<TopicPartition, Long> offsets = keeper.load(w.topics);
        long nanos = System.nanoTime() - start;
        keeper.close();
        return new Timed(nanos, offsets, offsets.size());
    }

    @Override
    public Timed loadWarm(Workload w) throws Exception {
        long start = System.nanoTime();
        Map<TopicPartition, Long> offsets = loader.load(w.topics);
        return new Timed(System.nanoTime() - start, offsets, offsets.size());
    }

    @Override
    public long commit(Workload w, Map<TopicPartition, Long> offsets,
            Map<TopicPartition, Long> changed) {
        if (name.equals(section.okSpark)) {
            OffsetRange[] ranges = new OffsetRange[offsets.size()];
            int i = 0;
            for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
                ranges[i++] = OffsetRange.create(e.getKey(), e.getValue(), e.getValue());
            }
            long start = System.nanoTime();
            SparkOffsets.commit(committer, ranges);
            return System.nanoTime() - start;
        }
        long start = System.nanoTime();
        committer.commit(offsets);
        return System.nanoTime() - start;
    }

    @Override
    public void close() {
        if (loader != null) {
            loader.close();
            loader = null;
        }
        if (committer != null) {
            committer.close();
            committer = null;
        }
    }
}
