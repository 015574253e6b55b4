package io.offsetkeeper.e2e;

import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.offsetkeeper.e2e.StreamingJob.Record;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@link StreamingJob#main} as a driver JVM of its own (Spark 3.5, local[2]): its stdout lines
 * kept in order, a SIGKILL sent from the reading thread at once when a line meets
 * {@code killOn}, and signals for a stopped ("zombie") driver.
 */
final class DriverProcess implements AutoCloseable {
    /** One record as {@link Record#toString} prints it: topic-partition@offset. */
    private static final Pattern RECORD = Pattern.compile("(.+)-(\\d+)@(\\d+)");

    final Process process;
    /** What the job printed on stdout, in order. */
    final List<String> out = new CopyOnWriteArrayList<>();
    /** Every line, stderr's marked, for failure messages. */
    final List<String> all = new CopyOnWriteArrayList<>();
    private final Thread outReader;
    private final Predicate<String> killOn;
    private volatile boolean killed;

    /**
     * Starts the driver: {@code args} are {@link StreamingJob#main}'s. {@code killOn} sees each
     * stdout line (the lines before it are in {@link #out}); null never kills.
     */
    DriverProcess(List<String> args, Predicate<String> killOn) throws IOException {
        this.killOn = killOn;
        String classpath = System.getProperty("offsetkeeper.e2e.classpath");
        String jvmArgs = System.getProperty("offsetkeeper.e2e.jvmArgs");
        assertTrue("offsetkeeper.e2e.classpath/jvmArgs are not set (Gradle sets them)",
                classpath != null && jvmArgs != null);
        List<String> command = new ArrayList<>();
        command.add(new File(System.getProperty("java.home"), "bin/java").getPath());
        command.addAll(Arrays.asList(jvmArgs.split(" ")));
        command.addAll(Arrays.asList("-cp", classpath, StreamingJob.class.getName()));
        command.addAll(args);
        // stdout apart: the job's lines are parsed, and a log line must not cut into one.
        process = new ProcessBuilder(command).start();
        outReader = read(process.getInputStream(), true);
        read(process.getErrorStream(), false);
    }

    private Thread read(InputStream stream, boolean stdout) {
        Thread reader = new Thread(() -> {
            try (BufferedReader lines = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8))) {
                String line;
                while ((line = lines.readLine()) != null) {
                    all.add(stdout ? line : "stderr: " + line);
                    if (!stdout) {
                        continue;
                    }
                    out.add(line);
                    if (killOn != null && !killed && killOn.test(line)) {
                        // From this thread, at once: the driver is where the line says.
                        killed = true;
                        process.destroyForcibly(); // SIGKILL
                    }
                }
            } catch (IOException e) {
                all.add("(output lost: " + e + ")");
            }
        });
        reader.setDaemon(true);
        reader.start();
        return reader;
    }

    /** How many stdout lines start with {@code prefix}. */
    long count(String prefix) {
        return out.stream().filter(l -> l.startsWith(prefix)).count();
    }

    /** The first stdout line starting with {@code prefix}, waited for up to {@code ms}. */
    String await(String prefix, long ms) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (true) {
            for (String line : out) {
                if (line.startsWith(prefix)) {
                    return line;
                }
            }
            if (!process.isAlive() && !killed) {
                outReader.join(10_000);
            }
            if (System.nanoTime() > deadline || (!process.isAlive() && !out.stream().anyMatch(l -> l.startsWith(prefix)))) {
                fail("the driver printed no " + prefix.trim() + " line" + (process.isAlive() ? " in time" : ", it exited")
                        + "; its output:\n" + String.join("\n", all));
            }
            Thread.sleep(50);
        }
    }

    /** Waits for the kill {@code killOn} asked for, the driver's death, and every line before it. */
    void awaitKilled(long ms) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (!killed) {
            boolean exited = !process.isAlive() && !killed;
            if (exited || System.nanoTime() > deadline) {
                fail("the driver was not killed" + (exited ? ", it exited" : " in time") + "; its output:\n"
                        + String.join("\n", all));
            }
            Thread.sleep(50);
        }
        assertTrue("the driver did not die of SIGKILL", process.waitFor(30, TimeUnit.SECONDS));
        outReader.join(30_000);
    }

    /** SIGKILL now; waits for the death and every line before it. */
    void kill() throws InterruptedException {
        killed = true;
        process.destroyForcibly();
        assertTrue("the driver did not die of SIGKILL", process.waitFor(30, TimeUnit.SECONDS));
        outReader.join(30_000);
    }

    /** Waits for the driver to exit by itself; its exit status. */
    int awaitExit(long ms) throws InterruptedException {
        if (!process.waitFor(ms, TimeUnit.MILLISECONDS)) {
            fail("the driver did not exit in " + ms + " ms; its output:\n" + String.join("\n", all));
        }
        outReader.join(30_000);
        return process.exitValue();
    }

    /** Sends a signal by name (STOP, CONT) to the driver JVM. */
    void signal(String name) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + name, String.valueOf(process.pid())).inheritIO().start();
        assertTrue("kill -" + name + " failed", kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0);
    }

    /** The batches the driver printed as processed, in order; a line the kill cut is left out. */
    List<List<Record>> batches() {
        List<List<Record>> batches = new ArrayList<>();
        String prefix = "PROCESSED [";
        for (String line : out) {
            if (!line.startsWith(prefix) || !line.endsWith("]")) {
                continue;
            }
            List<Record> batch = new ArrayList<>();
            for (String item : line.substring(prefix.length(), line.length() - 1).split(", ")) {
                Matcher m = RECORD.matcher(item);
                assertTrue("not a record: " + item, m.matches());
                batch.add(new Record(m.group(1), Integer.parseInt(m.group(2)), Long.parseLong(m.group(3))));
            }
            batches.add(batch);
        }
        return batches;
    }

    /** The last {@code n} lines, each cut at 300 characters, for failure messages. */
    String tail(int n) {
        List<String> lines = new ArrayList<>(all);
        return lines.subList(Math.max(0, lines.size() - n), lines.size()).stream()
                .map(l -> l.length() > 300 ? l.substring(0, 300) + "..." : l)
                .collect(java.util.stream.Collectors.joining("\n"));
    }

    /** Every line, for failure messages. */
    String output() {
        return String.join("\n", all);
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }
    }
}
