package io.offsetkeeper;

import static io.offsetkeeper.TestCluster.tp;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.offsetkeeper.spark.SparkOffsets;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.streaming.kafka010.OffsetRange;
import org.apache.zookeeper.KeeperException;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Every bad input offsetkeeper can meet, in one table: the Java API, the JNI boundary, the
 * operator CLI and the contents of znodes. Each case states where the input enters, the input,
 * the outcome (exception class, CLI exit status, or load decision) and a fragment of the
 * message; each proves that nothing was written, by comparing the group's znodes before and
 * after. The bad-input table of docs/errors.md is rendered from the same cases and must match them.
 */
public class BadInputTableTest {
    private static final String README_BEGIN = "<!-- bad-input-table:begin -->";
    private static final String README_END = "<!-- bad-input-table:end -->";

    /** A topic with partitions 0 and 1, five records each: range [0, 5]. */
    private static String topic;

    @BeforeClass
    public static void createTopic() throws Exception {
        topic = TestCluster.createTopic(2);
        TestCluster.produce(topic, 0, 5);
        TestCluster.produce(topic, 1, 5);
    }

    /** What a case does in its own fresh group; returns the outcome and its message. */
    private interface Action {
        String[] run(String group) throws Exception;
    }

    private static final class Case {
        final String where;
        final String input;
        final String outcome;
        final String needle;
        /** A raw value to place in the group's offsets/<topic>/0 before the case runs. */
        final byte[] znode;
        final Action action;

        Case(String where, String input, String outcome, String needle, byte[] znode,
                Action action) {
            this.where = where;
            this.input = input;
            this.outcome = outcome;
            this.needle = needle;
            this.znode = znode;
            this.action = action;
        }
    }

    private final List<Case> cases = new ArrayList<>();

    private void java(String input, String outcome, String needle, Action action) {
        cases.add(new Case("Java API", input, outcome, needle, null, action));
    }

    private void jni(String input, String outcome, String needle, Action action) {
        cases.add(new Case("JNI boundary", input, outcome, needle, null, action));
    }

    private void cli(String input, String outcome, String needle, String... args) {
        cases.add(new Case("CLI", input, outcome, needle, null, group -> runCli(group, args)));
    }

    /** A load (default policy unless given) of a group whose partition 0 holds `raw`. */
    private void znode(String input, byte[] raw, String outcome, String needle) {
        znode(input, raw, outcome, needle, null);
    }

    private void znode(String input, byte[] raw, String outcome, String needle,
            OnMissing onMissing) {
        cases.add(new Case("znode contents", input, outcome, needle, raw, group -> {
            try (OffsetKeeper keeper = TestCluster.keeperBuilder(group).onMissing(onMissing)
                    .build()) {
                PartitionReport report = keeper.loadWithReport(Collections.singleton(topic))
                        .partitions().get(0);
                return new String[] {report.action() + " at " + report.chosen(),
                    report.storedText()};
            } catch (OffsetKeeperException e) {
                return thrown(e);
            }
        }));
    }

    private static String[] thrown(Throwable t) {
        return new String[] {t.getClass().getSimpleName(), String.valueOf(t.getMessage())};
    }

    /** Runs a call that must throw; the outcome is the exception's class. */
    private static String[] throwing(ThrowingCall call) {
        try {
            call.run();
        } catch (Throwable t) {
            return thrown(t);
        }
        return new String[] {"no exception", ""};
    }

    private interface ThrowingCall {
        void run() throws Exception;
    }

    private static Map<String, Object> params(String group, String key, Object value) {
        Map<String, Object> params = TestCluster.kafkaParams(group);
        params.put(key, value);
        return params;
    }

    /** Loads the topic with a keeper built from the builder, closing it afterwards. */
    private static String[] loadWith(OffsetKeeper.Builder builder, List<String> topics) {
        return throwing(() -> {
            try (OffsetKeeper keeper = builder.build()) {
                keeper.load(topics);
            }
        });
    }

