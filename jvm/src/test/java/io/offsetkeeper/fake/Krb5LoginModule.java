package io.offsetkeeper.fake;

import java.io.IOException;
import java.util.Date;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import javax.security.auth.Subject;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.CallbackHandler;
import javax.security.auth.callback.PasswordCallback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.kerberos.KerberosPrincipal;
import javax.security.auth.kerberos.KerberosTicket;
import javax.security.auth.login.LoginException;
import javax.security.auth.spi.LoginModule;

/**
 * A JAAS login module for the Kerberos logic tests: no KDC, a TGT whose times the test sets.
 * Its name ends in {@code .Krb5LoginModule}, the name by which the keeper recognizes a Kerberos
 * JAAS section. Its state is static: tests call {@link #reset()} first and run one at a time.
 *
 * <p>Each login attempt is counted; it fails with {@link #failure} when that is set (after
 * asking the callback handler for a password when {@link #prompt} is set, as the JDK's module
 * does when its keytab or ticket cache cannot be used). A successful login commits the
 * principal (option {@code principal}, else {@code alice@EXAMPLE.COM}), a service ticket that
 * expires early (only the TGT may count) and, when {@link #withTgt}, a TGT from
 * {@code clock + startOffsetMs} to {@code clock + startOffsetMs + lifetimeMs}.
 */
public final class Krb5LoginModule implements LoginModule {
    public static final String NAME = Krb5LoginModule.class.getName();
    public static final String PRINCIPAL = "alice@EXAMPLE.COM";

    public static volatile LongSupplier clock = System::currentTimeMillis;
    public static final AtomicInteger attempts = new AtomicInteger();
    public static final AtomicInteger logouts = new AtomicInteger();
    public static volatile String failure;
    public static volatile boolean prompt;
    public static volatile boolean withTgt;
    public static volatile long lifetimeMs;
    public static volatile long startOffsetMs;

    private Subject subject;
    private CallbackHandler handler;
    private String principalName;
    private KerberosPrincipal principal;
    private KerberosTicket serviceTicket;
    private KerberosTicket tgt;

    /** Successful logins with a TGT of 1000 s that starts now; the system clock. */
    public static void reset() {
        clock = System::currentTimeMillis;
        attempts.set(0);
        logouts.set(0);
        failure = null;
        prompt = false;
        withTgt = true;
        lifetimeMs = 1_000_000;
        startOffsetMs = 0;
    }

    static {
        reset();
    }

    @Override
    public void initialize(Subject subject, CallbackHandler handler, Map<String, ?> sharedState,
            Map<String, ?> options) {
        this.subject = subject;
        this.handler = handler;
        Object name = options.get("principal");
        this.principalName = name != null ? name.toString() : PRINCIPAL;
    }

    @Override
    public boolean login() throws LoginException {
        attempts.incrementAndGet();
        String failWith = failure;
        if (failWith != null) {
            if (prompt) {
                try {
                    handler.handle(new Callback[] {new PasswordCallback("Password: ", false)});
                } catch (UnsupportedCallbackException | IOException e) {
                    // Refused, as the test expects; the failure below is the login's.
                }
            }
            throw new LoginException(failWith);
        }
        long start = clock.getAsLong() + startOffsetMs;
        principal = new KerberosPrincipal(principalName);
        String realm = principal.getRealm();
        serviceTicket = ticket(new KerberosPrincipal("kafka/broker1@" + realm), start, 1_000);
        tgt = withTgt ? ticket(new KerberosPrincipal("krbtgt/" + realm + "@" + realm), start,
                lifetimeMs) : null;
        return true;
    }

    private KerberosTicket ticket(KerberosPrincipal server, long start, long lifetime) {
        return new KerberosTicket(new byte[] {1}, principal, server, new byte[16], 17,
                new boolean[32], new Date(start), new Date(start), new Date(start + lifetime),
                null, null);
    }

    @Override
    public boolean commit() {
        subject.getPrincipals().add(principal);
        subject.getPrivateCredentials().add(serviceTicket);
        if (tgt != null) {
            subject.getPrivateCredentials().add(tgt);
        }
        return true;
    }

    @Override
    public boolean abort() {
        return true;
    }

    @Override
    public boolean logout() {
        subject.getPrincipals().remove(principal);
        subject.getPrivateCredentials().remove(serviceTicket);
        if (tgt != null) {
            subject.getPrivateCredentials().remove(tgt);
        }
        logouts.incrementAndGet();
        return true;
    }
}
