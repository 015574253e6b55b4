package io.offsetkeeper.sparkjob;

import io.offsetkeeper.CommitResult;
import io.offsetkeeper.OffsetKeeper;
import io.offsetkeeper.spark.SparkOffsets;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.spark.SparkConf;
import org.apache.spark.streaming.Durations;
import org.apache.spark.streaming.api.java.JavaInputDStream;
import org.apache.spark.streaming.api.java.JavaStreamingContext;
import org.apache.spark.streaming.kafka010.CanCommitOffsets;
import org.apache.spark.streaming.kafka010.ConsumerStrategies;
import org.apache.spark.streaming.kafka010.HasOffsetRanges;
import org.apache.spark.streaming.kafka010.KafkaUtils;
import org.apache.spark.streaming.kafka010.LocationStrategies;
import org.apache.spark.streaming.kafka010.OffsetRange;
import org.apache.spark.streaming.scheduler.BatchInfo;
import org.apache.spark.streaming.scheduler.StreamingListener;
import org.apache.spark.streaming.scheduler.StreamingListenerBatchCompleted;

/**
 * The Spark job of the Spark-job benchmark ({@link SparkJobBench}): local[2], 1 s batches,
 * {@code Assign} over every partition of the topic, {@code rdd.count()} as its processing, and
 * one of three ways to keep the offsets:
 * <ul>
 *   <li>{@code keeper}: offsetkeeper as the README writes it, {@code keeper.load(topics)} before
 *       the stream (timed), {@code SparkOffsets.commit(keeper, ranges)} at the end of each batch;
 *   <li>{@code async}: the same load, then {@code SparkOffsets.commitAsync(keeper, ranges)}; each
 *       batch also notes whether every earlier batch was stored when it came
 *       ({@code keeper.flush(Duration.ZERO)}, which does not wait), so at most this batch is
 *       not stored ({@code behind=0}) or more ({@code behind=1});
 *   <li>{@code spark}: Spark's own {@code commitAsync(ranges)}, the offsets in the Kafka group
 *       (the start from the group's committed offsets).
 * </ul>
 * A {@link StreamingListener} writes one line per completed batch, Spark's own timings:
 * {@code batch=MS processing=MS scheduling=MS total=MS records=N ranges=N commitMicros=N behind=0|1}
 * ({@code ranges} and {@code commitMicros}, the commit call's own time, come from the batch's
 * {@code foreachRDD}). After BATCHES completed batches the job stops and exits 0; a failed
 * commit or batch exits 1.
 *
 * <pre>
 * BenchJob keeper|async|spark ZOOKEEPER BOOTSTRAP TOPIC GROUP BATCHES OUT_FILE
 * </pre>
 */
public final class BenchJob {
    private static final Map<Long, String> PER_BATCH = new ConcurrentHashMap<>();
    private static final AtomicReference<String> FAILURE = new AtomicReference<>();
    private static OutputStream out;

