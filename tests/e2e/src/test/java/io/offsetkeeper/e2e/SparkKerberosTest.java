package io.offsetkeeper.e2e;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import io.offsetkeeper.Action;
import io.offsetkeeper.PartitionReport;
import io.offsetkeeper.e2e.StreamingJob.Offsets;
import io.offsetkeeper.e2e.StreamingJob.Run;
import java.io.IOException;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.TopicPartition;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * The Spark restart scenarios against the Kerberos cluster ({@code cluster.sh start-kerberos}: a
 * Kerby KDC, a ZooKeeper that requires SASL on every session, a broker whose SASL_SSL listener
 * takes only GSSAPI), configured exactly as a job's driver on a Kerberized CDH/HDP cluster:
 * {@code -Djava.security.auth.login.config} names a JAAS file whose {@code Client} and
 * {@code KafkaClient} sections log {@code offsetkeeper@EXAMPLE.COM} in from its keytab,
 * {@code -Djava.security.krb5.conf} names the realm's krb5.conf, and the job's one kafkaParams map
 * has {@code security.protocol=SASL_SSL}, {@code sasl.kerberos.service.name=kafka} and a JKS
 * truststore. The same map goes to offsetkeeper and to Spark's consumers (local mode: the executors
 * run in the driver's JVM). Nothing specific to offsetkeeper is set.
 *
 * <p>Test data is staged through the broker's PLAINTEXT listener; ZooKeeper is read through its
 * Java client, which the JVM's {@code Client} section logs in as well. {@code :e2e:testSparkKerberos}
 * sets the JVM's login configuration and starts the Kerberos cluster; without it this class fails.
 */
public class SparkKerberosTest {
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(60);
    private static final AtomicInteger NAMES = new AtomicInteger();

    private static ClusterEnv env;
    private static Cluster cluster;

    @BeforeClass
    public static void connect() {
        String file = System.getProperty("offsetkeeper.kerberos.env");
        if (file == null) {
            throw new IllegalStateException("offsetkeeper.kerberos.env is not set: run this class"
                    + " through gradle :e2e:testSparkKerberos, which starts the Kerberos cluster");
        }
        try {
            env = ClusterEnv.load(Paths.get(file));
        } catch (IOException e) {
            throw new IllegalStateException("no Kerberos cluster: cannot read " + file
                    + "; gradle :e2e:testSparkKerberos starts it (cluster.sh start-kerberos)", e);
        }
        for (String property : new String[] {"java.security.auth.login.config", "java.security.krb5.conf"}) {
            if (System.getProperty(property) == null) {
                throw new IllegalStateException(property + " is not set: the driver JVM of a"
                        + " Kerberized cluster has it; gradle :e2e:testSparkKerberos sets it");
            }
        }
        cluster = new Cluster(kerberos("ZK"), kerberos("KAFKA_PLAINTEXT"));
    }

    @AfterClass
    public static void disconnect() throws InterruptedException {
        if (cluster != null) {
            cluster.close();
            cluster = null;
        }
    }

    private static String kerberos(String name) {
        String value = env.get("OFFSETKEEPER_KERBEROS_" + name);
        if (value == null || value.isEmpty()) {
            throw new IllegalStateException("no OFFSETKEEPER_KERBEROS_" + name + " in " + env.file());
        }
        return value;
    }

    /** The Kafka side of a Kerberized cluster's kafkaParams: SASL_SSL, GSSAPI, a JKS truststore. */
    private static Map<String, Object> kerberizedKafka() {
        Map<String, Object> params = new HashMap<>();
        // Shown in docs/security.md (Kerberos), checked by tests/readme/readme_check.py.
        // README: begin kerberos-kafka-params
        params.put("bootstrap.servers", kerberos("KAFKA_SASL_SSL"));
        params.put("security.protocol", "SASL_SSL");
        params.put("sasl.kerberos.service.name", "kafka");
        params.put("ssl.truststore.location", kerberos("TRUSTSTORE_JKS"));
        params.put("ssl.truststore.password", kerberos("TRUSTSTORE_PASSWORD"));
        params.put("ssl.truststore.type", "JKS");
        // README: end kerberos-kafka-params
        return params;
    }

    private static String unique(String prefix) {
        return prefix + "-" + System.currentTimeMillis() % 1_000_000 + "-" + NAMES.incrementAndGet();
    }

    private static StreamingJob job(String group, String topic) {
        return new StreamingJob(cluster, group, Collections.singletonList(topic), Offsets.OFFSETKEEPER)
                .withKafkaParams(kerberizedKafka());
    }