    /**
     * Commits the ranges both ways, through the map of {@code SparkOffsets.untilOffsets} and
     * straight from the array with {@code SparkOffsets.commit}; the two must end alike (same
     * exception, same message), and that outcome is the case's.
     */
    private static String[] commitWith(String group, OffsetRange... ranges) {
        String[] viaMap = throwing(() -> {
            try (OffsetKeeper keeper = TestCluster.keeper(group)) {
                keeper.commit(SparkOffsets.untilOffsets(ranges));
            }
        });
        String[] direct = throwing(() -> {
            try (OffsetKeeper keeper = TestCluster.keeper(group)) {
                SparkOffsets.commit(keeper, ranges);
            }
        });
        return Arrays.equals(viaMap, direct) ? direct : new String[] {"the two commit paths differ",
            Arrays.toString(viaMap) + " vs " + Arrays.toString(direct)};
    }

    /** A native engine on the test cluster, for calls that need a live handle. */
    private static long open(String group) {
        NativeLibrary.load();
        Map<String, Object> params = TestCluster.kafkaParams(group);
        String[] keys = params.keySet().toArray(new String[0]);
        String[] values = new String[keys.length];
        for (int i = 0; i < keys.length; i++) {
            values[i] = String.valueOf(params.get(keys[i]));
        }
        return NativeBridge.open(new String[] {"zookeeper.connect"},
                new String[] {TestCluster.zookeeper()}, keys, values, null);
    }

    private static String[] withHandle(String group, HandleCall call) {
        long handle = open(group);
        try {
            return throwing(() -> call.run(handle));
        } finally {
            NativeBridge.close(handle);
        }
    }

    private interface HandleCall {
        void run(long handle) throws Exception;
    }

    /** Opens an engine on the settings given as key, value, key, value... and closes it. */
    private static String[] openWith(String[] kafkaKeys, String[] kafkaValues,
            String... settings) {
        String[] keys = new String[settings.length / 2];
        String[] values = new String[(settings.length + 1) / 2];
        for (int i = 0; i < settings.length; i++) {
            (i % 2 == 0 ? keys : values)[i / 2] = settings[i];
        }
        return throwing(() -> {
            long handle = NativeBridge.open(keys, values, kafkaKeys, kafkaValues, null);
            NativeBridge.close(handle);
        });
    }

    private static final String[] KEYS = {"bootstrap.servers"};

