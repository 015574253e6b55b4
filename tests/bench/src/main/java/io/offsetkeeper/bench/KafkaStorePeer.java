package io.offsetkeeper.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * KP, a careful JVM peer on Kafka's group store: a load is Kafka's {@code Admin}, with
 * {@code listConsumerGroupOffsets} in flight beside {@code describeTopics}, then
 * {@code listOffsets} with {@link OffsetSpec#earliest()} and {@link OffsetSpec#latest()} at the
 * same time; a commit is {@code KafkaConsumer.commitSync} of the batch (a consumer that never
 * subscribes: one OffsetCommit, as Spark's {@code commitAsync} sends). The validation rules of
 * B2 and B3, with a WARN per correction.
 */
final class KafkaStorePeer implements Contender {
    static final String NAME = "KP";
    private static final Logger log = LoggerFactory.getLogger(KafkaStorePeer.class);

    private final String bootstrap;
    private Admin warm;
    private KafkaConsumer<byte[], byte[]> committer;

    KafkaStorePeer(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    @Override
    public String name() {
        return NAME;
    }

    private Admin admin() {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(props);
    }

    @Override
    public void open(Workload w) throws Exception {
        close();
        warm = admin();
        load(warm, w.loadGroup, w.topics); // connects, untimed
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, w.commitGroup(NAME));
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        committer = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        // Finds the coordinator and connects, untimed.
        committer.committed(Collections.singleton(w.partitions.get(0)), Duration.ofSeconds(30));
    }

    @Override
    public Timed loadCold(Workload w) throws Exception {
        long start = System.nanoTime();
        Admin admin = admin();
        Map<TopicPartition, Long> offsets = load(admin, w.coldGroup, w.topics);
        long nanos = System.nanoTime() - start;
        admin.close();
        return new Timed(nanos, offsets, offsets.size());
    }

    @Override
    public Timed loadWarm(Workload w) throws Exception {
        long start = System.nanoTime();
        Map<TopicPartition, Long> offsets = load(warm, w.loadGroup, w.topics);
        return new Timed(System.nanoTime() - start, offsets, offsets.size());
    }

    @Override
    public long commit(Workload w, Map<TopicPartition, Long> offsets, Map<TopicPartition, Long> changed) {
        Map<TopicPartition, OffsetAndMetadata> batch = new HashMap<>(offsets.size() * 2);
        long start = System.nanoTime();
        for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
            batch.put(e.getKey(), new OffsetAndMetadata(e.getValue()));
        }
        for (Map<TopicPartition, OffsetAndMetadata> request : requests(w.commitGroup(NAME), batch)) {
            committer.commitSync(request, Duration.ofSeconds(30));
        }
        return System.nanoTime() - start;
    }

    /** The bytes of offset records one OffsetCommit may carry, as offsetkeeper bounds them. */
    private static final int OFFSET_COMMIT_RECORD_BYTES = 900_000;
    private static final int OFFSET_RECORD_FIXED_BYTES = 50;

    /**
     * {@code offsets} cut into requests the coordinator takes: it appends one request's offsets
     * as one record batch, refused whole (INVALID_COMMIT_OFFSET_SIZE) past the offsets topic's
     * 1 MB limit, which a commit of 20,000 offsets passes.
     */
    static List<Map<TopicPartition, OffsetAndMetadata>> requests(String group,
            Map<TopicPartition, OffsetAndMetadata> offsets) {
        List<Map<TopicPartition, OffsetAndMetadata>> requests = new ArrayList<>();
        Map<TopicPartition, OffsetAndMetadata> request = new HashMap<>();
        int bytes = 0;
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            int size = OFFSET_RECORD_FIXED_BYTES + group.length() + e.getKey().topic().length()
                    + e.getValue().metadata().length();
            if (bytes + size > OFFSET_COMMIT_RECORD_BYTES && !request.isEmpty()) {
                requests.add(request);
                request = new HashMap<>();
                bytes = 0;
            }
            request.put(e.getKey(), e.getValue());
            bytes += size;
        }
        if (!request.isEmpty()) {
            requests.add(request);
        }
        return requests;
    }

    static Map<TopicPartition, Long> load(Admin admin, String group, List<String> topics) throws Exception {
        KafkaFuture<Map<TopicPartition, OffsetAndMetadata>> committedF =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata();
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
        Map<TopicPartition, OffsetSpec> earliestSpec = new LinkedHashMap<>();
        Map<TopicPartition, OffsetSpec> latestSpec = new LinkedHashMap<>();
        for (TopicPartition tp : partitions) {
            earliestSpec.put(tp, OffsetSpec.earliest());
            latestSpec.put(tp, OffsetSpec.latest());
        }
        KafkaFuture<Map<TopicPartition, ListOffsetsResultInfo>> earliestF = admin.listOffsets(earliestSpec).all();
        KafkaFuture<Map<TopicPartition, ListOffsetsResultInfo>> latestF = admin.listOffsets(latestSpec).all();
        Map<TopicPartition, ListOffsetsResultInfo> earliest = earliestF.get(30, TimeUnit.SECONDS);
        Map<TopicPartition, ListOffsetsResultInfo> latest = latestF.get(30, TimeUnit.SECONDS);
        Map<TopicPartition, OffsetAndMetadata> committed = committedF.get(30, TimeUnit.SECONDS);

        Map<TopicPartition, Long> chosen = new LinkedHashMap<>();
        for (TopicPartition tp : partitions) {
            long low = earliest.get(tp).offset();
            long high = latest.get(tp).offset();
            OffsetAndMetadata stored = committed.get(tp);
            if (stored == null) {
                log.warn("{}: nothing stored; starting at earliest {}", tp, low);
                chosen.put(tp, low);
            } else if (stored.offset() < low || stored.offset() > high) {
                log.warn("{}: stored {} out of range [{}, {}]; starting at earliest {}", tp, stored.offset(),
                        low, high, low);
                chosen.put(tp, low);
            } else {
                chosen.put(tp, stored.offset());
            }
        }
        return chosen;
    }

    @Override
    public void close() {
        if (warm != null) {
            warm.close();
            warm = null;
        }
        if (committer != null) {
            committer.close();
            committer = null;
        }
    }
}
