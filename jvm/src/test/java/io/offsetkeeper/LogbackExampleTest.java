package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;

import io.offsetkeeper.e2e.LoggedLoad;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.regex.Pattern;
import org.junit.Test;

/**
 * docs/installation.md's logback.xml (examples/logging/logback.xml) routes the native engine's
 * lines: a fresh JVM with logback-classic as its SLF4J binding and that file as its
 * configuration runs a first start of six partitions. The load's INFO summary arrives in the
 * file's pattern; the DEBUG line the same load logs per partition does not, though it arrives
 * when the file's level is DEBUG.
 */
public class LogbackExampleTest {
    // Past five corrections, each initialized partition is logged at DEBUG (rust/core/src/load.rs).
    private static final int PARTITIONS = 6;

    private static Path example() {
        String root = System.getProperty("offsetkeeper.test.root");
        assertTrue("offsetkeeper.test.root is not set (Gradle sets it)", root != null);
        return Paths.get(root, "examples", "logging", "logback.xml");
    }

    /** What a load printed with {@code config} as logback's configuration. */
    private static LoggedLoad.Output load(Path config) throws Exception {
        return LoggedLoad.run(Collections.singletonList("-Dlogback.configurationFile=" + config),
                TestCluster.zookeeper(), TestCluster.bootstrap(), TestCluster.createTopic(PARTITIONS),
                PARTITIONS);
    }

    @Test
    public void theDocumentedFileLogsTheLoadAtInfoAndNothingAtDebug() throws Exception {
        LoggedLoad.Output out = load(example());
        // The file's pattern, %d %-5level %logger - %msg: its date is not in logback-test.xml's.
        String summary = "^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d,\\d{3} INFO  offsetkeeper\\.load - group "
                + Pattern.quote(out.group()) + ": loaded " + PARTITIONS + " partition\\(s\\): "
                + PARTITIONS + " initialized; ";
        assertEquals("the load's INFO summary, once:\n" + out.text(), 1, out.count(summary));
        // The summary itself says "each initialized partition at DEBUG": the level field only.
        assertEquals("no DEBUG line:\n" + out.text(), 0, out.count("^\\S+ \\S+ DEBUG "));
    }

    @Test
    public void atDebugTheSameLoadLogsEachPartition() throws Exception {
        // The check above could not see a DEBUG line if the load logged none: at DEBUG it does.
        String text = new String(Files.readAllBytes(example()), StandardCharsets.UTF_8);
        String debug = text.replace("<logger name=\"offsetkeeper\" level=\"INFO\"/>",
                "<logger name=\"offsetkeeper\" level=\"DEBUG\"/>");
        assertNotEquals("examples/logging/logback.xml no longer sets offsetkeeper to INFO as this test expects",
                text, debug);
        Path config = Files.createTempFile("logback-debug-", ".xml");
        try {
            Files.write(config, debug.getBytes(StandardCharsets.UTF_8));
            LoggedLoad.Output out = load(config);
            String initialized = "^\\S+ \\S+ DEBUG offsetkeeper\\.load - group " + Pattern.quote(out.group())
                    + ": \\S+ stored .*initialized";
            assertEquals("a DEBUG line per partition:\n" + out.text(), PARTITIONS, out.count(initialized));
        } finally {
            Files.delete(config);
        }
    }
}
