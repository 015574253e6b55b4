package io.offsetkeeper;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.security.Principal;
import java.util.Iterator;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.security.auth.Subject;
import javax.security.auth.kerberos.KerberosPrincipal;
import javax.security.auth.login.LoginException;
import javax.security.sasl.Sasl;
import javax.security.sasl.SaslClient;
import javax.security.sasl.SaslException;

/**
 * Kerberos for the engine: the object {@link NativeBridge#open} hands to native code, which
 * calls {@link #start} for each connection that authenticates with SASL GSSAPI (ZooKeeper's,
 * Kafka's or both, as {@link Kerberos} decided) and drives the returned exchange. It holds a
 * shared JAAS login per service ({@link KerberosLogins}); {@link #close()} releases them once
 * the engine is closed.
 *
 * <p>Service principals follow the Java clients. ZooKeeper ({@code SaslServerPrincipal}):
 * {@code zookeeper.server.principal}, else {@code zookeeper.sasl.client.username}
 * ({@code zookeeper}) {@code /} the host, the host's canonical name when
 * {@code zookeeper.sasl.client.canonicalize.hostname} is true (the default) unless that is the
 * bare IP, and an IP literal reverse-resolved; the realm is {@code zookeeper.server.realm},
 * else the client's. Kafka ({@code SaslChannelBuilder}): the service name {@code /} the host as
 * the engine connects to it, an IP literal reverse-resolved.
 */
final class GssapiClients implements AutoCloseable {
    /** Service codes shared with rust/jni/src/sasl.rs. */
    static final int ZOOKEEPER = 0;
    static final int KAFKA = 1;

    private static final String[] GSSAPI = {"GSSAPI"};

    private final Target zookeeper;
    private final Target kafka;
    private volatile boolean closed;

    /** Either target may be null: that service does not use Kerberos. */
    GssapiClients(Target zookeeper, Target kafka) {
        this.zookeeper = zookeeper;
        this.kafka = kafka;
    }

    /**
     * A new exchange with the server at {@code host} (as in the connect string or the broker's
     * address), its first token made: may block on the KDC (a login, a service ticket).
     *
     * @param service {@link #ZOOKEEPER} or {@link #KAFKA}
     * @throws SaslException naming the client principal, the service principal and the cause
     */
    GssapiExchange start(int service, String host) throws Exception {
        Target target = service == ZOOKEEPER ? zookeeper : service == KAFKA ? kafka : null;
        if (target == null) {
            throw new IllegalStateException("Kerberos is not configured for service " + service);
        }
        if (closed) {
            throw new IllegalStateException("this keeper's Kerberos logins are released");
        }
        try {
            return target.login.withSubject(subject -> target.start(subject, host));
        } catch (LoginException e) {
            throw new SaslException(target.name + ": " + e.getMessage(), e);
        }
    }

    /**
     * Who logs in for {@code service} and with which krb5.conf, for the engine's message of a
     * login that does not finish by its deadline, and of an ACL refusal: {login as messages
     * name it, the principal or null, its realm or null, the krb5.conf path or null}. Takes no
     * lock (the login may be waiting).
     *
     * @param service {@link #ZOOKEEPER} or {@link #KAFKA}
     * @return null when that service does not use Kerberos
     */
    String[] loginFacts(int service) {
        Target target = service == ZOOKEEPER ? zookeeper : service == KAFKA ? kafka : null;
        if (target == null) {
            return null;
        }
        String principal = target.login.principal();
        String realm = principal != null && principal.indexOf('@') >= 0
                ? principal.substring(principal.lastIndexOf('@') + 1)
                : System.getProperty("java.security.krb5.realm");
        return new String[] {target.login.who(), principal, realm, krb5Conf()};
    }

    /** The krb5.conf the JVM reads: as {@code sun.security.krb5.Config} looks for it. */
    static String krb5Conf() {
        String configured = System.getProperty("java.security.krb5.conf");
        if (configured != null) {
            return configured;
        }
        String home = System.getProperty("java.home");
        // The JDK's own: conf/security (9 and later), lib/security (8).
        for (String inJdk : new String[] {"conf/security/krb5.conf", "lib/security/krb5.conf"}) {
            java.io.File file = new java.io.File(home, inJdk);
            if (file.isFile()) {
                return file.getPath();
            }
        }
        return "/etc/krb5.conf";
    }

    /** Releases the logins; the engine must be closed already. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (zookeeper != null) {
            zookeeper.login.release();
        }
        if (kafka != null) {
            kafka.login.release();
        }
    }

    /** One service's login and its rule for the server's principal. */
    static final class Target {
        final String name;
        final KerberosLogins.Login login;
        final ServerName serverName;

        Target(String name, KerberosLogins.Login login, ServerName serverName) {
            this.name = name;
            this.login = login;
            this.serverName = serverName;
        }

