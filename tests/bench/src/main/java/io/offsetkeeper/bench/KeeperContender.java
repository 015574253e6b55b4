package io.offsetkeeper.bench;

import io.offsetkeeper.OffsetKeeper;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/** offsetkeeper through its Java API, as a Spark job calls it. */
final class KeeperContender implements Contender {
    /** offsetkeeper's default (on); {@code -Pbench.ownership=false} shows what ownership costs. */
    private static final boolean OWNERSHIP =
            Boolean.parseBoolean(System.getProperty("offsetkeeper.bench.ownership", "true"));

    private final String zkConnect;
    private final Map<String, Object> kafkaParams;
    private OffsetKeeper loader;
    private OffsetKeeper committer;

    KeeperContender(String zkConnect, Map<String, Object> kafkaParams) {
        this.zkConnect = zkConnect;
        this.kafkaParams = kafkaParams;
    }

    @Override
    public String name() {
        return "offsetkeeper";
    }

    private OffsetKeeper keeper(String group) {
        return OffsetKeeper.builder().zookeeper(zkConnect).kafkaParams(kafkaParams).group(group)
                .ownership(OWNERSHIP).build();
    }

    /** Opens the warm keepers and makes each connect with one untimed call. */
    @Override
    public void open(Workload w) throws Exception {
        close();
        loader = keeper(w.loadGroup);
        loader.load(w.topics);
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
        long start = System.nanoTime();
        committer.commit(offsets);
        return System.nanoTime() - start;
    }

    @Override
    public void close() {
        if (loader != null) {
            loader.close();
            committer.close();
            loader = null;
            committer = null;
        }
    }
}
