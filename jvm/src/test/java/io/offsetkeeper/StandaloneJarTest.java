package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.Test;

/**
 * The jar is all a job needs besides Spark: a fresh JVM with only the jar, kafka-clients and
 * slf4j-api on its class path, no LD_LIBRARY_PATH and no java.library.path, loads offsets.
 */
public class StandaloneJarTest {

    /** Output and exit code of StandaloneLoad in a fresh JVM. */
    private static String[] run(String... jvmOptions) throws Exception {
        String classpath = System.getProperty("offsetkeeper.test.standaloneClasspath");
        assertTrue("offsetkeeper.test.standaloneClasspath is not set (Gradle sets it)",
                classpath != null && classpath.contains(".jar"));
        String topic = TestCluster.createTopic(2);
        TestCluster.produce(topic, 1, 5);
        String group = TestCluster.unique("group");
        TestCluster.write(TestCluster.offsetPath(group, topic, 1), "4");

        List<String> command = new ArrayList<>();
        command.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
        command.add("-Xcheck:jni");
        command.addAll(Arrays.asList(jvmOptions));
        command.addAll(Arrays.asList("-cp", classpath, StandaloneLoad.class.getName(),
                TestCluster.zookeeper(), TestCluster.bootstrap(), group, topic));
        Path output = Files.createTempFile("standalone-", ".out");
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(output.toFile());
            builder.environment().remove("LD_LIBRARY_PATH");
            builder.environment().remove("JAVA_TOOL_OPTIONS");
            Process process = builder.start();
            if (!process.waitFor(120, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("the fresh JVM did not finish in 120 s");
            }
            String text = new String(Files.readAllBytes(output), StandardCharsets.UTF_8);
            assertFalse(text, text.contains("WARNING in native method"));
            return new String[] {String.valueOf(process.exitValue()), text, topic};
        } finally {
            Files.delete(output);
        }
    }

    @Test
    public void aFreshJvmLoadsOffsetsFromTheJarAlone() throws Exception {
        String[] result = run();
        String out = result[1];
        String topic = result[2];
        assertEquals(out, "0", result[0]);
        String expected = "OFFSETS " + topic + "-0=0," + topic + "-1=4";
        assertEquals(out, 2, out.split(expected, -1).length - 1);
    }

    @Test
    public void anUnsupportedPlatformIsNamedOnceAndNotRetried() throws Exception {
        String[] result = run("-Dos.arch=sparcv9");
        String out = result[1];
        assertEquals(out, "2", result[0]);
        assertTrue(out, out.contains("os.arch=sparcv9"));
        assertTrue(out, out.contains("native/linux-sparcv9/liboffsetkeeper_jni.so"));
        assertTrue(out, out.contains("not retried"));
    }

    @Test
    public void theOverridePropertyLoadsALibraryOnDisk() throws Exception {
        String library = System.getProperty("offsetkeeper.test.nativeLibrary");
        assertTrue("offsetkeeper.test.nativeLibrary is not set (Gradle sets it)", library != null);
        String[] result = run("-D" + NativeLibrary.OVERRIDE_PROPERTY + "=" + library);
        assertEquals(result[1], "0", result[0]);
        assertTrue(result[1], result[1].contains("OFFSETS " + result[2] + "-0=0"));
    }

    @Test
    public void theOverridePropertyMustNameAFile() throws Exception {
        String[] result = run("-D" + NativeLibrary.OVERRIDE_PROPERTY + "=/nonexistent/lib.so");
        assertEquals(result[1], "2", result[0]);
        assertTrue(result[1], result[1].contains("/nonexistent/lib.so"));
    }
}
