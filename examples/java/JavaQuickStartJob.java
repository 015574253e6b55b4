// The quick start in Java (docs/spark-streaming.md): the Scala QuickStartJob's direct stream,
// with Assign and a shutdown that commits the last batch and closes the keeper. The two regions between the README markers are
// the page's two snippets (tests/readme/readme_check.py checks them), and the build compiles
// them (gradle :e2e:compileExamples).
//
//   spark-submit --class JavaQuickStartJob --jars offsetkeeper_2.12-0.1.0.jar app.jar zk:2181 broker:9092 clicks

// README: begin imports
import io.offsetkeeper.OffsetKeeper;
import io.offsetkeeper.spark.SparkOffsets;
import java.util.ArrayList;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.streaming.api.java.JavaInputDStream;
import org.apache.spark.streaming.kafka010.ConsumerStrategies;
import org.apache.spark.streaming.kafka010.HasOffsetRanges;
import org.apache.spark.streaming.kafka010.KafkaUtils;
import org.apache.spark.streaming.kafka010.LocationStrategies;
import org.apache.spark.streaming.kafka010.OffsetRange;
// README: end imports
// The job's setup, which the page does not show.
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.spark.SparkConf;
import org.apache.spark.streaming.Durations;
import org.apache.spark.streaming.api.java.JavaStreamingContext;

/** Counts the clicks per page of each batch; offsetkeeper keeps the offsets in ZooKeeper. */
public final class JavaQuickStartJob {
    private JavaQuickStartJob() {}

    /**
     * Runs the job until it is stopped.
     *
     * @param args the ZooKeeper connect string, the brokers and the topics (comma-separated)
     */
    public static void main(String[] args) throws InterruptedException {
        String zookeeper = args[0];
        List<String> topics = Arrays.asList(args[2].split(","));
        Map<String, Object> kafkaParams = new HashMap<>();
        kafkaParams.put("bootstrap.servers", args[1]);
        kafkaParams.put("key.deserializer", StringDeserializer.class);
        kafkaParams.put("value.deserializer", StringDeserializer.class);
        kafkaParams.put("group.id", "click-count"); // the group whose offsets ZooKeeper holds
        kafkaParams.put("enable.auto.commit", false);
        JavaStreamingContext ssc = new JavaStreamingContext(
                new SparkConf().setAppName("click-count"), Durations.seconds(10));

        // README: begin job
        OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(zookeeper).kafkaParams(kafkaParams).build();
        SparkOffsets.closeOnShutdown(keeper, ssc);  // SIGTERM: the last batch commits, the group is released
        Map<TopicPartition, Long> offsets = keeper.load(topics);  // validated
        JavaInputDStream<ConsumerRecord<String, String>> stream = KafkaUtils.createDirectStream(ssc,
                LocationStrategies.PreferConsistent(),
                ConsumerStrategies.<String, String>Assign(new ArrayList<>(offsets.keySet()), kafkaParams, offsets));
        stream.foreachRDD(rdd -> {
            OffsetRange[] ranges = ((HasOffsetRanges) rdd.rdd()).offsetRanges();  // the stream's own RDD
            rdd.map(ConsumerRecord::value).countByValue().forEach((page, n) -> System.out.println(page + ": " + n));
            SparkOffsets.commit(keeper, ranges);  // one atomic ZooKeeper multi per batch (split, with a WARN, past 1 MB)
        });
        // README: end job

        ssc.start();
        ssc.awaitTermination();
    }
}
