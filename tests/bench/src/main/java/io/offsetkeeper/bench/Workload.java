package io.offsetkeeper.bench;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.ZKUtil;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

/**
 * W(P): one group, P partitions over {@value #TOPICS} topics. Every partition holds
 * {@value #RECORDS} records; by position i (topic-major), i % 20 decides what is stored:
 * 0-1 below earliest (records before {@value #PURGED_TO} deleted, stored {@value #STORED_BELOW}),
 * 2 above latest (stored {@value #STORED_ABOVE}), 3 missing (no znode), the rest in range
 * (stored {@value #STORED_IN_RANGE}): 80% / 10% / 5% / 5%.
 *
 * <p>Two load groups hold the same stored offsets: cold loads read {@code bench-cold-p<P>} and
 * warm loads {@code bench-load-p<P>} (offsetkeeper's default ownership lets one keeper at a time
 * load a group; the warm keeper keeps it). Loads only read, so every contender loads the same
 * state. Each contender commits into a group of its own, pre-filled with every partition's
 * znode, so commits never disturb a load.
 */
final class Workload {
    static final int TOPICS = 5;
    static final int RECORDS = 20;
    static final long PURGED_TO = 10;
    static final long STORED_BELOW = 3;
    static final long STORED_ABOVE = 1_000;
    /** Each contender's tag in its commit group's name; see {@link #commitGroup}. */
    private static final Map<String, String> COMMIT_TAGS = Map.ofEntries(Map.entry("B1", "b1"),
            Map.entry("B2", "b2"), Map.entry("B3", "b3"), Map.entry("F", "fl"), Map.entry(FloorProcess.TOLD, "ft"),
            Map.entry(Report.OK, "ok"), Map.entry(Report.OK_SPARK, "sp"), Map.entry(KafkaStorePeer.NAME, "kp"),
            Map.entry(FloorProcess.KAFKA_FLOOR, "kf"), Map.entry(Report.OK_KAFKA, "ko"),
            Map.entry(Report.OK_KAFKA_SPARK, "ks"));
    static final long STORED_IN_RANGE = 15;

    final int size;
    final List<String> topics = new ArrayList<>();
    final List<TopicPartition> partitions = new ArrayList<>();
    final String loadGroup;
    final String coldGroup;
    /** What a correct load returns: the stored offset in range, else earliest. */
    final Map<TopicPartition, Long> expected = new LinkedHashMap<>();
    final Map<String, Integer> partitionsPerTopic = new LinkedHashMap<>();

    Workload(int size) {
        this.size = size;
        this.loadGroup = "bench-load-p" + size;
        this.coldGroup = "bench-cold-p" + size;
        for (int t = 0; t < TOPICS; t++) {
            String topic = "bench-p" + size + "-t" + t;
            int count = size / TOPICS + (t < size % TOPICS ? 1 : 0);
            topics.add(topic);
            partitionsPerTopic.put(topic, count);
            for (int p = 0; p < count; p++) {
                partitions.add(new TopicPartition(topic, p));
            }
        }
    }

    static String offsetPath(String group, TopicPartition tp) {
        return "/consumers/" + group + "/offsets/" + tp.topic() + "/" + tp.partition();
    }

    /**
     * The group a contender commits to. The contenders' tags are of one length, so that their
     * commits carry the same bytes: a path is most of a setData's bytes, and ZooKeeper's work
     * on a multi grows with them.
     */
    String commitGroup(String contender) {
        return "bench-commit-" + COMMIT_TAGS.getOrDefault(contender, contender.toLowerCase())
                + "-p" + size;
    }

