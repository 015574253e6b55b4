package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.offsetkeeper.fake.Krb5LoginModule;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.security.auth.login.Configuration;
import javax.security.sasl.SaslException;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * {@link Kerberos#configure}: whether Kafka and ZooKeeper use Kerberos, as their Java clients
 * decide, and what the engine is told. The JVM's JAAS configuration is set by each test (and
 * restored), the ZooKeeper client's system properties are cleared (and restored); the login
 * module is the fake one, which fails here, so that a service's login shows which JAAS source
 * it reads. Nothing reaches a KDC.
 */
public class KerberosDecisionTest {
    private static final String LOGIN_CONFIG = "java.security.auth.login.config";
    /** The system properties {@link Kerberos} reads. */
    private static final List<String> PROPERTIES = Arrays.asList(LOGIN_CONFIG,
            "zookeeper.sasl.client", "zookeeper.sasl.clientconfig", "zookeeper.server.principal",
            "zookeeper.sasl.client.username", "zookeeper.sasl.client.canonicalize.hostname",
            "zookeeper.server.realm", Kerberos.ZOOKEEPER_MIN_RELOGIN);
    private static final String KDC_DOWN = "Cannot contact any KDC for realm 'EXAMPLE.COM'";
    private static final String KRB5 = Krb5LoginModule.NAME + " required useKeyTab=true"
            + " keyTab=\"/no/alice.keytab\" principal=\"alice@EXAMPLE.COM\";";
    private static final String JDK_KRB5 = "com.sun.security.auth.module.Krb5LoginModule";
    private static final String IBM_KRB5 = "com.ibm.security.auth.module.Krb5LoginModule";
    private static final String DIGEST = "org.apache.zookeeper.server.auth.DigestLoginModule";

    private final Map<String, String> savedProperties = new HashMap<>();
    private Configuration savedConfiguration;

    @Before
    public void isolate() {
        for (String name : PROPERTIES) {
            savedProperties.put(name, System.getProperty(name));
            System.clearProperty(name);
        }
        try {
            savedConfiguration = Configuration.getConfiguration();
        } catch (SecurityException e) {
            savedConfiguration = null; // read again from the system property when restored
        }
        jvmJaas(new JaasSections()); // no sections: neither service from the JVM
        Krb5LoginModule.reset();
        Krb5LoginModule.failure = KDC_DOWN;
    }

    @After
    public void restore() {
        for (Map.Entry<String, String> saved : savedProperties.entrySet()) {
            if (saved.getValue() == null) {
                System.clearProperty(saved.getKey());
            } else {
                System.setProperty(saved.getKey(), saved.getValue());
            }
        }
        Configuration.setConfiguration(savedConfiguration);
        Krb5LoginModule.reset();
    }

    private static void jvmJaas(Configuration configuration) {
        Configuration.setConfiguration(configuration);
    }

