package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import io.offsetkeeper.fake.Krb5LoginModule;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.security.Principal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.security.auth.Subject;
import javax.security.auth.kerberos.KerberosPrincipal;
import javax.security.auth.login.LoginException;
import javax.security.sasl.SaslException;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * {@link GssapiClients}: the server principal as the Java clients make it (ZooKeeper's
 * {@code SaslServerPrincipal}, Kafka's {@code SaslChannelBuilder}), the client principal, and
 * how a connection's start fails. Name rules that resolve use only the loopback address.
 */
public class GssapiClientsTest {
    @Before
    public void fakeLogins() {
        Krb5LoginModule.reset();
    }

    @After
    public void resetLogins() {
        Krb5LoginModule.reset();
    }

    /** The name this host's resolver gives 127.0.0.1; the loopback tests expect localhost. */
    private static void assumeLoopbackIsLocalhost() throws UnknownHostException {
        InetAddress loopback = InetAddress.getByName("127.0.0.1");
        assumeTrue("this host names 127.0.0.1 " + loopback.getCanonicalHostName(),
                "localhost".equals(loopback.getHostName())
                        && "localhost".equals(loopback.getCanonicalHostName()));
    }

    private static String shown(GssapiClients.ServerName rule, String host, String clientRealm)
            throws UnknownHostException {
        GssapiClients.ServicePrincipal principal = rule.of(host, clientRealm);
        return principal.service + " " + principal.host + " " + principal.shown;
    }

    // ZooKeeper

    /** An IP literal is reverse-resolved, with or without canonicalization. */
    @Test
    public void zookeeperReverseResolvesAnIpLiteral() throws Exception {
        assumeLoopbackIsLocalhost();
        for (boolean canonicalize : new boolean[] {true, false}) {
            assertEquals("zookeeper localhost zookeeper/localhost@EXAMPLE.COM", shown(
                    GssapiClients.zookeeper(null, "zookeeper", canonicalize, null),
                    "127.0.0.1", "EXAMPLE.COM"));
        }
    }

    /** A name is canonicalized (the default), or kept as written and not resolved at all. */
    @Test
    public void zookeeperCanonicalizesANameOnlyWhenAsked() throws Exception {
        assumeLoopbackIsLocalhost();
        assertEquals("zookeeper localhost zookeeper/localhost@EXAMPLE.COM", shown(
                GssapiClients.zookeeper(null, "zookeeper", true, null), "LOCALHOST",
                "EXAMPLE.COM"));
        assertEquals("zookeeper LOCALHOST zookeeper/LOCALHOST@EXAMPLE.COM", shown(
                GssapiClients.zookeeper(null, "zookeeper", false, null), "LOCALHOST",
                "EXAMPLE.COM"));
        // Not resolved: a name that does not resolve is no error.
        assertEquals("zookeeper zk1.invalid zookeeper/zk1.invalid@EXAMPLE.COM", shown(
                GssapiClients.zookeeper(null, "zookeeper", false, null), "zk1.invalid",
                "EXAMPLE.COM"));
    }

    /** zookeeper.sasl.client.username and zookeeper.server.realm; no realm at all. */
    @Test
    public void zookeeperServiceAndRealm() throws Exception {
        GssapiClients.ServerName rule = GssapiClients.zookeeper(null, "zk", false, "OTHER.ORG");
        assertEquals("zk zk1 zk/zk1@OTHER.ORG", shown(rule, "zk1", "EXAMPLE.COM"));
        assertEquals("zk zk1 zk/zk1@OTHER.ORG", shown(rule, "zk1", null));
        assertEquals("zookeeper zk1 zookeeper/zk1",
                shown(GssapiClients.zookeeper(null, "zookeeper", false, null), "zk1", null));
    }

    /** zookeeper.server.principal is used as given, whatever host the engine connects to. */
    @Test
    public void zookeeperConfiguredPrincipal() throws Exception {
        assertEquals("zookeeper zk1.example.com zookeeper/zk1.example.com@X.ORG", shown(
                GssapiClients.zookeeper("zookeeper/zk1.example.com@X.ORG", "zk", true, "Y.ORG"),
                "unresolvable.invalid", "EXAMPLE.COM"));
        // Without a realm: zookeeper.server.realm, else the client's.
        GssapiClients.ServerName noRealm =
                GssapiClients.zookeeper("zookeeper/zk1.example.com", "zk", true, null);
        assertEquals("zookeeper zk1.example.com zookeeper/zk1.example.com@EXAMPLE.COM",
                shown(noRealm, "zk2", "EXAMPLE.COM"));
        assertEquals("zookeeper zk1.example.com zookeeper/zk1.example.com@Y.ORG", shown(
                GssapiClients.zookeeper("zookeeper/zk1.example.com", "zk", true, "Y.ORG"),
                "zk2", "EXAMPLE.COM"));
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> GssapiClients.zookeeper("zookeeper/a/b@X.ORG", "zk", true, null)
                        .of("zk1", "EXAMPLE.COM"));
        assertEquals("ZooKeeper's service principal 'zookeeper/a/b@X.ORG' is not of the form"
                + " service/host[@REALM]", bad.getMessage());
    }

    // Kafka

    @Test
    public void kafkaUsesTheHostAsGiven() throws Exception {
        assertEquals("kafka broker1.invalid kafka/broker1.invalid",
                shown(GssapiClients.kafka("kafka"), "broker1.invalid", "EXAMPLE.COM"));
        assertEquals("kafka LOCALHOST kafka/LOCALHOST",
                shown(GssapiClients.kafka("kafka"), "LOCALHOST", "EXAMPLE.COM"));
    }

    @Test
    public void kafkaReverseResolvesAnIpLiteral() throws Exception {
        String ipv6 = InetAddress.getByName("::1").getHostName();
        assertEquals("kafka " + ipv6 + " kafka/" + ipv6,
                shown(GssapiClients.kafka("kafka"), "[::1]", "EXAMPLE.COM"));
        assumeLoopbackIsLocalhost();
        assertEquals("kafka localhost kafka/localhost",
                shown(GssapiClients.kafka("kafka"), "127.0.0.1", "EXAMPLE.COM"));
    }

    @Test
    public void ipLiterals() {
        for (String ip : new String[] {"127.0.0.1", "10.1.22.255", "[::1]", "::1",
                "fe80::1%eth0", "[2001:db8::1]"}) {
            assertTrue(ip, GssapiClients.isIpLiteral(ip));
        }
        for (String name : new String[] {"localhost", "broker1", "zk1.example.com", "10.1.2",
                "10.1.2.3.example.com", "1.2.3.4a"}) {
            assertFalse(name, GssapiClients.isIpLiteral(name));
        }
    }

    // The client principal and a connection's start

    @Test
    public void theClientPrincipalIsTheSubjectsKerberosPrincipal() throws Exception {
        Subject subject = new Subject();
        subject.getPrincipals().add(new NamedPrincipal("other"));
        assertEquals("other", GssapiClients.clientPrincipal(subject));
        subject.getPrincipals().add(new KerberosPrincipal("alice@EXAMPLE.COM"));
        assertEquals("alice@EXAMPLE.COM", GssapiClients.clientPrincipal(subject));
        SaslException none = assertThrows(SaslException.class,
                () -> GssapiClients.clientPrincipal(new Subject()));
        assertEquals("the Kerberos login holds no principal", none.getMessage());
    }

    private static KerberosLogins.Login login() {
        return KerberosLogins.acquire(KerberosLogins.Source.jvm("Client",
                new JaasSections().with("Client", Krb5LoginModule.NAME)));
    }

    @Test
    public void startFailsForAServiceWithoutKerberos() throws Exception {
        KerberosLogins.Login login = login();
        GssapiClients clients = new GssapiClients(null,
                new GssapiClients.Target("Kafka", login, GssapiClients.kafka("kafka")));
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> clients.start(GssapiClients.ZOOKEEPER, "zk1"));
        assertEquals("Kerberos is not configured for service 0", e.getMessage());
        assertThrows(IllegalStateException.class, () -> clients.start(7, "zk1"));
        assertEquals(0, Krb5LoginModule.attempts.get());
        clients.close();
    }

    @Test
    public void aFailedLoginIsASaslExceptionNamingTheService() throws Exception {
        Krb5LoginModule.failure = "Cannot contact any KDC for realm 'EXAMPLE.COM'";
        GssapiClients clients = new GssapiClients(
                new GssapiClients.Target("ZooKeeper", login(),
                        GssapiClients.zookeeper(null, "zookeeper", true, null)), null);
        SaslException e = assertThrows(SaslException.class,
                () -> clients.start(GssapiClients.ZOOKEEPER, "zk1"));
        assertEquals("ZooKeeper: Kerberos login (JAAS section 'Client') failed: Cannot contact"
                + " any KDC for realm 'EXAMPLE.COM'", e.getMessage());
        assertTrue(e.getCause() instanceof LoginException);
        clients.close();
    }

    /** The rule gets the host and the client's realm; its failure names both ends. */
    @Test
    public void aServerNameThatFailsNamesTheClientAndTheHost() throws Exception {
        List<String> asked = new ArrayList<>();
        GssapiClients clients = new GssapiClients(new GssapiClients.Target("ZooKeeper", login(),
                (host, clientRealm) -> {
                    asked.add(host + " " + clientRealm);
                    throw new UnknownHostException(host + ": Name or service not known");
                }), new GssapiClients.Target("Kafka", login(), (host, clientRealm) -> {
                    throw new IllegalArgumentException("no principal for " + host);
                }));
        SaslException e = assertThrows(SaslException.class,
                () -> clients.start(GssapiClients.ZOOKEEPER, "zk9.invalid"));
        assertEquals(Arrays.asList("zk9.invalid EXAMPLE.COM"), asked);
        assertEquals("Kerberos authentication of alice@EXAMPLE.COM to ZooKeeper at zk9.invalid"
                + " failed: zk9.invalid: Name or service not known", e.getMessage());
        assertTrue(e.getCause() instanceof UnknownHostException);
        e = assertThrows(SaslException.class, () -> clients.start(GssapiClients.KAFKA, "b1"));
        assertEquals("Kerberos authentication of alice@EXAMPLE.COM to Kafka at b1 failed:"
                + " no principal for b1", e.getMessage());
        clients.close();
    }

    /** close() releases each login once, however often it is called; then start refuses. */
    @Test
    public void closeReleasesTheLoginsOnce() throws Exception {
        JaasSections jaas = new JaasSections().with("Client", Krb5LoginModule.NAME);
        KerberosLogins.Login login =
                KerberosLogins.acquire(KerberosLogins.Source.jvm("Client", jaas));
        Subject subject = login.withSubject(s -> s);
        GssapiClients clients = new GssapiClients(null, new GssapiClients.Target("Kafka",
                KerberosLogins.acquire(KerberosLogins.Source.jvm("Client", jaas)),
                GssapiClients.kafka("kafka")));
        clients.close();
        clients.close();
        assertSame("the other reference keeps it logged in", subject, login.withSubject(s -> s));
        assertEquals(0, Krb5LoginModule.logouts.get());
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> clients.start(GssapiClients.KAFKA, "b1"));
        assertEquals("this keeper's Kerberos logins are released", e.getMessage());
        login.release();
        assertEquals(1, Krb5LoginModule.logouts.get());
        assertEquals(1, Krb5LoginModule.attempts.get());
    }

    private static final class NamedPrincipal implements Principal {
        private final String name;

        NamedPrincipal(String name) {
            this.name = name;
        }

        @Override
        public String getName() {
            return name;
        }
    }
}
