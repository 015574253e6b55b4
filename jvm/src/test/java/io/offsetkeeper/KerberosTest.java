package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import javax.security.auth.kerberos.KerberosTicket;
import javax.security.auth.login.Configuration;
import org.apache.kafka.common.TopicPartition;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Kerberos, configured as on a Kerberized Hadoop cluster: the JVM's JAAS file with a
 * {@code Client} and a {@code KafkaClient} section (keytab logins), {@code java.security.krb5.conf},
 * kafkaParams with {@code SASL_PLAINTEXT} or {@code SASL_SSL} and
 * {@code sasl.kerberos.service.name}; nothing specific to offsetkeeper. Against the Kerberos
 * cluster ({@code cluster.sh start-kerberos}: a Kerby KDC, a ZooKeeper that requires SASL on
 * every session, a broker whose SASL listeners take only GSSAPI, beside the PLAINTEXT listener
 * that the broker and the tests' data staging use), through {@link KerberosCluster}.
 * The task {@code :jvm:testKerberos} sets the JVM's login and krb5 configuration, with TGTs of
 * {@link #TICKET_LIFETIME_S} seconds. Cases that need another krb5.conf or clock than this
 * JVM's run a keeper in a JVM of its own ({@link KerberosProbe}).
 */
public class KerberosTest {
    /**
     * The lifetime of the test JVM's TGTs in seconds: Gradle gives the JVM a copy of the
     * cluster's krb5.conf with {@code ticket_lifetime} this short, which the JDK's
     * Krb5LoginModule asks the KDC for (Kerby grants it: a TGT of exactly that lifetime);
     * tickets that {@code cluster.sh kinit} made for the ticket cache keep the KDC's 4 hours.
     */
    private static final long TICKET_LIFETIME_S =
            Long.getLong("offsetkeeper.kerberos.ticketLifetime", 0);
    /**
     * Logins of this JVM are at least this far apart (ms): kafkaParams'
     * {@code sasl.kerberos.min.time.before.relogin} here, ZooKeeper's system property
     * {@code zookeeper.kerberos.minReLoginTimeMs} set by Gradle. The default minute would let
     * a TGT of 15 s expire before its refresh, as in Kafka's and ZooKeeper's own clients.
     */
    private static final long MIN_RELOGIN_MS = 5_000;
    /** What a failure may take beyond its call's timeout. */
    private static final long MARGIN_MS = 3_000;

    @BeforeClass
    public static void checkSetup() throws Exception {
        kerberos("ZK"); // fails loudly without the cluster
        assertTrue("Gradle sets offsetkeeper.kerberos.ticketLifetime", TICKET_LIFETIME_S > 0);
        assertEquals(String.valueOf(MIN_RELOGIN_MS),
                System.getProperty(Kerberos.ZOOKEEPER_MIN_RELOGIN));
    }

    private static String kerberos(String name) {
        return KerberosCluster.get(name);
    }

    private static String topic(int partitions) throws Exception {
        return KerberosCluster.topic(partitions);
    }

    private static Map<String, Object> kafkaParams(String group) {
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", kerberos("KAFKA_SASL_PLAINTEXT"));
        params.put("security.protocol", "SASL_PLAINTEXT");
        params.put("sasl.kerberos.service.name", "kafka");
        params.put("sasl.kerberos.min.time.before.relogin", MIN_RELOGIN_MS);
        params.put("group.id", group);
        return params;
    }

    private static OffsetKeeper.Builder builder(Map<String, Object> kafkaParams) {
        return OffsetKeeper.builder().zookeeper(kerberos("ZK")).kafkaParams(kafkaParams)
                .zookeeperTimeout(15_000).kafkaTimeout(15_000);
    }

    /** The JAAS sections of the JVM, keytab logins: load, commit, and a restart sees the commit. */
    @Test
    public void jaasSectionsLoadCommitAndRestart() throws Exception {
        String topic = topic(2);
        String group = TestCluster.unique("krb-group");
        Map<TopicPartition, Long> offsets = new HashMap<>();
        offsets.put(new TopicPartition(topic, 0), 0L);
        offsets.put(new TopicPartition(topic, 1), 0L);
        try (OffsetKeeper keeper = builder(kafkaParams(group))
                .zookeeperProperty("zookeeper.acl", "creator").build()) {
            assertEquals(offsets, keeper.load(Collections.singleton(topic)));
            assertEquals(2, keeper.commit(offsets).written());
        }
        try (OffsetKeeper keeper = builder(kafkaParams(group)).build()) {
            LoadReport report = keeper.loadWithReport(Collections.singleton(topic));
            for (PartitionReport p : report.partitions()) {
                assertEquals(p.toString(), Long.valueOf(0L), p.stored());
            }
        }
        // Another principal (the JAAS section OtherClient, named as ZooKeeper's client names
        // one): the creator-only ACL of sasl:offsetkeeper keeps it out, and it writes nothing.
        try (OffsetKeeper other = builder(kafkaParams(group))
                .zookeeperProperty("zookeeper.sasl.clientconfig", "OtherClient")
                .ownership(false).build()) {
            Map<TopicPartition, Long> moved = new HashMap<>();
            offsets.keySet().forEach(tp -> moved.put(tp, 1L));
            other.commit(moved);
            fail("the creator ACL must refuse another principal");
        } catch (ZooKeeperException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("ACL"));
        }
    }

    /** Kafka's login from a ticket cache in sasl.jaas.config (as after kinit), ZooKeeper's from the JVM's Client section. */
    @Test
    public void ticketCacheLoginInSaslJaasConfig() throws Exception {
        String topic = topic(1);
        Map<String, Object> params = kafkaParams(TestCluster.unique("krb-cache"));
        params.put("sasl.jaas.config", "com.sun.security.auth.module.Krb5LoginModule required"
                + " useTicketCache=true ticketCache=\"" + kerberos("CLIENT_CCACHE") + "\""
                + " principal=\"" + kerberos("CLIENT_PRINCIPAL") + "\";");
        try (OffsetKeeper keeper = builder(params).build()) {
            assertEquals(1, keeper.load(Collections.singleton(topic)).size());
        }
    }

    /** A service principal the KDC does not know: a clear error naming it, within the timeout. */
    @Test
    public void unknownServicePrincipalFailsClearly() throws Exception {
        String topic = topic(1);
        Map<String, Object> params = kafkaParams(TestCluster.unique("krb-wrong"));
        params.put("sasl.kerberos.service.name", "notkafka");
        long start = System.nanoTime();
        try (OffsetKeeper keeper = builder(params).build()) {
            keeper.load(Collections.singleton(topic));
            fail("an unknown service principal must fail");
        } catch (KafkaClusterException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("GSSAPI"));
            assertTrue(e.getMessage(), e.getMessage().contains("notkafka"));
        }
        long seconds = (System.nanoTime() - start) / 1_000_000_000L;
        assertTrue("took " + seconds + " s", seconds < 30);
    }

    /** A keytab that is not there: the login fails naming the principal, nothing is written. */
    @Test
    public void missingKeytabFailsClearly() throws Exception {
        String topic = topic(1);
        Map<String, Object> params = kafkaParams(TestCluster.unique("krb-nokeytab"));
        params.put("sasl.jaas.config", "com.sun.security.auth.module.Krb5LoginModule required"
                + " useKeyTab=true storeKey=true keyTab=\"/nonexistent/offsetkeeper.keytab\""
                + " principal=\"" + kerberos("CLIENT_PRINCIPAL") + "\";");
        try (OffsetKeeper keeper = builder(params).build()) {
            keeper.load(Collections.singleton(topic));
            fail("a missing keytab must fail");
        } catch (KafkaClusterException | IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains(kerberos("CLIENT_PRINCIPAL")));
        }
    }

    /** zookeeper.sasl.client=false on a ZooKeeper that requires SASL: refused, clearly. */
    @Test
    public void zookeeperWithoutSaslIsRefused() throws Exception {
        String topic = topic(1);
        try (OffsetKeeper keeper = builder(kafkaParams(TestCluster.unique("krb-nosasl")))
                .zookeeperProperty("zookeeper.sasl.client", "false").build()) {
            keeper.load(Collections.singleton(topic));
            fail("a session without SASL must be refused");
        } catch (ZooKeeperException e) {
            // Not a DIGEST hint: the session sent no credentials at all.
            assertTrue(e.getMessage(), e.getMessage().contains("ZooKeeper requires an"
                    + " authenticated (SASL) session and this one sent no credentials. For Kerberos,"
                    + " the JVM's JAAS configuration (java.security.auth.login.config; for the CLI,"
                    + " a line with that key in --command-config) needs a `Client` section"));
        }
    }

    /**
     * SASL_SSL: GSSAPI inside TLS, the broker's CA in a JKS truststore, the login the JVM's
     * KafkaClient section; load, commit, and a restart sees the commit.
     */
    @Test
    public void saslSslWithAJksTruststore() throws Exception {
        String topic = topic(2);
        String group = TestCluster.unique("krb-ssl");
        Map<String, Object> params = kafkaParams(group);
        params.put("bootstrap.servers", kerberos("KAFKA_SASL_SSL"));
        params.put("security.protocol", "SASL_SSL");
        params.put("ssl.truststore.location", kerberos("TRUSTSTORE_JKS"));
        params.put("ssl.truststore.password", kerberos("TRUSTSTORE_PASSWORD"));
        params.put("ssl.truststore.type", "JKS");
        KerberosCluster.produce(topic, 2, 5);
        Map<TopicPartition, Long> offsets = new HashMap<>();
        offsets.put(new TopicPartition(topic, 0), 0L);
        offsets.put(new TopicPartition(topic, 1), 0L);
        try (OffsetKeeper keeper = builder(params).build()) {
            assertEquals(offsets, keeper.load(Collections.singleton(topic)));
            offsets.put(new TopicPartition(topic, 0), 3L);
            offsets.put(new TopicPartition(topic, 1), 4L);
            assertEquals(2, keeper.commit(offsets).written());
        }
        try (OffsetKeeper keeper = builder(params).build()) {
            LoadReport report = keeper.loadWithReport(Collections.singleton(topic));
            assertEquals(report.toString(), offsets, report.offsets());
            for (PartitionReport p : report.partitions()) {
                assertEquals(p.toString(), offsets.get(p.topicPartition()), p.stored());
            }
        }
    }

    /**
     * One keeper kept open across more than three TGT lifetimes ({@link #TICKET_LIFETIME_S}),
     * committing and loading every 2 s, and each commit read back by a fresh keeper (a new
     * ZooKeeper session and new Kafka connections, on the logins the first keeper holds: the
     * engine keeps a keeper's own Kafka connections). Halfway, ZooKeeper ends the keeper's
     * session, as an expiry would, once the first TGT has expired: its next commit opens a new
     * session, authenticated with a later login's ticket. Every commit is written and read back,
     * and both logins went through at least three TGTs.
     */
    @Test
    public void aKeeperOutlivesSeveralTicketLifetimes() throws Exception {
        long lifetimeMs = TICKET_LIFETIME_S * 1000;
        assertTrue("tickets of " + TICKET_LIFETIME_S + " s make this test too long",
                TICKET_LIFETIME_S <= 30);
        String topic = topic(2);
        KerberosCluster.produce(topic, 2, 100);
        String group = TestCluster.unique("krb-long");
        Map<String, Set<Date>> tgts = new HashMap<>();
        long start = System.currentTimeMillis();
        long expireAt = start + lifetimeMs * 3 / 2;
        long end = start + lifetimeMs * 3 + 2_000;
        long ended = 0;
        int round = 0;
        try (OffsetKeeper keeper = builder(kafkaParams(group)).build()) {
            assertEquals(2, keeper.load(Collections.singleton(topic)).size());
            while (System.currentTimeMillis() < end) {
                round++;
                String at = "round " + round + " at "
                        + (System.currentTimeMillis() - start) / 1000 + " s: ";
                Map<TopicPartition, Long> offsets = new HashMap<>();
                offsets.put(new TopicPartition(topic, 0), (long) round);
                offsets.put(new TopicPartition(topic, 1), (long) round);
                CommitResult result = keeper.commit(offsets);
                assertFalse(at + result, result.deferred());
                assertEquals(at + result, 2, result.written());
                assertEquals(at, offsets, keeper.load(Collections.singleton(topic)));
                try (OffsetKeeper reader = builder(kafkaParams(group)).ownership(false).build()) {
                    for (PartitionReport p :
                            reader.loadWithReport(Collections.singleton(topic)).partitions()) {
                        assertEquals(at + p, Long.valueOf(round), p.stored());
                    }
                }
                for (String section : new String[] {"Client", "KafkaClient"}) {
                    KerberosTicket tgt = tgtOfTheKeepersLogin(section);
                    // The client asks for "now + lifetime" by its clock and the KDC starts the
                    // ticket at its own "now" when the request arrives, both in whole seconds: a
                    // second or two may be lost on a loaded machine.
                    long ticketMs = tgt.getEndTime().getTime() - tgt.getStartTime().getTime();
                    assertTrue(at + section + ": a ticket of " + ticketMs + " ms, not about "
                            + lifetimeMs, ticketMs <= lifetimeMs && ticketMs >= lifetimeMs - 3_000);
                    tgts.computeIfAbsent(section, s -> new TreeSet<>()).add(tgt.getStartTime());
                }
                // Between batches, as a session expires while a job waits for its next one (a
                // commit on the connection the server is closing would be deferred).
                if (ended == 0 && System.currentTimeMillis() >= expireAt) {
                    ended = KerberosCluster.ownerSession(group, topic, 0);
                    assertTrue(at + "the keeper's ownership node is there", ended != 0);
                    KerberosCluster.terminateSession(ended);
                }
                Thread.sleep(2_000);
            }
            assertTrue("the session was ended", ended != 0);
            long session = KerberosCluster.ownerSession(group, topic, 0);
            assertTrue("the keeper owns its partitions on a new session: " + session,
                    session != 0 && session != ended);
        }
        assertTrue(round + " rounds", round >= 10);
        for (Map.Entry<String, Set<Date>> section : tgts.entrySet()) {
            assertTrue(section.getKey() + ": TGTs " + section.getValue(),
                    section.getValue().size() >= 3);
        }
    }

    /**
     * The TGT of the login a keeper of this test holds for JAAS section {@code section} (the
     * same source: the JVM's configuration, this test's least time between logins), refreshed
     * first if it is due, as the keeper's next connection would.
     */
    private static KerberosTicket tgtOfTheKeepersLogin(String section) throws Exception {
        KerberosLogins.Login login = KerberosLogins.acquire(KerberosLogins.Source
                .jvm(section, Configuration.getConfiguration())
                .minTimeBeforeRelogin(MIN_RELOGIN_MS));
        try {
            return login.withSubject(KerberosLogins::tgt);
        } finally {
            login.release();
        }
    }

    /** A call of a fresh keeper that must fail with {@code type} within {@code timeoutMs}. */
    private static <E extends Exception> E failsWithin(Class<E> type, long timeoutMs,
            Map<String, Object> params, KeeperCall call) throws Exception {
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(kerberos("ZK"))
                .kafkaParams(params).zookeeperTimeout(timeoutMs).kafkaTimeout(timeoutMs)
                .build()) {
            long start = System.nanoTime();
            try {
                call.run(keeper);
            } catch (Exception e) {
                long elapsed = (System.nanoTime() - start) / 1_000_000;
                if (!type.isInstance(e)) {
                    throw new AssertionError("expected " + type.getSimpleName() + ", got " + e, e);
                }
                assertTrue("took " + elapsed + " ms; timeout " + timeoutMs + " ms: " + e,
                        elapsed < timeoutMs + MARGIN_MS);
                return type.cast(e);
            }
            throw new AssertionError("the call succeeded; expected " + type.getSimpleName());
        }
    }

    private interface KeeperCall {
        void run(OffsetKeeper keeper) throws Exception;
    }

    /** How a failed Kafka login of the SASL_PLAINTEXT listener's keeper begins. */
    private static String kafkaLoginFailed() {
        String broker = kerberos("KAFKA_SASL_PLAINTEXT");
        return "Kafka metadata request failed (bootstrap.servers=" + broker + "): broker " + broker
                + ": SASL GSSAPI login failed: Kafka: ";
    }

    private static String keytabLogin(String keytab, String principal) {
        return "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true"
                + " storeKey=true useTicketCache=false keyTab=\"" + keytab + "\" principal=\""
                + principal + "\";";
    }

    /**
     * A client principal that the keytab does not hold and the KDC does not know: Kafka's in
     * sasl.jaas.config, then ZooKeeper's in the JAAS Client section of a keeper's JVM of its own.
     */
    @Test
    public void aWrongClientPrincipalFailsClearly() throws Exception {
        String topic = topic(1);
        String group = TestCluster.unique("krb-wrongclient");
        String nobody = "nobody@" + kerberos("REALM");
        String failed = "Kerberos login of " + nobody + " (%s, keyTab " + kerberos("CLIENT_KEYTAB")
                + ") failed: the keytab cannot be read or holds no key of the principal, and no"
                + " prompt is allowed";
        Map<String, Object> params = kafkaParams(group);
        params.put("sasl.jaas.config", keytabLogin(kerberos("CLIENT_KEYTAB"), nobody));
        KafkaClusterException e = failsWithin(KafkaClusterException.class, 5_000, params,
                keeper -> keeper.load(Collections.singleton(topic)));
        assertEquals(kafkaLoginFailed() + String.format(failed, "sasl.jaas.config"),
                e.getMessage());
        assertFalse("nothing stored", KerberosCluster.hasOffsets(group));

        Path jaas = jaasFile(keytabLogin(kerberos("CLIENT_KEYTAB"), nobody),
                keytabLogin(kerberos("CLIENT_KEYTAB"), kerberos("CLIENT_PRINCIPAL")));
        try {
            Map<String, KerberosCluster.ProbeCall> calls = probeFails(kerberos("KRB5_CONF"),
                    jaas.toString(), Collections.emptyMap());
            for (KerberosCluster.ProbeCall call : calls.values()) {
                assertEquals("ZooKeeperException", call.exception);
                assertZooKeeperLoginFailed(String.format(failed, "JAAS section 'Client'"),
                        call.message);
            }
        } finally {
            Files.delete(jaas);
        }
    }

    /**
     * A keeper's ZooKeeper call that failed as its login failed; a second call within
     * {@link #MIN_RELOGIN_MS} gets the same failure without an attempt, and says so.
     */
    private static void assertZooKeeperLoginFailed(String login, String message) {
        String expected = "ZooKeeper connect failed at " + kerberos("ZK") + ": authentication"
                + " failed (SASL GSSAPI login failed: ZooKeeper: " + login;
        assertTrue(message, message.equals(expected + ")") || message.matches(
                Pattern.quote(expected) + " \\(\\d+ s ago; attempts are at least "
                        + MIN_RELOGIN_MS / 1000 + " s apart\\)\\)"));
    }

    /** A JAAS file with these entries in its Client and KafkaClient sections. */
    private static Path jaasFile(String client, String kafkaClient) throws IOException {
        Path jaas = Files.createTempFile("jaas-", ".conf");
        Files.write(jaas, ("Client {\n  " + client + "\n};\nKafkaClient {\n  " + kafkaClient
                + "\n};\n").getBytes(StandardCharsets.UTF_8));
        return jaas;
    }

    /** useTicketCache=true with a ticket cache that is not there, and one that is empty. */
    @Test
    public void noTicketFailsClearly() throws Exception {
        String topic = topic(1);
        Path empty = Files.createTempFile("empty-", ".ccache");
        try {
            for (String cache : new String[] {"/nonexistent/krb5cc", empty.toString()}) {
                String group = TestCluster.unique("krb-noticket");
                Map<String, Object> params = kafkaParams(group);
                params.put("sasl.jaas.config", "com.sun.security.auth.module.Krb5LoginModule"
                        + " required useTicketCache=true ticketCache=\"" + cache + "\""
                        + " principal=\"" + kerberos("CLIENT_PRINCIPAL") + "\";");
                KafkaClusterException e = failsWithin(KafkaClusterException.class, 5_000,
                        params, keeper -> keeper.load(Collections.singleton(topic)));
                String state = cache.startsWith("/nonexistent") ? "does not exist"
                        : "is empty or not a ticket cache";
                assertEquals(kafkaLoginFailed() + "Kerberos login of "
                        + kerberos("CLIENT_PRINCIPAL") + " (sasl.jaas.config, ticket cache "
                        + cache + ") failed: the ticket cache " + cache + " " + state
                        + ", and no prompt is allowed", e.getMessage());
                assertFalse("nothing stored", KerberosCluster.hasOffsets(group));
            }
        } finally {
            Files.delete(empty);
        }
    }

    /**
     * A KDC that is down (its krb5.conf names a closed loopback port), in a keeper's JVM of its
     * own: its logins fail at once, naming the principal, the refusal and the krb5.conf.
     */
    @Test
    public void aKdcThatIsDownFailsClearly() throws Exception {
        int port;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = socket.getLocalPort();
        }
        // Small retries, as the JVM's Kerberos client reads them: an unanswered KDC would cost
        // kdc_timeout times max_retries per login.
        Path conf = KerberosCluster.krb5Conf("127.0.0.1:" + port, "kdc_timeout = 1s",
                "max_retries = 1");
        try {
            Map<String, KerberosCluster.ProbeCall> calls = probeFails(conf.toString(), null,
                    Collections.emptyMap());
            String refused = "failed: Connection refused (talking to the KDC named in krb5.conf "
                    + conf + ")";
            // The load asks Kafka and ZooKeeper at once: either login may fail first.
            assertTrue(calls.get("load").exception, calls.get("load").exception
                    .matches("KafkaClusterException|ZooKeeperException"));
            assertTrue(calls.get("load").message, calls.get("load").message.contains(
                    "Kerberos login of " + kerberos("CLIENT_PRINCIPAL") + " (JAAS section '"));
            assertTrue(calls.get("load").message, calls.get("load").message.endsWith(refused)
                    || calls.get("load").message.endsWith(refused + ")"));
            assertEquals("ZooKeeperException", calls.get("commit").exception);
            assertZooKeeperLoginFailed("Kerberos login of " + kerberos("CLIENT_PRINCIPAL")
                    + " (JAAS section 'Client', keyTab " + kerberos("CLIENT_KEYTAB") + ") "
                    + refused, calls.get("commit").message);
        } finally {
            Files.delete(conf);
        }
    }

    /**
     * A KDC that takes connections and never answers, and a krb5.conf as MIT users write it (no
     * kdc_timeout: the JVM waits 30 s for each of 3 tries): the keeper's own timeout (3 s) ends
     * each call, and the load's error names the login, the KDC krb5.conf gives and the
     * deadline, not the healthy brokers or ZooKeeper. To the commit the ZooKeeper login that
     * did not finish is an outage: deferred (nothing written), as when ZooKeeper is down.
     */
    @Test
    public void aKdcThatDoesNotAnswerFailsWithinTheTimeout() throws Exception {
        try (ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            List<Socket> held = Collections.synchronizedList(new ArrayList<>());
            Thread acceptor = new Thread(() -> {
                try {
                    while (true) {
                        held.add(socket.accept());
                    }
                } catch (IOException e) {
                    // closed at the end of the test
                }
            });
            acceptor.setDaemon(true);
            acceptor.start();
            String kdc = "127.0.0.1:" + socket.getLocalPort();
            Path conf = KerberosCluster.krb5Conf(kdc);
            try {
                Map<String, KerberosCluster.ProbeCall> calls = probeFails(conf.toString(), null,
                        Collections.emptyMap());
                KerberosCluster.ProbeCall load = calls.get("load");
                String principal = kerberos("CLIENT_PRINCIPAL");
                String realm = principal.substring(principal.indexOf('@') + 1);
                // The load asks Kafka and ZooKeeper at once: either login's deadline may come first.
                assertTrue(load.exception, load.exception
                        .matches("KafkaClusterException|ServerTimeoutException"));
                assertTrue(load.message, load.message.contains("Kerberos login of " + principal
                        + " (JAAS section '"));
                // Within the 3 s deadline: Kafka's connection gets what is left of it.
                assertTrue(load.message, Pattern.compile(" did not finish within \\d{3,4} ms: no answer"
                        + " from the KDC at " + Pattern.quote(kdc + " (realm " + realm + ", krb5.conf "
                        + conf + ")")).matcher(load.message).find());
                assertEquals(calls.get("commit").message, "DeferredCommit",
                        calls.get("commit").exception);
            } finally {
                Files.delete(conf);
                synchronized (held) {
                    for (Socket s : held) {
                        s.close();
                    }
                }
            }
        }
    }

    /**
     * A client clock 10 minutes ahead of the KDC's (libfaketime, in a keeper's JVM of its own),
     * its TGT from the ticket cache that cluster.sh made with the right time: the KDC refuses
     * the service tickets, "Clock skew too great", and each call says so.
     */
    @Test
    public void aSkewedClockFailsClearly() throws Exception {
        String library = System.getProperty("offsetkeeper.test.libfaketime");
        assertTrue("offsetkeeper.test.libfaketime is not set (Gradle sets it)", library != null);
        assertTrue("no libfaketime at " + library, Files.isRegularFile(Paths.get(library)));
        String login = "com.sun.security.auth.module.Krb5LoginModule required"
                + " useTicketCache=true ticketCache=\"" + kerberos("CLIENT_CCACHE") + "\""
                + " principal=\"" + kerberos("CLIENT_PRINCIPAL") + "\";";
        Path jaas = jaasFile(login, login);
        Map<String, String> environment = new HashMap<>();
        environment.put("LD_PRELOAD", library);
        environment.put("FAKETIME", "+10m");
        environment.put("FAKETIME_DONT_FAKE_MONOTONIC", "1"); // timeouts keep real time
        try {
            Map<String, KerberosCluster.ProbeCall> calls = probeFails(kerberos("KRB5_CONF"),
                    jaas.toString(), environment);
            for (KerberosCluster.ProbeCall call : calls.values()) {
                assertTrue(call.message, call.message.contains("Clock skew too great"));
                assertTrue(call.message, call.message.contains(kerberos("CLIENT_PRINCIPAL")));
            }
        } finally {
            Files.delete(jaas);
        }
    }

    /**
     * An expired ticket cache: the cluster's cache (a TGT of 4 hours) read by a keeper's JVM
     * whose clock is 5 hours ahead (libfaketime). Each call names the cache, that its TGT
     * expired, and when.
     */
    @Test
    public void anExpiredTicketCacheIsNamedWithItsEndTime() throws Exception {
        String library = System.getProperty("offsetkeeper.test.libfaketime");
        assertTrue("offsetkeeper.test.libfaketime is not set (Gradle sets it)", library != null);
        String cache = kerberos("CLIENT_CCACHE");
        String login = "com.sun.security.auth.module.Krb5LoginModule required"
                + " useTicketCache=true ticketCache=\"" + cache + "\""
                + " principal=\"" + kerberos("CLIENT_PRINCIPAL") + "\";";
        Path jaas = jaasFile(login, login);
        Map<String, String> environment = new HashMap<>();
        environment.put("LD_PRELOAD", library);
        environment.put("FAKETIME", "+5h");
        environment.put("FAKETIME_DONT_FAKE_MONOTONIC", "1"); // timeouts keep real time
        try {
            Map<String, KerberosCluster.ProbeCall> calls = probeFails(kerberos("KRB5_CONF"),
                    jaas.toString(), environment);
            Pattern expired = Pattern.compile(Pattern.quote("failed: the ticket cache " + cache
                    + " holds a TGT of " + kerberos("CLIENT_PRINCIPAL") + " that expired at ")
                    + "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ"
                    + Pattern.quote(": kinit (or k5start) renews it, and no prompt is allowed"));
            for (KerberosCluster.ProbeCall call : calls.values()) {
                assertTrue(call.message, expired.matcher(call.message).find());
            }
        } finally {
            Files.delete(jaas);
        }
    }

    /**
     * A {@link KerberosProbe} JVM with this krb5.conf and JAAS file (null: the cluster's) and
     * environment, whose load and commit must both fail within their timeout; nothing stored.
     */
    private static Map<String, KerberosCluster.ProbeCall> probeFails(String krb5Conf,
            String jaas, Map<String, String> environment) throws Exception {
        String topic = topic(1);
        String group = TestCluster.unique("krb-probe");
        List<String> options = new ArrayList<>();
        options.add("-Djava.security.krb5.conf=" + krb5Conf);
        if (jaas != null) {
            options.add("-Djava.security.auth.login.config=" + jaas);
        }
        long timeoutMs = 3_000;
        Map<String, KerberosCluster.ProbeCall> calls = KerberosCluster.probe(options, environment,
                group, topic, timeoutMs);
        for (String name : new String[] {"load", "commit"}) {
            KerberosCluster.ProbeCall call = calls.get(name);
            assertFalse(name + " succeeded: " + call.message, call.ok);
            System.out.println(name + ": " + call.exception + " after " + call.elapsedMs + " ms: "
                    + call.message);
            assertTrue(name + " took " + call.elapsedMs + " ms; timeout " + timeoutMs + " ms",
                    call.elapsedMs < timeoutMs + MARGIN_MS);
        }
        assertFalse("nothing stored", KerberosCluster.hasOffsets(group));
        return calls;
    }
}
