// A job moved from Spark Streaming (DStreams) to Structured Streaming that keeps the ZooKeeper
// offsets: it starts where the DStream job stopped (validated, as `load` does) and mirrors its
// progress back into ZooKeeper for monitoring and for a restart without the checkpoint. The lines
// marked CHANGED are the only difference from a plain Structured Streaming job. Compiled and run
// on Spark 3.5 and 4 by the build (:e2e:structuredStreaming, :e2e:structuredStreamingSpark4).
//
//   spark-submit --class StructuredOrdersJob --packages org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.1 \
//     --jars offsetkeeper_2.12-0.1.0.jar app.jar zk:2181 broker:9092 orders /checkpoints/order-totals

import io.offsetkeeper.OffsetKeeper; // CHANGED
import io.offsetkeeper.spark.ZooKeeperProgressListener; // CHANGED
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;

public final class StructuredOrdersJob {
    public static void main(String[] args) throws Exception {
        String zookeeper = args[0];
        String bootstrap = args[1];
        List<String> topics = Arrays.asList(args[2].split(","));
        String checkpoint = args[3];
        Map<String, Object> kafkaParams = new HashMap<>();
        kafkaParams.put("bootstrap.servers", bootstrap);
        kafkaParams.put("group.id", "order-totals"); // the DStream job's group

        SparkSession spark = SparkSession.builder().appName("order-totals").getOrCreate();
        // README: begin
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(zookeeper).kafkaParams(kafkaParams).build()) { // CHANGED
            spark.streams().addListener(new ZooKeeperProgressListener(keeper)); // CHANGED: each batch's end offsets into ZooKeeper
            Dataset<Row> orders = spark.readStream().format("kafka")
                    .option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribe", String.join(",", topics))
                    .option("startingOffsets", keeper.startingOffsetsJson(topics)) // CHANGED: read by Spark only without a checkpoint
                    .load();
            StreamingQuery query = orders.groupBy("partition").count().writeStream()
                    .outputMode("complete").format("console")
                    .option("checkpointLocation", checkpoint)
                    .start();
            query.awaitTermination();
        }
        // README: end
    }
}
