package io.offsetkeeper.bench;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.retry.RetryOneTime;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.zookeeper.KeeperException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * B3, the modern JVM way: Apache Curator for ZooKeeper (one asynchronous getData per partition,
 * all in flight at once; a commit is one Curator transaction of setData per ~1 MB) and Kafka's
 * {@code Admin}: {@code describeTopics} for the partitions, then {@code listOffsets} with
 * {@link OffsetSpec#earliest()} and {@link OffsetSpec#latest()} at the same time, while the
 * ZooKeeper reads are in flight. The same validation rules as B2, with a WARN per correction.
 */
final class CuratorPeer implements Contender {
    private static final Logger log = LoggerFactory.getLogger(CuratorPeer.class);
    private static final int MAX_REQUEST_BYTES = 1_000_000;

    private final String zkConnect;
    private final String bootstrap;
    private Clients warm;

    CuratorPeer(String zkConnect, String bootstrap) {
        this.zkConnect = zkConnect;
        this.bootstrap = bootstrap;
    }

    @Override
    public String name() {
        return "B3";
    }

    @Override
    public void open(Workload w) throws Exception {
        close();
        warm = new Clients(zkConnect, bootstrap);
        warm.load(w.loadGroup, w.topics); // connects, untimed
    }

    @Override
    public Timed loadCold(Workload w) throws Exception {
        long start = System.nanoTime();
        Clients clients = new Clients(zkConnect, bootstrap);
        Map<TopicPartition, Long> offsets = clients.load(w.coldGroup, w.topics);
        long nanos = System.nanoTime() - start;
        clients.close();
        return new Timed(nanos, offsets, offsets.size());
    }

    @Override
    public Timed loadWarm(Workload w) throws Exception {
        long start = System.nanoTime();
        Map<TopicPartition, Long> offsets = warm.load(w.loadGroup, w.topics);
        return new Timed(System.nanoTime() - start, offsets, offsets.size());
    }

    @Override
    public long commit(Workload w, Map<TopicPartition, Long> offsets,
            Map<TopicPartition, Long> changed) throws Exception {
        long start = System.nanoTime();
        warm.commit(w.commitGroup(name()), offsets);
        return System.nanoTime() - start;
    }

    @Override
    public void close() throws Exception {
        if (warm != null) {
            warm.close();
            warm = null;
        }
    }

    static final class Clients {
        final CuratorFramework zk;
        final Admin admin;

        Clients(String zkConnect, String bootstrap) throws Exception {
            zk = CuratorFrameworkFactory.newClient(zkConnect, 30_000, 10_000, new RetryOneTime(100));
            zk.start();
            Properties props = new Properties();
            props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            admin = Admin.create(props);
            if (!zk.blockUntilConnected(10, TimeUnit.SECONDS)) {
                close();
                throw new IllegalStateException("no ZooKeeper connection to " + zkConnect);
            }
        }

        Map<TopicPartition, Long> load(String group, List<String> topics) throws Exception {
            Map<String, TopicDescription> described = admin.describeTopics(topics).allTopicNames()
                    .get(30, TimeUnit.SECONDS);
            List<TopicPartition> partitions = new ArrayList<>();
            for (String topic : topics) {
                List<TopicPartitionInfo> infos = new ArrayList<>(described.get(topic).partitions());
                infos.sort(Comparator.comparingInt(TopicPartitionInfo::partition));
                for (TopicPartitionInfo info : infos) {
                    partitions.add(new TopicPartition(topic, info.partition()));
                }
            }
            List<CompletableFuture<byte[]>> stored = new ArrayList<>(partitions.size());
            for (TopicPartition tp : partitions) {
                stored.add(readAsync(Workload.offsetPath(group, tp)));
            }
            Map<TopicPartition, OffsetSpec> earliestSpec = new LinkedHashMap<>();
            Map<TopicPartition, OffsetSpec> latestSpec = new LinkedHashMap<>();
            for (TopicPartition tp : partitions) {
                earliestSpec.put(tp, OffsetSpec.earliest());
                latestSpec.put(tp, OffsetSpec.latest());
            }
            KafkaFuture<Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo>> earliestF =
                    admin.listOffsets(earliestSpec).all();
            KafkaFuture<Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo>> latestF =
                    admin.listOffsets(latestSpec).all();
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> earliest =
                    earliestF.get(30, TimeUnit.SECONDS);
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> latest =
                    latestF.get(30, TimeUnit.SECONDS);

            Map<TopicPartition, Long> chosen = new LinkedHashMap<>();
            for (int i = 0; i < partitions.size(); i++) {
                TopicPartition tp = partitions.get(i);
                long low = earliest.get(tp).offset();
                long high = latest.get(tp).offset();
                byte[] data = stored.get(i).get(30, TimeUnit.SECONDS);
                Long offset = null;
                if (data != null) {
                    try {
                        offset = Long.parseLong(new String(data, StandardCharsets.UTF_8).trim());
                    } catch (NumberFormatException e) {
                        offset = null;
                    }
                }
                if (offset == null || offset < 0) {
                    log.warn("{}: nothing stored; starting at earliest {}", tp, low);
                    chosen.put(tp, low);
                } else if (offset < low || offset > high) {
                    log.warn("{}: stored {} out of range [{}, {}]; starting at earliest {}", tp,
                            offset, low, high, low);
                    chosen.put(tp, low);
                } else {
                    chosen.put(tp, offset);
                }
            }
            return chosen;
        }

        /** The node's data, or null when it does not exist. */
        private CompletableFuture<byte[]> readAsync(String path) throws Exception {
            CompletableFuture<byte[]> done = new CompletableFuture<>();
            zk.getData().inBackground((client, event) -> {
                int rc = event.getResultCode();
                if (rc == KeeperException.Code.OK.intValue()) {
                    done.complete(event.getData());
                } else if (rc == KeeperException.Code.NONODE.intValue()) {
                    done.complete(null);
                } else {
                    done.completeExceptionally(KeeperException.create(KeeperException.Code.get(rc), path));
                }
            }).forPath(path);
            return done;
        }

        /** One transaction of setData per ~1 MB of requests. */
        void commit(String group, Map<TopicPartition, Long> offsets) throws Exception {
            List<CuratorOp> ops = new ArrayList<>();
            int bytes = 0;
            for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
                String path = Workload.offsetPath(group, e.getKey());
                byte[] data = Long.toString(e.getValue()).getBytes(StandardCharsets.UTF_8);
                if (bytes + path.length() + data.length + 64 > MAX_REQUEST_BYTES && !ops.isEmpty()) {
                    zk.transaction().forOperations(ops);
                    ops = new ArrayList<>();
                    bytes = 0;
                }
                ops.add(zk.transactionOp().setData().forPath(path, data));
                bytes += path.length() + data.length + 64;
            }
            zk.transaction().forOperations(ops);
        }

        void close() {
            admin.close();
            zk.close();
        }
    }
}