    /** Runs the job until every partition of the topic is processed up to its current end. */
    private static Run runToEnd(String group, String topic) {
        Map<TopicPartition, Long> ends = new HashMap<>();
        for (int p = 0; p < cluster.partitionCount(topic); p++) {
            ends.put(new TopicPartition(topic, p), cluster.latest(topic, p));
        }
        StreamingJob job = job(group, topic);
        assertEquals("the job's kafkaParams are a Kerberized cluster's", "SASL_SSL",
                job.kafkaParams().get("security.protocol"));
        Run run = job.run(StreamingJob.reached(ends), RUN_TIMEOUT, false);
        assertNull("the job failed: " + run.failureText(), run.failure);
        return run;
    }

    /** Every offset in [from, to) of the partition was processed exactly once in all the runs together. */
    private static void assertExactlyOnce(String topic, int partition, long from, long to, Run... runs) {
        Map<Long, Integer> times = new TreeMap<>();
        for (Run run : runs) {
            for (long offset : run.offsets(topic, partition)) {
                times.merge(offset, 1, Integer::sum);
            }
        }
        List<Long> missing = new ArrayList<>();
        List<Long> repeated = new ArrayList<>();
        for (long offset = from; offset < to; offset++) {
            int n = times.getOrDefault(offset, 0);
            if (n == 0) {
                missing.add(offset);
            } else if (n > 1) {
                repeated.add(offset);
            }
        }
        List<Long> outside = new ArrayList<>();
        for (long offset : times.keySet()) {
            if (offset < from || offset >= to) {
                outside.add(offset);
            }
        }
        assertTrue(topic + "-" + partition + ": skipped " + missing + ", processed more than once "
                + repeated + ", outside [" + from + ", " + to + ") " + outside,
                missing.isEmpty() && repeated.isEmpty() && outside.isEmpty());
    }

    private static PartitionReport reportOf(Run run, String topic, int partition) {
        for (PartitionReport r : run.report.partitions()) {
            if (r.topic().equals(topic) && r.partition() == partition) {
                return r;
            }
        }
        throw new AssertionError("no report for " + topic + "-" + partition + ": " + run.report);
    }

    /**
     * First start with nothing stored, a commit per batch, a stop, more records, a restart: the
     * restart resumes at the commit and every record is processed exactly once.
     */
    @Test
    public void firstStartCommitPerBatchRestartReadsEveryRecordExactlyOnce() {
        String topic = unique("krb-clean");
        String group = unique("krb-g");
        cluster.createTopic(topic, 2);
        cluster.produce(topic, 0, 20);
        cluster.produce(topic, 1, 20);
        Run first = runToEnd(group, topic);
        for (int p = 0; p < 2; p++) {
            assertEquals(Action.INITIALIZED, reportOf(first, topic, p).action());
            assertEquals("the last batch's commit, through the Kerberized ZooKeeper", "20",
                    cluster.readZnode(Cluster.offsetPath(group, topic, p)));
        }

        cluster.produce(topic, 0, 10);
        cluster.produce(topic, 1, 10);
        Run second = runToEnd(group, topic);
        for (int p = 0; p < 2; p++) {
            assertEquals(Action.KEPT, reportOf(second, topic, p).action());
            assertEquals("resumes at the committed offset", 20L,
                    (long) Collections.min(second.offsets(topic, p)));
            assertExactlyOnce(topic, p, 0, 30, first, second);
            assertEquals("30", cluster.readZnode(Cluster.offsetPath(group, topic, p)));
        }
    }

    /** A retention purge while the job is stopped: it resumes at the earliest record Kafka still holds. */
    @Test
    public void retentionPurgeWhileStoppedResumesAtEarliest() {
        String topic = unique("krb-purged");
        String group = unique("krb-g");
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 30);
        Run first = runToEnd(group, topic);
        assertEquals("30", cluster.readZnode(Cluster.offsetPath(group, topic, 0)));

        cluster.produce(topic, 0, 30);
        cluster.deleteRecords(topic, 0, 45); // 30..44 purged, never processed

        Run second = runToEnd(group, topic);
        PartitionReport report = reportOf(second, topic, 0);
        assertEquals(Action.RESET_BELOW_RANGE, report.action());
        assertEquals(15L, report.recordsLost());
        assertExactlyOnce(topic, 0, 0, 30, first);
        assertExactlyOnce(topic, 0, 45, 60, second);
    }

    /** The topic deleted and re-created while the job is stopped: the whole new topic is processed. */
    @Test
    public void topicRecreatedWhileStoppedProcessesTheWholeNewTopic() {
        String topic = unique("krb-recreated");
        String group = unique("krb-g");
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 50);
        runToEnd(group, topic);

        cluster.deleteTopic(topic);
        cluster.createTopic(topic, 1);
        cluster.produce(topic, 0, 10);

        Run second = runToEnd(group, topic);
        // The first run's commits recorded the topic ID: the new ID tells the re-creation.
        assertEquals(Action.RECREATED, reportOf(second, topic, 0).action());
        assertExactlyOnce(topic, 0, 0, 10, second);
    }
}
