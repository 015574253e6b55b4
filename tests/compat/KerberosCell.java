import io.offsetkeeper.Action;
import io.offsetkeeper.LoadReport;
import io.offsetkeeper.OffsetKeeper;
import io.offsetkeeper.PartitionReport;
import io.offsetkeeper.ZooKeeperException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Kerberos cell of the compatibility matrix (tests/compat/run-cell.sh ... kerberos): the
 * keeper, through the offsetkeeper_2.12 jar, against a ZooKeeper of the cell's version that takes
 * SASL GSSAPI, with the Kafka broker of the Kerberos cluster (cluster.sh start-kerberos). Run in
 * source-file mode (Java 11+) with the jar, kafka-clients and slf4j-api as the class path and the
 * Kerberos cluster's client JAAS file and krb5.conf as the JVM's, as a Kerberized driver has them:
 *
 * <pre>  java -Djava.security.krb5.conf=... -Djava.security.auth.login.config=... \
 *       -cp JAR:KAFKA_CLIENTS:SLF4J KerberosCell.java ZK_CONNECT KERBEROS_ENV</pre>
 *
 * Logs in through the JAAS Client section (and KafkaClient for the broker's SASL_PLAINTEXT
 * listener), loads, commits with the creator ACL, loads again as a restarted job would, and is
 * refused as the OtherClient principal. Prints {@code node PATH} for every offset node written
 * (run-cell.sh reads their ACLs with ZooKeeper's zkCli) and {@code OK} last; exits 1 on failure.
 */
public final class KerberosCell {
    private static Map<String, String> env;

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            throw new IllegalArgumentException("usage: KerberosCell.java ZK_CONNECT KERBEROS_ENV");
        }
        String zk = args[0];
        env = new HashMap<>();
        for (String line : Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8)) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                env.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
            }
        }
        String topic = "krb-compat-" + System.currentTimeMillis();
        String group = topic + "-group";
        stage(topic);
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);

        Map<TopicPartition, Long> committed = new HashMap<>();
        committed.put(p0, 5L);
        committed.put(p1, 3L);
        try (OffsetKeeper keeper = builder(zk, group).zookeeperProperty("zookeeper.acl", "creator").build()) {
            LoadReport first = keeper.loadWithReport(Collections.singleton(topic));
            for (PartitionReport p : first.partitions()) {
                check(p.action() == Action.INITIALIZED && p.chosen() == 0, "first load: " + p);
            }
            check(keeper.commit(committed).written() == 2, "the commit wrote both partitions");
        }
        say("loaded (nothing stored) and committed " + committed + " with zookeeper.acl=creator");

        try (OffsetKeeper keeper = builder(zk, group).build()) {
            LoadReport again = keeper.loadWithReport(Collections.singleton(topic));
            check(again.offsets().equals(committed), "the restart loads the commit: " + again);
            for (PartitionReport p : again.partitions()) {
                check(p.action() == Action.KEPT, "restart: " + p);
            }
        }
        say("a restarted keeper loads " + committed + " (kept)");

        // Another principal (the JAAS section OtherClient): the creator ACL keeps it out.
        Map<TopicPartition, Long> moved = new HashMap<>();
        moved.put(p0, 1L);
        moved.put(p1, 1L);
        try (OffsetKeeper other = builder(zk, group)
                .zookeeperProperty("zookeeper.sasl.clientconfig", "OtherClient").ownership(false).build()) {
            other.commit(moved);
            throw new AssertionError("the creator ACL let " + env.get("OFFSETKEEPER_KERBEROS_OTHER_PRINCIPAL") + " write");
        } catch (ZooKeeperException e) {
            check(e.getMessage().contains("ACL"), "the other principal's refusal names the ACL: " + e.getMessage());
            say("the principal of OtherClient is refused: " + e.getMessage());
        }

        for (int p = 0; p < 2; p++) {
            System.out.println("node /consumers/" + group + "/offsets/" + topic + "/" + p);
        }
        System.out.println("OK");
    }

    private static OffsetKeeper.Builder builder(String zk, String group) {
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", env("KAFKA_SASL_PLAINTEXT"));
        params.put("security.protocol", "SASL_PLAINTEXT");
        params.put("sasl.kerberos.service.name", "kafka");
        params.put("group.id", group);
        return OffsetKeeper.builder().zookeeper(zk).kafkaParams(params)
                .zookeeperTimeout(15_000).kafkaTimeout(15_000);
    }

    /** A topic of two partitions with 5 and 3 records, through the broker's PLAINTEXT listener. */
    private static void stage(String topic) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, env("KAFKA_PLAINTEXT"));
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(Collections.singleton(new NewTopic(topic, 2, (short) 1))).all()
                    .get(60, TimeUnit.SECONDS);
        }
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < 5; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, "record-" + i));
            }
            for (int i = 0; i < 3; i++) {
                producer.send(new ProducerRecord<>(topic, 1, null, "record-" + i));
            }
            producer.flush();
        }
    }

    private static String env(String name) {
        String value = env.get("OFFSETKEEPER_KERBEROS_" + name);
        if (value == null || value.isEmpty()) {
            throw new IllegalStateException("no OFFSETKEEPER_KERBEROS_" + name + " in the Kerberos cluster's env");
        }
        return value;
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    private static void say(String what) {
        System.out.println("kerberos-cell: " + what);
    }
}
