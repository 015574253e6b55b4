package io.offsetkeeper.e2e;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.Test;

/**
 * docs/installation.md's log4j 2 lines (examples/logging/log4j2.properties) route the native
 * engine's lines on Spark's class path, where log4j 2 is SLF4J's binding: a fresh JVM whose
 * configuration is a Spark-like log4j2.properties with the root logger at warn, with the
 * example appended as the page tells a user to, runs a first start of six partitions. The
 * load's INFO summary arrives and its DEBUG lines do not; without the appended lines the
 * summary does not arrive either, so it is those lines that let it through.
 */
public class Log4j2ExampleTest extends ClusterTestBase {
    // Past five corrections, each initialized partition is logged at DEBUG (rust/core/src/load.rs);
    // LogbackExampleTest (jvm) shows that those lines arrive when DEBUG is on.
    private static final int PARTITIONS = 6;

    /** Spark's conf/log4j2.properties as a cluster may have it: the root logger at warn, on the console. */
    private static final String BASE = String.join("\n",
            "rootLogger.level = warn",
            "rootLogger.appenderRef.stdout.ref = console",
            "appender.console.type = Console",
            "appender.console.name = console",
            "appender.console.target = SYSTEM_ERR",
            "appender.console.layout.type = PatternLayout",
            "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c: %m%n%ex",
            "");

    /** The lines a load printed with {@code config} as log4j 2's configuration, and its group. */
    private static String[] load(String config) throws Exception {
        String topic = "log4j2-" + UUID.randomUUID();
        String group = "group-" + UUID.randomUUID();
        cluster.createTopic(topic, PARTITIONS);
        Path file = Files.createTempFile("log4j2-", ".properties");
        try {
            Files.write(file, config.getBytes(StandardCharsets.UTF_8));
            List<String> lines = LoggedLoad.run(
                    Collections.singletonList("-Dlog4j2.configurationFile=" + file),
                    cluster.zookeeper, cluster.bootstrap, group, topic);
            String out = String.join("\n", lines);
            assertTrue(out, lines.contains("LOADED " + PARTITIONS));
            return new String[] {out, group};
        } finally {
            Files.delete(file);
        }
    }

    /** How many lines of {@code out} are the load's INFO summary, in BASE's pattern. */
    private static int summaries(String out, String group) {
        return count(out, "^\\d\\d/\\d\\d/\\d\\d \\d\\d:\\d\\d:\\d\\d INFO offsetkeeper\\.load: group "
                + Pattern.quote(group) + ": loaded " + PARTITIONS + " partition\\(s\\): " + PARTITIONS
                + " initialized; ");
    }

    private static int count(String out, String regex) {
        Matcher m = Pattern.compile(regex, Pattern.MULTILINE).matcher(out);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }

    @Test
    public void theDocumentedLinesLogTheLoadAtInfoAndNothingAtDebug() throws Exception {
        String root = System.getProperty("offsetkeeper.test.root");
        assertTrue("offsetkeeper.test.root is not set (Gradle sets it)", root != null);
        Path example = Paths.get(root, "examples", "logging", "log4j2.properties");
        String lines = new String(Files.readAllBytes(example), StandardCharsets.UTF_8);
        String[] result = load(BASE + lines);
        assertEquals("the load's INFO summary, once:\n" + result[0], 1, summaries(result[0], result[1]));
        // The summary itself says "each initialized partition at DEBUG": the level field only.
        assertEquals("no DEBUG line:\n" + result[0], 0, count(result[0], "^\\S+ \\S+ DEBUG "));
    }

    @Test
    public void withoutTheLinesTheRootLevelDropsTheSummary() throws Exception {
        String[] result = load(BASE);
        assertEquals("the root logger at warn lets no INFO line through:\n" + result[0],
                0, summaries(result[0], result[1]));
    }
}
