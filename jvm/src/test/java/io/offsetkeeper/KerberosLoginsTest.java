package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.offsetkeeper.fake.Krb5LoginModule;
import java.io.IOException;
import java.lang.reflect.Method;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import javax.security.auth.Subject;
import javax.security.auth.kerberos.KerberosPrincipal;
import javax.security.auth.login.LoginException;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * {@link KerberosLogins}: a login on first use, a refresh at 80-85% of the TGT's lifetime,
 * attempts at least a minute apart, a failed refresh that keeps a valid TGT, shared and counted
 * logins. A fake login module ({@link Krb5LoginModule}) and a test clock; no KDC.
 */
public class KerberosLoginsTest {
    private static final long T = 1_700_000_000_000L;
    private static final String KDC_DOWN = "Cannot contact any KDC for realm 'EXAMPLE.COM'";

    private final AtomicLong now = new AtomicLong(T);
    private LongSupplier savedClock;

    @Before
    public void fakeClock() {
        Krb5LoginModule.reset();
        Krb5LoginModule.clock = now::get;
        savedClock = KerberosLogins.clock;
        KerberosLogins.clock = now::get;
    }

    @After
    public void realClock() {
        KerberosLogins.clock = savedClock;
        Krb5LoginModule.reset();
    }

    /** A source of its own (a new configuration): its login is shared with no other test. */
    private static KerberosLogins.Source source() {
        return KerberosLogins.Source.jvm("KafkaClient", new JaasSections().with("KafkaClient",
                Krb5LoginModule.NAME, "principal", Krb5LoginModule.PRINCIPAL));
    }

    private static KerberosLogins.Source kafkaClient(JaasSections jaas) {
        return KerberosLogins.Source.jvm("KafkaClient", jaas);
    }

    private static Subject use(KerberosLogins.Login login) throws Exception {
        return login.withSubject(subject -> subject);
    }

    private static int attempts() {
        return Krb5LoginModule.attempts.get();
    }

    @Test
    public void logsInOnFirstUseNotWhenAcquired() throws Exception {
        KerberosLogins.Login login = KerberosLogins.acquire(source());
        assertEquals(0, attempts());
        Subject subject = use(login);
        assertEquals(1, attempts());
        assertEquals(Krb5LoginModule.PRINCIPAL, GssapiClients.clientPrincipal(subject));
        assertNotNull(KerberosLogins.tgt(subject));
        assertEquals("krbtgt/EXAMPLE.COM@EXAMPLE.COM",
                KerberosLogins.tgt(subject).getServer().getName());
        assertSame(subject, use(login));
        assertEquals("done", login.withSubject(s -> "done"));
        assertEquals(1, attempts());
        login.release();
    }

    /** The refresh time is drawn in [80%, 85%) of the TGT's lifetime, anew at each login. */
    @Test
    public void refreshesBetween80And85PercentOfTheTicketLifetime() throws Exception {
        long lifetime = Krb5LoginModule.lifetimeMs; // 1000 s: far above the minute between attempts
        KerberosLogins.Login login = KerberosLogins.acquire(source());
        Subject previous = use(login);
        Set<Long> refreshedAt = new HashSet<>();
        for (int round = 1; round <= 20; round++) {
            long start = now.get();
            now.set(start + lifetime * 80 / 100 - 1);
            assertSame("round " + round + ": no refresh before 80%", previous, use(login));
            assertEquals(round, attempts());
            // Second by second from 80% to 85%: the refresh happens once, in between.
            Subject fresh = previous;
            long at = lifetime * 80 / 100;
            for (; at <= lifetime * 85 / 100; at += 1_000) {
                now.set(start + at);
                fresh = use(login);
                if (fresh != previous) {
                    break;
                }
            }
            assertNotSame("round " + round + ": refreshed by 85%", previous, fresh);
            assertEquals(round + 1, attempts());
            assertEquals("the old login is logged out", round, Krb5LoginModule.logouts.get());
            assertTrue(previous.getPrincipals().isEmpty());
            assertFalse(fresh.getPrincipals().isEmpty());
            refreshedAt.add(at);
            previous = fresh;
        }
        assertTrue("jitter: refreshes at different times " + refreshedAt, refreshedAt.size() > 1);
        login.release();
    }

