package io.offsetkeeper;

import java.net.SocketException;
import java.net.SocketTimeoutException;
import javax.security.auth.Subject;
import javax.security.sasl.SaslClient;
import javax.security.sasl.SaslException;

/**
 * One SASL GSSAPI exchange of one connection, driven by native code (rust/jni/src/sasl.rs):
 * {@link #initial()} once, then {@link #evaluate} for each server token until
 * {@link #isComplete()}, then {@link #dispose()}. The JDK's GSSAPI client does the work,
 * including RFC 4752's security-layer step; each step runs as the login's subject. Calls come
 * from one thread at a time.
 */
final class GssapiExchange {
    private static final byte[] EMPTY = new byte[0];

    private final Subject subject;
    private final SaslClient client;
    private final String what;
    private byte[] initial;

    /**
     * @param initial the client's first token, already made (the Kerberos AP-REQ)
     * @param what who authenticates to whom, for messages
     */
    GssapiExchange(Subject subject, SaslClient client, byte[] initial, String what) {
        this.subject = subject;
        this.client = client;
        this.initial = initial;
        this.what = what;
    }

    /** The client's first token; once. */
    byte[] initial() throws SaslException {
        byte[] token = initial;
        if (token == null) {
            throw new SaslException(what + ": the initial token was already taken");
        }
        initial = null;
        return token;
    }

    /**
     * The answer to a server token, empty when there is nothing to send.
     *
     * @throws SaslException naming the client, the service principal and the cause
     */
    byte[] evaluate(byte[] challenge) throws SaslException {
        byte[] token = challenge == null ? EMPTY : challenge;
        try {
            byte[] answer = KerberosLogins.callAs(subject, () -> client.evaluateChallenge(token));
            return answer == null ? EMPTY : answer;
        } catch (Exception e) {
            throw failure(what, e);
        }
    }

    /** Whether the client has nothing more to send (the server may still answer once). */
    boolean isComplete() {
        return client.isComplete();
    }

    /** Frees the GSS context; the exchange is not used afterwards. */
    void dispose() {
        try {
            client.dispose();
        } catch (SaslException e) {
            // Nothing is left to free that the GC does not.
        }
    }

    /** A failure whose message says who failed to authenticate to whom, and why. */
    static SaslException failure(String what, Throwable cause) {
        return new SaslException(what + " failed: " + reasons(cause), cause);
    }

    /**
     * The messages of a cause chain, joined: SASL's "GSS initiate failed" says little, the
     * GSSException under it says what Kerberos refused ("Server not found in Kerberos
     * database (7)", "Clock skew too great (37)"). None of them holds a secret. A socket's
     * failure in the chain is the KDC's (the engine, not the JVM, talks to ZooKeeper and
     * Kafka), whose address only krb5.conf knows: the text then names that file.
     */
    static String reasons(Throwable cause) {
        StringBuilder text = new StringBuilder();
        boolean network = false;
        Throwable t = cause;
        for (int depth = 0; t != null && depth < 6; depth++) {
            network |= t instanceof SocketException || t instanceof SocketTimeoutException;
            String message = t.getMessage();
            if (message == null || message.isEmpty()) {
                message = t.getClass().getName();
            }
            if (text.indexOf(message) < 0) {
                if (text.length() > 0) {
                    text.append(": ");
                }
                text.append(message);
            }
            if (t.getCause() == t) {
                break;
            }
            t = t.getCause();
        }
        if (network) {
            String conf = System.getProperty("java.security.krb5.conf");
            text.append(" (talking to the KDC named in ").append(conf != null
                    ? "krb5.conf " + conf : "the JVM's default krb5.conf").append(')');
        }
        return text.toString();
    }
}
