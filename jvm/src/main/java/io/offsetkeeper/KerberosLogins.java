package io.offsetkeeper;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.security.PrivilegedActionException;
import java.security.PrivilegedExceptionAction;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongSupplier;
import javax.security.auth.Subject;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.CallbackHandler;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.kerberos.KerberosPrincipal;
import javax.security.auth.kerberos.KerberosTicket;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.auth.login.Configuration;
import javax.security.auth.login.LoginContext;
import javax.security.auth.login.LoginException;

/**
 * JAAS logins for Kerberos, one per JAAS source (a section of the JVM's login configuration, or
 * a {@code sasl.jaas.config} text), shared by the keepers that use it and counted: the last
 * {@link Login#release()} logs out. A login happens on first use, never at build time, and
 * refuses every callback (no prompt). Before each use a TGT past 80% of its lifetime (plus up
 * to 5% jitter) is refreshed by a new login: the rule of Kafka's {@code KerberosLogin} and
 * ZooKeeper's {@code Login}, applied lazily instead of by a thread. Login attempts, successful
 * or not, are at least the source's minimum time apart (a minute unless Kafka's
 * {@code sasl.kerberos.min.time.before.relogin} or ZooKeeper's
 * {@code zookeeper.kerberos.minReLoginTimeMs} says otherwise, see {@link Kerberos}), except the
 * first: a ticket cache that nobody renews, or a KDC that cannot be reached, is not asked at
 * every connect. Unlike them, the new login comes before the old one's logout, so a failed
 * refresh leaves the old TGT in use until it expires. A ticket cache login reads the cache
 * again then, so a cache renewed by {@code kinit} or {@code k5start} is picked up.
 */
final class KerberosLogins {
    /** Kafka's {@code sasl.kerberos.ticket.renew.window.factor} and ZooKeeper's window. */
    static final double RENEW_WINDOW = 0.80;
    /** Kafka's {@code sasl.kerberos.ticket.renew.jitter}. */
    static final double RENEW_JITTER = 0.05;
    /**
     * The default least time between login attempts (ms): that of Kafka's
     * {@code sasl.kerberos.min.time.before.relogin} and of ZooKeeper's
     * {@code zookeeper.kerberos.minReLoginTimeMs}. The one place of this default.
     */
    static final long MIN_TIME_BEFORE_RELOGIN_MS = 60_000;

    /** Wall clock in milliseconds; tests replace it. */
    static volatile LongSupplier clock = System::currentTimeMillis;

    private static final Map<Source, Login> LOGINS = new HashMap<>();

    /** {@code Subject.callAs} (Java 18 and later), null before. */
    private static final Method CALL_AS = callAs();

    private KerberosLogins() {}

    /** The shared login of {@code source}, counted once more; {@link Login#release()} it. */
    static Login acquire(Source source) {
        synchronized (LOGINS) {
            Login login = LOGINS.get(source);
            if (login == null) {
                login = new Login(source);
                LOGINS.put(source, login);
            }
            login.references++;
            return login;
        }
    }

