package io.offsetkeeper.e2e;

import io.offsetkeeper.PartitionReport;
import io.offsetkeeper.e2e.StreamingJob.Offsets;
import io.offsetkeeper.e2e.StreamingJob.Run;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.kafka.common.TopicPartition;

/**
 * The demo: a Spark Streaming job with offsetkeeper runs, stops, meets a retention purge and a
 * re-created topic, restarts, and loses nothing Kafka still holds.
 *
 * <p>Arguments: {@code --zookeeper HOST:PORT --bootstrap-servers HOST:PORT} for a real cluster;
 * without them, the cluster the build started.
 */
public final class Demo {
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);

    public static void main(String[] args) throws Exception {
        Map<String, String> options = options(args);
        Cluster cluster = options.isEmpty() ? Cluster.fromBuild()
                : new Cluster(required(options, "--zookeeper"), required(options, "--bootstrap-servers"));
        int exit;
        try {
            exit = run(cluster) ? 0 : 1;
        } finally {
            cluster.close();
            StreamingJob.spark().stop();
        }
        System.exit(exit);
    }

    private static boolean run(Cluster cluster) {
        String suffix = Long.toString(System.currentTimeMillis() % 100_000);
        String clicks = "demo-clicks-" + suffix;
        String orders = "demo-orders-" + suffix;
        String group = "demo-job-" + suffix;
        List<String> topics = Arrays.asList(clicks, orders);
        say("ZooKeeper %s, Kafka %s. Topics %s (2 partitions) and %s (1 partition), group %s.",
                cluster.zookeeper, cluster.bootstrap, clicks, orders, group);
        try {
            cluster.createTopic(clicks, 2);
            cluster.createTopic(orders, 1);
            cluster.produce(clicks, 0, 100);
            cluster.produce(clicks, 1, 100);
            cluster.produce(orders, 0, 100);

            say("%n1. The job starts for the first time: nothing is stored in ZooKeeper.");
            StreamingJob job = new StreamingJob(cluster, group, topics, Offsets.OFFSETKEEPER);
            Run first = job.run(StreamingJob.reached(ends(cluster, topics)), RUN_TIMEOUT, false);
            check(first);
            System.out.print(first.report);
            say("It processed %d records and committed after each batch.", first.processed.size());

            say("%n2. The job is stopped. Meanwhile 50 more records arrive in every partition,");
            say("   retention purges %s-0 up to offset 130 (30 unread records gone),", clicks);
            say("   and %s is deleted and re-created with 20 records.", orders);
            cluster.produce(clicks, 0, 50);
            cluster.produce(clicks, 1, 50);
            cluster.deleteRecords(clicks, 0, 130);
            cluster.deleteTopic(orders);
            cluster.createTopic(orders, 1);
            cluster.produce(orders, 0, 20);
            say("   Without offsetkeeper this job would now die with OffsetOutOfRangeException on %s-0", clicks);
            say("   and with 'numRecords must not be negative' on %s-0 (stored 100, latest 20).", orders);

            say("%n3. The job restarts. offsetkeeper validates the stored offsets:");
            Run second = job.run(StreamingJob.reached(ends(cluster, topics)), RUN_TIMEOUT, false);
            check(second);
            System.out.print(second.report);
            say("%n4. What was processed:");
            say("%-22s %9s %9s %11s %9s %s", "PARTITION", "RUN 1", "RUN 2", "KAFKA HOLDS", "PURGED", "SKIPPED");
            boolean nothingSkipped = true;
            for (PartitionReport r : second.report.partitions()) {
                long earliest = cluster.earliest(r.topic(), r.partition());
                long latest = cluster.latest(r.topic(), r.partition());
                TreeSet<Long> seen = new TreeSet<>(second.offsets(r.topic(), r.partition()));
                if (!r.topic().equals(orders)) { // the re-created topic's first life is gone for good
                    seen.addAll(first.offsets(r.topic(), r.partition()));
                }
                long skipped = 0;
                for (long o = earliest; o < latest; o++) {
                    skipped += seen.contains(o) ? 0 : 1;
                }
                nothingSkipped &= skipped == 0;
                say("%-22s %9d %9d %11s %9d %d", r.topic() + "-" + r.partition(),
                        first.offsets(r.topic(), r.partition()).size(),
                        second.offsets(r.topic(), r.partition()).size(),
                        "[" + earliest + ", " + latest + ")", r.recordsLost(), skipped);
            }
            say(nothingSkipped
                    ? "%nNo crash, and every record Kafka still holds was processed; the 30 purged ones are reported as lost."
                    : "%nSome records Kafka holds were skipped: see SKIPPED above.");
            return nothingSkipped;
        } finally {
            cluster.deleteTopic(clicks);
            cluster.deleteTopic(orders);
            cluster.deleteGroup(group);
            say("Cleaned up: topics and stored offsets of this run removed.");
        }
    }

    private static Map<TopicPartition, Long> ends(Cluster cluster, List<String> topics) {
        Map<TopicPartition, Long> ends = new HashMap<>();
        for (String topic : topics) {
            for (int p = 0; p < cluster.partitionCount(topic); p++) {
                ends.put(new TopicPartition(topic, p), cluster.latest(topic, p));
            }
        }
        return ends;
    }

    private static void check(Run run) {
        if (run.failure != null) {
            throw new IllegalStateException("the job failed: " + run.failureText(), run.failure);
        }
    }

    private static void say(String format, Object... args) {
        System.out.println(String.format(format, args));
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].equals("--zookeeper") && !args[i].equals("--bootstrap-servers") || i + 1 == args.length) {
                throw new IllegalArgumentException("unknown argument '" + args[i]
                        + "'; allowed: --zookeeper HOST:PORT[/chroot] --bootstrap-servers HOST:PORT");
            }
            options.put(args[i], args[++i]);
        }
        return options;
    }

    private static String required(Map<String, String> options, String name) {
        String value = options.get(name);
        if (value == null) {
            throw new IllegalArgumentException(name + " is missing; give both --zookeeper and --bootstrap-servers");
        }
        return value;
    }
}
