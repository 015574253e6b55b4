package io.offsetkeeper;

import com.sun.tools.attach.VirtualMachine;
import io.offsetkeeper.e2e.ClusterEnv;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

/**
 * The Kerberos cluster ({@code cluster.sh start-kerberos}) as {@link KerberosTest} sees it: its
 * env file, a ZooKeeper Java client that logs in as the test JVM's JAAS {@code Client} section,
 * ZooKeeper sessions ended by the server (through its JMX), and keepers run in a JVM of their
 * own ({@link KerberosProbe}). Fails loudly when the cluster is missing.
 */
final class KerberosCluster {
    private static ClusterEnv env;

    private KerberosCluster() {}

    /** {@code OFFSETKEEPER_KERBEROS_<name>} of the env file that Gradle names. */
    static synchronized String get(String name) {
        if (env == null) {
            String file = System.getProperty("offsetkeeper.kerberos.env");
            if (file == null) {
                throw new IllegalStateException("offsetkeeper.kerberos.env is not set: run these"
                        + " tests through gradle :jvm:testKerberos, which starts the Kerberos"
                        + " cluster");
            }
            try {
                env = ClusterEnv.load(Paths.get(file));
            } catch (IOException e) {
                throw new IllegalStateException("no Kerberos cluster: cannot read " + file, e);
            }
        }
        return env.get("OFFSETKEEPER_KERBEROS_" + name);
    }

    /** The cluster's directory: where its env file and its servers' pid files are. */
    private static Path dir() {
        get("ZK"); // fails loudly without the env file
        return Paths.get(System.getProperty("offsetkeeper.kerberos.env")).toAbsolutePath()
                .getParent();
    }

