package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.Test;

/**
 * A Java job outside Spark compiles against the jar and kafka-clients alone: no Spark class
 * takes part in resolving {@code load} and {@code commit(Map)}.
 */
public class JavaApiWithoutSparkTest {
    private static final String CALLER = String.join("\n",
            "import io.offsetkeeper.OffsetKeeper;",
            "import java.util.Collections;",
            "import java.util.HashMap;",
            "import java.util.Map;",
            "import org.apache.kafka.common.TopicPartition;",
            "",
            "public class PlainKafkaJob {",
            "    public static void main(String[] args) {",
            "        Map<String, Object> kafkaParams = new HashMap<>();",
            "        kafkaParams.put(\"bootstrap.servers\", args[1]);",
            "        kafkaParams.put(\"group.id\", \"plain\");",
            "        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(args[0])",
            "                .kafkaParams(kafkaParams).build()) {",
            "            Map<TopicPartition, Long> offsets = keeper.load(Collections.singleton(\"t\"));",
            "            keeper.commit(offsets);",
            "            keeper.commit(Collections.singletonMap(new TopicPartition(\"t\", 0), 3L));",
            "        }",
            "    }",
            "}",
            "");

    @Test
    public void aCallerOfLoadAndCommitCompilesWithoutSpark() throws Exception {
        String classpath = System.getProperty("offsetkeeper.test.apiClasspath");
        assertNotNull("offsetkeeper.test.apiClasspath is not set (Gradle sets it)", classpath);
        String[] entries = classpath.split(File.pathSeparator);
        assertEquals(classpath, 2, entries.length);
        assertTrue(classpath, Arrays.stream(entries).noneMatch(e -> e.contains("spark")));

        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertNotNull("no system Java compiler (a JRE, not a JDK?)", javac);
        Path dir = Files.createTempDirectory("api-without-spark");
        Path source = dir.resolve("PlainKafkaJob.java");
        Files.write(source, CALLER.getBytes(StandardCharsets.UTF_8));
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        StringWriter out = new StringWriter();
        try (StandardJavaFileManager files = javac.getStandardFileManager(diagnostics, Locale.ROOT,
                StandardCharsets.UTF_8)) {
            boolean compiled = javac.getTask(out, files, diagnostics,
                    Arrays.asList("-classpath", classpath, "-d", dir.toString(), "-Xlint:all"),
                    null, files.getJavaFileObjects(source.toFile())).call();
            assertTrue("javac failed:\n" + diagnostics.getDiagnostics() + "\n" + out, compiled);
        }
        assertTrue(Files.isRegularFile(dir.resolve("PlainKafkaJob.class")));
    }
}