    private static Map<String, String> map(String... kv) {
        Map<String, String> map = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            map.put(kv[i], kv[i + 1]);
        }
        return map;
    }

    private static Map<String, String> settings(String... kv) {
        Map<String, String> map = map("zookeeper.connect", "zk1:2181");
        map.putAll(map(kv));
        return map;
    }

    private static Map<String, String> sasl(String... kv) {
        Map<String, String> map = map("bootstrap.servers", "broker1:9092",
                "security.protocol", "SASL_SSL");
        map.putAll(map(kv));
        return map;
    }

    /** Decides for copies; asserts no Kerberos and that neither map was changed. */
    private static void assertNoKerberos(Map<String, String> settings, Map<String, String> kafka) {
        Map<String, String> s = new LinkedHashMap<>(settings);
        Map<String, String> k = new LinkedHashMap<>(kafka);
        GssapiClients clients = Kerberos.configure(s, k);
        if (clients != null) {
            clients.close();
            fail("Kerberos for " + settings + " " + kafka);
        }
        assertEquals(settings, s);
        assertEquals(kafka, k);
    }

    private static String refusal(Map<String, String> settings, Map<String, String> kafka) {
        return assertThrows(IllegalArgumentException.class,
                () -> Kerberos.configure(settings, kafka)).getMessage();
    }

    /**
     * What a connection to {@code service} meets: "no Kerberos", or the message of its login,
     * which fails here and names the JAAS source.
     */
    private static String start(GssapiClients clients, int service) throws Exception {
        try {
            clients.start(service, "broker1");
        } catch (IllegalStateException e) {
            assertEquals("Kerberos is not configured for service " + service, e.getMessage());
            return "no Kerberos";
        } catch (SaslException e) {
            return e.getMessage();
        }
        throw new AssertionError("the fake login succeeded");
    }

    private static final String KAFKA_INLINE = "Kafka: Kerberos login of alice@EXAMPLE.COM"
            + " (sasl.jaas.config, keyTab /no/alice.keytab) failed: " + KDC_DOWN;

    // Kafka

    @Test
    public void kafkaGssapiIsKerberos() throws Exception {
        Map<String, String> settings = settings();
        Map<String, String> kafka = sasl("sasl.mechanism", "GSSAPI",
                "sasl.kerberos.service.name", "kafka", "sasl.jaas.config", KRB5);
        try (GssapiClients clients = Kerberos.configure(settings, kafka)) {
            assertNotNull(clients);
            assertEquals(0, Krb5LoginModule.attempts.get()); // nothing logs in when deciding
            assertEquals(settings(), settings);
            assertEquals(sasl("sasl.mechanism", "GSSAPI", "sasl.kerberos.service.name", "kafka",
                    "sasl.jaas.config", KRB5), kafka);
            assertEquals("no Kerberos", start(clients, GssapiClients.ZOOKEEPER));
            assertEquals(KAFKA_INLINE, start(clients, GssapiClients.KAFKA));
            assertEquals(1, Krb5LoginModule.attempts.get());
        }
    }

    /** Kafka's default mechanism is GSSAPI: the engine is told so. */
    @Test
    public void anUnsetMechanismIsKerberos() throws Exception {
        Map<String, String> settings = settings();
        Map<String, String> kafka = map("security.protocol", " sasl_plaintext ",
                "sasl.kerberos.service.name", "kafka", "sasl.jaas.config", KRB5);
        try (GssapiClients clients = Kerberos.configure(settings, kafka)) {
            assertNotNull(clients);
            assertEquals("GSSAPI", kafka.get("sasl.mechanism"));
            assertEquals(settings(), settings);
            assertEquals(KAFKA_INLINE, start(clients, GssapiClients.KAFKA));
        }
        kafka = sasl("sasl.mechanism", " gssapi ", "sasl.kerberos.service.name", "kafka",
                "sasl.jaas.config", KRB5);
        try (GssapiClients clients = Kerberos.configure(settings, kafka)) {
            assertNotNull(clients);
            assertEquals("GSSAPI", kafka.get("sasl.mechanism"));
        }
    }

    @Test
    public void withoutSaslNoKerberos() {
        // A misspelt SASL protocol neither: build() refuses it by name (BadArgumentsTest).
        for (String protocol : new String[] {null, "PLAINTEXT", "SSL", "ssl", "SASL_PLAIN"}) {
            Map<String, String> kafka = map("bootstrap.servers", "broker1:9092",
                    "sasl.mechanism", "GSSAPI", "sasl.kerberos.service.name", "kafka",
                    "sasl.jaas.config", KRB5);
            if (protocol != null) {
                kafka.put("security.protocol", protocol);
            }
            assertNoKerberos(settings(), kafka);
        }
    }

    /** librdkafka's key counts as the engine reads it: PLAIN there is PLAIN, not Kerberos. */
    @Test
    public void otherMechanismsStayAsTheyAre() {
        assertNoKerberos(settings(), sasl("sasl.mechanisms", "PLAIN", "sasl.jaas.config", KRB5));
        assertNoKerberos(settings(), sasl("sasl.mechanism", "PLAIN", "sasl.jaas.config", KRB5));
        assertNoKerberos(settings(), sasl("sasl.mechanism", "SCRAM-SHA-512",
                "sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule"
                        + " required username=u password=p;"));
        assertNoKerberos(settings(), sasl("sasl.mechanism", "OAUTHBEARER"));
    }

    /** Both keys count, the last one given wins; the engine gets one key, GSSAPI. */
    @Test
    public void theLastMechanismKeyWins() throws Exception {
        Map<String, String> kafka = sasl("sasl.mechanism", "PLAIN", " sasl.mechanisms", "gssapi",
                "sasl.kerberos.service.name", "kafka", "sasl.jaas.config", KRB5);
        try (GssapiClients clients = Kerberos.configure(settings(), kafka)) {
            assertNotNull(clients);
            assertEquals(sasl("sasl.kerberos.service.name", "kafka", "sasl.jaas.config", KRB5,
                    "sasl.mechanism", "GSSAPI"), kafka);
        }
        assertNoKerberos(settings(), sasl("sasl.mechanisms", "GSSAPI", "sasl.mechanism", "PLAIN",
                "sasl.kerberos.service.name", "kafka", "sasl.jaas.config", KRB5));
    }

    /** A Kafka key among the keeper's settings wins over kafkaParams. */
    @Test
    public void theKeepersSettingsWinOverKafkaParams() throws Exception {
        Map<String, String> gssapi = sasl("sasl.mechanism", "GSSAPI",
                "sasl.kerberos.service.name", "kafka", "sasl.jaas.config", KRB5);
        assertNoKerberos(settings("sasl.mechanisms", "SCRAM-SHA-512"), gssapi);
        assertNoKerberos(settings("security.protocol", "SSL"), gssapi);

        Map<String, String> settings = settings("sasl.mechanisms", "GSSAPI",
                "sasl.kerberos.service.name", "kafka2");
        Map<String, String> kafka = sasl("sasl.mechanisms", "PLAIN",
                "sasl.kerberos.service.name", "kafka", "sasl.jaas.config", KRB5);
        try (GssapiClients clients = Kerberos.configure(settings, kafka)) {
            assertNotNull(clients);
            // Both maps say the same to the engine.
            assertEquals(settings("sasl.kerberos.service.name", "kafka2",
                    "sasl.mechanism", "GSSAPI"), settings);
            assertEquals(sasl("sasl.kerberos.service.name", "kafka2", "sasl.jaas.config", KRB5,
                    "sasl.mechanism", "GSSAPI"), kafka);
        }

        // The keeper's sasl.jaas.config is read, kafkaParams' is not.
        settings = settings("sasl.jaas.config", KRB5, "security.protocol", "SASL_PLAINTEXT");
        kafka = map("sasl.jaas.config", "this does not parse", "sasl.kerberos.service.name", "k");
        try (GssapiClients clients = Kerberos.configure(settings, kafka)) {
            assertNotNull(clients);
            assertEquals(KAFKA_INLINE, start(clients, GssapiClients.KAFKA));
        }
    }

    /** Kafka's KerberosLogin.getServiceName: the JAAS option or the Kafka key, not both. */
    @Test
    public void theServiceNameComesFromJaasOrKafka() throws Exception {
        String withServiceName = KRB5.replace(";", " serviceName=kafka;");
        Map<String, String> kafka = sasl("sasl.jaas.config", withServiceName);
        try (GssapiClients clients = Kerberos.configure(settings(), kafka)) {
            assertNotNull(clients);
            assertEquals("kafka", kafka.get("sasl.kerberos.service.name"));
        }
        kafka = sasl("sasl.jaas.config", withServiceName, "sasl.kerberos.service.name", "kafka");
        try (GssapiClients clients = Kerberos.configure(settings(), kafka)) {
            assertNotNull(clients);
            assertEquals("kafka", kafka.get("sasl.kerberos.service.name"));
        }
        Map<String, String> settings = settings("sasl.kerberos.service.name", " kafka ");
        kafka = sasl("sasl.jaas.config", KRB5);
        try (GssapiClients clients = Kerberos.configure(settings, kafka)) {
            assertNotNull(clients);
            assertEquals("kafka", kafka.get("sasl.kerberos.service.name"));
            assertEquals("kafka", settings.get("sasl.kerberos.service.name"));
        }

        assertEquals("Conflicting serviceName values found in JAAS and Kafka configs value in"
                + " JAAS file kafka, value in Kafka config other", refusal(settings(),
                sasl("sasl.jaas.config", withServiceName, "sasl.kerberos.service.name", "other")));
        assertEquals("No serviceName defined in either JAAS or Kafka config",
                refusal(settings(), sasl("sasl.jaas.config", KRB5)));
        assertEquals("No serviceName defined in either JAAS or Kafka config", refusal(settings(),
                sasl("sasl.jaas.config", KRB5, "sasl.kerberos.service.name", " ")));
    }

    /** Without sasl.jaas.config, the JVM's KafkaClient section, as Kafka's JaasContext. */
    @Test
    public void withoutSaslJaasConfigTheJvmsKafkaClientSection() throws Exception {
        jvmJaas(new JaasSections().with("KafkaClient", Krb5LoginModule.NAME,
                "principal", "bob@EXAMPLE.COM", "useTicketCache", "true", "serviceName", "kafka"));
        Map<String, String> kafka = sasl();
        try (GssapiClients clients = Kerberos.configure(settings(), kafka)) {
            assertNotNull(clients);
            assertEquals("kafka", kafka.get("sasl.kerberos.service.name"));
            assertEquals("Kafka: Kerberos login of bob@EXAMPLE.COM (JAAS section 'KafkaClient',"
                    + " ticket cache (the default)) failed: " + KDC_DOWN,
                    start(clients, GssapiClients.KAFKA));
        }
        jvmJaas(new JaasSections().with("Other", Krb5LoginModule.NAME));
        assertEquals("Kafka SASL GSSAPI: no sasl.jaas.config, and could not find a 'KafkaClient'"
                + " entry in the JAAS configuration. System property '" + LOGIN_CONFIG
                + "' is not set", refusal(settings(), sasl()));
    }

    @Test
    public void aBadInlineTextIsRefusedWithoutQuotingIt() {
        String message = refusal(settings(), sasl("sasl.kerberos.service.name", "kafka",
                "sasl.jaas.config", "org.Zq.Module required password=Zqhunter2 Zqs3cret;"));
        assertEquals("sasl.jaas.config: entry 1, option 2: name=value is expected (a value with"
                + " spaces or special characters must be quoted)", message);
    }

    /** A refusal leaves no login counted, so the last release still logs out. */
    @Test
    public void aRefusalLeavesNoLoginCounted() throws Exception {
        Map<String, String> kafka = sasl("sasl.kerberos.service.name", "kafka",
                "sasl.jaas.config", KRB5);
        refusal(settings("zookeeper.sasl.clientconfig", "Missing"), kafka);
        Krb5LoginModule.failure = null;
        KerberosLogins.Login login =
                KerberosLogins.acquire(KerberosLogins.Source.inline("KafkaClient", KRB5));
        login.withSubject(subject -> subject);
        login.release();
        assertEquals(1, Krb5LoginModule.logouts.get());
    }

    // ZooKeeper

    @Test
    public void aKrb5ClientSectionIsKerberosForZooKeeper() throws Exception {
        jvmJaas(new JaasSections().with("Client", Krb5LoginModule.NAME));
        Map<String, String> settings = settings();
        Map<String, String> kafka = map("bootstrap.servers", "broker1:9092");
        try (GssapiClients clients = Kerberos.configure(settings, kafka)) {
            assertNotNull(clients);
            assertEquals(settings("zookeeper.sasl.mechanism", "GSSAPI"), settings);
            assertEquals(map("bootstrap.servers", "broker1:9092"), kafka);
            assertEquals("ZooKeeper: Kerberos login (JAAS section 'Client') failed: " + KDC_DOWN,
                    start(clients, GssapiClients.ZOOKEEPER));
            assertEquals("no Kerberos", start(clients, GssapiClients.KAFKA));
        }
        for (String module : new String[] {JDK_KRB5, IBM_KRB5}) {
            jvmJaas(new JaasSections().with("Client", module));
            settings = settings();
            try (GssapiClients clients = Kerberos.configure(settings, map())) {
                assertNotNull(module, clients);
                assertEquals("GSSAPI", settings.get("zookeeper.sasl.mechanism"));
            }
        }
    }

    @Test
    public void bothServices() throws Exception {
        jvmJaas(new JaasSections().with("Client", Krb5LoginModule.NAME));
        try (GssapiClients clients = Kerberos.configure(settings(),
                sasl("sasl.kerberos.service.name", "kafka", "sasl.jaas.config", KRB5))) {
            assertTrue(start(clients, GssapiClients.ZOOKEEPER).startsWith("ZooKeeper: "));
            assertEquals(KAFKA_INLINE, start(clients, GssapiClients.KAFKA));
        }
    }

    /** ZKClientConfig reads zookeeper.sasl.client with Boolean.valueOf: all but "true" is off. */
    @Test
    public void zookeeperSaslClientFalseTurnsItOff() throws Exception {
        jvmJaas(new JaasSections().with("Client", Krb5LoginModule.NAME));
        for (String off : new String[] {"false", " False ", "no"}) {
            assertNoKerberos(settings("zookeeper.sasl.client", off), map());
        }
        assertEquals("zookeeper.sasl.mechanism is GSSAPI but zookeeper.sasl.client is false",
                refusal(settings("zookeeper.sasl.client", "false",
                        "zookeeper.sasl.mechanism", "GSSAPI"), map()));
        // The system property, as ZooKeeper's client reads it; the keeper's setting wins.
        System.setProperty("zookeeper.sasl.client", "false");
        assertNoKerberos(settings(), map());
        Map<String, String> settings = settings("zookeeper.sasl.client", "true");
        try (GssapiClients clients = Kerberos.configure(settings, map())) {
            assertNotNull(clients);
            assertEquals("GSSAPI", settings.get("zookeeper.sasl.mechanism"));
        }
    }

    @Test
    public void aDigestLoginStaysDigest() {
        jvmJaas(new JaasSections().with("Client", DIGEST, "username", "u", "password", "p"));
        assertNoKerberos(settings(), map());
        assertEquals("zookeeper.sasl.mechanism is GSSAPI but JAAS section 'Client' has no"
                + " Krb5LoginModule",
                refusal(settings("zookeeper.sasl.mechanism", "GSSAPI"), map()));

        jvmJaas(new JaasSections().with("Client", Krb5LoginModule.NAME));
        assertNoKerberos(settings("zookeeper.sasl.username", "u", "zookeeper.sasl.password", "p"),
                map());
        assertNoKerberos(settings("zookeeper.sasl.password", "p"), map());
        assertNoKerberos(settings("zookeeper.sasl.mechanism", "DIGEST-MD5"), map());
    }

    /** As ZooKeeper's client: no section, no SASL; unless the section was asked for. */
    @Test
    public void aMissingSectionIsSkippedUnlessNamed() throws Exception {
        jvmJaas(new JaasSections().with("Other", Krb5LoginModule.NAME));
        assertNoKerberos(settings(), map());
        assertEquals("ZooKeeper SASL (zookeeper.sasl.clientconfig): the JAAS configuration has no"
                + " section 'Mine'; system property '" + LOGIN_CONFIG + "' is not set",
                refusal(settings("zookeeper.sasl.clientconfig", "Mine"), map()));
        assertTrue(refusal(settings("zookeeper.sasl.clientconfig", "Client"), map())
                .contains("no section 'Client'"));
        assertEquals("ZooKeeper SASL (zookeeper.sasl.mechanism=GSSAPI): the JAAS configuration has"
                + " no section 'Client'; system property '" + LOGIN_CONFIG + "' is not set",
                refusal(settings("zookeeper.sasl.mechanism", "GSSAPI"), map()));
        System.setProperty("zookeeper.sasl.clientconfig", "Mine");
        assertTrue(refusal(settings(), map()).contains("no section 'Mine'"));
    }

    @Test
    public void aNamedSectionIsTheLogin() throws Exception {
        jvmJaas(new JaasSections().with("Mine", Krb5LoginModule.NAME)
                .with("Client", DIGEST, "username", "u", "password", "p"));
        try (GssapiClients clients = Kerberos.configure(
                settings("zookeeper.sasl.clientconfig", " Mine "), map())) {
            assertEquals("ZooKeeper: Kerberos login (JAAS section 'Mine') failed: " + KDC_DOWN,
                    start(clients, GssapiClients.ZOOKEEPER));
        }
        System.setProperty("zookeeper.sasl.clientconfig", "Mine");
        try (GssapiClients clients = Kerberos.configure(settings(), map())) {
            assertTrue(start(clients, GssapiClients.ZOOKEEPER).contains("JAAS section 'Mine'"));
        }
        // The keeper's setting wins over the system property.
        assertNoKerberos(settings("zookeeper.sasl.clientconfig", "Client"), map());
    }

    /**
     * The least time between login attempts: Kafka's sasl.kerberos.min.time.before.relogin
     * (a keeper's Kafka key wins over kafkaParams), ZooKeeper's system property
     * zookeeper.kerberos.minReLoginTimeMs; a minute for both when unset. A failed login's
     * second use within that time fails without an attempt, naming it.
     */
    @Test
    public void theLeastTimeBetweenLoginsIsKafkasAndZooKeepersSetting() throws Exception {
        jvmJaas(new JaasSections().with("Client", Krb5LoginModule.NAME));
        System.setProperty(Kerberos.ZOOKEEPER_MIN_RELOGIN, " 5000 ");
        Map<String, String> kafka = sasl("sasl.kerberos.service.name", "kafka",
                "sasl.jaas.config", KRB5, Kerberos.KAFKA_MIN_RELOGIN, "2500");
        try (GssapiClients clients = Kerberos.configure(settings(), kafka)) {
            assertEquals("ZooKeeper: Kerberos login (JAAS section 'Client') failed: " + KDC_DOWN,
                    start(clients, GssapiClients.ZOOKEEPER));
            assertEquals(KAFKA_INLINE, start(clients, GssapiClients.KAFKA));
            assertTrue(start(clients, GssapiClients.ZOOKEEPER)
                    .endsWith(" s ago; attempts are at least 5 s apart)"));
            assertTrue(start(clients, GssapiClients.KAFKA)
                    .endsWith(" s ago; attempts are at least 2500 ms apart)"));
            assertEquals(2, Krb5LoginModule.attempts.get());
        }
        try (GssapiClients clients = Kerberos.configure(
                settings(Kerberos.KAFKA_MIN_RELOGIN, "0"), kafka)) {
            start(clients, GssapiClients.KAFKA);
            start(clients, GssapiClients.KAFKA);
            assertEquals("the keeper's 0 wins over kafkaParams' 2500", 4,
                    Krb5LoginModule.attempts.get());
        }
        System.clearProperty(Kerberos.ZOOKEEPER_MIN_RELOGIN);
        jvmJaas(new JaasSections().with("Client", Krb5LoginModule.NAME)); // logins anew
        kafka.remove(Kerberos.KAFKA_MIN_RELOGIN);
        try (GssapiClients clients = Kerberos.configure(settings(), kafka)) {
            for (int service : new int[] {GssapiClients.ZOOKEEPER, GssapiClients.KAFKA}) {
                start(clients, service);
                assertTrue(start(clients, service).endsWith(" attempts are at least 60 s apart)"));
            }
        }

        kafka.put(Kerberos.KAFKA_MIN_RELOGIN, "-1");
        assertEquals("Kafka setting sasl.kerberos.min.time.before.relogin is '-1'; allowed: a"
                + " whole number of milliseconds, 0 or more (default 60000)",
                refusal(settings(), kafka));
        System.setProperty(Kerberos.ZOOKEEPER_MIN_RELOGIN, "soon");
        assertEquals("system property zookeeper.kerberos.minReLoginTimeMs is 'soon'; allowed: a"
                + " whole number of milliseconds, 0 or more (default 60000)",
                refusal(settings(), map()));
        // Only where ZooKeeper uses Kerberos.
        assertNoKerberos(settings("zookeeper.sasl.client", "false"), map());
    }

    @Test
    public void aServerPrincipalNeedsAHost() throws Exception {
        jvmJaas(new JaasSections().with("Client", Krb5LoginModule.NAME));
        assertEquals("zookeeper.server.principal 'zookeeper@EXAMPLE.COM' has no host part; GSSAPI"
                + " needs service/host[@REALM]",
                refusal(settings("zookeeper.server.principal", "zookeeper@EXAMPLE.COM"), map()));
        System.setProperty("zookeeper.server.principal", "zookeeper");
        assertTrue(refusal(settings(), map()).startsWith("zookeeper.server.principal 'zookeeper'"));
        try (GssapiClients clients = Kerberos.configure(
                settings("zookeeper.server.principal", "zookeeper/zk1@EXAMPLE.COM"), map())) {
            assertNotNull(clients);
        }
    }

    /** A JVM JAAS file that does not parse: named, never quoted; skipped unless required. */
    @Test
    public void aBrokenJaasFileIsNamedNotQuoted() throws Exception {
        File file = File.createTempFile("offsetkeeper-jaas", ".conf");
        try {
            String path = file.getPath();
            System.setProperty(LOGIN_CONFIG, path);
            boolean english = Locale.getDefault().getLanguage().equals("en");

            write(file, "Client {\n  x.A required a=\"b\" junk \"Zqs3cret\";\n};\n");
            assertNoKerberos(settings(), map()); // as ZooKeeper's client: no JAAS, no SASL
            String zookeeper = refusal(settings("zookeeper.sasl.mechanism", "GSSAPI"), map());
            String kafka = refusal(settings(), sasl("sasl.kerberos.service.name", "kafka"));
            for (String message : new String[] {zookeeper, kafka}) {
                assertFalse(message, message.toLowerCase(Locale.ROOT).contains("zq"));
                assertTrue(message, message.contains("(" + LOGIN_CONFIG + " " + path + ")"));
            }
            if (english) {
                assertEquals("ZooKeeper SASL (zookeeper.sasl.mechanism=GSSAPI): the JVM's JAAS"
                        + " configuration cannot be read: line 2 of the file (" + LOGIN_CONFIG
                        + " " + path + ") does not parse: expected [=]", zookeeper);
                assertEquals("Kafka SASL GSSAPI: no sasl.jaas.config, and the JVM's JAAS"
                        + " configuration cannot be read: line 2 of the file (" + LOGIN_CONFIG
                        + " " + path + ") does not parse: expected [=]", kafka);
            }

            write(file, "Client {\n  x.A Zqs3cret a=\"b\";\n};\n");
            String flag = refusal(settings("zookeeper.sasl.clientconfig", "Client"), map());
            assertFalse(flag, flag.toLowerCase(Locale.ROOT).contains("zq"));
            assertTrue(flag, flag.endsWith("the file (" + LOGIN_CONFIG + " " + path
                    + ") does not parse or cannot be read"));

            write(file, "Client {\n  x.A required a=\"b\";\n");
            String early = refusal(settings("zookeeper.sasl.clientconfig", "Client"), map());
            if (english) {
                assertTrue(early, early.endsWith("the file (" + LOGIN_CONFIG + " " + path
                        + ") ends too early: expected [module class name]"));
            }

            assertTrue(file.delete());
            String missing = refusal(settings("zookeeper.sasl.mechanism", "GSSAPI"), map());
            if (english) {
                assertTrue(missing, missing.endsWith(
                        "no such file (" + LOGIN_CONFIG + " " + path + ")"));
            }
        } finally {
            file.delete();
        }
    }

    /** The file as the JVM's JAAS configuration, read again at the next use. */
    private static void write(File file, String text) throws Exception {
        Files.write(file.toPath(), text.getBytes(StandardCharsets.UTF_8));
        Configuration.setConfiguration(null);
    }
}
