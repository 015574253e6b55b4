package io.offsetkeeper.e2e;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A cluster's address file as tests/cluster writes it: {@code KEY=VALUE} lines, keys and values
 * trimmed, lines without a key ignored, a later key winning. Read by every Java test source set:
 * build/cluster/cluster.env (open cluster), build/secure-cluster/secure.env (the secured one
 * beside it), an ensemble's ensemble.env, the chaos soak's own cluster.env.
 *
 * <p>Plain Java 8 with no dependency, so that any source set can compile this one file in
 * (jvm tests and tests/flink do, through {@code compileTestJava.source}).
 */
public final class ClusterEnv {
    /** ZooKeeper connect string of the open cluster (or of an ensemble). */
    public static final String ZK = "OFFSETKEEPER_ZK";
    /** Kafka bootstrap servers of the open cluster. */
    public static final String BOOTSTRAP = "OFFSETKEEPER_BOOTSTRAP";
    /** Prefix of every key of secure.env. */
    public static final String SECURE_PREFIX = "OFFSETKEEPER_SECURE_";

    private final Path file;
    private final Map<String, String> values;

    private ClusterEnv(Path file, Map<String, String> values) {
        this.file = file;
        this.values = values;
    }

    /** The file's keys and values, in the file's order. */
    public static Map<String, String> read(Path file) throws IOException {
        Map<String, String> env = new LinkedHashMap<>();
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                env.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
            }
        }
        return env;
    }

    public static ClusterEnv load(Path file) throws IOException {
        return new ClusterEnv(file, Collections.unmodifiableMap(read(file)));
    }

    public Path file() {
        return file;
    }

    public Map<String, String> values() {
        return values;
    }

    /** The value of {@code key}, or null when the file has none. */
    public String get(String key) {
        return values.get(key);
    }

    /** {@link #ZK}, or null. */
    public String zookeeper() {
        return get(ZK);
    }

    /** {@link #BOOTSTRAP}, or null. */
    public String bootstrap() {
        return get(BOOTSTRAP);
    }

    /** {@code OFFSETKEEPER_SECURE_<name>} of secure.env, or null. */
    public String secure(String name) {
        return get(SECURE_PREFIX + name);
    }
}