    private BenchJob() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 7 || !Arrays.asList("keeper", "async", "spark").contains(args[0])) {
            throw new IllegalArgumentException("usage: BenchJob keeper|async|spark ZOOKEEPER BOOTSTRAP TOPIC GROUP "
                    + "BATCHES OUT_FILE; got " + Arrays.toString(args));
        }
        boolean keeperMode = !args[0].equals("spark");
        boolean async = args[0].equals("async");
        String zookeeper = args[1];
        List<String> topics = Arrays.asList(args[3]);
        int batches = Integer.parseInt(args[5]);
        out = new FileOutputStream(args[6], false);
        CountDownLatch done = new CountDownLatch(batches);

        SparkConf conf = new SparkConf()
                .setMaster("local[2]")
                .setAppName("offsetkeeper-bench-" + args[0])
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1");
        JavaStreamingContext ssc = new JavaStreamingContext(conf, Durations.seconds(1));
        Map<String, Object> kafkaParams = new HashMap<>();
        kafkaParams.put("bootstrap.servers", args[2]);
        kafkaParams.put("key.deserializer", StringDeserializer.class);
        kafkaParams.put("value.deserializer", StringDeserializer.class);
        kafkaParams.put("group.id", args[4]);
        kafkaParams.put("enable.auto.commit", false);

        OffsetKeeper keeper = null;
        JavaInputDStream<ConsumerRecord<String, String>> stream;
        if (keeperMode) {
            keeper = OffsetKeeper.builder().zookeeper(zookeeper).kafkaParams(kafkaParams).build();
            long start = System.nanoTime();
            Map<TopicPartition, Long> offsets = keeper.load(topics);
            long loadMicros = (System.nanoTime() - start) / 1_000;
            write("load micros=" + loadMicros + " partitions=" + offsets.size());
            stream = KafkaUtils.createDirectStream(ssc, LocationStrategies.PreferConsistent(),
                    ConsumerStrategies.<String, String>Assign(new ArrayList<>(offsets.keySet()), kafkaParams, offsets));
        } else {
            List<TopicPartition> partitions = new ArrayList<>();
            try (org.apache.kafka.clients.consumer.KafkaConsumer<String, String> c =
                    new org.apache.kafka.clients.consumer.KafkaConsumer<>(kafkaParams)) {
                c.partitionsFor(topics.get(0)).forEach(p -> partitions.add(new TopicPartition(p.topic(), p.partition())));
            }
            // No offsets given: Spark starts from the group's committed offsets (latest when none).
            stream = KafkaUtils.createDirectStream(ssc, LocationStrategies.PreferConsistent(),
                    ConsumerStrategies.<String, String>Assign(partitions, kafkaParams));
        }
        OffsetKeeper k = keeper;
        JavaInputDStream<ConsumerRecord<String, String>> input = stream;
        input.foreachRDD((rdd, time) -> {
            OffsetRange[] ranges = ((HasOffsetRanges) rdd.rdd()).offsetRanges();
            long records = rdd.count();
            // Before the hand-over, not timed: were all earlier batches stored by now?
            boolean behind = async && !k.flush(Duration.ZERO);
            long start = System.nanoTime();
            try {
                if (async) {
                    SparkOffsets.commitAsync(k, ranges);
                } else if (k != null) {
                    CommitResult result = SparkOffsets.commit(k, ranges);
                    if (result.deferred()) {
                        fail("batch " + time.milliseconds() + ": commit deferred, pending=" + result.pending());
                    }
                } else {
                    ((CanCommitOffsets) input.inputDStream()).commitAsync(ranges);
                }
            } catch (RuntimeException e) {
                fail("batch " + time.milliseconds() + ": commit failed: " + e);
                throw e;
            }
            long commitMicros = (System.nanoTime() - start) / 1_000;
            PER_BATCH.put(time.milliseconds(), "records=" + records + " ranges=" + ranges.length
                    + " commitMicros=" + commitMicros + " behind=" + (behind ? 1 : 0));
        });
        ssc.addStreamingListener(new StreamingListener() {
            @Override
            public void onBatchCompleted(StreamingListenerBatchCompleted completed) {
                BatchInfo info = completed.batchInfo();
                long batch = info.batchTime().milliseconds();
                String own = PER_BATCH.remove(batch);
                if (own == null) {
                    fail("batch " + batch + " completed without its foreachRDD");
                    return;
                }
                write("batch=" + batch + " processing=" + millis(info.processingDelay())
                        + " scheduling=" + millis(info.schedulingDelay()) + " total=" + millis(info.totalDelay())
                        + " " + own);
                done.countDown();
            }
        });

        ssc.start();
        // Far beyond BATCHES seconds: the runner kills the job first.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(batches * 5L + 300);
        while (done.getCount() > 0 && FAILURE.get() == null && System.nanoTime() < deadline) {
            done.await(200, TimeUnit.MILLISECONDS);
        }
        // Judged before the stop: the stop interrupts the batch running then, which is not measured.
        String failure = FAILURE.get();
        if (failure == null && done.getCount() > 0) {
            failure = "only " + (batches - done.getCount()) + " of " + batches + " batches completed";
        }
        ssc.stop(true, false);
        if (keeper != null) {
            keeper.close();
        }
        if (failure != null) {
            write("failed " + failure);
            System.err.println("BenchJob: " + failure);
            System.exit(1);
        }
        out.close();
        System.exit(0);
    }

    private static long millis(scala.Option<Object> delay) {
        return delay.isDefined() ? ((Number) delay.get()).longValue() : -1;
    }

    private static void fail(String why) {
        FAILURE.compareAndSet(null, why);
    }

    private static synchronized void write(String line) {
        try {
            out.write((line + "\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
        } catch (IOException e) {
            throw new IllegalStateException("cannot write the batches file", e);
        }
    }
}
