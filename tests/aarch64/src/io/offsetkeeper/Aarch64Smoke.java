package io.offsetkeeper;

import java.io.BufferedReader;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The aarch64 smoke (tests/aarch64/smoke.sh runs it in an aarch64 JVM under qemu-user): the
 * jar's own {@code native/linux-aarch64} library, no override property, against the loopback
 * test cluster. In package io.offsetkeeper for {@link NativeLibrary}.
 *
 * <p>{@code full ZOOKEEPER BOOTSTRAP}: a load, a commit, a reload that sees the committed
 * offsets, {@link OffsetKeeper#validate}, and no panicForTest in the shipped library. Exit 0
 * only if every check passed.
 *
 * <p>{@code panic ZOOKEEPER BOOTSTRAP}: on the tests' build of the library (named by
 * {@code -Doffsetkeeper.native.library}), panics arrive as exceptions and the JVM lives on.
 *
 * <p>{@code no-library}: the jar lacks the aarch64 library; passes if the first native call
 * fails with the loader's message naming {@code native/linux-aarch64}.
 */
public final class Aarch64Smoke {
    private static final String RESOURCE = "native/linux-aarch64/liboffsetkeeper_jni.so";
    private static int passed;
    private static final long START = System.nanoTime();

    private Aarch64Smoke() {}

    /**
     * Panics inside the bridge's wrapper, as every native entry point runs: only the tests'
     * build of the library (cargo feature {@code test-panic}) has it, as
     * {@code Java_io_offsetkeeper_Aarch64Smoke_panicForTest}.
     */
    private static native void panicForTest();

    public static void main(String[] args) {
        try {
            // The panic mode runs on the test build, named by the override property.
            checkPlatform(args.length > 0 && args[0].equals("panic"));
            if (args.length == 1 && args[0].equals("no-library")) {
                noLibrary();
            } else if (args.length == 3 && args[0].equals("full")) {
                full(args[1], args[2]);
            } else if (args.length == 3 && args[0].equals("panic")) {
                panic(args[1], args[2]);
            } else {
                throw new IllegalArgumentException(
                        "usage: Aarch64Smoke full|panic ZOOKEEPER BOOTSTRAP | no-library");
            }
        } catch (Throwable t) {
            System.out.println("FAILED " + t);
            t.printStackTrace(System.out);
            System.out.println("aarch64 smoke: " + passed + " passed, 1 failed");
            System.out.flush();
            System.exit(1);
        }
        System.out.printf("aarch64 smoke: %d passed, 0 failed (%.1f s in the JVM)%n", passed,
                (System.nanoTime() - START) / 1e9);
        System.out.flush();
        System.exit(0);
    }

    private static void ok(String what) {
        passed++;
        System.out.printf("ok %s [%.1f s]%n", what, (System.nanoTime() - START) / 1e9);
        System.out.flush();
    }

    private static void check(boolean condition, String message) {
        if (!condition) {
            throw new AssertionError(message);
        }
    }

    private static void checkPlatform(boolean testLibrary) {
        String arch = System.getProperty("os.arch");
        check("aarch64".equals(arch), "os.arch=" + arch + ", not aarch64: not an aarch64 JVM");
        String override = System.getProperty(NativeLibrary.OVERRIDE_PROPERTY);
        check(testLibrary || override == null, "-D" + NativeLibrary.OVERRIDE_PROPERTY + "=" + override
                + " is set: the smoke must load the jar's resource");
        ok("platform: os.arch=" + arch + ", java " + System.getProperty("java.version") + " ("
                + System.getProperty("java.vm.name") + ", " + System.getProperty("java.vm.info")
                + "), " + NativeLibrary.platform(System.getProperty("os.name"), arch));
    }

    private static void noLibrary() {
        check(Aarch64Smoke.class.getClassLoader().getResource(RESOURCE) == null,
                RESOURCE + " is on the class path: this mode wants a jar without it");
        try {
            OffsetKeeper.validate(1L, 0, 2, null, null, null);
        } catch (UnsatisfiedLinkError e) {
            System.out.println("loader said: " + e.getMessage());
            check(e.getMessage().contains("no native library for os.name=Linux, os.arch=aarch64")
                    && e.getMessage().contains(RESOURCE), "unexpected loader message");
            ok("no library: the loader names " + RESOURCE);
            return;
        }
        throw new AssertionError("a native call succeeded without " + RESOURCE);
    }