    /** A ticket cache that nobody renewed: the refresh is always due, yet once a minute. */
    @Test
    public void loginAttemptsAreAtLeastAMinuteApart() throws Exception {
        Krb5LoginModule.startOffsetMs = -90_000;
        Krb5LoginModule.lifetimeMs = 100_000; // from T-90 s to T+10 s: past its refresh time
        KerberosLogins.Login login = KerberosLogins.acquire(source());
        Subject first = use(login);
        assertEquals("the first login at once", 1, attempts());
        now.set(T + 1_000);
        assertSame(first, use(login));
        now.set(T + 59_999);
        assertSame(first, use(login));
        assertEquals(1, attempts());
        now.set(T + 60_000);
        Subject second = use(login);
        assertNotSame(first, second);
        assertEquals(2, attempts());
        now.set(T + 119_999);
        assertSame(second, use(login));
        assertEquals(2, attempts());
        now.set(T + 120_000);
        assertNotSame(second, use(login));
        assertEquals(3, attempts());
        login.release();
    }

    /**
     * A source's own least time between attempts (Kafka's
     * {@code sasl.kerberos.min.time.before.relogin}, ZooKeeper's
     * {@code zookeeper.kerberos.minReLoginTimeMs}): tickets of 20 s refreshed at 80-85% with
     * attempts 5 s apart, round after round, where the default minute would let them expire.
     */
    @Test
    public void theLeastTimeBetweenAttemptsIsTheSources() throws Exception {
        Krb5LoginModule.lifetimeMs = 20_000;
        KerberosLogins.Login login = KerberosLogins.acquire(source().minTimeBeforeRelogin(5_000));
        Subject previous = use(login);
        for (int round = 1; round <= 5; round++) {
            long start = now.get();
            now.set(start + 15_999);
            assertSame("round " + round + ": no refresh before 80%", previous, use(login));
            now.set(start + 17_000); // past 85%, 17 s after the last attempt
            Subject fresh = use(login);
            assertNotSame("round " + round + ": refreshed by 85%", previous, fresh);
            assertEquals(round + 1, attempts());
            previous = fresh;
        }
        // A ticket cache nobody renews: attempts 5 s apart, not a minute.
        Krb5LoginModule.startOffsetMs = -19_000; // each login's TGT ends 1 s after it
        now.addAndGet(20_000);
        Subject stale = use(login);
        assertEquals(7, attempts());
        now.addAndGet(4_999);
        assertSame(stale, use(login));
        assertEquals(7, attempts());
        now.addAndGet(1);
        assertNotSame(stale, use(login));
        assertEquals(8, attempts());
        login.release();
    }

    /** A failed login's message says how long the next attempt waits, in the source's terms. */
    @Test
    public void aFailedLoginNamesTheSourcesLeastTime() throws Exception {
        Krb5LoginModule.failure = KDC_DOWN;
        KerberosLogins.Login login = KerberosLogins.acquire(source().minTimeBeforeRelogin(1_500));
        LoginException first = assertThrows(LoginException.class, () -> use(login));
        now.set(T + 1_000);
        LoginException again = assertThrows(LoginException.class, () -> use(login));
        assertEquals(first.getMessage() + " (1 s ago; attempts are at least 1500 ms apart)",
                again.getMessage());
        assertEquals(1, attempts());
        now.set(T + 1_500);
        assertThrows(LoginException.class, () -> use(login));
        assertEquals(2, attempts());
        login.release();

        KerberosLogins.Login unpaced = KerberosLogins.acquire(source().minTimeBeforeRelogin(0));
        assertThrows(LoginException.class, () -> use(unpaced));
        assertThrows(LoginException.class, () -> use(unpaced));
        assertEquals("0: every use may attempt", 4, attempts());
        unpaced.release();
    }

