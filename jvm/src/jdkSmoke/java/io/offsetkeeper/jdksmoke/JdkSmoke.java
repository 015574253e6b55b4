package io.offsetkeeper.jdksmoke;

import io.offsetkeeper.CommitResult;
import io.offsetkeeper.OffsetKeeper;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The JDK matrix smoke (run by tests/jdk/smoke.sh from jvm/jdk-matrix.gradle):
 * in a fresh JVM whose class path is the offsetkeeper_2.12 jar, kafka-clients and slf4j-api,
 * loads a group's offsets, commits, reloads in a new keeper and checks the reloaded offsets are
 * the committed ones. Compiled as Java 8 bytecode against the Java 8 API ({@code --release 8}).
 *
 * <p>Arguments: expected Java feature version (8, 11, 17, ...), ZooKeeper connect string,
 * Kafka bootstrap servers. Exit 0 and a last line {@code SMOKE OK ...}, or exit 1.
 */
public final class JdkSmoke {
    private JdkSmoke() {
    }

    public static void main(String[] args) throws Exception {
        String expected = args[0];
        String zookeeper = args[1];
        String bootstrap = args[2];
        String spec = System.getProperty("java.specification.version");
        System.out.println("JDK " + System.getProperty("java.version") + " ("
                + System.getProperty("java.vendor") + ", " + System.getProperty("java.vm.name") + " "
                + System.getProperty("java.vm.version") + ") at " + System.getProperty("java.home"));
        String feature = spec.startsWith("1.") ? spec.substring(2) : spec;
        check(feature.equals(expected), "this JVM is Java " + spec + ", not Java " + expected);

        String suffix = expected + "-" + System.currentTimeMillis() % 100_000_000L;
        String topic = "jdk-smoke-" + suffix;
        String group = "jdk-smoke-g-" + suffix;
        createAndFill(bootstrap, topic);

        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", bootstrap);
        List<String> topics = Collections.singletonList(topic);
        Map<TopicPartition, Long> committed = new TreeMap<>(JdkSmoke::compare);
        committed.put(new TopicPartition(topic, 0), 7L);
        committed.put(new TopicPartition(topic, 1), 3L);
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(zookeeper).group(group)
                .kafkaParams(params).build()) {
            Map<TopicPartition, Long> first = sorted(keeper.load(topics));
            System.out.println("loaded " + first);
            Map<TopicPartition, Long> earliest = new TreeMap<>(JdkSmoke::compare);
            earliest.put(new TopicPartition(topic, 0), 0L);
            earliest.put(new TopicPartition(topic, 1), 0L);
            check(first.equals(earliest), "a new group loads " + first + ", not " + earliest);
            CommitResult result = keeper.commit(committed);
            System.out.println("committed " + committed + ": " + result);
            check(result.written() == 2, "the commit wrote " + result.written() + " offsets, not 2");
        }
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(zookeeper).group(group)
                .kafkaParams(params).build()) {
            Map<TopicPartition, Long> reloaded = sorted(keeper.load(topics));
            System.out.println("reloaded " + reloaded);
            check(reloaded.equals(committed), "reloaded " + reloaded + ", committed " + committed);
        }
        System.out.println("SMOKE OK Java " + System.getProperty("java.version")
                + ": load, commit, reload through the jar");
    }

    private static void createAndFill(String bootstrap, String topic) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (AdminClient admin = AdminClient.create(props)) {
            admin.createTopics(Collections.singleton(new NewTopic(topic, 2, (short) 1))).all().get();
        }
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, "r" + i)).get();
            }
            for (int i = 0; i < 5; i++) {
                producer.send(new ProducerRecord<>(topic, 1, null, "r" + i)).get();
            }
        }
    }

    private static Map<TopicPartition, Long> sorted(Map<TopicPartition, Long> offsets) {
        Map<TopicPartition, Long> sorted = new TreeMap<>(JdkSmoke::compare);
        sorted.putAll(offsets);
        return sorted;
    }

    private static int compare(TopicPartition a, TopicPartition b) {
        int byTopic = a.topic().compareTo(b.topic());
        return byTopic != 0 ? byTopic : Integer.compare(a.partition(), b.partition());
    }

    private static void check(boolean ok, String message) {
        if (!ok) {
            System.out.println("SMOKE FAILED: " + message);
            System.exit(1);
        }
    }
}
