import io.offsetkeeper.OffsetKeeper;
import io.offsetkeeper.spark.SparkOffsets;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.spark.streaming.kafka010.OffsetRange;

/**
 * A Spark job's offset handling, in Java: load, commit a batch's OffsetRanges through
 * SparkOffsets, load again in a new keeper. Spark is provided, as spark-submit would.
 * Arguments: zookeeper bootstrap.
 */
public final class ConsumerJob {
    public static void main(String[] args) throws Exception {
        String topic = "consumer-gradle-" + System.currentTimeMillis();
        Map<String, Object> kafkaParams = new HashMap<>();
        kafkaParams.put("bootstrap.servers", args[1]);
        kafkaParams.put("group.id", topic + "-group");
        createAndFill(args[1], topic);
        List<String> topics = Collections.singletonList(topic);
        TopicPartition tp = new TopicPartition(topic, 0);

        // The three lines of a job: builder, load, commit.
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(args[0])
                .kafkaParams(kafkaParams).build()) {
            Map<TopicPartition, Long> offsets = keeper.load(topics);
            check(offsets.get(tp) == 0L, "first load " + offsets);
            OffsetRange[] ranges = {OffsetRange.create(topic, 0, 0, 3)}; // a batch of 3 records
            keeper.commit(SparkOffsets.untilOffsets(ranges));
        }
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(args[0])
                .kafkaParams(kafkaParams).build()) {
            Map<TopicPartition, Long> offsets = keeper.load(topics);
            check(offsets.get(tp) == 3L, "second load " + offsets);
            System.out.println("CONSUMER OK gradle " + offsets);
        }
    }

    private static void createAndFill(String bootstrap, String topic) throws Exception {
        Map<String, Object> config = new HashMap<>();
        config.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(config)) {
            admin.createTopics(Collections.singleton(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(config,
                new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 5; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, "record " + i)).get();
            }
        }
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError("unexpected " + what);
        }
    }
}