    private static void full(String zookeeper, String bootstrap) throws Exception {
        check(Aarch64Smoke.class.getClassLoader().getResource(RESOURCE) != null,
                RESOURCE + " is not on the class path (is it in the jar?)");
        String suffix = Long.toString(System.currentTimeMillis(), 36);
        String topic = "aarch64-smoke-" + suffix;
        String group = "aarch64-smoke-group-" + suffix;
        Map<String, Object> kafka = new HashMap<>();
        kafka.put("bootstrap.servers", bootstrap);
        createTopicWithRecords(kafka, topic, 2, 5);
        ok("topic " + topic + ": 2 partitions, 5 records each");

        Map<String, Long> committed = new TreeMap<>();
        committed.put(topic + "-0", 3L);
        committed.put(topic + "-1", 5L);
        try (OffsetKeeper keeper = keeper(zookeeper, group, kafka)) {
            Map<String, Long> first = shown(keeper.load(Collections.singleton(topic)));
            System.out.println("LOAD " + first);
            Map<String, Long> earliest = new TreeMap<>();
            earliest.put(topic + "-0", 0L);
            earliest.put(topic + "-1", 0L);
            check(first.equals(earliest), "first load " + first + ", expected " + earliest);
            ok("load: nothing stored, both partitions start at earliest (0)");
            checkLibraryIsAarch64();

            Map<TopicPartition, Long> offsets = new HashMap<>();
            offsets.put(new TopicPartition(topic, 0), 3L);
            offsets.put(new TopicPartition(topic, 1), 5L);
            CommitResult result = keeper.commit(offsets);
            System.out.println("COMMIT " + result);
            check(result.written() == 2, "commit wrote " + result.written() + " offsets, not 2");
            ok("commit: " + committed + " in one multi");
        }
        try (OffsetKeeper keeper = keeper(zookeeper, group, kafka)) {
            LoadReport report = keeper.loadWithReport(Collections.singleton(topic));
            System.out.println("RELOAD\n" + report);
            Map<String, Long> again = shown(report.offsets());
            check(again.equals(committed), "reload " + again + ", expected " + committed);
            for (PartitionReport p : report.partitions()) {
                check(p.action() == Action.KEPT, "reload action " + p.action() + " for " + p);
            }
            ok("reload (a new keeper): " + again + ", kept");
        }

        Decision kept = OffsetKeeper.validate(1L, 0, 2, null, null, null);
        Decision above = OffsetKeeper.validate(7L, 0, 5, null, null, null);
        Decision missing = OffsetKeeper.validate(null, 2, 5, null, null, null);
        Decision latest = OffsetKeeper.validate(null, 2, 5, OnMissing.LATEST, null, null);
        System.out.println("VALIDATE " + kept + " | " + above + " | " + missing + " | " + latest);
        check(kept.action() == Action.KEPT && kept.offset() == 1, "validate(1, 0, 2): " + kept);
        check(above.action() == Action.RESET_ABOVE_RANGE && above.offset() == 0,
                "validate(7, 0, 5): " + above);
        check(missing.action() == Action.INITIALIZED && missing.offset() == 2,
                "validate(none, 2, 5): " + missing);
        check(latest.action() == Action.INITIALIZED && latest.offset() == 5,
                "validate(none, 2, 5, LATEST): " + latest);
        ok("validate: kept, reset above range, initialized at earliest and at latest");

        try {
            panicForTest();
            throw new AssertionError("the shipped library has panicForTest");
        } catch (UnsatisfiedLinkError e) {
            check(String.valueOf(e.getMessage()).contains("panicForTest"), "unexpected: " + e);
        }
        ok("no test entry point: panicForTest is absent from the shipped library");
    }

