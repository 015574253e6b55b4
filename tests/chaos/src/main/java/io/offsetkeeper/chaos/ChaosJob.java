package io.offsetkeeper.chaos;

import io.offsetkeeper.CommitResult;
import io.offsetkeeper.LoadReport;
import io.offsetkeeper.OffsetKeeper;
import io.offsetkeeper.PartitionReport;
import io.offsetkeeper.spark.SparkOffsets;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
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
import org.apache.spark.streaming.kafka010.ConsumerStrategy;
import org.apache.spark.streaming.kafka010.HasOffsetRanges;
import org.apache.spark.streaming.kafka010.KafkaUtils;
import org.apache.spark.streaming.kafka010.LocationStrategies;
import org.apache.spark.streaming.kafka010.OffsetRange;

/**
 * The chaos soak's driver: a Spark Streaming job written the way the README shows it (local[2],
 * 1 s batches, {@code keeper.load} before the stream, {@code keeper.commit} at the end of each
 * batch, {@code close()} in a shutdown hook), run as a process of its own so that the
 * supervisor ({@link Chaos}) can SIGKILL and SIGTERM it for real.
 *
 * <p>Each batch appends its records' {@code partition offset} lines to the sink file, then
 * commits (at-least-once). Events go to the events file as {@code millis NAME detail} lines,
 * for the supervisor to time restarts and batch delays (a batch's {@code batch=} is its Spark
 * batch time) and check the load report.
 *
 * <pre>
 * ChaosJob ZOOKEEPER BOOTSTRAP TOPIC GROUP SINK EVENTS assign|subscribe [CHECKPOINT_DIR]
 * </pre>
 * With a checkpoint directory the job is built by {@code JavaStreamingContext.getOrCreate}, the
 * keeper inside the create function, as the README shows for checkpointed jobs.
 */
public final class ChaosJob {
    private static OutputStream sink;
    private static OutputStream events;

    private ChaosJob() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 7 || args.length > 8) {
            throw new IllegalArgumentException("usage: ChaosJob ZOOKEEPER BOOTSTRAP TOPIC GROUP SINK EVENTS "
                    + "assign|subscribe [CHECKPOINT_DIR]; got " + Arrays.toString(args));
        }
        String zookeeper = args[0];
        String bootstrap = args[1];
        List<String> topics = Arrays.asList(args[2]);
        String group = args[3];
        sink = new FileOutputStream(args[4], true);
        events = new FileOutputStream(args[5], true);
        boolean assign = parseStrategy(args[6]);
        String checkpoint = args.length == 8 ? args[7] : null;
        event("JVM_STARTED", checkpoint == null ? "plain" : "checkpointed");

        JavaStreamingContext ssc;
        if (checkpoint == null) {
            ssc = create(zookeeper, bootstrap, topics, group, assign, null);
        } else {
            ssc = JavaStreamingContext.getOrCreate(checkpoint,
                    () -> create(zookeeper, bootstrap, topics, group, assign, checkpoint));
        }
        event("START_BEGIN", "");
        ssc.start();
        event("STARTED", "");
        ssc.awaitTermination();
        event("TERMINATED", "");
    }

    private static boolean parseStrategy(String strategy) {
        if (strategy.equals("assign")) {
            return true;
        }
        if (strategy.equals("subscribe")) {
            return false;
        }
        throw new IllegalArgumentException("strategy must be assign or subscribe, got '" + strategy + "'");
    }

    /** The job as the README writes it. Runs once per checkpoint: not again on recovery. */
    private static JavaStreamingContext create(String zookeeper, String bootstrap, List<String> topics,
            String group, boolean assign, String checkpoint) {
        event("CREATE", "");
        SparkConf conf = new SparkConf()
                .setMaster("local[2]")
                .setAppName("offsetkeeper-chaos")
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1");
        JavaStreamingContext ssc = new JavaStreamingContext(conf, Durations.seconds(1));
        if (checkpoint != null) {
            ssc.checkpoint(checkpoint);
        }
        Map<String, Object> kafkaParams = new HashMap<>();
        kafkaParams.put("bootstrap.servers", bootstrap);
        kafkaParams.put("key.deserializer", StringDeserializer.class);
        kafkaParams.put("value.deserializer", StringDeserializer.class);
        kafkaParams.put("group.id", group);
        kafkaParams.put("enable.auto.commit", false);

        OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(zookeeper).kafkaParams(kafkaParams).build();
        Runtime.getRuntime().addShutdownHook(new Thread(keeper::close, "offsetkeeper-close"));

        event("LOAD_BEGIN", "");
        LoadReport report = keeper.loadWithReport(topics);
        long lost = 0;
        for (PartitionReport p : report.partitions()) {
            lost += p.recordsLost();
        }
        event("LOAD_END", "lost=" + lost + " corrections=" + report.corrections().size());
        Map<TopicPartition, Long> offsets = report.offsets();
        ConsumerStrategy<String, String> strategy = assign
                // A copy: Spark checkpoints the strategy, and a key set view is not serializable.
                ? ConsumerStrategies.<String, String>Assign(new ArrayList<>(offsets.keySet()), kafkaParams, offsets)
                : ConsumerStrategies.<String, String>Subscribe(topics, kafkaParams, offsets);
        JavaInputDStream<ConsumerRecord<String, String>> stream = KafkaUtils.createDirectStream(
                ssc, LocationStrategies.PreferConsistent(), strategy);
        stream.foreachRDD((rdd, time) -> {
            OffsetRange[] ranges = ((HasOffsetRanges) rdd.rdd()).offsetRanges();
            List<String> processed = rdd.map(r -> r.partition() + " " + r.offset() + "\n").collect();
            writeSink(processed);
            CommitResult result = keeper.commit(SparkOffsets.untilOffsets(ranges));
            if (result.deferred()) {
                event("COMMIT_DEFERRED", "pending=" + result.pending() + " behindMs=" + result.behind().toMillis()
                        + " batch=" + time.milliseconds());
            } else if (!processed.isEmpty()) {
                event("BATCH", "records=" + processed.size() + " batch=" + time.milliseconds());
            }
        });
        return ssc;
    }

    /** One write per batch: a SIGKILL loses at most the tail of an uncommitted batch. */
    private static synchronized void writeSink(List<String> lines) throws IOException {
        StringBuilder text = new StringBuilder();
        for (String line : lines) {
            text.append(line);
        }
        sink.write(text.toString().getBytes(StandardCharsets.US_ASCII));
        sink.flush();
    }

    private static synchronized void event(String name, String detail) {
        try {
            events.write((System.currentTimeMillis() + " " + name + " " + detail + "\n")
                    .getBytes(StandardCharsets.US_ASCII));
            events.flush();
        } catch (IOException e) {
            throw new IllegalStateException("cannot write the events file", e);
        }
    }
}
