package io.offsetkeeper.bench;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * B2, what a careful JVM engineer would write: one ZooKeeper multi-read (3.6+) sent
 * asynchronously while a group-less KafkaConsumer asks {@code partitionsFor} per topic and
 * {@code beginningOffsets} / {@code endOffsets} once each; the same validation rules as
 * offsetkeeper (out of range or missing: earliest), with a WARN per correction; a commit is one
 * ZooKeeper multi of setData for every offset of the batch (missing nodes are created, then the
 * multi is sent again). Requests are kept under 1 MB.
 */
final class CarefulPeer implements Contender {
    private static final Logger log = LoggerFactory.getLogger(CarefulPeer.class);
    private static final int MAX_REQUEST_BYTES = 1_000_000;

    private final String zkConnect;
    private final String bootstrap;
    private Clients warm;

    CarefulPeer(String zkConnect, String bootstrap) {
        this.zkConnect = zkConnect;
        this.bootstrap = bootstrap;
    }

    @Override
    public String name() {
        return "B2";
    }

    @Override
    public void open(Workload w) throws Exception {
        close();
        warm = new Clients(zkConnect, bootstrap);
        warm.load(w.loadGroup, w.topics); // connects the consumer, untimed
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
        final ZooKeeper zk;
        final KafkaConsumer<byte[], byte[]> consumer;

        Clients(String zkConnect, String bootstrap) throws Exception {
            CountDownLatch connected = new CountDownLatch(1);
            zk = new ZooKeeper(zkConnect, 30_000, event -> {
                if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            });
            Properties props = new Properties();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
            props.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
            consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                    new ByteArrayDeserializer());
            if (!connected.await(10, TimeUnit.SECONDS)) {
                close();
                throw new IllegalStateException("no ZooKeeper connection to " + zkConnect);
            }
        }

        Map<TopicPartition, Long> load(String group, List<String> topics) throws Exception {
            List<TopicPartition> partitions = new ArrayList<>();
            for (String topic : topics) {
                List<PartitionInfo> infos = consumer.partitionsFor(topic);
                if (infos == null || infos.isEmpty()) {
                    throw new IllegalArgumentException("unknown topic " + topic);
                }
                int first = partitions.size();
                for (PartitionInfo info : infos) {
                    partitions.add(new TopicPartition(topic, info.partition()));
                }
                partitions.subList(first, partitions.size())
                        .sort(Comparator.comparingInt(TopicPartition::partition));
            }
            CompletableFuture<List<OpResult>> stored = readAsync(group, partitions);
            Map<TopicPartition, Long> earliest = consumer.beginningOffsets(partitions);
            Map<TopicPartition, Long> latest = consumer.endOffsets(partitions);
            List<OpResult> values = stored.get(30, TimeUnit.SECONDS);

            Map<TopicPartition, Long> chosen = new LinkedHashMap<>();
            for (int i = 0; i < partitions.size(); i++) {
                TopicPartition tp = partitions.get(i);
                long low = earliest.get(tp);
                long high = latest.get(tp);
                OpResult r = values.get(i);
                Long offset = null;
                if (r instanceof OpResult.GetDataResult) {
                    byte[] data = ((OpResult.GetDataResult) r).getData();
                    try {
                        offset = Long.parseLong(new String(data, StandardCharsets.UTF_8).trim());
                    } catch (NumberFormatException | NullPointerException e) {
                        offset = null;
                    }
                } else if (((OpResult.ErrorResult) r).getErr()
                        != KeeperException.Code.NONODE.intValue()) {
                    throw KeeperException.create(
                            KeeperException.Code.get(((OpResult.ErrorResult) r).getErr()));
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

        /** One multi-read per ~1 MB of paths, all sent at once, answered together. */
        private CompletableFuture<List<OpResult>> readAsync(String group,
                List<TopicPartition> partitions) {
            List<CompletableFuture<List<OpResult>>> parts = new ArrayList<>();
            List<Op> ops = new ArrayList<>();
            int bytes = 0;
            for (TopicPartition tp : partitions) {
                String path = Workload.offsetPath(group, tp);
                if (bytes + path.length() + 64 > MAX_REQUEST_BYTES && !ops.isEmpty()) {
                    parts.add(multiAsync(ops));
                    ops = new ArrayList<>();
                    bytes = 0;
                }
                ops.add(Op.getData(path));
                bytes += path.length() + 64;
            }
            parts.add(multiAsync(ops));
            return CompletableFuture.allOf(parts.toArray(new CompletableFuture[0])).thenApply(v -> {
                List<OpResult> all = new ArrayList<>();
                for (CompletableFuture<List<OpResult>> part : parts) {
                    all.addAll(part.join());
                }
                return all;
            });
        }

        private CompletableFuture<List<OpResult>> multiAsync(List<Op> ops) {
            CompletableFuture<List<OpResult>> done = new CompletableFuture<>();
            zk.multi(ops, (rc, path, ctx, results) -> {
                // A read multi answers per op: rc is the first op's error (NONODE for a missing
                // node) and the results are all there.
                if (results != null) {
                    done.complete(results);
                } else {
                    done.completeExceptionally(KeeperException.create(KeeperException.Code.get(rc)));
                }
            }, null);
            return done;
        }

        /** One multi of setData per ~1 MB; on NoNode, creates what is missing and tries again. */
        void commit(String group, Map<TopicPartition, Long> offsets) throws Exception {
            List<Op> ops = new ArrayList<>();
            int bytes = 0;
            for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
                String path = Workload.offsetPath(group, e.getKey());
                byte[] data = Long.toString(e.getValue()).getBytes(StandardCharsets.UTF_8);
                if (bytes + path.length() + data.length + 64 > MAX_REQUEST_BYTES && !ops.isEmpty()) {
                    write(ops);
                    ops = new ArrayList<>();
                    bytes = 0;
                }
                ops.add(Op.setData(path, data, -1));
                bytes += path.length() + data.length + 64;
            }
            write(ops);
        }

        private void write(List<Op> ops) throws Exception {
            try {
                zk.multi(ops);
            } catch (KeeperException.NoNodeException e) {
                for (Op op : ops) {
                    createWithParents(op.getPath());
                }
                zk.multi(ops);
            }
        }

        private void createWithParents(String path) throws Exception {
            if (zk.exists(path, false) != null) {
                return;
            }
            createWithParents(path.substring(0, path.lastIndexOf('/')));
            try {
                zk.create(path, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            } catch (KeeperException.NodeExistsException e) {
                // created meanwhile
            }
        }

        void close() throws Exception {
            consumer.close();
            zk.close();
        }
    }
}