    /** On the tests' build of the library (the override property names it). */
    private static void panic(String zookeeper, String bootstrap) throws Exception {
        String library = System.getProperty(NativeLibrary.OVERRIDE_PROPERTY);
        check(library != null && library.contains("test-panic"), "not the test library: " + library);
        NativeLibrary.load(); // panicForTest is the first native call here
        String suffix = Long.toString(System.currentTimeMillis(), 36);
        String topic = "aarch64-panic-" + suffix;
        Map<String, Object> kafka = new HashMap<>();
        kafka.put("bootstrap.servers", bootstrap);
        createTopicWithRecords(kafka, topic, 1, 1);
        for (int i = 0; i < 3; i++) {
            try {
                panicForTest();
                throw new AssertionError("panicForTest returned normally");
            } catch (OffsetKeeperException e) {
                check(e.getMessage() != null && !e.getMessage().isEmpty(), "empty panic message");
                if (i == 0) {
                    System.out.println("PANIC " + e);
                }
            }
        }
        check(OffsetKeeper.validate(1L, 0, 2, null, null, null).action() == Action.KEPT,
                "validate after the panics");
        try (OffsetKeeper keeper = keeper(zookeeper, "aarch64-panic-group-" + suffix, kafka)) {
            check(keeper.load(Collections.singleton(topic)).size() == 1, "load after the panics");
        }
        ok("panic: 3 panics arrived as OffsetKeeperException; validate and load work after them");
    }

    private static OffsetKeeper keeper(String zookeeper, String group, Map<String, Object> kafka) {
        return OffsetKeeper.builder().zookeeper(zookeeper).group(group).kafkaParams(kafka).build();
    }

    private static Map<String, Long> shown(Map<TopicPartition, Long> offsets) {
        Map<String, Long> shown = new TreeMap<>();
        for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
            shown.put(e.getKey().toString(), e.getValue());
        }
        return shown;
    }

    private static void createTopicWithRecords(Map<String, Object> kafka, String topic,
            int partitions, int records) throws Exception {
        try (AdminClient admin = AdminClient.create(kafka)) {
            admin.createTopics(Collections.singleton(new NewTopic(topic, partitions, (short) 1)))
                    .all().get();
        }
        System.out.printf("created %s [%.1f s]%n", topic, (System.nanoTime() - START) / 1e9);
        Properties producerConfig = new Properties();
        producerConfig.putAll(kafka);
        producerConfig.put("acks", "all");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig,
                new ByteArraySerializer(), new ByteArraySerializer())) {
            List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                for (int i = 0; i < records; i++) {
                    sent.add(producer.send(new ProducerRecord<>(topic, p, null,
                            ("record " + i).getBytes(StandardCharsets.UTF_8))));
                }
            }
            for (java.util.concurrent.Future<?> f : sent) {
                f.get();
            }
        }
    }

    /**
     * The library this JVM mapped (qemu-user shows the guest's maps): extracted from the jar's
     * resource, and an aarch64 ELF (e_machine 183).
     */
    private static void checkLibraryIsAarch64() throws Exception {
        String mapped = null;
        try (BufferedReader maps = Files.newBufferedReader(Paths.get("/proc/self/maps"))) {
            for (String line; (line = maps.readLine()) != null;) {
                int slash = line.indexOf('/');
                if (slash >= 0 && line.contains("offsetkeeper_jni")) {
                    mapped = line.substring(slash).trim();
                    break;
                }
            }
        }
        check(mapped != null, "no offsetkeeper_jni library in /proc/self/maps");
        byte[] header = new byte[20];
        try (InputStream in = Files.newInputStream(Paths.get(mapped))) {
            check(in.read(header) == header.length, "short ELF header in " + mapped);
        }
        int machine = (header[18] & 0xff) | (header[19] & 0xff) << 8;
        check(header[0] == 0x7f && header[1] == 'E' && header[4] == 2 && machine == 183,
                mapped + " is not a 64-bit aarch64 ELF (e_machine " + machine + ")");
        ok("library: " + mapped + " (extracted from the jar's " + RESOURCE
                + "), ELF e_machine 183 = aarch64");
    }
}