        GssapiExchange start(Subject subject, String host) throws SaslException {
            String client = clientPrincipal(subject);
            String what = "Kerberos authentication of " + client + " to " + name;
            ServicePrincipal server;
            try {
                server = serverName.of(host, realmOf(client));
            } catch (UnknownHostException | RuntimeException e) {
                throw GssapiExchange.failure(what + " at " + host, e);
            }
            what += " as " + server.shown;
            try {
                SaslClient sasl = KerberosLogins.callAs(subject, () -> Sasl.createSaslClient(
                        GSSAPI, client, server.service, server.host, null, null));
                if (sasl == null) {
                    throw new SaslException("this JVM has no SASL GSSAPI client");
                }
                byte[] initial = sasl.hasInitialResponse()
                        ? KerberosLogins.callAs(subject, () -> sasl.evaluateChallenge(new byte[0]))
                        : new byte[0];
                return new GssapiExchange(subject, sasl, initial == null ? new byte[0] : initial,
                        what);
            } catch (Exception e) {
                throw GssapiExchange.failure(what, e);
            }
        }
    }

    /**
     * The authorization id the Java clients send: the subject's Kerberos principal (Kafka's
     * {@code firstPrincipal}, ZooKeeper's first principal).
     */
    static String clientPrincipal(Subject subject) throws SaslException {
        Set<KerberosPrincipal> kerberos = subject.getPrincipals(KerberosPrincipal.class);
        if (!kerberos.isEmpty()) {
            return kerberos.iterator().next().getName();
        }
        Set<Principal> all = subject.getPrincipals();
        synchronized (all) {
            Iterator<Principal> it = all.iterator();
            if (it.hasNext()) {
                return it.next().getName();
            }
        }
        throw new SaslException("the Kerberos login holds no principal");
    }

    private static String realmOf(String client) {
        int at = client.lastIndexOf('@');
        return at < 0 ? null : client.substring(at + 1);
    }

    /** A server's principal as GSSAPI takes it: service and host, and how messages show it. */
    static final class ServicePrincipal {
        final String service;
        final String host;
        final String shown;

        ServicePrincipal(String service, String host, String shown) {
            this.service = service;
            this.host = host;
            this.shown = shown;
        }
    }

    /** A rule from the host the engine connects to, and the client's realm, to a principal. */
    interface ServerName {
        ServicePrincipal of(String host, String clientRealm) throws UnknownHostException;
    }

    /** Kafka's rule: the service name and the host, an IP literal reverse-resolved. */
    static ServerName kafka(String serviceName) {
        return (host, clientRealm) -> {
            String name = isIpLiteral(host) ? address(host).getHostName() : host;
            return new ServicePrincipal(serviceName, name, serviceName + "/" + name);
        };
    }

    // KerberosName's pattern in ZooKeeper: service[/host]@REALM.
    private static final Pattern PRINCIPAL = Pattern.compile("([^/@]+)(/([^/@]+))?@([^/@]*)");

    /**
     * ZooKeeper's rule (see the class documentation).
     *
     * @param principal {@code zookeeper.server.principal}, or null
     * @param username {@code zookeeper.sasl.client.username}
     * @param canonicalize {@code zookeeper.sasl.client.canonicalize.hostname}
     * @param realm {@code zookeeper.server.realm}, or null for the client's realm
     */
    static ServerName zookeeper(String principal, String username, boolean canonicalize,
            String realm) {
        return (host, clientRealm) -> {
            String name = principal;
            if (name == null) {
                name = username + "/" + zookeeperHost(host, canonicalize);
            }
            String serverRealm = realm != null ? realm : clientRealm;
            if (name.indexOf('@') < 0 && serverRealm != null) {
                name = name + "@" + serverRealm;
            }
            Matcher m = PRINCIPAL.matcher(name.indexOf('@') < 0 ? name + "@" : name);
            if (!m.matches() || m.group(3) == null) {
                throw new IllegalArgumentException("ZooKeeper's service principal '" + name
                        + "' is not of the form service/host[@REALM]");
            }
            // As in ZooKeeper's client, only service and host reach GSSAPI; krb5.conf maps the
            // host to its realm.
            return new ServicePrincipal(m.group(1), m.group(3), name);
        };
    }

    /** ZooKeeper's host for a principal: {@code SaslServerPrincipal.getServerPrincipal}. */
    private static String zookeeperHost(String host, boolean canonicalize)
            throws UnknownHostException {
        if (!canonicalize && !isIpLiteral(host)) {
            return host;
        }
        // A name keeps its text; an IP literal is reverse-resolved (InetAddress.getHostName).
        InetAddress address = address(host);
        String name = address.getHostName();
        if (canonicalize) {
            String canonical = address.getCanonicalHostName();
            if (!canonical.equals(address.getHostAddress())) {
                name = canonical;
            }
        }
        return name;
    }

    private static InetAddress address(String host) throws UnknownHostException {
        return InetAddress.getByName(unbracketed(host));
    }

    private static String unbracketed(String host) {
        return host.startsWith("[") && host.endsWith("]")
                ? host.substring(1, host.length() - 1) : host;
    }

    // Dotted IPv4; anything with a colon is IPv6 (names have none).
    private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");

    static boolean isIpLiteral(String host) {
        String h = unbracketed(host);
        return h.indexOf(':') >= 0 || IPV4.matcher(h).matches();
    }
}
