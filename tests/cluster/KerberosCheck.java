import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import javax.security.auth.login.AppConfigurationEntry;
import javax.security.auth.login.Configuration;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnsupportedSaslMechanismException;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;

/**
 * cluster.sh check-kerberos: the Kerberos cluster requires Kerberos and takes the client's, as seen
 * by ZooKeeper's and Kafka's own Java clients. Run in source-file mode (Java 11+) with the cluster
 * classpath, -Djava.security.krb5.conf and -Djava.security.auth.login.config set to the cluster's
 * files, as a test JVM would have them:
 *
 * <pre>  java ... KerberosCheck.java DIR/kerberos.env</pre>
 *
 * Prints one line per check; exits 1 when one fails.
 */
public final class KerberosCheck {
    static final String NODE = "/offsetkeeper-kerberos-check";
    static final String TOPIC = "offsetkeeper-kerberos-check";

    interface Check {
        String run() throws Exception;
    }

    static Map<String, String> env;
    static int failed;

    public static void main(String[] args) throws Exception {
        env = readEnv(args[0]);
        String zk = env("ZK");
        String kafka = env("KAFKA_SASL_PLAINTEXT");
        // The client JAAS file as the tests get it, plus a section of this check's own for "other".
        Configuration file = Configuration.getConfiguration();
        Configuration.setConfiguration(new Configuration() {
            @Override
            public AppConfigurationEntry[] getAppConfigurationEntry(String name) {
                if (!name.equals("OtherClient")) return file.getAppConfigurationEntry(name);
                Map<String, String> options = new HashMap<>();
                options.put("useKeyTab", "true");
                options.put("storeKey", "true");
                options.put("useTicketCache", "false");
                options.put("keyTab", env("OTHER_KEYTAB"));
                options.put("principal", env("OTHER_PRINCIPAL"));
                return new AppConfigurationEntry[] {new AppConfigurationEntry("com.sun.security.auth.module.Krb5LoginModule",
                        AppConfigurationEntry.LoginModuleControlFlag.REQUIRED, options)};
            }
        });

        check("ZooKeeper " + zk + ", JAAS section Client (keytab): create, read, ACL", () -> {
            try (ZooKeeper z = connect(zk, new ZKClientConfig())) {
                if (z.exists(NODE, false) != null) z.delete(NODE, -1);
                z.create(NODE, "kerberos".getBytes(StandardCharsets.UTF_8), ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
                String data = new String(z.getData(NODE, false, null), StandardCharsets.UTF_8);
                List<ACL> acl = z.getACL(NODE, null);
                expect(data.equals("kerberos"), "read back '" + data + "'");
                String id = acl.get(0).getId().getScheme() + ":" + acl.get(0).getId().getId();
                expect(id.equals("sasl:offsetkeeper"), "creator ACL names " + id + ", not sasl:offsetkeeper");
                return "read '" + data + "', ACL " + id;
            }
        });
        check("ZooKeeper " + zk + ", other@ (keytab): offsetkeeper's node is closed to it", () -> {
            ZKClientConfig config = new ZKClientConfig();
            config.setProperty(ZKClientConfig.LOGIN_CONTEXT_NAME_KEY, "OtherClient");
            try (ZooKeeper z = connect(zk, config)) {
                try {
                    z.getData(NODE, false, null);
                    throw new AssertionError("other@ read " + NODE);
                } catch (KeeperException.NoAuthException expected) {
                    return "getData: " + expected.code();
                }
            } finally {
                try (ZooKeeper z = connect(zk, new ZKClientConfig())) {
                    z.delete(NODE, -1);
                }
            }
        });
        check("ZooKeeper " + zk + ", no SASL (zookeeper.sasl.client=false): refused", () -> {
            ZKClientConfig config = new ZKClientConfig();
            config.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "false");
            try (ZooKeeper z = new ZooKeeper(zk, 10_000, event -> { }, config)) {
                try {
                    z.exists("/", false);
                    throw new AssertionError("an unauthenticated session read /");
                } catch (KeeperException e) {
                    expect(e.code() == KeeperException.Code.SESSIONCLOSEDREQUIRESASLAUTH,
                            "refused with " + e.code() + ", not SESSIONCLOSEDREQUIRESASLAUTH");
                    return "exists(/): " + e.code();
                }
            }
        });

        check("Kafka " + kafka + ", SASL_PLAINTEXT GSSAPI, JAAS section KafkaClient (keytab): create and list topics", () -> {
            try (Admin admin = Admin.create(kafka(kafka, "GSSAPI", null))) {
                try {
                    admin.createTopics(Collections.singleton(new NewTopic(TOPIC, 1, (short) 1))).all().get();
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) throw e;
                }
                expect(admin.listTopics().names().get().contains(TOPIC), "no topic " + TOPIC + " listed");
                return "topics " + admin.listTopics().names().get() + ", brokers " + admin.describeCluster().nodes().get();
            }
        });
        check("Kafka " + kafka + ", SASL_PLAINTEXT GSSAPI, ticket cache " + env("CLIENT_CCACHE") + ": list topics", () -> {
            String jaas = "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=false storeKey=false"
                    + " useTicketCache=true doNotPrompt=true ticketCache=\"" + env("CLIENT_CCACHE") + "\""
                    + " principal=\"" + env("CLIENT_PRINCIPAL") + "\";";
            try (Admin admin = Admin.create(kafka(kafka, "GSSAPI", jaas))) {
                return "topics " + admin.listTopics().names().get();
            }
        });
        String sslKafka = env("KAFKA_SASL_SSL");
        check("Kafka " + sslKafka + ", SASL_SSL GSSAPI, JKS truststore, JAAS section KafkaClient (keytab): list topics", () -> {
            Properties p = kafka(sslKafka, "GSSAPI", null);
            p.put("security.protocol", "SASL_SSL");
            p.put("ssl.truststore.location", env("TRUSTSTORE_JKS"));
            p.put("ssl.truststore.password", env("TRUSTSTORE_PASSWORD"));
            p.put("ssl.truststore.type", "JKS");
            try (Admin admin = Admin.create(p)) {
                expect(admin.listTopics().names().get().contains(TOPIC), "no topic " + TOPIC + " listed");
                return "topics " + admin.listTopics().names().get();
            }
        });
        check("Kafka " + kafka + ", SASL_PLAINTEXT PLAIN: refused", () -> {
            String jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"offsetkeeper\" password=\"x\";";
            try (Admin admin = Admin.create(kafka(kafka, "PLAIN", jaas))) {
                admin.listTopics().names().get();
                throw new AssertionError("PLAIN listed the topics");
            } catch (ExecutionException e) {
                expect(e.getCause() instanceof UnsupportedSaslMechanismException, "refused with " + e.getCause());
                return e.getCause().getClass().getSimpleName();
            }
        });
        System.out.println(failed == 0 ? "Kerberos cluster: every check passed" : "Kerberos cluster: " + failed + " check(s) failed");
        System.exit(failed == 0 ? 0 : 1);
    }

    static void check(String what, Check check) {
        long start = System.nanoTime();
        try {
            String result = check.run();
            System.out.printf("ok    %s (%d ms): %s%n", what, (System.nanoTime() - start) / 1_000_000, result);
        } catch (Throwable e) {
            failed++;
            StringBuilder causes = new StringBuilder(e.toString());
            for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) causes.append("; caused by ").append(c);
            System.out.printf("FAIL  %s (%d ms): %s%n", what, (System.nanoTime() - start) / 1_000_000, causes);
        }
    }

    static void expect(boolean ok, String otherwise) {
        if (!ok) throw new AssertionError(otherwise);
    }

    /** A session that has finished its SASL login (SaslAuthenticated), or an error. */
    static ZooKeeper connect(String connect, ZKClientConfig config) throws Exception {
        CountDownLatch authenticated = new CountDownLatch(1);
        String[] failure = {null};
        ZooKeeper z = new ZooKeeper(connect, 10_000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SaslAuthenticated) authenticated.countDown();
            if (event.getState() == Watcher.Event.KeeperState.AuthFailed) {
                failure[0] = "AuthFailed";
                authenticated.countDown();
            }
        }, config);
        if (!authenticated.await(20, TimeUnit.SECONDS) || failure[0] != null) {
            z.close();
            throw new AssertionError("no SASL login to ZooKeeper: " + (failure[0] != null ? failure[0] : "timed out"));
        }
        return z;
    }

    static Properties kafka(String bootstrap, String mechanism, String jaas) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", mechanism);
        p.put("sasl.kerberos.service.name", "kafka");
        if (jaas != null) p.put("sasl.jaas.config", jaas);
        p.put("default.api.timeout.ms", "30000");
        p.put("request.timeout.ms", "20000");
        return p;
    }

    static String env(String name) {
        String value = env.get("OFFSETKEEPER_KERBEROS_" + name);
        if (value == null) throw new IllegalStateException("kerberos.env has no OFFSETKEEPER_KERBEROS_" + name);
        return value;
    }

    static Map<String, String> readEnv(String path) throws Exception {
        Map<String, String> m = new HashMap<>();
        for (String line : Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8)) {
            int eq = line.indexOf('=');
            if (eq > 0 && !line.startsWith("#")) m.put(line.substring(0, eq), line.substring(eq + 1));
        }
        return m;
    }
}