    /** A new topic of {@code partitions}, made through the broker's plaintext listener. */
    static String topic(int partitions) throws Exception {
        Properties props = new Properties();
        // The broker's inter-broker listener: plaintext, for staging only.
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, get("KAFKA_PLAINTEXT"));
        String topic = TestCluster.unique("krb");
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(Collections.singleton(new NewTopic(topic, partitions, (short) 1)))
                    .all().get();
        }
        return topic;
    }

    /** {@code records} records to each of the topic's first {@code partitions}, acknowledged. */
    static void produce(String topic, int partitions, int records) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, get("KAFKA_PLAINTEXT"));
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int p = 0; p < partitions; p++) {
                for (int i = 0; i < records; i++) {
                    sent.add(producer.send(new ProducerRecord<>(topic, p, null, "r" + i)));
                }
            }
            for (Future<RecordMetadata> record : sent) {
                record.get(60, TimeUnit.SECONDS);
            }
        }
    }

    /** A ZooKeeper Java client, SASL-authenticated as the JAAS section {@code Client}. */
    static ZooKeeper zooKeeper() throws Exception {
        CountDownLatch authenticated = new CountDownLatch(1);
        boolean[] failed = {false};
        ZooKeeper zk = new ZooKeeper(get("ZK"), 30_000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.AuthFailed) {
                failed[0] = true;
                authenticated.countDown();
            } else if (event.getState() == Watcher.Event.KeeperState.SaslAuthenticated) {
                authenticated.countDown();
            }
        });
        if (!authenticated.await(30, TimeUnit.SECONDS) || failed[0]) {
            zk.close();
            throw new IllegalStateException("ZooKeeper's Java client could not log in to "
                    + get("ZK") + (failed[0] ? ": AuthFailed" : " within 30 s"));
        }
        return zk;
    }

    /** Whether anything is stored under the group's offsets folder. */
    static boolean hasOffsets(String group) throws Exception {
        try (ZooKeeper zk = zooKeeper()) {
            return zk.exists("/consumers/" + group + "/offsets", false) != null;
        }
    }

    /** The session that owns the partition (its ownership node's ephemeral owner), or 0. */
    static long ownerSession(String group, String topic, int partition) throws Exception {
        try (ZooKeeper zk = zooKeeper()) {
            Stat stat = zk.exists("/consumers/" + group + "/owners/" + topic + "/" + partition,
                    false);
            return stat == null ? 0 : stat.getEphemeralOwner();
        } catch (KeeperException.NoNodeException e) {
            return 0;
        }
    }

    /**
     * Ends a ZooKeeper session on the server, as its expiry would (ephemeral nodes go; the
     * client's next request learns that the session expired): the server's JMX operation
     * {@code terminateSession} of the connection's bean, reached by attaching to the ZooKeeper
     * process (its pid file in the cluster's directory).
     *
     * @throws IllegalStateException when no connection of that session is there
     */
    static void terminateSession(long sessionId) throws Exception {
        String pid = new String(Files.readAllBytes(dir().resolve("zk.pid")),
                StandardCharsets.UTF_8).trim();
        VirtualMachine vm = VirtualMachine.attach(pid);
        String address;
        try {
            address = vm.startLocalManagementAgent();
        } finally {
            vm.detach();
        }
        String id = "0x" + Long.toHexString(sessionId);
        try (JMXConnector jmx = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
            MBeanServerConnection server = jmx.getMBeanServerConnection();
            for (ObjectName name : server.queryNames(
                    new ObjectName("org.apache.ZooKeeperService:name1=Connections,*"), null)) {
                if (id.equals(server.getAttribute(name, "SessionId"))) {
                    server.invoke(name, "terminateSession", null, null);
                    return;
                }
            }
        }
        throw new IllegalStateException("ZooKeeper (pid " + pid + ") has no connection of session "
                + id);
    }

    /**
     * A krb5.conf like the cluster's, its {@code [libdefaults]} with {@code extra} lines first
     * and its realm's KDC replaced by {@code kdc} when not null; written to a new file.
     */
    static Path krb5Conf(String kdc, String... extra) throws IOException {
        String text = new String(Files.readAllBytes(Paths.get(get("KRB5_CONF"))),
                StandardCharsets.UTF_8);
        text = text.replaceFirst("(?m)^\\[libdefaults\\]$",
                "[libdefaults]\n  " + String.join("\n  ", extra));
        if (kdc != null) {
            text = text.replaceFirst("(?m)^(\\s*kdc\\s*=\\s*).*$", "$1" + kdc);
        }
        Path file = Files.createTempFile("krb5-", ".conf");
        Files.write(file, text.getBytes(StandardCharsets.UTF_8));
        return file;
    }

    /** What a {@link KerberosProbe} JVM printed for one call. */
    static final class ProbeCall {
        final boolean ok;
        final String exception;
        final long elapsedMs;
        final String message;

        ProbeCall(String line) {
            String[] parts = line.split(" ", 5);
            ok = parts[1].equals("OK");
            exception = ok ? null : parts[2];
            elapsedMs = ok ? 0 : Long.parseLong(parts[3]);
            message = ok ? line : parts[4];
        }
    }

    /**
     * Runs {@link KerberosProbe} in a fresh JVM with the test JVM's class path and JAAS file,
     * {@code jvmOptions} (a {@code -Djava.security.krb5.conf} among them) and {@code environment}
     * added to this process's; returns its {@code load} and {@code commit} lines.
     */
    static Map<String, ProbeCall> probe(List<String> jvmOptions, Map<String, String> environment,
            String group, String topic, long timeoutMs, String... kafkaParams) throws Exception {
        List<String> command = new ArrayList<>(Arrays.asList(
                System.getProperty("java.home") + File.separator + "bin" + File.separator + "java",
                "-Xcheck:jni",
                "-Djava.security.auth.login.config=" + get("CLIENT_JAAS"),
                // A keeper's ZooKeeper login paces as in the test JVM.
                "-D" + Kerberos.ZOOKEEPER_MIN_RELOGIN + "=" + System.getProperty(
                        Kerberos.ZOOKEEPER_MIN_RELOGIN, "60000")));
        command.addAll(jvmOptions);
        command.addAll(Arrays.asList("-cp", System.getProperty("java.class.path"),
                KerberosProbe.class.getName(), get("ZK"), get("KAFKA_SASL_PLAINTEXT"), group,
                topic, String.valueOf(timeoutMs)));
        command.addAll(Arrays.asList(kafkaParams));
        Path output = Files.createTempFile("kerberos-probe-", ".out");
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(output.toFile());
            builder.environment().remove("JAVA_TOOL_OPTIONS");
            builder.environment().putAll(environment);
            Process process = builder.start();
            if (!process.waitFor(120, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("the probe JVM did not finish in 120 s: "
                        + new String(Files.readAllBytes(output), StandardCharsets.UTF_8));
            }
            String text = new String(Files.readAllBytes(output), StandardCharsets.UTF_8);
            if (text.contains("WARNING in native method") || process.exitValue() != 0) {
                throw new AssertionError("the probe JVM exited " + process.exitValue() + ": "
                        + text);
            }
            Map<String, ProbeCall> calls = new HashMap<>();
            for (String line : text.split("\n")) {
                if (line.startsWith("load ") || line.startsWith("commit ")) {
                    calls.put(line.substring(0, line.indexOf(' ')), new ProbeCall(line));
                }
            }
            if (calls.size() != 2) {
                throw new AssertionError("the probe JVM printed no load and commit lines: " + text);
            }
            return calls;
        } finally {
            Files.delete(output);
        }
    }
}
