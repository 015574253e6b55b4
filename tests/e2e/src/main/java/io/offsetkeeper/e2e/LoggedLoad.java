package io.offsetkeeper.e2e;

import io.offsetkeeper.OffsetKeeper;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One load in a fresh JVM, whose logging setup is the caller's: the tests of the setups in
 * examples/logging (LogbackExampleTest in jvm, {@code Log4j2ExampleTest} here) start it with
 * {@link #run} and read what the engine's log lines looked like on the console. Shared with
 * the jvm tests by jvm/build.gradle, as {@link Cluster} is.
 */
public final class LoggedLoad {
    private static final long TIMEOUT_S = 120;

    private LoggedLoad() {}

    /**
     * Loads once and closes, printing {@code LOADED <partitions>}.
     *
     * @param args the ZooKeeper connect string, the brokers, the group and the topic
     */
    public static void main(String[] args) {
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", args[1]);
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(args[0]).group(args[2])
                .kafkaParams(params).build()) {
            System.out.println("LOADED " + keeper.load(Collections.singleton(args[3])).size());
        }
    }

    /** What a load's JVM printed (stdout and stderr), and the group it loaded. */
    public static final class Output {
        private final String text;
        private final String group;

        private Output(String text, String group) {
            this.text = text;
            this.group = group;
        }

        /** Every line the JVM printed. */
        public String text() {
            return text;
        }

        /** The group the load used (a fresh one). */
        public String group() {
            return group;
        }

        /** How many lines of {@link #text} match {@code regex} ({@code ^} is a line's start). */
        public int count(String regex) {
            Matcher m = Pattern.compile(regex, Pattern.MULTILINE).matcher(text);
            int n = 0;
            while (m.find()) {
                n++;
            }
            return n;
        }
    }

    /**
     * Runs {@link #main} for a fresh group in a fresh JVM with this JVM's class path and
     * {@code jvmOptions} (the logging configuration).
     *
     * @throws AssertionError if the JVM did not finish in time, did not exit with 0, or did not
     *     load {@code partitions} partitions
     */
    public static Output run(List<String> jvmOptions, String zookeeper, String bootstrap,
            String topic, int partitions) throws IOException, InterruptedException {
        String group = "logged-load-" + UUID.randomUUID();
        List<String> command = new ArrayList<>();
        command.add(new File(System.getProperty("java.home"), "bin/java").getPath());
        command.addAll(jvmOptions);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(LoggedLoad.class.getName());
        Collections.addAll(command, zookeeper, bootstrap, group, topic);
        Path output = Files.createTempFile("logged-load-", ".out");
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(output.toFile()).start();
            if (!process.waitFor(TIMEOUT_S, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("the load's JVM did not finish in " + TIMEOUT_S + " s; it printed:\n"
                        + new String(Files.readAllBytes(output), StandardCharsets.UTF_8));
            }
            List<String> lines = Files.readAllLines(output, StandardCharsets.UTF_8);
            String text = String.join("\n", lines);
            if (process.exitValue() != 0) {
                throw new AssertionError("the load's JVM exited with " + process.exitValue()
                        + "; it printed:\n" + text);
            }
            if (!lines.contains("LOADED " + partitions)) {
                throw new AssertionError("the load did not load " + partitions + " partitions:\n" + text);
            }
            return new Output(text, group);
        } finally {
            Files.delete(output);
        }
    }
}
