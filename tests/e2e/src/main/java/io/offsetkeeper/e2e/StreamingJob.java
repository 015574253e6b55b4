package io.offsetkeeper.e2e;

import io.offsetkeeper.LoadReport;
import io.offsetkeeper.OffsetKeeper;
import io.offsetkeeper.spark.SparkOffsets;
import java.io.Serializable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.streaming.Durations;
import org.apache.spark.streaming.api.java.JavaInputDStream;
import org.apache.spark.streaming.api.java.JavaStreamingContext;
import org.apache.spark.streaming.kafka010.ConsumerStrategies;
import org.apache.spark.streaming.kafka010.HasOffsetRanges;
import org.apache.spark.streaming.kafka010.KafkaUtils;
import org.apache.spark.streaming.kafka010.LocationStrategies;
import org.apache.spark.streaming.kafka010.OffsetRange;

/**
 * A Spark Streaming job as users write it: {@code createDirectStream} with
 * {@code ConsumerStrategies.Subscribe}, offsets kept in ZooKeeper, a commit at the end of each
 * batch. It records every record it processes, so tests can prove nothing was skipped.
 *
 * <p>Two ways to get the starting offsets: through offsetkeeper, or read raw from ZooKeeper the
 * way hand-written offset code does (the job users run today, which crashes or loses data). The
 * raw job is only ever run to show how it starts, so it commits nothing: the offsetkeeper run
 * after it meets the same stored offsets.
 *
 * <p>Run in the tests' JVM ({@link #run}), or as a driver JVM of its own ({@link #main}) for a
 * test that kills it.
 */
public final class StreamingJob {
    /**
     * Where the starting offsets come from: offsetkeeper on ZooKeeper, offsetkeeper on Kafka's
     * group store (the job then uses {@code Assign}: with {@code Subscribe} Spark's driver
     * consumer would join the group offsetkeeper holds), or ZooKeeper read raw.
     */
    public enum Offsets { OFFSETKEEPER, KAFKA_STORE, RAW_ZOOKEEPER }

    private static JavaSparkContext spark;
    /** Spark settings of the driver JVM ({@link #main}'s {@code spark.*=} arguments). */
    private static final Map<String, String> SPARK_SETTINGS = new HashMap<>();

    private final Cluster cluster;
    private final String group;
    private final List<String> topics;
    private final Offsets source;
    private final Map<String, Object> kafkaOverrides = new HashMap<>();
    private boolean subscribe;
    private String store;
    private boolean printsBatches;
    private boolean commitAsync;
    private final Map<String, String> keeperProperties = new HashMap<>();

    public StreamingJob(Cluster cluster, String group, List<String> topics, Offsets source) {
        this.cluster = cluster;
        this.group = group;
        this.topics = topics;
        this.source = source;
    }

    /**
     * Kafka parameters that replace or add to the job's own ({@link #kafkaParams()}): another
     * listener and its security settings, as a Kerberized cluster's job has them. They reach the
     * keeper and Spark's consumers alike, as one kafkaParams map does in a user's job.
     */
    public StreamingJob withKafkaParams(Map<String, ?> overrides) {
        kafkaOverrides.putAll(overrides);
        return this;
    }

    /** Subscribes even on Kafka's group store, as a job moved there unchanged would. */
    public StreamingJob withSubscribe() {
        subscribe = true;
        return this;
    }

    /**
     * With {@link Offsets#OFFSETKEEPER}: keeps the offsets where {@code offsetkeeper.store} says,
     * one of the four phases of a move from ZooKeeper to Kafka's group store
     * (docs/migration.md): {@code zookeeper}, {@code zookeeper,kafka}, {@code kafka,zookeeper}
     * or {@code kafka} (the only one without {@code zookeeper(...)}). The job then uses
     * {@code Assign} in every phase, as a job being moved must from phase 2 on.
     */
    public StreamingJob withStore(String store) {
        this.store = store;
        return this;
    }

    /** One Spark context per JVM; each run gets a new StreamingContext on it. */
    static synchronized JavaSparkContext spark() {
        if (spark == null) {
            SparkConf conf = new SparkConf()
                    .setMaster("local[2]")
                    .setAppName("offsetkeeper-e2e")
                    .set("spark.ui.enabled", "false")
                    .set("spark.driver.host", "127.0.0.1")
                    .set("spark.driver.bindAddress", "127.0.0.1")
                    // A fetch that cannot succeed fails in seconds, not after Spark's 120 s default.
                    .set("spark.streaming.kafka.consumer.poll.ms", "10000")
                    // Runs stand for job restarts, which start with no consumer cache: a cached
                    // consumer would serve records it fetched before a purge.
                    .set("spark.streaming.kafka.consumer.cache.enabled", "false");
            SPARK_SETTINGS.forEach(conf::set);
            spark = new JavaSparkContext(conf);
        }
        return spark;
    }