    /**
     * Runs {@code action} as {@code subject}, so that JGSS finds its Kerberos credentials:
     * {@code Subject.callAs} where it exists, since {@code Subject.doAs} no longer carries the
     * subject from JDK 23 on without a security manager; {@code Subject.doAs} before.
     * Exceptions come out unwrapped.
     */
    static <T> T callAs(Subject subject, Callable<T> action) throws Exception {
        if (CALL_AS != null) {
            try {
                @SuppressWarnings("unchecked")
                T result = (T) CALL_AS.invoke(null, subject, action);
                return result;
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof CompletionException && cause.getCause() != null) {
                    cause = cause.getCause();
                }
                throw rethrow(cause);
            }
        }
        try {
            return doAs(subject, action::call);
        } catch (PrivilegedActionException e) {
            throw e.getException();
        }
    }

    @SuppressWarnings("removal")
    private static <T> T doAs(Subject subject, PrivilegedExceptionAction<T> action)
            throws PrivilegedActionException {
        return Subject.doAs(subject, action);
    }

    private static Exception rethrow(Throwable cause) {
        if (cause instanceof Exception) {
            return (Exception) cause;
        }
        if (cause instanceof Error) {
            throw (Error) cause;
        }
        return new IllegalStateException(cause);
    }

    private static Method callAs() {
        try {
            return Subject.class.getMethod("callAs", Subject.class, Callable.class);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    /**
     * Where a login's entries come from: a section of the JVM's configuration (the same
     * {@link Configuration} object), or an inline text under a section name; and the least
     * time between its login attempts. Sources that differ in any of these are different
     * logins.
     */
    static final class Source {
        final String section;
        final String inlineText;
        final Configuration configuration;
        final long minTimeBeforeReloginMs;

        private Source(String section, String inlineText, Configuration configuration,
                long minTimeBeforeReloginMs) {
            this.section = section;
            this.inlineText = inlineText;
            this.configuration = configuration;
            this.minTimeBeforeReloginMs = minTimeBeforeReloginMs;
        }

        /** Section {@code section} of the JVM's login configuration {@code configuration}. */
        static Source jvm(String section, Configuration configuration) {
            return new Source(section, null, configuration, MIN_TIME_BEFORE_RELOGIN_MS);
        }

        /** The text of {@code sasl.jaas.config}, read as section {@code section}. */
        static Source inline(String section, String text) {
            return new Source(section, text, InlineJaas.parse(section, text),
                    MIN_TIME_BEFORE_RELOGIN_MS);
        }

        /** This source, its login attempts at least {@code millis} apart (0: no least time). */
        Source minTimeBeforeRelogin(long millis) {
            if (millis < 0) {
                throw new IllegalArgumentException("the least time between Kerberos logins is "
                        + millis + " ms; allowed: 0 or more");
            }
            return new Source(section, inlineText, configuration, millis);
        }

        /** How messages name it; never the inline text, which may hold secrets. */
        String describe() {
            return inlineText == null ? "JAAS section '" + section + "'" : "sasl.jaas.config";
        }

        @Override
        public boolean equals(Object other) {
            if (!(other instanceof Source)) {
                return false;
            }
            Source that = (Source) other;
            return section.equals(that.section) && Objects.equals(inlineText, that.inlineText)
                    && (inlineText != null || configuration == that.configuration)
                    && minTimeBeforeReloginMs == that.minTimeBeforeReloginMs;
        }

        @Override
        public int hashCode() {
            return Objects.hash(section, inlineText, minTimeBeforeReloginMs);
        }
    }

    /** Something done with the logged-in subject. */
    interface SubjectAction<T> {
        T run(Subject subject) throws Exception;
    }

    /** One JAAS login, shared; see the class documentation. */
    static final class Login {
        private final Source source;
        // Uses hold the read lock; a login or refresh holds the write lock, so no exchange
        // starts on a subject being replaced.
        private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
        private int references; // guarded by LOGINS
        // The rest is guarded by lock.
        private LoginContext context;
        private boolean released; // out of LOGINS and logged out: never logs in again
        private volatile boolean releasing; // out of LOGINS; logged out by whoever next can
        private boolean attempted;
        private long lastAttempt;
        private LoginException lastFailure; // of the last attempt, null when it succeeded
        private long refreshAt;
        private long expiresAt;

        private Login(Source source) {
            this.source = source;
        }

        /** How messages name the login's source. */
        String describe() {
            return source.describe();
        }

        /**
         * Runs {@code action} with the subject, logged in (or refreshed) first if needed.
         *
         * @throws LoginException when the login fails; the message names the source
         * @throws IllegalStateException when the login was released
         */
        <T> T withSubject(SubjectAction<T> action) throws Exception {
            try {
                return withSubjectLocked(action);
            } finally {
                logOutIfReleased();
            }
        }

        private <T> T withSubjectLocked(SubjectAction<T> action) throws Exception {
            ReentrantReadWriteLock.ReadLock read = lock.readLock();
            // The common case: nothing due, so uses share the read lock and never wait for
            // one another.
            read.lock();
            try {
                if (!due(clock.getAsLong())) {
                    return action.run(context.getSubject());
                }
            } finally {
                read.unlock();
            }
            ReentrantReadWriteLock.WriteLock write = lock.writeLock();
            Subject subject;
            write.lock();
            try {
                subject = current(); // checks again: another thread may have done it
                read.lock(); // downgrade: no refresh until the action ends
            } finally {
                write.unlock();
            }
            try {
                return action.run(subject);
            } finally {
                read.unlock();
            }
        }

        /** Whether {@link #current()} has more to do than return the subject; under lock. */
        private boolean due(long now) {
            return released || releasing || context == null
                    || now >= refreshAt && mayAttempt(now)
                    || now >= expiresAt && lastFailure != null;
        }

        /** The first attempt at once, then at least the source's minimum time apart. */
        private boolean mayAttempt(long now) {
            return !attempted || now - lastAttempt >= source.minTimeBeforeReloginMs;
        }

        /** The subject, after a first login or a due refresh. Caller holds the write lock. */
        private Subject current() throws LoginException {
            if (released || releasing) {
                throw new IllegalStateException("the Kerberos login with " + describe()
                        + " was released when its keepers closed; it does not log in again");
            }
            long now = clock.getAsLong();
            if ((context == null || now >= refreshAt) && mayAttempt(now)) {
                attempted = true;
                lastAttempt = now;
                // A new login on a new subject first, so that a failure keeps the old one.
                LoginContext fresh;
                try {
                    fresh = logIn();
                } catch (LoginException e) {
                    lastFailure = e;
                    if (context == null || now >= expiresAt) {
                        throw e;
                    }
                    return context.getSubject(); // the TGT still serves
                }
                lastFailure = null;
                LoginContext old = context;
                context = fresh;
                scheduleRefresh();
                if (old != null) {
                    try {
                        old.logout();
                    } catch (LoginException e) {
                        // Nothing depends on the old subject any more.
                    }
                }
            } else if (context == null || now >= expiresAt && lastFailure != null) {
                throw notYetAgain(now);
            }
            return context.getSubject();
        }

        /** The last attempt's failure, again, while the next attempt has to wait. */
        private LoginException notYetAgain(long now) {
            String last = lastFailure != null ? lastFailure.getMessage()
                    : "Kerberos login with " + describe() + " failed";
            LoginException failure = new LoginException(last + " (" + (now - lastAttempt) / 1000
                    + " s ago; attempts are at least " + duration(source.minTimeBeforeReloginMs)
                    + " apart)");
            failure.initCause(lastFailure);
            return failure;
        }

        private LoginContext logIn() throws LoginException {
            Thread thread = Thread.currentThread();
            ClassLoader previous = thread.getContextClassLoader();
            // Native threads have no useful context loader; JAAS loads login modules with it.
            thread.setContextClassLoader(KerberosLogins.class.getClassLoader());
            NoPrompts prompts = new NoPrompts();
            try {
                LoginContext login = new LoginContext(source.section, null, prompts,
                        source.configuration);
                login.login();
                return login;
            } catch (LoginException e) {
                LoginException failure = new LoginException(failed(prompts.asked, e));
                failure.initCause(e);
                throw failure;
            } finally {
                thread.setContextClassLoader(previous);
            }
        }

        /**
         * A failed login's message: who logs in with what, from the JAAS options (principal,
         * keyTab, ticketCache: none is secret), and why. Krb5LoginModule asks for a password
         * when its keytab or ticket cache fails, and its text for the refused prompt says
         * nothing of that; other failures (the KDC's) keep their own text.
         */
        private String failed(boolean asked, LoginException e) {
            Map<String, ?> options = krb5Options();
            Object principal = options.get("principal");
            boolean keyTab = "true".equalsIgnoreCase(String.valueOf(options.get("useKeyTab")));
            boolean cache = "true".equalsIgnoreCase(String.valueOf(options.get("useTicketCache")));
            StringBuilder text = new StringBuilder(who()).append(" failed: ");
            if (!asked) {
                return text.append(GssapiExchange.reasons(e)).toString();
            }
            if (keyTab && principal == null) {
                text.append("JAAS gives no principal for the keytab");
            } else if (keyTab && cache) {
                text.append("neither the ticket cache nor the keytab can be used");
            } else if (keyTab) {
                text.append("the keytab cannot be read or holds no key of the principal");
            } else if (cache) {
                text.append(ticketCacheWords(options.get("ticketCache")));
            } else {
                text.append("JAAS gives neither a keytab (useKeyTab=true) nor a ticket cache"
                        + " (useTicketCache=true)");
            }
            return text.append(", and no prompt is allowed").toString();
        }

        /**
         * The login as messages name it, from the JAAS options (principal, keyTab,
         * ticketCache: none is secret): {@code Kerberos login of P (JAAS section 'Client',
         * keyTab K)}. Takes no lock: it may be asked while a login waits for its KDC.
         */
        String who() {
            Map<String, ?> options = krb5Options();
            Object principal = options.get("principal");
            StringBuilder text = new StringBuilder("Kerberos login");
            if (principal != null) {
                text.append(" of ").append(principal);
            }
            text.append(" (").append(source.describe());
            if ("true".equalsIgnoreCase(String.valueOf(options.get("useKeyTab")))) {
                Object path = options.get("keyTab");
                text.append(", keyTab ").append(path != null ? path : "(the default)");
            }
            if ("true".equalsIgnoreCase(String.valueOf(options.get("useTicketCache")))) {
                Object path = options.get("ticketCache");
                text.append(", ticket cache ").append(path != null ? path : "(the default)");
            }
            return text.append(")").toString();
        }

        /**
         * The engine's words for the ticket cache a login reads (the JAAS {@code ticketCache},
         * else KRB5CCNAME, else the default): where it is and whether it is missing, empty or
         * expired, with the TGT's end time.
         */
        private static String ticketCacheWords(Object configured) {
            try {
                NativeLibrary.load();
                return NativeBridge.ticketCacheWords(configured == null ? null : String.valueOf(configured));
            } catch (RuntimeException | LinkageError e) {
                // Only a message is at stake (the library is loaded by every keeper anyway).
                return "the ticket cache cannot be read or holds no valid TGT";
            }
        }

        /** The principal the JAAS options name, else null. */
        String principal() {
            Object principal = krb5Options().get("principal");
            return principal == null ? null : String.valueOf(principal);
        }

        /** The options of the source's Krb5LoginModule entry (else its first), maybe empty. */
        private Map<String, ?> krb5Options() {
            try {
                AppConfigurationEntry[] entries =
                        source.configuration.getAppConfigurationEntry(source.section);
                if (entries != null && entries.length > 0) {
                    for (AppConfigurationEntry entry : entries) {
                        if (entry.getLoginModuleName().trim().endsWith(".Krb5LoginModule")) {
                            return entry.getOptions();
                        }
                    }
                    return entries[0].getOptions();
                }
            } catch (RuntimeException e) {
                // Only a message is at stake.
            }
            return Collections.emptyMap();
        }

        private void scheduleRefresh() {
            KerberosTicket tgt = tgt(context.getSubject());
            if (tgt == null) {
                // No TGT to renew (a login that gets its tickets some other way).
                refreshAt = Long.MAX_VALUE;
                expiresAt = Long.MAX_VALUE;
                return;
            }
            long start = tgt.getStartTime() != null ? tgt.getStartTime().getTime()
                    : tgt.getAuthTime().getTime();
            long end = tgt.getEndTime().getTime();
            expiresAt = end;
            double factor = RENEW_WINDOW + RENEW_JITTER * ThreadLocalRandom.current().nextDouble();
            refreshAt = start + (long) ((end - start) * factor);
        }

        /**
         * Counted down once; the last release logs out: at once when no use or login holds the
         * lock, else when the last one leaves it. It never waits: a login whose KDC does not
         * answer holds the lock for minutes, and a keeper's close must not wait for it.
         */
        void release() {
            synchronized (LOGINS) {
                if (--references > 0) {
                    return;
                }
                LOGINS.remove(source);
            }
            // Out of LOGINS: a later login would never be logged out.
            releasing = true;
            logOutIfReleased();
        }

        /** Logs out a released login, unless another thread holds the lock (it does, leaving). */
        private void logOutIfReleased() {
            if (!releasing) {
                return;
            }
            ReentrantReadWriteLock.WriteLock write = lock.writeLock();
            if (!write.tryLock()) {
                return;
            }
            try {
                released = true;
                if (context != null) {
                    LoginContext old = context;
                    context = null;
                    old.logout();
                }
            } catch (LoginException e) {
                // Logging out only drops credentials from the subject; nothing to report.
            } finally {
                write.unlock();
            }
        }
    }

    /** Whole seconds as {@code "60 s"}, anything else as {@code "1500 ms"}. */
    static String duration(long millis) {
        return millis % 1000 == 0 ? millis / 1000 + " s" : millis + " ms";
    }

    /** The subject's ticket-granting ticket, {@code krbtgt/REALM@REALM}, or null. */
    static KerberosTicket tgt(Subject subject) {
        for (KerberosTicket ticket : subject.getPrivateCredentials(KerberosTicket.class)) {
            KerberosPrincipal server = ticket.getServer();
            if (server != null && server.getName().equals(
                    "krbtgt/" + server.getRealm() + "@" + server.getRealm())) {
                return ticket;
            }
        }
        return null;
    }

    /** No prompts: a password or a name that JAAS options do not give is a failed login. */
    private static final class NoPrompts implements CallbackHandler {
        volatile boolean asked;

        @Override
        public void handle(Callback[] callbacks) throws UnsupportedCallbackException {
            asked = true;
            throw new UnsupportedCallbackException(callbacks.length > 0 ? callbacks[0] : null,
                    "no prompt");
        }
    }
}
