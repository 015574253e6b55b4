package io.offsetkeeper.bench;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.TopicPartition;

/**
 * F, the protocol floor: drives the Rust program {@code offsetkeeper-floor} (crate rust/bench)
 * over its stdin, one command a line. The program times its requests itself, so the pipe is
 * not in the numbers.
 */
final class FloorProcess implements Contender {
    private final Process process;
    private final Writer in;
    private final BufferedReader out;

    FloorProcess(File binary, String zkConnect, String bootstrap) throws Exception {
        process = new ProcessBuilder(binary.getPath(), zkConnect, bootstrap)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        out = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8));
    }

    @Override
    public String name() {
        return "F";
    }

    private long[] ask(String command) throws Exception {
        in.write(command + "\n");
        in.flush();
        String answer = out.readLine();
        if (answer == null || !answer.startsWith("ok ")) {
            throw new IllegalStateException("floor: '" + command + "' answered " + answer);
        }
        String[] words = answer.split(" ");
        return new long[] {Long.parseLong(words[1]), Long.parseLong(words[2])};
    }

    @Override
    public void open(Workload w) throws Exception {
        ask("load warm " + w.loadGroup + " " + String.join(",", w.topics));
    }

    @Override
    public Timed loadCold(Workload w) throws Exception {
        long[] r = ask("load cold " + w.coldGroup + " " + String.join(",", w.topics));
        return new Timed(r[0], null, (int) r[1]);
    }

    @Override
    public Timed loadWarm(Workload w) throws Exception {
        long[] r = ask("load warm " + w.loadGroup + " " + String.join(",", w.topics));
        return new Timed(r[0], null, (int) r[1]);
    }

    /** Sends exactly the changed offsets (the floor is told what changed). */
    @Override
    public long commit(Workload w, Map<TopicPartition, Long> offsets,
            Map<TopicPartition, Long> changed) throws Exception {
        String group = w.commitGroup(name());
        long value = changed.values().iterator().next();
        for (long v : changed.values()) {
            if (v != value) {
                throw new IllegalArgumentException("the floor commits one value per batch");
            }
        }
        if (changed.size() == 1) {
            TopicPartition tp = changed.keySet().iterator().next();
            return ask("commit-one " + group + " " + tp.topic() + " " + tp.partition() + " " + value)[0];
        }
        if (changed.size() != offsets.size()) {
            throw new IllegalArgumentException("the floor commits one or all partitions");
        }
        StringBuilder spec = new StringBuilder();
        for (Map.Entry<String, Integer> e : w.partitionsPerTopic.entrySet()) {
            spec.append(spec.length() == 0 ? "" : ",").append(e.getKey()).append(':').append(e.getValue());
        }
        return ask("commit " + group + " " + value + " " + spec)[0];
    }

    @Override
    public void close() throws Exception {
        in.write("quit\n");
        in.flush();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroy();
        }
    }
}
