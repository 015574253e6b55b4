package io.offsetkeeper;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import javax.security.auth.Subject;
import javax.security.auth.kerberos.KerberosPrincipal;
import javax.security.auth.login.LoginException;
import javax.security.sasl.SaslClient;
import javax.security.sasl.SaslException;
import org.junit.Test;

/**
 * {@link GssapiExchange}, the steps native code drives, over a scripted SASL client: the first
 * token once, each step as the login's subject, failures that say who, to whom and why.
 */
public class GssapiExchangeTest {
    private static final String WHAT = "Kerberos authentication of alice@EXAMPLE.COM to Kafka"
            + " as kafka/broker1";

    /** Answers each challenge with the next answer (null: none); records what it saw. */
    private static final class ScriptedClient implements SaslClient {
        final List<byte[]> challenges = new ArrayList<>();
        final List<Subject> subjects = new ArrayList<>();
        final byte[][] answers;
        Exception failure;
        boolean complete;
        boolean disposed;

        ScriptedClient(byte[]... answers) {
            this.answers = answers;
        }

        @Override
        public byte[] evaluateChallenge(byte[] challenge) throws SaslException {
            challenges.add(challenge);
            try {
                subjects.add(KerberosLoginsTest.currentSubject());
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            if (failure instanceof SaslException) {
                throw (SaslException) failure;
            }
            if (failure != null) {
                throw (RuntimeException) failure;
            }
            return answers[challenges.size() - 1];
        }

        @Override
        public String getMechanismName() {
            return "GSSAPI";
        }

        @Override
        public boolean hasInitialResponse() {
            return true;
        }

        @Override
        public boolean isComplete() {
            return complete;
        }

        @Override
        public byte[] unwrap(byte[] incoming, int offset, int len) {
            throw new UnsupportedOperationException();
        }

        @Override
        public byte[] wrap(byte[] outgoing, int offset, int len) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Object getNegotiatedProperty(String name) {
            return null;
        }

        @Override
        public void dispose() throws SaslException {
            disposed = true;
            throw new SaslException("already disposed");
        }
    }

    private static Subject alice() {
        Subject subject = new Subject();
        subject.getPrincipals().add(new KerberosPrincipal("alice@EXAMPLE.COM"));
        return subject;
    }

    @Test
    public void theInitialTokenOnce() throws Exception {
        byte[] initial = {1, 2, 3};
        GssapiExchange exchange = new GssapiExchange(alice(), new ScriptedClient(), initial, WHAT);
        assertSame(initial, exchange.initial());
        SaslException again = assertThrows(SaslException.class, exchange::initial);
        assertEquals(WHAT + ": the initial token was already taken", again.getMessage());
    }

    @Test
    public void eachStepRunsAsTheSubject() throws Exception {
        Subject subject = alice();
        ScriptedClient client = new ScriptedClient(new byte[] {9}, null);
        GssapiExchange exchange = new GssapiExchange(subject, client, new byte[0], WHAT);
        assertArrayEquals(new byte[] {9}, exchange.evaluate(new byte[] {5, 6}));
        assertFalse(exchange.isComplete());
        client.complete = true;
        // No challenge is an empty one; no answer is an empty one.
        assertArrayEquals(new byte[0], exchange.evaluate(null));
        assertTrue(exchange.isComplete());
        assertArrayEquals(new byte[] {5, 6}, client.challenges.get(0));
        assertArrayEquals(new byte[0], client.challenges.get(1));
        assertEquals(2, client.subjects.size());
        assertSame(subject, client.subjects.get(0));
        assertSame(subject, client.subjects.get(1));
        exchange.dispose(); // the client's failure to dispose is not the caller's
        assertTrue(client.disposed);
    }

    @Test
    public void aFailedStepSaysWhoToWhomAndWhy() {
        ScriptedClient client = new ScriptedClient();
        Exception kerberos = new Exception("Server not found in Kerberos database (7)");
        client.failure = new SaslException("GSS initiate failed", new Exception(
                "No valid credentials provided (Mechanism level: Server not found in Kerberos"
                        + " database (7))", kerberos));
        GssapiExchange exchange = new GssapiExchange(alice(), client, new byte[0], WHAT);
        SaslException e = assertThrows(SaslException.class, () -> exchange.evaluate(new byte[1]));
        assertEquals(WHAT + " failed: GSS initiate failed: No valid credentials provided"
                + " (Mechanism level: Server not found in Kerberos database (7))", e.getMessage());
        assertSame(client.failure, e.getCause());

        client.failure = new IllegalStateException("unexpected");
        e = assertThrows(SaslException.class, () -> exchange.evaluate(new byte[1]));
        assertEquals(WHAT + " failed: unexpected", e.getMessage());
    }

    /** A cause chain's messages, joined; one contained in an earlier one, a loop, a null. */
    @Test
    public void reasonsJoinTheCauseChain() {
        assertEquals("a: b: c", GssapiExchange.reasons(
                new Exception("a", new Exception("b", new Exception("c")))));
        assertEquals("outer (inner): java.lang.IllegalStateException", GssapiExchange.reasons(
                new Exception("outer (inner)", new Exception("inner",
                        new IllegalStateException()))));
        @SuppressWarnings("serial")
        Exception loop = new Exception("loop") {
            @Override
            public synchronized Throwable getCause() {
                return this;
            }
        };
        assertEquals("loop", GssapiExchange.reasons(loop));
        Throwable deep = new Exception("7");
        for (int i = 6; i >= 1; i--) {
            deep = new Exception(String.valueOf(i), deep);
        }
        assertEquals("1: 2: 3: 4: 5: 6", GssapiExchange.reasons(deep));
        assertEquals("", GssapiExchange.reasons(null));
    }

    /** A socket's failure is the KDC's: the text names the krb5.conf that names the KDC. */
    @Test
    public void aNetworkFailureNamesKrb5Conf() {
        String saved = System.getProperty("java.security.krb5.conf");
        try {
            System.setProperty("java.security.krb5.conf", "/etc/krb5-test.conf");
            assertEquals("Connection refused (talking to the KDC named in krb5.conf"
                    + " /etc/krb5-test.conf)", GssapiExchange.reasons(new LoginException(
                            "Connection refused").initCause(new ConnectException(
                                    "Connection refused"))));
            assertEquals("GSS initiate failed: Receive timed out (talking to the KDC named in"
                    + " krb5.conf /etc/krb5-test.conf)", GssapiExchange.reasons(
                            new SaslException("GSS initiate failed",
                                    new SocketTimeoutException("Receive timed out"))));
            System.clearProperty("java.security.krb5.conf");
            assertEquals("Connection refused (talking to the KDC named in the JVM's default"
                    + " krb5.conf)", GssapiExchange.reasons(
                            new ConnectException("Connection refused")));
            // A server's name that does not resolve is the engine's host, not a KDC.
            assertEquals("zk9.invalid: Name or service not known", GssapiExchange.reasons(
                    new UnknownHostException("zk9.invalid: Name or service not known")));
            assertEquals("Clock skew too great (37)",
                    GssapiExchange.reasons(new Exception("Clock skew too great (37)")));
        } finally {
            if (saved == null) {
                System.clearProperty("java.security.krb5.conf");
            } else {
                System.setProperty("java.security.krb5.conf", saved);
            }
        }
    }
}