    /** Creates the topics, writes the records, purges, and plants the stored offsets. */
    void create(Admin admin, String bootstrap, ZooKeeper zk, List<String> contenders)
            throws Exception {
        List<NewTopic> newTopics = new ArrayList<>();
        for (Map.Entry<String, Integer> e : partitionsPerTopic.entrySet()) {
            newTopics.add(new NewTopic(e.getKey(), e.getValue(), (short) 1));
        }
        boolean fresh = true;
        try {
            admin.createTopics(newTopics).all().get();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
            fresh = false; // a run on a cluster kept up: records and purge are there already
        }
        waitForLeaders(admin);
        if (fresh) {
            produce(bootstrap);
        }

        Map<TopicPartition, RecordsToDelete> purge = new HashMap<>();
        List<Op> ops = new ArrayList<>();
        for (String group : new String[] {loadGroup, coldGroup}) {
            deleteTree(zk, "/consumers/" + group);
            parents(ops, "/consumers/" + group + "/offsets", topics);
        }
        for (int i = 0; i < partitions.size(); i++) {
            TopicPartition tp = partitions.get(i);
            int kind = i % 20;
            long stored;
            long chosen;
            if (kind < 2) {
                purge.put(tp, RecordsToDelete.beforeOffset(PURGED_TO));
                stored = STORED_BELOW;
                chosen = PURGED_TO;
            } else if (kind == 2) {
                stored = STORED_ABOVE;
                chosen = 0;
            } else if (kind == 3) {
                stored = -1;
                chosen = 0;
            } else {
                stored = STORED_IN_RANGE;
                chosen = STORED_IN_RANGE;
            }
            expected.put(tp, chosen);
            if (stored >= 0) {
                ops.add(create(offsetPath(loadGroup, tp), Long.toString(stored)));
                ops.add(create(offsetPath(coldGroup, tp), Long.toString(stored)));
            }
        }
        if (fresh) {
            admin.deleteRecords(purge).all().get();
        }
        for (String contender : contenders) {
            String group = commitGroup(contender);
            deleteTree(zk, "/consumers/" + group);
            parents(ops, "/consumers/" + group + "/offsets", topics);
            for (TopicPartition tp : partitions) {
                ops.add(create(offsetPath(group, tp), "0"));
            }
        }
        for (int from = 0; from < ops.size(); from += 2_000) {
            zk.multi(ops.subList(from, Math.min(ops.size(), from + 2_000)));
        }
    }