    private static String[] runCli(String group, String... args) throws Exception {
        String binary = System.getProperty("offsetkeeper.test.cli");
        assertTrue("offsetkeeper.test.cli is not set (Gradle sets it)",
                binary != null && new File(binary).canExecute());
        List<String> command = new ArrayList<>(Arrays.asList(binary, "--zookeeper",
                TestCluster.zookeeper(), "--bootstrap-servers", TestCluster.bootstrap(),
                "--timeout", "5000"));
        for (String arg : args) {
            command.add(arg.replace("GROUP", group).replace("TOPIC", topic));
        }
        Path errors = Files.createTempFile("cli-", ".err");
        try {
            Process process = new ProcessBuilder(command).redirectError(errors.toFile())
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                fail("the CLI did not finish in 60 s: " + command);
            }
            String stderr = new String(Files.readAllBytes(errors), StandardCharsets.UTF_8).trim();
            return new String[] {"exit " + process.exitValue(), stderr};
        } finally {
            Files.delete(errors);
        }
    }

    private static String file(String name, String text) throws Exception {
        Path path = Files.createTempFile(name, ".txt");
        path.toFile().deleteOnExit();
        Files.write(path, text.getBytes(StandardCharsets.UTF_8));
        return path.toString();
    }

    private static byte[] text(String value) {
        return value.getBytes(StandardCharsets.UTF_8);
    }

    private void table() throws Exception {
        String iae = "IllegalArgumentException";
        // ---- Java API ----
        java("`builder().zookeeper(null)`", iae, "zookeeper is null",
                g -> throwing(() -> OffsetKeeper.builder().zookeeper(null)));
        java("`builder().group(\"\")`", iae, "group is empty",
                g -> throwing(() -> OffsetKeeper.builder().group("")));
        java("`kafkaParams` with a null value", iae, "kafkaParams value of bootstrap.servers is null",
                g -> throwing(() -> OffsetKeeper.builder()
                        .kafkaParams(params(g, "bootstrap.servers", null))));
        java("`kafkaParams` without `bootstrap.servers`", iae, "no bootstrap.servers", g -> {
            Map<String, Object> params = TestCluster.kafkaParams(g);
            params.remove("bootstrap.servers");
            return loadWith(OffsetKeeper.builder().zookeeper(TestCluster.zookeeper())
                    .kafkaParams(params), Collections.singletonList(topic));
        });
        // Read as KafkaConsumer reads them (ConsumerConfig's ConfigDef): refused by the builder.
        java("`kafkaParams` `auto.offset.reset` of the wrong type (`Boolean.TRUE`)", iae,
                "kafkaParams value of auto.offset.reset is not a string",
                g -> throwing(() -> OffsetKeeper.builder()
                        .kafkaParams(params(g, "auto.offset.reset", Boolean.TRUE))));
        java("`kafkaParams` `isolation.level` of the wrong type (`Integer 7`)", iae,
                "isolation.level",
                g -> throwing(() -> OffsetKeeper.builder()
                        .kafkaParams(params(g, "isolation.level", 7))));
        java("`load(null)`", iae, "topics is null",
                g -> loadWith(TestCluster.keeperBuilder(g), null));
        java("`load` of an empty list", iae, "topics is empty",
                g -> loadWith(TestCluster.keeperBuilder(g), Collections.<String>emptyList()));
        java("`load` of a list holding null", iae, "topics[1] is null",
                g -> loadWith(TestCluster.keeperBuilder(g), Arrays.asList(topic, null)));
        java("topic `../../zookeeper` (path traversal)", iae, "contains '/'",
                g -> loadWith(TestCluster.keeperBuilder(g), Arrays.asList(topic, "../../zookeeper")));
        java("topic `..`", iae, "'.' and '..' are reserved",
                g -> loadWith(TestCluster.keeperBuilder(g), Collections.singletonList("..")));
        java("topic of 250 characters", iae, "has length 250",
                g -> loadWith(TestCluster.keeperBuilder(g),
                        Collections.singletonList(new String(new char[250]).replace('\0', 'x'))));
        java("topic `caf\u00e9` (not Kafka-legal)", iae, "contains '\u00e9'",
                g -> loadWith(TestCluster.keeperBuilder(g), Collections.singletonList("caf\u00e9")));
        java("a topic the brokers do not have", "UnknownTopicException", "no-such-topic-",
                g -> loadWith(TestCluster.keeperBuilder(g),
                        Collections.singletonList("no-such-topic-" + g)));
        java("group `../admin` (path traversal)", iae, "group name '../admin'",
                g -> throwing(() -> TestCluster.keeperBuilder(g).group("../admin").build().close()));
        java("base path `consumers` (relative)", iae, "base path 'consumers'",
                g -> loadWith(TestCluster.keeperBuilder(g).basePath("consumers"),
                        Collections.singletonList(topic)));
        java("base path `/a/../b`", iae, "base path '/a/../b'",
                g -> loadWith(TestCluster.keeperBuilder(g).basePath("/a/../b"),
                        Collections.singletonList(topic)));
        java("`commit` of a negative offset", iae, "offset -1 for",
                g -> commitWith(g, OffsetRange.create(topic, 0, 0, 3),
                        OffsetRange.create(topic, 1, 0, -1)));
        java("`commit` of a negative partition", iae, "partition -3",
                g -> commitWith(g, OffsetRange.create(topic, -3, 0, 1)));
        java("`commit` of one partition twice", iae, "appears twice",
                g -> commitWith(g, OffsetRange.create(topic, 0, 0, 1),
                        OffsetRange.create(topic, 0, 1, 2)));
        java("`commit` of a null offset", iae, "is null", g -> throwing(() -> {
            try (OffsetKeeper keeper = TestCluster.keeper(g)) {
                keeper.commit(Collections.<TopicPartition, Long>singletonMap(tp(topic, 0), null));
            }
        }));
        java("`commit` after `close()`", "IllegalStateException", "is closed", g -> {
            OffsetKeeper keeper = TestCluster.keeper(g);
            keeper.close();
            return throwing(() -> keeper.commit(Collections.singletonMap(tp(topic, 0), 1L)));
        });
        java("`ownershipWait` of -1 ms", iae, "offsetkeeper.ownership.wait.ms '-1'",
                g -> throwing(() -> TestCluster.keeperBuilder(g).ownershipWait(-1).build()));

        // ---- JNI boundary (NativeBridge, called as the Java layer would never call it) ----
        jni("a zero (closed) handle", "IllegalStateException", "is closed",
                g -> throwing(() -> NativeBridge.commit(0, g, new String[] {topic},
                        new int[] {0}, new int[] {0}, new long[] {1})));
        jni("arrays of different lengths", iae, "array lengths differ",
                g -> withHandle(g, h -> NativeBridge.commit(h, g, new String[] {topic},
                        new int[] {0, 0}, new int[] {0}, new long[] {1, 2})));
        jni("a topic index outside the topic names", iae,
                "topic index 1 of entry 0 is outside the 1 topic name(s)",
                g -> withHandle(g, h -> NativeBridge.commit(h, g, new String[] {topic},
                        new int[] {1}, new int[] {0}, new long[] {1})));
        jni("a null group", iae, "argument 'group' is null",
                g -> withHandle(g, h -> NativeBridge.commit(h, null, new String[] {topic},
                        new int[] {0}, new int[] {0}, new long[] {1})));
        jni("a null element in the topics array", iae, "argument 'topics[0]' is null",
                g -> withHandle(g, h -> NativeBridge.load(h, g, new String[] {null})));
        jni("offset `Long.MIN_VALUE`", iae, "is negative",
                g -> withHandle(g, h -> NativeBridge.commit(h, g, new String[] {topic},
                        new int[] {0}, new int[] {0}, new long[] {Long.MIN_VALUE})));
        String[] bootstrap = {"b:1"};
        jni("a null ZooKeeper connect string", iae, "argument 'values[0]' is null",
                g -> openWith(KEYS, bootstrap, "zookeeper.connect", null));
        jni("a session timeout of -1 ms", iae, "offsetkeeper.session.timeout.ms '-1'",
                g -> openWith(KEYS, bootstrap, "zookeeper.connect", "zk:2181",
                        "offsetkeeper.session.timeout.ms", "-1"));
        jni("an ownership wait of -7 ms", iae, "offsetkeeper.ownership.wait.ms '-7'",
                g -> openWith(KEYS, bootstrap, "zookeeper.connect", "zk:2181",
                        "offsetkeeper.ownership.wait.ms", "-7"));
        jni("Kafka keys and values of different lengths", iae, "array lengths differ",
                g -> openWith(KEYS, new String[0], "zookeeper.connect", "zk:2181"));
        jni("policy name `sometimes`", iae,
                "offsetkeeper.on.missing: on_missing 'sometimes' is not allowed",
                g -> openWith(KEYS, bootstrap, "zookeeper.connect", "zk:2181",
                        "offsetkeeper.on.missing", "sometimes"));
        jni("an unknown `offsetkeeper.*` key", iae,
                "'offsetkeeper.fencin' is not an offsetkeeper setting",
                g -> openWith(KEYS, bootstrap, "zookeeper.connect", "zk:2181",
                        "offsetkeeper.fencin", "false"));
        jni("a boolean setting `yes`", iae,
                "offsetkeeper.fencing 'yes' is not allowed; allowed: true, false",
                g -> openWith(KEYS, bootstrap, "zookeeper.connect", "zk:2181",
                        "offsetkeeper.fencing", "yes"));
        jni("stored kind 9 in `validate`", iae, "stored kind 9",
                g -> throwing(() -> NativeBridge.validate(new byte[] {9}, new long[] {1},
                        new long[] {0}, new long[] {5}, null, null, null)));
        jni("range [5, 2] in `validate`", iae, "range [5, 2]",
                g -> throwing(() -> NativeBridge.validate(new byte[] {2}, new long[] {1},
                        new long[] {5}, new long[] {2}, null, null, null)));

        // ---- CLI ----
        String conflicting = "the argument '--to-earliest' cannot be used with '--to-latest'";
        cli("`--group a/b`", "exit 2", "group name 'a/b'", "--group", "a/b", "describe",
                "--topic", "TOPIC");
        cli("`--topic ../etc` (path traversal)", "exit 2", "topic name '../etc'", "--group",
                "GROUP", "reset", "--topic", "../etc", "--to-earliest", "--execute");
        cli("`--topic T:-1`", "exit 2", "partition -1", "--group", "GROUP", "reset", "--topic",
                "TOPIC:-1", "--to-earliest", "--execute");
        cli("`--to-offset 99999999999999999999` (overflow)", "exit 2", "too large", "--group",
                "GROUP", "reset", "--topic", "TOPIC", "--to-offset", "99999999999999999999",
                "--execute");
        cli("two reset modes", "exit 2", conflicting, "--group", "GROUP", "reset", "--topic",
                "TOPIC", "--to-earliest", "--to-latest", "--execute");
        cli("`--base-path consumers`", "exit 2", "base path 'consumers'", "--group", "GROUP",
                "--base-path", "consumers", "delete", "--topic", "TOPIC", "--execute");
        cli("import line `t,0,abc`", "exit 1", "line 2: offset 'abc'", "--group", "GROUP",
                "import", "--from-file", file("bad", "TOPIC,1,3\nTOPIC,0,abc\n".replace("TOPIC",
                        topic)), "--execute");
        cli("import line of another group (zk format)", "exit 1", "of group 'other'", "--group",
                "GROUP", "import", "--format", "zk", "--from-file",
                file("other", "/consumers/other/offsets/" + topic + "/0:5\n"), "--execute");
        cli("reset of an unknown topic", "exit 1", "unknown topic", "--group", "GROUP", "reset",
                "--topic", "no-such-topic-x", "--to-earliest", "--execute");

        // ---- znode contents, met by a load (default policy: earliest) ----
        String corrupt = "CORRUPT_REPLACED at 0";
        znode("text `abc`", text("abc"), corrupt, "corrupt \"abc\"");
        znode("empty", new byte[0], corrupt, "corrupt \"\"");
        znode("`-1`", text("-1"), corrupt, "corrupt \"-1\"");
        znode("`99999999999999999999` (overflows a long)", text("99999999999999999999"), corrupt,
                "corrupt \"99999999999999999999\"");
        znode("garbage bytes `ff fe 00 01`", new byte[] {(byte) 0xff, (byte) 0xfe, 0, 1}, corrupt,
                "corrupt");
        znode("`1e3`", text("1e3"), corrupt, "corrupt \"1e3\"");
        znode("`+5`", text("+5"), corrupt, "corrupt \"+5\"");
        znode("`0x10`", text("0x10"), corrupt, "corrupt \"0x10\"");
        znode("10,000 bytes of text", text(new String(new char[10_000]).replace('\0', 'z')),
                corrupt, "...");
        znode("` 3\\n` (whitespace around)", text(" 3\n"), "KEPT at 3", "3");
        znode("`1000000` (above the latest offset)", text("1000000"), "RESET_ABOVE_RANGE at 0",
                "1000000");
        znode("`abc` with `onMissing(FAIL)`", text("abc"), "PolicyViolationException",
                "on_missing=fail", OnMissing.FAIL);
    }

    @Test
    public void everyBadInputHasItsOutcomeAndWritesNothing() throws Exception {
        table();
        assertTrue("the table needs at least 30 cases, has " + cases.size(), cases.size() >= 30);
        List<String> failures = new ArrayList<>();
        int number = 0;
        for (Case c : cases) {
            number++;
            String group = TestCluster.unique("bad");
            String root = "/consumers/" + group;
            if (c.znode != null) {
                TestCluster.write(TestCluster.offsetPath(group, topic, 0), "");
                TestCluster.zk().setData(TestCluster.offsetPath(group, topic, 0), c.znode, -1);
            }
            Map<String, String> before = tree(root);
            String[] result;
            try {
                result = c.action.run(group);
            } catch (Throwable t) {
                result = new String[] {"test error " + t, ""};
            }
            Map<String, String> after = tree(root);
            String label = "#" + number + " " + c.where + " / " + c.input + ": ";
            if (!c.outcome.equals(result[0])) {
                failures.add(label + "expected " + c.outcome + ", got " + result[0] + ": "
                        + result[1]);
            } else if (!result[1].contains(c.needle)) {
                failures.add(label + "'" + c.needle + "' not in: " + result[1]);
            }
            if (!before.equals(after)) {
                failures.add(label + "znodes changed: before " + before + ", after " + after);
            }
            // Bad names never reach ZooKeeper under another folder either (/admin is Kafka's).
            for (String escaped : new String[] {"/admin/offsets", "/admin/ids", "/admin/owners",
                "/offsets", "/zookeeper/offsets", "/zookeeper/" + topic}) {
                assertFalse(label + escaped + " exists", TestCluster.exists(escaped));
            }
        }
        assertTrue(failures.size() + " case(s) failed:\n" + String.join("\n", failures),
                failures.isEmpty());
        checkReadme();
    }

    /**
     * The group's znodes and their values. Ownership bookkeeping (the persistent {@code ids} and
     * {@code owners} folders a successful load registers in) is left out; the ephemeral entries
     * in them are gone once the keeper closed, which is checked here too.
     */
    private static Map<String, String> tree(String path) throws Exception {
        Map<String, String> nodes = new TreeMap<>();
        collect(path, nodes);
        return nodes;
    }

    private static void collect(String path, Map<String, String> nodes) throws Exception {
        byte[] data;
        List<String> children;
        try {
            data = TestCluster.zk().getData(path, false, null);
            children = TestCluster.zk().getChildren(path, false);
        } catch (KeeperException.NoNodeException e) {
            return;
        }
        if (path.endsWith("/ids") || path.matches(".*/owners(/[^/]+)?")) {
            assertTrue("ownership left behind under " + path + ": " + children,
                    path.matches(".*/owners") || children.isEmpty());
            for (String child : children) {
                collect(path + "/" + child, new HashMap<String, String>());
            }
            return;
        }
        nodes.put(path, Arrays.toString(data));
        for (String child : children) {
            collect(path + "/" + child, nodes);
        }
    }

    /** docs/errors.md's table, rendered from the cases: regenerated with -Doffsetkeeper.updateReadme. */
    private void checkReadme() throws Exception {
        StringBuilder table = new StringBuilder();
        table.append("| # | where | bad input | outcome | message names |\n");
        table.append("|---|---|---|---|---|\n");
        int number = 0;
        for (Case c : cases) {
            number++;
            table.append("| ").append(number).append(" | ").append(c.where).append(" | ")
                    .append(c.input).append(" | `").append(c.outcome).append("` | ")
                    .append(c.needle.isEmpty() ? "" : "`" + c.needle.replace("`", "'") + "`")
                    .append(" |\n");
        }
        String readmePath = System.getProperty("offsetkeeper.test.readme");
        assertTrue("offsetkeeper.test.readme is not set (Gradle sets it)", readmePath != null);
        Path readme = Paths.get(readmePath);
        String text = new String(Files.readAllBytes(readme), StandardCharsets.UTF_8);
        int begin = text.indexOf(README_BEGIN);
        int end = text.indexOf(README_END);
        assertTrue(readme + " has no " + README_BEGIN + " ... " + README_END + " section",
                begin >= 0 && end > begin);
        String current = text.substring(begin + README_BEGIN.length(), end).trim() + "\n";
        String wanted = table.toString();
        if (Boolean.getBoolean("offsetkeeper.updateReadme")) {
            Files.write(readme, (text.substring(0, begin + README_BEGIN.length()) + "\n" + wanted
                    + text.substring(end)).getBytes(StandardCharsets.UTF_8));
            return;
        }
        assertEquals(readme + "'s bad-input table differs from the test's cases; run "
                + "`gradle :jvm:test -Dtest.single=BadInputTableTest -PupdateReadme` "
                + "or paste this table", wanted, current);
    }
}