    /** One processed record. */
    public static final class Record implements Serializable {
        private static final long serialVersionUID = 1L;
        public final String topic;
        public final int partition;
        public final long offset;

        Record(String topic, int partition, long offset) {
            this.topic = topic;
            this.partition = partition;
            this.offset = offset;
        }

        static Record of(ConsumerRecord<String, String> record) {
            return new Record(record.topic(), record.partition(), record.offset());
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Record && ((Record) o).topic.equals(topic)
                    && ((Record) o).partition == partition && ((Record) o).offset == offset;
        }

        @Override
        public int hashCode() {
            return Objects.hash(topic, partition, offset);
        }

        @Override
        public String toString() {
            return topic + "-" + partition + "@" + offset;
        }
    }

    /** What one run of the job did. */
    public static final class Run {
        /** Every record processed, in order. */
        public final List<Record> processed;
        /** offsetkeeper's load report; null for the raw job. */
        public final LoadReport report;
        /** The error that stopped the job, or null. */
        public final Throwable failure;

        Run(List<Record> processed, LoadReport report, Throwable failure) {
            this.processed = processed;
            this.report = report;
            this.failure = failure;
        }

        /** The offsets processed of one partition. */
        public List<Long> offsets(String topic, int partition) {
            List<Long> offsets = new ArrayList<>();
            for (Record r : processed) {
                if (r.topic.equals(topic) && r.partition == partition) {
                    offsets.add(r.offset);
                }
            }
            return offsets;
        }

        /** The failure and its causes as one line, for asserts on what users saw. */
        public String failureText() {
            StringBuilder text = new StringBuilder();
            for (Throwable t = failure; t != null; t = t.getCause()) {
                text.append(t).append(" | ");
            }
            return text.toString();
        }
    }

    /** The Kafka parameters of the job. Raw jobs keep Kafka's default start at latest. */
    public Map<String, Object> kafkaParams() {
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", cluster.bootstrap);
        params.put("key.deserializer", StringDeserializer.class);
        params.put("value.deserializer", StringDeserializer.class);
        params.put("group.id", group);
        params.put("enable.auto.commit", false);
        params.put("auto.offset.reset", source == Offsets.RAW_ZOOKEEPER ? "latest" : "earliest");
        // Subscribe notices added partitions at the next metadata refresh.
        params.put("metadata.max.age.ms", "1000");
        params.putAll(kafkaOverrides);
        return params;
    }

    /**
     * Runs the job until {@code done} holds for what it processed, the job fails, or the timeout
     * passes, then stops it. With {@code crashBeforeCommit}, the first batch that holds records
     * is processed and then the driver "dies": nothing is committed and no later batch runs.
     */
    public Run run(Predicate<List<Record>> done, Duration timeout, boolean crashBeforeCommit) {
        List<Record> processed = Collections.synchronizedList(new ArrayList<>());
        AtomicBoolean dead = new AtomicBoolean(false);
        Map<String, Object> params = kafkaParams();
        OffsetKeeper keeper;
        switch (source) {
            case OFFSETKEEPER:
                OffsetKeeper.Builder builder = OffsetKeeper.builder().kafkaParams(params);
                if (!"kafka".equals(store)) {
                    builder.zookeeper(cluster.zookeeper);
                }
                if (store != null) {
                    builder.property("offsetkeeper.store", store);
                }
                keeper = builder.properties(keeperProperties).build();
                break;
            case KAFKA_STORE:
                keeper = OffsetKeeper.builder().kafkaStore().kafkaParams(params).build();
                break;
            default:
                keeper = null;
        }
        boolean prints = printsBatches;
        JavaStreamingContext ssc = new JavaStreamingContext(spark(), Durations.milliseconds(500));
        Throwable failure = null;
        LoadReport report = null;
        try {
            Map<TopicPartition, Long> fromOffsets;
            if (keeper != null) {
                report = keeper.loadWithReport(topics);
                fromOffsets = report.offsets();
            } else {
                fromOffsets = readRawOffsets();
            }
            if (prints) {
                System.out.println("LOADED " + fromOffsets);
                if (report != null) {
                    System.out.println("LOST " + report.partitions().stream()
                            .mapToLong(p -> p.recordsLost()).sum());
                }
                System.out.flush();
            }
            JavaInputDStream<ConsumerRecord<String, String>> stream = KafkaUtils.createDirectStream(
                    ssc, LocationStrategies.PreferConsistent(),
                    (source == Offsets.KAFKA_STORE || store != null) && !subscribe
                            ? ConsumerStrategies.<String, String>Assign(fromOffsets.keySet(), params, fromOffsets)
                            : ConsumerStrategies.<String, String>Subscribe(topics, params, fromOffsets));
            stream.foreachRDD(rdd -> {
                if (dead.get()) {
                    return;
                }
                OffsetRange[] ranges = ((HasOffsetRanges) rdd.rdd()).offsetRanges();
                List<Record> batch = rdd.map(Record::of).collect();
                processed.addAll(batch);
                if (prints && !batch.isEmpty()) {
                    // Before the commit: a driver killed at any point has said what it processed.
                    System.out.println("PROCESSED " + batch);
                    System.out.flush();
                }
                if (crashBeforeCommit && !batch.isEmpty()) {
                    dead.set(true);
                    return;
                }
                if (keeper != null) {
                    Map<TopicPartition, Long> until = SparkOffsets.untilOffsets(ranges);
                    if (commitAsync) {
                        keeper.commitAsync(until);
                    } else {
                        keeper.commit(until);
                    }
                    if (prints) {
                        System.out.println((commitAsync ? "HANDED " : "COMMITTED ") + until);
                        System.out.flush();
                    }
                }
            });
            ssc.start();
            long deadline = System.nanoTime() + timeout.toNanos();
            while (!dead.get() && !done.test(snapshot(processed)) && System.nanoTime() < deadline) {
                ssc.awaitTerminationOrTimeout(100);
            }
        } catch (Throwable t) {
            failure = t;
        } finally {
            ssc.stop(false, false);
            if (keeper != null) {
                keeper.close();
            }
        }
        return new Run(snapshot(processed), report, failure);
    }