    /** The least time is part of a source: keepers that pace differently share no login. */
    @Test
    public void sourcesThatPaceDifferentlyAreDifferentLogins() {
        JaasSections jaas = new JaasSections().with("KafkaClient", Krb5LoginModule.NAME);
        KerberosLogins.Source source = kafkaClient(jaas);
        assertEquals(KerberosLogins.MIN_TIME_BEFORE_RELOGIN_MS, source.minTimeBeforeReloginMs);
        assertEquals(source, source.minTimeBeforeRelogin(60_000));
        assertEquals(source.minTimeBeforeRelogin(5_000),
                kafkaClient(jaas).minTimeBeforeRelogin(5_000));
        KerberosLogins.Login a = KerberosLogins.acquire(source);
        KerberosLogins.Login b = KerberosLogins.acquire(source.minTimeBeforeRelogin(5_000));
        assertNotSame(a, b);
        a.release();
        b.release();
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class,
                () -> source.minTimeBeforeRelogin(-1));
        assertEquals("the least time between Kerberos logins is -1 ms; allowed: 0 or more",
                negative.getMessage());
    }

    /** The lifetime is the TGT's, from its start: a cache's TGT may be hours old. */
    @Test
    public void theRefreshTimeCountsFromTheTicketsStart() throws Exception {
        Krb5LoginModule.startOffsetMs = -500_000; // from T-500 s to T+500 s: refresh by T+350 s
        KerberosLogins.Login login = KerberosLogins.acquire(source());
        Subject first = use(login);
        now.set(T + 299_999);
        assertSame(first, use(login));
        assertEquals(1, attempts());
        now.set(T + 350_000);
        assertNotSame(first, use(login));
        assertEquals(2, attempts());
        login.release();
    }

    @Test
    public void aFailedRefreshKeepsTheValidTicket() throws Exception {
        KerberosLogins.Login login = KerberosLogins.acquire(source());
        Subject first = use(login);
        Krb5LoginModule.failure = KDC_DOWN;
        now.set(T + 850_000); // past the refresh time, TGT valid until T+1000 s
        assertSame(first, use(login));
        assertEquals(2, attempts());
        assertEquals(0, Krb5LoginModule.logouts.get());
        assertNotNull(KerberosLogins.tgt(first));
        now.set(T + 909_999);
        assertSame("no new attempt within the minute", first, use(login));
        assertEquals(2, attempts());
        now.set(T + 910_000);
        assertSame(first, use(login));
        assertEquals(3, attempts());
        Krb5LoginModule.failure = null;
        now.set(T + 970_000);
        Subject second = use(login);
        assertNotSame(first, second);
        assertEquals(4, attempts());
        assertEquals(1, Krb5LoginModule.logouts.get());
        assertTrue(first.getPrincipals().isEmpty());
        login.release();
    }

    /** Once the TGT has expired, a failed refresh fails every use until an attempt succeeds. */
    @Test
    public void aFailedRefreshOfAnExpiredTicketThrows() throws Exception {
        KerberosLogins.Login login = KerberosLogins.acquire(source());
        Subject first = use(login);
        Krb5LoginModule.failure = KDC_DOWN;
        now.set(T + 990_000);
        assertSame(first, use(login)); // attempt 2 fails; the TGT serves 10 s more
        now.set(T + 1_000_000); // expired
        LoginException waiting = assertThrows(LoginException.class, () -> use(login));
        assertTrue(waiting.getMessage(), waiting.getMessage().contains(KDC_DOWN));
        assertTrue(waiting.getMessage(), waiting.getMessage().contains("(10 s ago;"));
        assertEquals(2, attempts());
        now.set(T + 1_050_000);
        LoginException failed = assertThrows(LoginException.class, () -> use(login));
        assertEquals(3, attempts());
        assertEquals("Kerberos login of alice@EXAMPLE.COM (JAAS section 'KafkaClient') failed: "
                + KDC_DOWN, failed.getMessage());
        Krb5LoginModule.failure = null;
        now.set(T + 1_110_000);
        Subject second = use(login);
        assertNotSame(first, second);
        assertEquals(4, attempts());
        login.release();
    }

    @Test
    public void aFailedFirstLoginBacksOff() throws Exception {
        Krb5LoginModule.failure = KDC_DOWN;
        KerberosLogins.Login login = KerberosLogins.acquire(source());
        LoginException first = assertThrows(LoginException.class, () -> use(login));
        assertEquals(1, attempts());
        assertTrue(first.getMessage(), first.getMessage().endsWith("failed: " + KDC_DOWN));
        LoginException again = assertThrows(LoginException.class, () -> use(login));
        assertEquals("no attempt within the minute", 1, attempts());
        assertTrue(again.getMessage(), again.getMessage().startsWith(first.getMessage()
                + " (0 s ago; attempts are at least 60 s apart)"));
        assertSame(first, again.getCause());
        now.set(T + 59_999);
        assertThrows(LoginException.class, () -> use(login));
        assertEquals(1, attempts());
        Krb5LoginModule.failure = null;
        now.set(T + 60_000);
        assertEquals(Krb5LoginModule.PRINCIPAL, GssapiClients.clientPrincipal(use(login)));
        assertEquals(2, attempts());
        login.release();
    }

    /**
     * A refused prompt (the JDK module asks for a password when its keytab or ticket cache
     * fails) is reported as what the JAAS options say; an inline text is never quoted.
     */
    @Test
    public void failureMessagesNameThePrincipalAndTheKeytabOrCacheButNotTheText()
            throws Exception {
        Krb5LoginModule.failure = "Unable to obtain password from user";
        Krb5LoginModule.prompt = true;
        String module = Krb5LoginModule.NAME + " required password=\"s3cret\" ";
        String[][] cases = {
            {"useKeyTab=true keyTab=\"/no/alice.keytab\" principal=\"alice@EXAMPLE.COM\";",
                "Kerberos login of alice@EXAMPLE.COM (sasl.jaas.config, keyTab /no/alice.keytab)"
                    + " failed: the keytab cannot be read or holds no key of the principal,"
                    + " and no prompt is allowed"},
            {"useTicketCache=true ticketCache=\"/no/cc\" principal=\"alice@EXAMPLE.COM\";",
                "Kerberos login of alice@EXAMPLE.COM (sasl.jaas.config, ticket cache /no/cc)"
                    + " failed: the ticket cache /no/cc does not exist,"
                    + " and no prompt is allowed"},
            {"useTicketCache=true useKeyTab=true principal=\"alice@EXAMPLE.COM\";",
                "Kerberos login of alice@EXAMPLE.COM (sasl.jaas.config, keyTab (the default),"
                    + " ticket cache (the default)) failed: neither the ticket cache nor the"
                    + " keytab can be used, and no prompt is allowed"},
            {"useKeyTab=true keyTab=\"/no/alice.keytab\";",
                "Kerberos login (sasl.jaas.config, keyTab /no/alice.keytab) failed: JAAS gives"
                    + " no principal for the keytab, and no prompt is allowed"},
            {"principal=\"alice@EXAMPLE.COM\";",
                "Kerberos login of alice@EXAMPLE.COM (sasl.jaas.config) failed: JAAS gives"
                    + " neither a keytab (useKeyTab=true) nor a ticket cache"
                    + " (useTicketCache=true), and no prompt is allowed"},
        };
        for (String[] c : cases) {
            KerberosLogins.Login login = KerberosLogins.acquire(
                    KerberosLogins.Source.inline("KafkaClient", module + c[0]));
            assertEquals("sasl.jaas.config", login.describe());
            LoginException e = assertThrows(LoginException.class, () -> use(login));
            assertEquals(c[1], e.getMessage());
            login.release();
        }
        assertEquals(cases.length, attempts());
    }

    @Test
    public void loginsAreSharedPerSourceAndCounted() throws Exception {
        JaasSections jaas = new JaasSections()
                .with("KafkaClient", Krb5LoginModule.NAME)
                .with("Client", Krb5LoginModule.NAME);
        KerberosLogins.Login a = KerberosLogins.acquire(kafkaClient(jaas));
        KerberosLogins.Login b = KerberosLogins.acquire(kafkaClient(jaas));
        assertSame("an equal source, the same login", a, b);
        KerberosLogins.Login otherSection =
                KerberosLogins.acquire(KerberosLogins.Source.jvm("Client", jaas));
        KerberosLogins.Login otherConfiguration = KerberosLogins.acquire(source());
        assertNotSame(a, otherSection);
        assertNotSame(a, otherConfiguration);
        assertNotSame(otherSection, otherConfiguration);
        otherSection.release();
        otherConfiguration.release();

        String text = Krb5LoginModule.NAME + " required principal=\"alice@EXAMPLE.COM\";";
        KerberosLogins.Login inline = KerberosLogins.acquire(
                KerberosLogins.Source.inline("KafkaClient", text));
        assertSame(inline,
                KerberosLogins.acquire(KerberosLogins.Source.inline("KafkaClient", text)));
        assertNotSame(a, inline);
        inline.release();
        inline.release();

        Subject subject = use(a);
        assertSame(subject, use(b));
        assertEquals(1, attempts());
        a.release();
        assertSame("one reference left: still logged in", subject, use(b));
        assertEquals(0, Krb5LoginModule.logouts.get());
        b.release();
        assertEquals("the last release logs out", 1, Krb5LoginModule.logouts.get());
        assertTrue(subject.getPrincipals().isEmpty());
        IllegalStateException released = assertThrows(IllegalStateException.class, () -> use(b));
        assertTrue(released.getMessage(), released.getMessage().contains("was released"));
        assertEquals(1, attempts());

        KerberosLogins.Login c = KerberosLogins.acquire(kafkaClient(jaas));
        assertNotSame("a new login after the last release", a, c);
        assertNotSame(subject, use(c));
        assertEquals(2, attempts());
        c.release();
    }

    @Test
    public void aLoginReleasedBeforeUseRefusesWithoutLoggingIn() throws Exception {
        KerberosLogins.Login login = KerberosLogins.acquire(source());
        login.release();
        assertThrows(IllegalStateException.class, () -> use(login));
        assertEquals(0, attempts());
        assertEquals(0, Krb5LoginModule.logouts.get());
    }

    @Test
    public void aLoginWithoutATgtIsNotRefreshed() throws Exception {
        Krb5LoginModule.withTgt = false;
        KerberosLogins.Login login = KerberosLogins.acquire(source());
        Subject subject = use(login);
        now.set(T + 10L * 365 * 24 * 3600 * 1000);
        assertSame(subject, use(login));
        assertEquals(1, attempts());
        login.release();
    }

    /** Uses share the subject: one in progress does not hold up another. */
    @Test(timeout = 30_000)
    public void usesRunAtTheSameTime() throws Exception {
        KerberosLogins.Login login = KerberosLogins.acquire(source());
        Subject subject = use(login);
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<Subject> held = pool.submit(() -> login.withSubject(s -> {
                inside.countDown();
                finish.await();
                return s;
            }));
            inside.await();
            assertSame(subject, use(login)); // would wait for finish if uses excluded each other
            finish.countDown();
            assertSame(subject, held.get());
        } finally {
            finish.countDown();
            pool.shutdownNow();
        }
        login.release();
    }

    /** A refresh waits for uses in progress: no subject is logged out while in use. */
    @Test(timeout = 30_000)
    public void aRefreshWaitsForUsesInProgress() throws Exception {
        KerberosLogins.Login login = KerberosLogins.acquire(source());
        use(login);
        refreshDuringAUse(login, T + 100_000, T + 900_000);
        login.release();
    }

    /** A use that refreshed holds off the next refresh as well. */
    @Test(timeout = 30_000)
    public void aRefreshWaitsForAUseThatRefreshed() throws Exception {
        KerberosLogins.Login login = KerberosLogins.acquire(source());
        use(login);
        refreshDuringAUse(login, T + 900_000, T + 1_800_000);
        login.release();
    }

    /**
     * A use at {@code useAt} that has not ended when another, at {@code refreshAt}, is due to
     * refresh: the refresh waits for it, then logs the subject out.
     */
    private void refreshDuringAUse(KerberosLogins.Login login, long useAt, long refreshAt)
            throws Exception {
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            now.set(useAt);
            AtomicReference<Subject> inUse = new AtomicReference<>();
            Future<Boolean> held = pool.submit(() -> login.withSubject(s -> {
                inUse.set(s);
                inside.countDown();
                finish.await();
                return !s.getPrincipals().isEmpty(); // still logged in at the end of the use
            }));
            inside.await();
            int attempts = attempts();
            now.set(refreshAt);
            AtomicReference<Thread> refresher = new AtomicReference<>();
            Future<Subject> refreshed = pool.submit(() -> {
                refresher.set(Thread.currentThread());
                return use(login);
            });
            // Until the refresher waits for the lock; it fails at once if it does not.
            while (refresher.get() == null
                    || refresher.get().getState() != Thread.State.WAITING) {
                if (refreshed.isDone()) {
                    fail("the refresh did not wait for the use in progress: " + refreshed.get());
                }
                Thread.sleep(1);
            }
            assertEquals(attempts, attempts());
            assertFalse(inUse.get().getPrincipals().isEmpty());
            finish.countDown();
            assertTrue(held.get());
            Subject fresh = refreshed.get();
            assertNotSame(inUse.get(), fresh);
            assertEquals(attempts + 1, attempts());
            assertTrue(inUse.get().getPrincipals().isEmpty());
        } finally {
            finish.countDown();
            pool.shutdownNow();
        }
    }

    /** JGSS finds the credentials of the subject that {@code callAs} runs as, on every JDK. */
    @Test
    public void callAsRunsAsTheSubjectAndThrowsWhatTheActionThrew() throws Exception {
        Subject subject = new Subject();
        subject.getPrincipals().add(new KerberosPrincipal(Krb5LoginModule.PRINCIPAL));
        assertSame(subject, KerberosLogins.callAs(subject, KerberosLoginsTest::currentSubject));
        assertEquals("result", KerberosLogins.callAs(subject, () -> "result"));

        IOException checked = new IOException("checked");
        assertSame(checked, assertThrows(IOException.class,
                () -> KerberosLogins.callAs(subject, () -> {
                    throw checked;
                })));
        IllegalStateException unchecked = new IllegalStateException("unchecked");
        assertSame(unchecked, assertThrows(IllegalStateException.class,
                () -> KerberosLogins.callAs(subject, () -> {
                    throw unchecked;
                })));
        LinkageError error = new LinkageError("error");
        assertSame(error, assertThrows(LinkageError.class,
                () -> KerberosLogins.callAs(subject, () -> {
                    throw error;
                })));
    }

    /** {@code Subject.current()} (Java 18 and later), else the access control context's. */
    @SuppressWarnings({"deprecation", "removal"})
    static Subject currentSubject() throws Exception {
        Method current;
        try {
            current = Subject.class.getMethod("current");
        } catch (NoSuchMethodException e) {
            return Subject.getSubject(java.security.AccessController.getContext());
        }
        return (Subject) current.invoke(null);
    }
}
