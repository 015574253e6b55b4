package io.offsetkeeper;

import static io.offsetkeeper.TestCluster.tp;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.offsetkeeper.spark.SparkOffsets;
import java.time.Duration;
import java.util.AbstractMap;
import java.util.Arrays;
import java.util.Collections;
import java.util.ConcurrentModificationException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.streaming.kafka010.OffsetRange;
import org.junit.BeforeClass;
import org.junit.Test;
import org.junit.function.ThrowingRunnable;

/**
 * Every bad argument raises the stated exception, names what was wrong, and writes nothing.
 * Java checks null and empty; names, negative numbers and duplicates are the engine's checks.
 */
public class BadArgumentsTest {
    private static String topic;

    @BeforeClass
    public static void createTopic() throws Exception {
        topic = TestCluster.createTopic(2);
    }

    private static void assertIllegal(String needle, ThrowingRunnable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue("'" + needle + "' not in: " + e.getMessage(), e.getMessage().contains(needle));
    }

    /** Commits in a fresh group, which must still have no node afterwards. */
    private static void assertCommitRefused(String needle, Map<TopicPartition, Long> offsets)
            throws Exception {
        String group = TestCluster.unique("group");
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            assertIllegal(needle, () -> keeper.commit(offsets));
        }
        assertFalse("nothing written for " + offsets, TestCluster.exists("/consumers/" + group));
    }

    @Test
    public void builderRefusesNullAndEmpty() {
        assertIllegal("zookeeper is null", () -> OffsetKeeper.builder().zookeeper(null));
        assertIllegal("zookeeper is empty", () -> OffsetKeeper.builder().zookeeper(""));
        assertIllegal("group is null", () -> OffsetKeeper.builder().group(null));
        assertIllegal("group is empty", () -> OffsetKeeper.builder().group(""));
        assertIllegal("basePath is null", () -> OffsetKeeper.builder().basePath(null));
        assertIllegal("kafkaParams is null", () -> OffsetKeeper.builder().kafkaParams(null));
        Map<String, Object> nullValue = new HashMap<>();
        nullValue.put("bootstrap.servers", null);
        assertIllegal("bootstrap.servers", () -> OffsetKeeper.builder().kafkaParams(nullValue));
        assertIllegal("kafkaTimeout is null", () -> OffsetKeeper.builder().kafkaTimeout(null));
        // Values are the engine's to check, in build(), naming the key and what is allowed.
        assertIllegal("offsetkeeper.session.timeout.ms '0' is not allowed; allowed: whole"
                + " milliseconds from 1 to 2147483647",
                () -> TestCluster.keeperBuilder("g").sessionTimeout(0).build());
        assertIllegal("offsetkeeper.zookeeper.timeout.ms '-5'",
                () -> TestCluster.keeperBuilder("g").zookeeperTimeout(Duration.ofMillis(-5)).build());
        assertIllegal("offsetkeeper.kafka.timeout.ms '31536000000'",
                () -> TestCluster.keeperBuilder("g").kafkaTimeout(Duration.ofDays(365)).build());
        assertIllegal("offsetkeeper.commit.outage.tolerance.ms '9223372036854775807'",
                () -> TestCluster.keeperBuilder("g")
                        .commitOutageTolerance(Duration.ofSeconds(Long.MAX_VALUE)).build());
        assertIllegal("'offsetkeeper.fencin' is not an offsetkeeper setting; allowed: ",
                () -> TestCluster.keeperBuilder("g").property("offsetkeeper.fencin", "false").build());
        assertIllegal("'zookeeper.ssl.truststore.locaton' is not a ZooKeeper setting",
                () -> TestCluster.keeperBuilder("g")
                        .property("zookeeper.ssl.truststore.locaton", "/ca.pem").build());

        assertIllegal("zookeeper is not set",
                () -> OffsetKeeper.builder().kafkaParams(TestCluster.kafkaParams("g")).build());
        assertIllegal("kafkaParams is not set", () -> OffsetKeeper.builder().zookeeper("zk:2181").build());
        Map<String, Object> noGroup = TestCluster.kafkaParams("g");
        noGroup.remove("group.id");
        assertIllegal("no group.id",
                () -> OffsetKeeper.builder().zookeeper("zk:2181").kafkaParams(noGroup).build());
        assertIllegal("group.id", () -> OffsetKeeper.builder().zookeeper("zk:2181")
                .kafkaParams(TestCluster.kafkaParams("")).build());
    }

    @Test
    public void engineRefusesConfiguration() throws Exception {
        assertIllegal("offsetkeeper.base.path: base path 'consumers'",
                () -> TestCluster.keeperBuilder("g").basePath("consumers").build());
        Map<String, Object> params = TestCluster.kafkaParams("g");
        params.remove("bootstrap.servers");
        assertIllegal("bootstrap.servers", () -> OffsetKeeper.builder()
                .zookeeper(TestCluster.zookeeper()).kafkaParams(params).build());
        Map<String, Object> badReset = TestCluster.kafkaParams("g");
        badReset.put("auto.offset.reset", "sometimes");
        assertIllegal("sometimes", () -> OffsetKeeper.builder()
                .zookeeper(TestCluster.zookeeper()).kafkaParams(badReset).build());
        // What the engine refuses only when it opens (it reads files, asks no server yet).
        try (OffsetKeeper keeper = TestCluster.keeperBuilder("g")
                .property("isolation.level", "read_sometimes").build()) {
            assertIllegal("isolation.level 'read_sometimes'",
                    () -> keeper.load(Collections.singleton(topic)));
        }
    }

    /** A misspelt security.protocol is refused by build(), as Kafka's client refuses it. */
    @Test
    public void buildRefusesAMisspeltSecurityProtocol() {
        for (String bad : new String[] {"SASL_PLAIN", "plaintxt"}) {
            Map<String, Object> params = TestCluster.kafkaParams("g");
            params.put("security.protocol", bad);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> OffsetKeeper.builder().zookeeper(TestCluster.zookeeper())
                            .kafkaParams(params).build());
            assertTrue(e.getMessage(), e.getMessage().contains("security.protocol '" + bad
                    + "' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"));
        }
        // Any case is Kafka's: accepted.
        Map<String, Object> params = TestCluster.kafkaParams("g");
        params.put("security.protocol", "plaintext");
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(TestCluster.zookeeper())
                .kafkaParams(params).build()) {
            assertEquals("g", keeper.group());
        }
    }

    @Test
    public void loadArguments() throws Exception {
        String group = TestCluster.unique("group");
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            assertIllegal("topics is null", () -> keeper.load(null));
            assertIllegal("topics is empty", () -> keeper.load(Collections.<String>emptyList()));
            assertIllegal("topics[1] is null", () -> keeper.load(Arrays.asList(topic, null)));
            assertIllegal("a/b", () -> keeper.load(Arrays.asList(topic, "a/b")));
            assertIllegal("..", () -> keeper.load(Collections.singleton("..")));
            assertIllegal("topics is null", () -> keeper.lag(null));
            assertIllegal("a/b", () -> keeper.lag(Collections.singleton("a/b")));
        }
        // A group Kafka would refuse is refused by build(), before any call.
        assertIllegal("group name 'a/b'", () -> TestCluster.keeper("a/b"));
        UnknownTopicException unknown;
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            unknown = assertThrows(UnknownTopicException.class,
                    () -> keeper.load(Collections.singleton("no-such-topic")));
        }
        assertTrue(unknown.getMessage(), unknown.getMessage().contains("no-such-topic"));
        assertFalse(TestCluster.exists("/consumers/" + group));
    }

    @Test
    public void commitArguments() throws Exception {
        String group = TestCluster.unique("group");
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            assertIllegal("offsets is null", () -> keeper.commit((Map<TopicPartition, Long>) null));
            assertIllegal("ranges is null", () -> SparkOffsets.untilOffsets(null));
            assertIllegal("ranges[1] is null", () -> SparkOffsets.untilOffsets(
                    new OffsetRange[] {OffsetRange.create(topic, 0, 0, 1), null}));
            assertIllegal("ranges[0].topic is null", () -> SparkOffsets.untilOffsets(
                    new OffsetRange[] {OffsetRange.create((String) null, 0, 0, 1)}));
            // Straight from the array: the same refusals, with the same messages.
            assertIllegal("keeper is null", () -> SparkOffsets.commit(null, new OffsetRange[0]));
            assertIllegal("ranges is null", () -> SparkOffsets.commit(keeper, null));
            assertIllegal("ranges[1] is null", () -> SparkOffsets.commit(keeper,
                    new OffsetRange[] {OffsetRange.create(topic, 0, 0, 1), null}));
            assertIllegal("ranges[0].topic is null", () -> SparkOffsets.commit(keeper,
                    new OffsetRange[] {OffsetRange.create((String) null, 0, 0, 1)}));
            // A partition twice ahead of a null range: reported first, as untilOffsets does.
            assertIllegal("appears twice, in ranges[0] and ranges[1]", () -> SparkOffsets.commit(keeper,
                    new OffsetRange[] {OffsetRange.create(topic, 0, 0, 1), OffsetRange.create(topic, 0, 1, 2),
                        null}));
            assertIllegal("entries is null", () -> keeper.commit((OffsetKeeper.Entries) null));
            Map<TopicPartition, Long> nullValue = new HashMap<>();
            nullValue.put(tp(topic, 0), null);
            assertIllegal("offsets value of " + topic + "-0 is null", () -> keeper.commit(nullValue));
            Map<TopicPartition, Long> nullKey = new HashMap<>();
            nullKey.put(null, 1L);
            assertIllegal("offsets key is null", () -> keeper.commit(nullKey));
            // A map changed by another thread while read: fewer entries than its size said.
            Map<TopicPartition, Long> shrinking = new AbstractMap<TopicPartition, Long>() {
                @Override
                public Set<Map.Entry<TopicPartition, Long>> entrySet() {
                    return Collections.singletonMap(tp(topic, 0), 5L).entrySet();
                }

                @Override
                public int size() {
                    return 2;
                }
            };
            ConcurrentModificationException changed = assertThrows(
                    ConcurrentModificationException.class, () -> keeper.commit(shrinking));
            assertTrue(changed.getMessage(), changed.getMessage().contains(
                    "offsets changed while being committed: 1 entries read, 2 now"));
            // And one with more entries than its size said.
            Map<TopicPartition, Long> growing = new AbstractMap<TopicPartition, Long>() {
                @Override
                public Set<Map.Entry<TopicPartition, Long>> entrySet() {
                    return batch(tp(topic, 0), 5L, tp(topic, 1), 6L).entrySet();
                }

                @Override
                public int size() {
                    return 1;
                }
            };
            changed = assertThrows(
                    ConcurrentModificationException.class, () -> keeper.commit(growing));
            assertTrue(changed.getMessage(), changed.getMessage().contains(
                    "offsets changed while being committed: more than the 1 entries it had"));
            // Two ranges of one partition, as no Map can hold them.
            assertIllegal("appears twice, in ranges[0] and ranges[2]", () -> keeper.commit(
                    SparkOffsets.untilOffsets(new OffsetRange[] {OffsetRange.create(topic, 0, 0, 1),
                        OffsetRange.create(topic, 1, 0, 1), OffsetRange.create(topic, 0, 1, 2)})));
            assertIllegal("appears twice, in ranges[0] and ranges[2]", () -> SparkOffsets.commit(keeper,
                    new OffsetRange[] {OffsetRange.create(topic, 0, 0, 1), OffsetRange.create(topic, 1, 0, 1),
                        OffsetRange.create(topic, 0, 1, 2)}));
        }
        assertFalse(TestCluster.exists("/consumers/" + group));

        assertCommitRefused("-1", batch(tp(topic, 0), 5L, tp(topic, 1), -1L));
        assertCommitRefused("partition -3", batch(tp(topic, 0), 5L, tp(topic, -3), 1L));
        assertCommitRefused("a/b", batch(tp(topic, 0), 5L, tp("a/b", 0), 1L));
        assertCommitRefused("length 0", batch(tp(topic, 0), 5L, tp("", 0), 1L));
        assertIllegal("group name 'a/b'", () -> TestCluster.keeper("a/b"));
        assertFalse(TestCluster.exists("/consumers/a"));
    }

    @Test
    public void closedKeeper() throws Exception {
        String group = TestCluster.unique("group");
        OffsetKeeper keeper = TestCluster.keeper(group);
        keeper.load(Collections.singleton(topic));
        keeper.close();
        keeper.close(); // harmless
        List<ThrowingRunnable> calls = Arrays.asList(
                () -> keeper.load(Collections.singleton(topic)),
                () -> keeper.loadWithReport(Collections.singleton(topic)),
                () -> keeper.lag(Collections.singleton(topic)),
                () -> keeper.commit(Collections.singletonMap(tp(topic, 0), 1L)),
                () -> keeper.commit(SparkOffsets.untilOffsets(new OffsetRange[0])));
        for (ThrowingRunnable call : calls) {
            IllegalStateException e = assertThrows(IllegalStateException.class, call);
            assertTrue(e.getMessage(), e.getMessage().contains("closed"));
        }
        // The load registered ownership (ids/, owners/, emptied by close); no offset was written.
        assertFalse(TestCluster.exists("/consumers/" + group + "/offsets"));
        assertTrue(TestCluster.zk().getChildren("/consumers/" + group + "/ids", false).isEmpty());

        OffsetKeeper neverUsed = TestCluster.keeper(group);
        neverUsed.close();
        assertThrows(IllegalStateException.class, () -> neverUsed.load(Collections.singleton(topic)));
    }

    @Test
    public void unreachableZooKeeper() throws Exception {
        // Nothing listens on port 1 of the loopback address. A load fails whatever the commit
        // outage tolerance; a commit fails at once only without one (CommitOutageTest has the
        // deferred commits of the default).
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper("127.0.0.1:1")
                .kafkaParams(TestCluster.kafkaParams("g")).zookeeperTimeout(Duration.ofSeconds(2))
                .commitOutageTolerance(Duration.ZERO).build()) {
            for (ThrowingRunnable call : Arrays.<ThrowingRunnable>asList(
                    () -> keeper.load(Collections.singleton(topic)),
                    () -> keeper.commit(Collections.singletonMap(tp(topic, 0), 1L)))) {
                // One exception per condition: nothing answering in time is a timeout.
                ServerTimeoutException e = assertThrows(ServerTimeoutException.class, call);
                assertTrue(e.getMessage(), e.getMessage().startsWith("ZooKeeper at 127.0.0.1:1"));
            }
        }
    }

    private static Map<TopicPartition, Long> batch(TopicPartition a, Long offsetA, TopicPartition b,
            Long offsetB) {
        Map<TopicPartition, Long> batch = new LinkedHashMap<>();
        batch.put(a, offsetA);
        batch.put(b, offsetB);
        return batch;
    }

    @Test
    public void secretsAreNotShown() {
        Map<String, Object> params = TestCluster.kafkaParams("g");
        params.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule"
                + " required username=\"u\" password=\"hunter2\";");
        params.put("ssl.key.password", "s3cret-key");
        params.put("ssl.keystore.password", "s3cret-store");
        params.put("sasl.kerberos.keytab", "/etc/secret.keytab");
        String shown = OffsetKeeper.builder().zookeeper("zk:2181").kafkaParams(params).build().toString();
        for (String secret : new String[] {"hunter2", "s3cret-key", "s3cret-store", "secret.keytab"}) {
            assertFalse(shown, shown.contains(secret));
        }
        assertTrue(shown, shown.contains("sasl.jaas.config=****"));
        assertTrue(shown, shown.contains("bootstrap.servers=" + TestCluster.bootstrap()));
        assertEquals("g", OffsetKeeper.builder().zookeeper("zk:2181").kafkaParams(params).build().group());
    }
}