    /**
     * The job as a driver JVM of its own, for a test that kills it with SIGKILL
     * ({@code MoveBetweenStoresTest}): offsetkeeper on the stores {@code store} names
     * ({@link #withStore}), run until the JVM is killed. Prints {@code PID <pid>} first,
     * {@code LOADED <offsets>} after the load, and for each batch that holds records
     * {@code PROCESSED <records>} before its commit and {@code COMMITTED <offsets>} after it (also
     * for an empty batch), so that what the driver processed is known however it dies;
     * {@code FAILED <failure>} when the job fails. Arguments: zookeeper bootstrap group topic store,
     * then any of {@code commit=async} ({@code commitAsync}, printing {@code HANDED <offsets>}
     * instead of {@code COMMITTED}), {@code spark.<key>=<value>} (a Spark setting; with the UI on,
     * {@code UI <url>} is printed once the context runs, and {@code LOST <records>} after the
     * load) and any other {@code <key>=<value>} (a keeper property).
     */
    public static void main(String[] args) {
        System.out.println("PID " + ProcessHandle.current().pid());
        System.out.flush();
        StreamingJob job = new StreamingJob(new Cluster(args[0], args[1]), args[2],
                Collections.singletonList(args[3]), Offsets.OFFSETKEEPER).withStore(args[4]);
        for (int i = 5; i < args.length; i++) {
            String[] pair = args[i].split("=", 2);
            if (args[i].equals("commit=async")) {
                job.commitAsync = true;
            } else if (pair[0].startsWith("spark.")) {
                SPARK_SETTINGS.put(pair[0], pair[1]);
            } else {
                job.keeperProperties.put(pair[0], pair[1]);
            }
        }
        scala.Option<String> ui = spark().sc().uiWebUrl();
        if (ui.isDefined()) {
            System.out.println("UI " + ui.get());
            System.out.flush();
        }
        job.printsBatches = true;
        Run run = job.run(processed -> false, Duration.ofDays(1), false);
        System.out.println(run.failure == null ? "STOPPED" : "FAILED " + run.failureText());
        System.out.flush();
        System.exit(run.failure == null ? 0 : 1);
    }

    private static List<Record> snapshot(List<Record> processed) {
        synchronized (processed) {
            return new ArrayList<>(processed);
        }
    }

    /** The hand-written load: every stored value as it is, nothing for missing ones. */
    private Map<TopicPartition, Long> readRawOffsets() {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        for (String topic : topics) {
            for (int p = 0; p < cluster.partitionCount(topic); p++) {
                String value = cluster.readZnode(Cluster.offsetPath(group, topic, p));
                if (value != null) {
                    offsets.put(new TopicPartition(topic, p), Long.parseLong(value.trim()));
                }
            }
        }
        return offsets;
    }

    /** A predicate: every partition listed has been processed up to (not including) its end. */
    public static Predicate<List<Record>> reached(Map<TopicPartition, Long> ends) {
        return processed -> {
            Map<TopicPartition, Long> next = new HashMap<>();
            for (Record r : processed) {
                next.merge(new TopicPartition(r.topic, r.partition), r.offset + 1, Math::max);
            }
            for (Map.Entry<TopicPartition, Long> end : ends.entrySet()) {
                if (next.getOrDefault(end.getKey(), 0L) < end.getValue()) {
                    return false;
                }
            }
            return true;
        };
    }
}
