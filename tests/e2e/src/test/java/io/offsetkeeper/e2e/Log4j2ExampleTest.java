package io.offsetkeeper.e2e;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.UUID;
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

    /** What a load printed with {@code config} as log4j 2's configuration. */
    private static LoggedLoad.Output load(String config) throws Exception {
        String topic = "log4j2-" + UUID.randomUUID();
        cluster.createTopic(topic, PARTITIONS);
        Path file = Files.createTempFile("log4j2-", ".properties");
        try {
            Files.write(file, config.getBytes(StandardCharsets.UTF_8));
            return LoggedLoad.run(Collections.singletonList("-Dlog4j2.configurationFile=" + file),
                    cluster.zookeeper, cluster.bootstrap, topic, PARTITIONS);
        } finally {
            Files.delete(file);
        }
    }

    /** How many lines of {@code out} are the load's INFO summary, in BASE's pattern. */
    private static int summaries(LoggedLoad.Output out) {
        return out.count("^\\d\\d/\\d\\d/\\d\\d \\d\\d:\\d\\d:\\d\\d INFO offsetkeeper\\.load: group "
                + Pattern.quote(out.group()) + ": loaded " + PARTITIONS + " partition\\(s\\): " + PARTITIONS
                + " initialized; ");
    }

    @Test
    public void theDocumentedLinesLogTheLoadAtInfoAndNothingAtDebug() throws Exception {
        String root = System.getProperty("offsetkeeper.test.root");
        assertTrue("offsetkeeper.test.root is not set (Gradle sets it)", root != null);
        Path example = Paths.get(root, "examples", "logging", "log4j2.properties");
        String lines = new String(Files.readAllBytes(example), StandardCharsets.UTF_8);
        LoggedLoad.Output out = load(BASE + lines);
        assertEquals("the load's INFO summary, once:\n" + out.text(), 1, summaries(out));
        // The summary itself says "each initialized partition at DEBUG": the level field only.
        assertEquals("no DEBUG line:\n" + out.text(), 0, out.count("^\\S+ \\S+ DEBUG "));
    }

    @Test
    public void withoutTheLinesTheRootLevelDropsTheSummary() throws Exception {
        // The positive test above shows this configuration is read (its pattern is BASE's).
        LoggedLoad.Output out = load(BASE);
        assertEquals("the root logger at warn lets no INFO line through:\n" + out.text(), 0, summaries(out));
    }
}
