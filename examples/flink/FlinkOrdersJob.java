// A Flink job that starts where a Spark Streaming job (or any consumer) left off in ZooKeeper,
// at offsets offsetkeeper validated against the brokers. The lines marked CHANGED are the only
// difference from a job that starts at committed offsets. Flink keeps its own positions in its
// checkpoints from then on; the stored offsets are for the first start (or one without state).
//
//   flink run -c FlinkOrdersJob app.jar zk:2181 broker:9092 orders

import io.offsetkeeper.OffsetKeeper; // CHANGED
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;

public final class FlinkOrdersJob {
    public static void main(String[] args) throws Exception {
        String zookeeper = args[0];
        String bootstrap = args[1];
        List<String> topics = Arrays.asList(args[2].split(","));
        Map<String, Object> kafkaParams = new HashMap<>();
        kafkaParams.put("bootstrap.servers", bootstrap);
        kafkaParams.put("group.id", "order-totals");

        // README: begin
        KafkaSource<String> source = KafkaSource.<String>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(topics)
                .setGroupId("order-totals")
                .setStartingOffsets(startingOffsets(zookeeper, kafkaParams, topics)) // CHANGED
                .setValueOnlyDeserializer(new SimpleStringSchema())
                .build();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "orders").print();
        env.execute("order-totals");
    }

    // CHANGED: the stored offsets of every partition, validated (a purged offset moves to the log
    // start, a re-created topic starts at its earliest); partitions added later start at earliest.
    // The keeper is closed at once: Flink writes nothing to ZooKeeper, so the group is not held.
    static OffsetsInitializer startingOffsets(String zookeeper, Map<String, Object> kafkaParams,
            List<String> topics) {
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(zookeeper).kafkaParams(kafkaParams).build()) {
            return OffsetsInitializer.offsets(keeper.load(topics), OffsetResetStrategy.EARLIEST);
        }
    }
    // README: end
}
