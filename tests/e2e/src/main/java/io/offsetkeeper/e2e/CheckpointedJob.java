package io.offsetkeeper.e2e;

import io.offsetkeeper.CommitResult;
import io.offsetkeeper.OffsetKeeper;
import io.offsetkeeper.spark.SparkOffsets;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
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

/**
 * A checkpointed Spark Streaming driver, run in a JVM of its own by
 * {@code CheckpointRecoveryTest}: {@code StreamingContext.getOrCreate} with the keeper created
 * inside the create function, so that it is serialized into the checkpoint with the
 * {@code foreachRDD} closure and deserialized, never loaded, when the job recovers. Prints
 * {@code PID <pid>} first, {@code CREATED} when it started fresh (not recovered), and
 * {@code COMMITTED <untilOffsets>} after each commit. Runs until killed.
 * Arguments: zookeeper bootstrap group topic checkpointDir.
 */
public final class CheckpointedJob {
    public static void main(String[] args) throws Exception {
        String zookeeper = args[0];
        String bootstrap = args[1];
        String group = args[2];
        String topic = args[3];
        String checkpoint = args[4];
        System.out.println("PID " + ProcessHandle.current().pid());
        System.out.flush();
        SparkConf conf = new SparkConf()
                .setMaster("local[2]")
                .setAppName("offsetkeeper-checkpointed")
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.streaming.kafka.consumer.poll.ms", "10000");
        JavaStreamingContext ssc = JavaStreamingContext.getOrCreate(checkpoint,
                () -> create(conf, zookeeper, bootstrap, group, topic, checkpoint));
        ssc.start();
        ssc.awaitTermination();
    }

    private static JavaStreamingContext create(SparkConf conf, String zookeeper, String bootstrap,
            String group, String topic, String checkpoint) {
        JavaStreamingContext ssc = new JavaStreamingContext(conf, Durations.seconds(1));
        ssc.checkpoint(checkpoint);
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", bootstrap);
        params.put("key.deserializer", StringDeserializer.class);
        params.put("value.deserializer", StringDeserializer.class);
        params.put("group.id", group);
        params.put("enable.auto.commit", false);
        params.put("auto.offset.reset", "earliest");
        OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(zookeeper).kafkaParams(params).build();
        List<String> topics = Collections.singletonList(topic);
        Map<TopicPartition, Long> from = keeper.load(topics);
        JavaInputDStream<ConsumerRecord<String, String>> stream = KafkaUtils.createDirectStream(
                ssc, LocationStrategies.PreferConsistent(),
                ConsumerStrategies.<String, String>Subscribe(topics, params, from));
        stream.foreachRDD(rdd -> {
            OffsetRange[] ranges = ((HasOffsetRanges) rdd.rdd()).offsetRanges();
            rdd.count();
            Map<TopicPartition, Long> until = SparkOffsets.untilOffsets(ranges);
            CommitResult result = keeper.commit(until);
            System.out.println("COMMITTED " + until + " " + result);
            System.out.flush();
        });
        System.out.println("CREATED");
        System.out.flush();
        return ssc;
    }
}
