// A Java direct-stream job with offsetkeeper. The lines marked CHANGED are the only difference
// from the usual job that kept offsets in ZooKeeper by hand.
//
//   spark-submit --class OrderTotalsJob --jars offsetkeeper_2.12-0.1.0.jar app.jar zk:2181 broker:9092 orders

import io.offsetkeeper.OffsetKeeper; // CHANGED
import io.offsetkeeper.spark.SparkOffsets; // CHANGED
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.spark.SparkConf;
import org.apache.spark.streaming.Durations;
import org.apache.spark.streaming.api.java.JavaInputDStream;
import org.apache.spark.streaming.api.java.JavaStreamingContext;
import org.apache.spark.streaming.kafka010.ConsumerStrategies;
import org.apache.spark.streaming.kafka010.HasOffsetRanges;
import org.apache.spark.streaming.kafka010.KafkaUtils;
import org.apache.spark.streaming.kafka010.LocationStrategies;
import org.apache.spark.streaming.kafka010.OffsetRange;

public final class OrderTotalsJob {
    public static void main(String[] args) throws InterruptedException {
        String zookeeper = args[0];
        List<String> topics = Arrays.asList(args[2].split(","));
        Map<String, Object> kafkaParams = new HashMap<>();
        kafkaParams.put("bootstrap.servers", args[1]);
        kafkaParams.put("key.deserializer", StringDeserializer.class);
        kafkaParams.put("value.deserializer", StringDeserializer.class);
        kafkaParams.put("group.id", "order-totals");
        kafkaParams.put("enable.auto.commit", false);

        JavaStreamingContext ssc = new JavaStreamingContext(
                new SparkConf().setAppName("order-totals"), Durations.seconds(10));
        OffsetKeeper keeper = OffsetKeeper.builder() // CHANGED
                .zookeeper(zookeeper).kafkaParams(kafkaParams).build();

        JavaInputDStream<ConsumerRecord<String, String>> stream = KafkaUtils.createDirectStream(
                ssc, LocationStrategies.PreferConsistent(),
                ConsumerStrategies.<String, String>Subscribe(topics, kafkaParams,
                        keeper.load(topics))); // CHANGED

        stream.foreachRDD(rdd -> {
            OffsetRange[] ranges = ((HasOffsetRanges) rdd.rdd()).offsetRanges();
            long orders = rdd.count();
            System.out.println("orders in this batch: " + orders);
            keeper.commit(SparkOffsets.untilOffsets(ranges)); // CHANGED: one atomic ZooKeeper multi per batch
        });

        ssc.start();
        ssc.awaitTermination();
    }
}