    /**
     * The same stored offsets in Kafka's group store, under the same group names: the load
     * groups, and each Kafka-store contender's commit group at 0 (written with Kafka's Admin,
     * as a Kafka consumer or {@code kafka-consumer-groups} would: no offsetkeeper metadata).
     */
    void plantInKafka(Admin admin, List<String> contenders) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> zero = new HashMap<>();
        for (TopicPartition tp : partitions) {
            zero.put(tp, new OffsetAndMetadata(0));
        }
        Map<String, Map<TopicPartition, OffsetAndMetadata>> groups =
                new LinkedHashMap<>();
        groups.put(loadGroup, storedInKafka());
        groups.put(coldGroup, storedInKafka());
        for (String contender : contenders) {
            groups.put(commitGroup(contender), zero);
        }
        plant(admin, groups);
    }

    /**
     * The load groups' stored offsets in Kafka's group store again, as {@link #plantInKafka}
     * wrote them, for a Kafka table that follows the ZooKeeper table at this size: there B1's
     * two KafkaConsumers subscribe with the job's {@code group.id}, which is {@link #loadGroup},
     * and auto-commit (Kafka's default) as they close, so that group in Kafka then holds every
     * partition at its latest offset (20), missing ones included, and the Kafka table's warm
     * loads would read 20 where the workload stored 3, 15, 1,000 or nothing.
     */
    void replantLoadGroupsInKafka(Admin admin) throws Exception {
        Map<String, Map<TopicPartition, OffsetAndMetadata>> groups = new LinkedHashMap<>();
        groups.put(loadGroup, storedInKafka());
        groups.put(coldGroup, storedInKafka());
        plant(admin, groups);
    }

    /** The workload's stored offsets as Kafka's group store holds them: none for "missing". */
    private Map<TopicPartition, OffsetAndMetadata> storedInKafka() {
        Map<TopicPartition, OffsetAndMetadata> stored = new HashMap<>();
        for (int i = 0; i < partitions.size(); i++) {
            int kind = i % 20;
            long offset = kind < 2 ? STORED_BELOW : kind == 2 ? STORED_ABOVE : kind == 3 ? -1 : STORED_IN_RANGE;
            if (offset >= 0) {
                stored.put(partitions.get(i), new OffsetAndMetadata(offset));
            }
        }
        return stored;
    }

    /** Each group deleted if it exists, then holding exactly its offsets. */
    private static void plant(Admin admin, Map<String, Map<TopicPartition, OffsetAndMetadata>> groups)
            throws Exception {
        List<String> names = new ArrayList<>(groups.keySet());
        // A group left by an earlier run on a cluster kept up holds more: start from nothing.
        for (Map.Entry<String, ConsumerGroupListing> e : existingGroups(admin,
                names).entrySet()) {
            admin.deleteConsumerGroups(Collections.singleton(e.getKey())).all().get();
        }
        for (Map.Entry<String, Map<TopicPartition, OffsetAndMetadata>> e
                : groups.entrySet()) {
            for (Map<TopicPartition, OffsetAndMetadata> request : KafkaStorePeer.requests(e.getKey(), e.getValue())) {
                admin.alterConsumerGroupOffsets(e.getKey(), request).all().get();
            }
        }
    }

    private static Map<String, ConsumerGroupListing> existingGroups(Admin admin,
            List<String> names) throws Exception {
        Map<String, ConsumerGroupListing> found = new LinkedHashMap<>();
        for (ConsumerGroupListing g : admin.listConsumerGroups().all().get()) {
            if (names.contains(g.groupId())) {
                found.put(g.groupId(), g);
            }
        }
        return found;
    }

    /** Fails the run unless each Kafka-store contender's commit group holds what it committed. */
    void checkCommittedInKafka(Admin admin, List<Contender> contenders, TopicPartition changed, long changedValue,
            long value) throws Exception {
        TopicPartition last = partitions.get(partitions.size() - 1);
        for (Contender c : contenders) {
            if (!c.measures("commit P")) {
                continue;
            }
            Map<TopicPartition, OffsetAndMetadata> held =
                    admin.listConsumerGroupOffsets(commitGroup(c.name())).partitionsToOffsetAndMetadata().get();
            long a = held.get(changed).offset();
            long b = held.get(last).offset();
            if (a != changedValue || (size > 1 && b != value)) {
                throw new IllegalStateException(c.name() + " committed " + a + "/" + b + " to Kafka, expected "
                        + changedValue + "/" + value);
            }
        }
    }

    private static void parents(List<Op> ops, String offsetsDir, List<String> topics) {
        String[] parts = offsetsDir.substring(1).split("/");
        String path = "";
        for (String part : parts) {
            path += "/" + part;
            if (!path.equals("/consumers")) {
                ops.add(create(path, ""));
            }
        }
        for (String topic : topics) {
            ops.add(create(offsetsDir + "/" + topic, ""));
        }
    }

    private static Op create(String path, String data) {
        return Op.create(path, data.getBytes(StandardCharsets.UTF_8), ZooDefs.Ids.OPEN_ACL_UNSAFE,
                CreateMode.PERSISTENT);
    }

    private static void deleteTree(ZooKeeper zk, String path) throws Exception {
        try {
            ZKUtil.deleteRecursive(zk, path);
        } catch (KeeperException.NoNodeException e) {
            // nothing there
        }
    }

    static void ensureNode(ZooKeeper zk, String path) throws Exception {
        try {
            zk.create(path, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        } catch (KeeperException.NodeExistsException e) {
            // there already
        }
    }

    private void waitForLeaders(Admin admin) throws Exception {
        long deadline = System.currentTimeMillis() + 180_000;
        while (true) {
            try {
                Map<String, TopicDescription> d = admin.describeTopics(topics).allTopicNames().get();
                boolean ready = true;
                for (String topic : topics) {
                    TopicDescription td = d.get(topic);
                    ready &= td.partitions().size() == partitionsPerTopic.get(topic)
                            && td.partitions().stream().allMatch(p -> p.leader() != null);
                }
                if (ready) {
                    return;
                }
            } catch (ExecutionException e) {
                // not known yet
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("topics of W(" + size + ") have no leaders");
            }
            Thread.sleep(200);
        }
    }

    private void produce(String bootstrap) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "1");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props,
                new ByteArraySerializer(), new ByteArraySerializer())) {
            byte[] value = "x".getBytes(StandardCharsets.UTF_8);
            for (int r = 0; r < RECORDS; r++) {
                for (TopicPartition tp : partitions) {
                    producer.send(new ProducerRecord<>(tp.topic(), tp.partition(), null, value));
                }
            }
            producer.flush();
        }
    }

    static Admin admin(String bootstrap) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "120000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "300000");
        return Admin.create(props);
    }

    /** The map a Spark batch would commit: every partition at {@code value}. */
    Map<TopicPartition, Long> allAt(long value) {
        Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
        for (TopicPartition tp : partitions) {
            offsets.put(tp, value);
        }
        return offsets;
    }

    /** Checks a load's answer; returns null when right, else what is wrong. */
    String check(Map<TopicPartition, Long> loaded) {
        if (loaded.size() != expected.size()) {
            return loaded.size() + " partitions loaded, " + expected.size() + " expected";
        }
        for (Map.Entry<TopicPartition, Long> e : expected.entrySet()) {
            Long got = loaded.get(e.getKey());
            if (!e.getValue().equals(got)) {
                return e.getKey() + ": loaded " + got + ", expected " + e.getValue();
            }
        }
        return null;
    }
}
