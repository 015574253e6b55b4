package io.offsetkeeper;

import static io.offsetkeeper.TestCluster.tp;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.Test;

/**
 * One configuration path and one lag: the same properties, given to the Java builder and to the
 * CLI's {@code --command-config}, are read by the engine into the same configuration and the
 * same decisions; Java's lag and the CLI's {@code describe} agree.
 */
public class ConfigPathTest {
    private static final String SECRET = "Secret-Auth-7f3";

    /** The CLI's exit status, stdout and stderr. */
    private static String[] cli(String... args) throws Exception {
        String binary = System.getProperty("offsetkeeper.test.cli");
        assertTrue("offsetkeeper.test.cli is not set (Gradle sets it)",
                binary != null && new File(binary).canExecute());
        List<String> command = new ArrayList<>();
        command.add(binary);
        command.addAll(Arrays.asList(args));
        Path out = Files.createTempFile("cli-", ".out");
        Path err = Files.createTempFile("cli-", ".err");
        try {
            Process process = new ProcessBuilder(command).redirectOutput(out.toFile())
                    .redirectError(err.toFile()).start();
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                fail("the CLI did not finish in 60 s: " + command);
            }
            return new String[] {String.valueOf(process.exitValue()),
                new String(Files.readAllBytes(out), StandardCharsets.UTF_8),
                new String(Files.readAllBytes(err), StandardCharsets.UTF_8)};
        } finally {
            Files.delete(out);
            Files.delete(err);
        }
    }

    private static String propertiesFile(Map<String, String> properties) throws Exception {
        StringBuilder text = new StringBuilder();
        for (Map.Entry<String, String> e : properties.entrySet()) {
            text.append(e.getKey()).append('=').append(e.getValue()).append('\n');
        }
        Path path = Files.createTempFile("command-config-", ".properties");
        path.toFile().deleteOnExit();
        Files.write(path, text.toString().getBytes(StandardCharsets.UTF_8));
        return path.toString();
    }

    private static LinkedHashMap<String, String> properties() {
        LinkedHashMap<String, String> properties = new LinkedHashMap<>();
        properties.put("zookeeper.connect", TestCluster.zookeeper());
        properties.put("bootstrap.servers", TestCluster.bootstrap());
        properties.put("client.id", "config-path");
        properties.put("zookeeper.auth", "digest:alice:" + SECRET);
        properties.put("offsetkeeper.on.missing", "latest");
        properties.put("offsetkeeper.on.above.range", "fail");
        properties.put("offsetkeeper.session.timeout.ms", "12000");
        properties.put("offsetkeeper.zookeeper.timeout.ms", "7000");
        properties.put("offsetkeeper.kafka.timeout.ms", "9000");
        properties.put("offsetkeeper.fencing", "false");
        properties.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        return properties;
    }

    @Test
    public void theSamePropertiesGiveTheSameConfigurationInJavaAndTheCli() throws Exception {
        String topic = TestCluster.createTopic(2);
        TestCluster.produce(topic, 0, 5);
        TestCluster.produce(topic, 1, 3);
        String group = TestCluster.unique("config");
        LinkedHashMap<String, String> properties = properties();
        String file = propertiesFile(properties);

        String[] cli = cli("-vv", "--command-config", file, "--group", group, "reset", "--topic",
                topic, "--to-valid", "--export");
        assertEquals(cli[2], "0", cli[0]);
        Matcher logged = Pattern.compile("configuration: (KeeperConfig \\{.*\\})\\s*$",
                Pattern.MULTILINE).matcher(cli[2]);
        assertTrue(cli[2], logged.find());
        String cliConfiguration = logged.group(1);

        try (OffsetKeeper keeper = OffsetKeeper.builder().properties(properties).group(group)
                .kafkaParams(Collections.<String, Object>emptyMap()).build()) {
            // What the builder gives the engine for these properties: all of them as settings,
            // no kafkaParams. The load below shows the keeper's engine deciding by them.
            String javaConfiguration = NativeBridge.checkConfig(
                    properties.keySet().toArray(new String[0]),
                    properties.values().toArray(new String[0]), new String[0],
                    new String[0], group, null).description;
            assertEquals(cliConfiguration, javaConfiguration);
            assertTrue(javaConfiguration, javaConfiguration.contains("on_missing: Latest"));
            assertTrue(javaConfiguration, javaConfiguration.contains("fencing: false"));
            assertFalse(javaConfiguration, javaConfiguration.contains(SECRET));
            assertFalse(keeper.toString(), keeper.toString().contains(SECRET));
            assertTrue(keeper.toString(), keeper.toString().contains("zookeeper.auth=****"));
            assertFalse(cli[2], cli[2].contains(SECRET));
            assertFalse(cli[1], cli[1].contains(SECRET));

            // The same policy decides: nothing stored, on.missing=latest starts at the log end.
            Map<org.apache.kafka.common.TopicPartition, Long> loaded =
                    keeper.load(Collections.singleton(topic));
            assertEquals(Long.valueOf(5), loaded.get(tp(topic, 0)));
            assertEquals(Long.valueOf(3), loaded.get(tp(topic, 1)));
            assertEquals(topic + ",0,5\n" + topic + ",1,3\n",
                    cli[1]);
        }
    }

    @Test
    public void anUnknownOffsetkeeperKeyIsRefusedByJavaAndTheCliAlike() throws Exception {
        LinkedHashMap<String, String> properties = properties();
        properties.put("offsetkeeper.monotonic", "false");
        String needle = "'offsetkeeper.monotonic' is not an offsetkeeper setting; allowed: ";
        try {
            OffsetKeeper.builder().properties(properties).group("g")
                    .kafkaParams(Collections.<String, Object>emptyMap()).build();
            fail("an unknown offsetkeeper key was taken");
        } catch (IllegalArgumentException expected) {
            assertTrue(expected.getMessage(), expected.getMessage().contains(needle));
        }
        String[] cli = cli("--command-config", propertiesFile(properties), "list-groups");
        assertEquals(cli[2], "2", cli[0]);
        assertTrue(cli[2], cli[2].contains(needle));
    }

    @Test
    public void javaAndTheCliShowTheEnginesLag() throws Exception {
        String topic = TestCluster.createTopic(3);
        TestCluster.produce(topic, 0, 5);
        TestCluster.produce(topic, 1, 4);
        String group = TestCluster.unique("lag");
        // Partition 0: 3 committed of 5; partition 1: nothing; partition 2: above its log end.
        TestCluster.write(TestCluster.offsetPath(group, topic, 0), "3");
        TestCluster.write(TestCluster.offsetPath(group, topic, 2), "7");
        List<Long> javaLags = new ArrayList<>();
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            for (PartitionLag lag : keeper.lag(Collections.singleton(topic))) {
                javaLags.add(lag.lag());
            }
        }
        assertEquals(Arrays.asList(2L, null, -7L), javaLags);

        String[] cli = cli("--zookeeper", TestCluster.zookeeper(), "--bootstrap-servers",
                TestCluster.bootstrap(), "--group", group, "describe", "--topic", topic,
                "--format", "json");
        assertEquals(cli[2], "0", cli[0]);
        List<Long> cliLags = new ArrayList<>();
        Matcher lag = Pattern.compile("\"lag\":(null|-?[0-9]+)").matcher(cli[1]);
        while (lag.find()) {
            cliLags.add(lag.group(1).equals("null") ? null : Long.valueOf(lag.group(1)));
        }
        assertEquals(cli[1], javaLags, cliLags);
    }
}
