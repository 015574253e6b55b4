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
 *
 * <p>A commit hands F every entry of the batch, as the contenders are handed them; F compares
 * them with what it last wrote and writes the changed ones. {@link #toldTheChangedOne} is the
 * same process told which partition changed, for "commit 1 of P" only: the floor before it had
 * to find that partition, kept for reference.
 */
final class FloorProcess implements Contender {
    /** The name of the Kafka group store's floor (the program's {@code kload} and {@code kcommit}). */
    static final String KAFKA_FLOOR = "KF";

    private final Process process;
    private final Writer in;
    private final BufferedReader out;
    /** "" for the ZooKeeper floor's commands, "k" for the Kafka group store's. */
    private final String store;

    /** F, the floor of offsets in ZooKeeper. */
    FloorProcess(File binary, String zkConnect, String bootstrap) throws Exception {
        this(binary, zkConnect, bootstrap, "");
    }

    /** KF, the floor of offsets in Kafka's group store. */
    static FloorProcess groupStore(File binary, String zkConnect, String bootstrap) throws Exception {
        return new FloorProcess(binary, zkConnect, bootstrap, "k");
    }

    private FloorProcess(File binary, String zkConnect, String bootstrap, String store) throws Exception {
        this.store = store;
        process = new ProcessBuilder(binary.getPath(), zkConnect, bootstrap)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        out = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8));
    }

    /** The name of {@link #toldTheChangedOne}'s figure. */
    static final String TOLD = "F, told the changed one";

    @Override
    public String name() {
        return store.isEmpty() ? "F" : KAFKA_FLOOR;
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
        ask(store + "load warm " + w.loadGroup + " " + String.join(",", w.topics));
    }

    @Override
    public Timed loadCold(Workload w) throws Exception {
        long[] r = ask(store + "load cold " + w.coldGroup + " " + String.join(",", w.topics));
        return new Timed(r[0], null, (int) r[1]);
    }

    @Override
    public Timed loadWarm(Workload w) throws Exception {
        long[] r = ask(store + "load warm " + w.loadGroup + " " + String.join(",", w.topics));
        return new Timed(r[0], null, (int) r[1]);
    }

    /** Sends every entry of the batch; F finds and writes the changed ones. */
    @Override
    public long commit(Workload w, Map<TopicPartition, Long> offsets,
            Map<TopicPartition, Long> changed) throws Exception {
        StringBuilder entries = new StringBuilder(offsets.size() * 24);
        for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
            entries.append(entries.length() == 0 ? "" : ",").append(e.getKey().topic()).append(':')
                    .append(e.getKey().partition()).append(':').append(e.getValue());
        }
        long[] r = ask(store + "commit " + w.commitGroup(name()) + " " + entries);
        if (r[1] != changed.size()) {
            throw new IllegalStateException(name() + " wrote " + r[1] + " offsets, " + changed.size() + " changed");
        }
        return r[0];
    }

    /**
     * The same process, told which partition changed, in "commit 1 of P" only (into a group of
     * its own): the floor's figure before it was handed the whole batch.
     */
    Contender toldTheChangedOne() {
        FloorProcess floor = this;
        return new Contender() {
            @Override
            public String name() {
                return TOLD;
            }

            @Override
            public boolean measures(String op) {
                return op.equals("commit 1 of P");
            }

            @Override
            public void open(Workload w) {}

            @Override
            public Timed loadCold(Workload w) {
                throw new UnsupportedOperationException();
            }

            @Override
            public Timed loadWarm(Workload w) {
                throw new UnsupportedOperationException();
            }

            @Override
            public long commit(Workload w, Map<TopicPartition, Long> offsets,
                    Map<TopicPartition, Long> changed) throws Exception {
                if (changed.size() != 1) {
                    throw new IllegalArgumentException("told of one changed partition only");
                }
                Map.Entry<TopicPartition, Long> e = changed.entrySet().iterator().next();
                return floor.ask("commit-one " + w.commitGroup(TOLD) + " " + e.getKey().topic() + " "
                        + e.getKey().partition() + " " + e.getValue())[0];
            }

            @Override
            public void close() {}
        };
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
