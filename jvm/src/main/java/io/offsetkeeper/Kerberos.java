package io.offsetkeeper;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.auth.login.Configuration;
import org.slf4j.LoggerFactory;

/**
 * Decides, as Kafka's and ZooKeeper's Java clients would, whether a keeper authenticates with
 * Kerberos (SASL GSSAPI through the JVM's JAAS login), each time the keeper checks or opens its
 * engine, as {@link KeyStores} reads Java keystores then. The keeper keeps its settings as
 * given; the engine gets them with the mechanism made explicit, and a {@link GssapiClients}.
 *
 * <p>Kafka: {@code security.protocol} {@code SASL_PLAINTEXT} or {@code SASL_SSL} with
 * {@code sasl.mechanism} (or librdkafka's {@code sasl.mechanisms}, read as the engine reads
 * them) {@code GSSAPI} or unset; the login is {@code sasl.jaas.config}, else
 * the JVM's {@code KafkaClient} section; the service name is {@code sasl.kerberos.service.name}
 * or the JAAS option {@code serviceName}; login attempts are at least
 * {@code sasl.kerberos.min.time.before.relogin} ms apart.
 *
 * <p>ZooKeeper: unless {@code zookeeper.sasl.client} is false, the JVM's JAAS section named by
 * {@code zookeeper.sasl.clientconfig} (default {@code Client}) when its login module is
 * {@code Krb5LoginModule}; a missing section is skipped unless it was named. A keeper's own
 * {@code zookeeper.*} setting wins over the system property of the same name, which
 * ZooKeeper's client reads. A DIGEST-MD5 login ({@code zookeeper.sasl.username}) is left as it
 * is. Login attempts are at least {@code zookeeper.kerberos.minReLoginTimeMs} ms apart, a system
 * property only, as ZooKeeper's {@code Login} reads it.
 *
 * <p>Both least times default to {@link KerberosLogins#MIN_TIME_BEFORE_RELOGIN_MS}, as in those
 * clients; a login that refreshes its ticket at 80% of a lifetime shorter than the least time
 * would use an expired ticket, so short-lived tickets need them lowered (as those clients do).
 */
final class Kerberos {
    static final String KAFKA_SECTION = "KafkaClient";
    static final String ZOOKEEPER_SECTION = "Client";
    private static final String GSSAPI = "GSSAPI";
    private static final String LOGIN_CONFIG = "java.security.auth.login.config";
    /** Kafka's least time between logins (ms), a Kafka setting. */
    static final String KAFKA_MIN_RELOGIN = "sasl.kerberos.min.time.before.relogin";
    /** ZooKeeper's ({@code org.apache.zookeeper.Login}), a system property only. */
    static final String ZOOKEEPER_MIN_RELOGIN = "zookeeper.kerberos.minReLoginTimeMs";
    /** ZooKeeper sections already logged as turned on by the JVM alone: once per JVM each. */
    private static final Set<String> LOGGED_SECTIONS = ConcurrentHashMap.newKeySet();

    private Kerberos() {}

    /**
     * Decides Kerberos for both services and adds the engine's keys for it to the given maps
     * (copies made for the engine): {@code sasl.mechanism=GSSAPI} and
     * {@code sasl.kerberos.service.name} for Kafka, {@code zookeeper.sasl.mechanism=GSSAPI}
     * for ZooKeeper. Nothing logs in here.
     *
     * @param settings the keeper's settings ({@code zookeeper.*}, {@code offsetkeeper.*}, and
     *     Kafka keys that win over kafkaParams)
     * @param kafkaParams the job's kafkaParams
     * @return the logins to hand to the engine, or null when neither service uses Kerberos;
     *     {@link GssapiClients#close()} it when the engine is closed
     * @throws IllegalArgumentException when the Kerberos settings are incomplete or conflict
     */
    static GssapiClients configure(Map<String, String> settings, Map<String, String> kafkaParams) {
        KafkaPlan kafka = kafkaPlan(settings, kafkaParams);
        ZooKeeperPlan zookeeper = zookeeperPlan(settings);
        if (kafka == null && zookeeper == null) {
            return null;
        }
        if (kafka != null) {
            setGssapi(kafkaParams, true);
            kafkaParams.put("sasl.kerberos.service.name", kafka.serviceName);
            // A Kafka key among the keeper's settings wins over kafkaParams: same values there.
            setGssapi(settings, false);
            settings.replace("sasl.kerberos.service.name", kafka.serviceName);
        }
        if (zookeeper != null) {
            settings.put("zookeeper.sasl.mechanism", GSSAPI);
        }
        // Acquired last: nothing above may leave a login counted.
        return new GssapiClients(
                zookeeper == null ? null : new GssapiClients.Target("ZooKeeper",
                        KerberosLogins.acquire(zookeeper.source), zookeeper.serverName),
                kafka == null ? null : new GssapiClients.Target("Kafka",
                        KerberosLogins.acquire(kafka.source),
                        GssapiClients.kafka(kafka.serviceName)));
    }

    private static final class KafkaPlan {
        final KerberosLogins.Source source;
        final String serviceName;

        KafkaPlan(KerberosLogins.Source source, String serviceName) {
            this.source = source;
            this.serviceName = serviceName;
        }
    }

    private static final class ZooKeeperPlan {
        final KerberosLogins.Source source;
        final GssapiClients.ServerName serverName;

        ZooKeeperPlan(KerberosLogins.Source source, GssapiClients.ServerName serverName) {
            this.source = source;
            this.serverName = serverName;
        }
    }

    private static KafkaPlan kafkaPlan(Map<String, String> settings,
            Map<String, String> kafkaParams) {
        String protocol = kafkaValue(settings, kafkaParams, "security.protocol");
        // Only the two SASL protocols: a misspelt one ("SASL_PLAIN") is left to the engine's
        // check in build(), which refuses it naming the allowed values.
        String upper = protocol == null ? null : protocol.trim().toUpperCase(Locale.ROOT);
        if (!"SASL_PLAINTEXT".equals(upper) && !"SASL_SSL".equals(upper)) {
            return null;
        }
        String mechanism = kafkaMechanism(settings, kafkaParams);
        // Kafka's default mechanism is GSSAPI.
        if (mechanism != null && !mechanism.trim().equalsIgnoreCase(GSSAPI)) {
            return null;
        }
        String text = kafkaValue(settings, kafkaParams, "sasl.jaas.config");
        KerberosLogins.Source source;
        AppConfigurationEntry[] entries;
        if (text != null) {
            source = KerberosLogins.Source.inline(KAFKA_SECTION, text);
            entries = source.configuration.getAppConfigurationEntry(KAFKA_SECTION);
        } else {
            Configuration jvm;
            try {
                jvm = Configuration.getConfiguration();
            } catch (SecurityException e) {
                // Neither its message nor the exception: both may quote the file's text.
                throw new IllegalArgumentException("Kafka SASL GSSAPI: no sasl.jaas.config, and"
                        + " the JVM's JAAS configuration cannot be read: " + jaasFileError(e));
            }
            entries = section(jvm, KAFKA_SECTION);
            if (entries == null) {
                // Kafka's JaasContext says the same.
                String file = System.getProperty(LOGIN_CONFIG);
                throw new IllegalArgumentException("Kafka SASL GSSAPI: no sasl.jaas.config, and"
                        + " could not find a 'KafkaClient' entry in the JAAS configuration."
                        + " System property '" + LOGIN_CONFIG + "' is "
                        + (file == null ? "not set" : file));
            }
            source = KerberosLogins.Source.jvm(KAFKA_SECTION, jvm);
        }
        long minRelogin = minTimeBeforeRelogin("Kafka setting " + KAFKA_MIN_RELOGIN,
                kafkaValue(settings, kafkaParams, KAFKA_MIN_RELOGIN));
        return new KafkaPlan(source.minTimeBeforeRelogin(minRelogin), serviceName(entries,
                kafkaValue(settings, kafkaParams, "sasl.kerberos.service.name")));
    }

    /**
     * A least time between logins in milliseconds, as Kafka parses a long (trimmed), 0 or
     * more; {@link KerberosLogins#MIN_TIME_BEFORE_RELOGIN_MS} when {@code value} is null.
     *
     * @param what how messages name the setting
     * @throws IllegalArgumentException naming the setting and the value
     */
    static long minTimeBeforeRelogin(String what, String value) {
        if (value == null) {
            return KerberosLogins.MIN_TIME_BEFORE_RELOGIN_MS;
        }
        long millis;
        try {
            millis = Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            millis = -1;
        }
        if (millis < 0) {
            throw new IllegalArgumentException(what + " is '" + value + "'; allowed: a whole"
                    + " number of milliseconds, 0 or more (default "
                    + KerberosLogins.MIN_TIME_BEFORE_RELOGIN_MS + ")");
        }
        return millis;
    }

    /** Kafka's {@code KerberosLogin.getServiceName}: JAAS {@code serviceName} or the config's. */
    private static String serviceName(AppConfigurationEntry[] entries, String configured) {
        String fromJaas = null;
        for (AppConfigurationEntry entry : entries) {
            Object value = entry.getOptions().get("serviceName");
            if (value != null) {
                fromJaas = value.toString();
                break;
            }
        }
        if (fromJaas != null && configured != null && !fromJaas.equals(configured)) {
            throw new IllegalArgumentException("Conflicting serviceName values found in JAAS and"
                    + " Kafka configs value in JAAS file " + fromJaas + ", value in Kafka config "
                    + configured);
        }
        String name = fromJaas != null ? fromJaas : configured;
        if (name == null || name.trim().isEmpty()) {
            throw new IllegalArgumentException(
                    "No serviceName defined in either JAAS or Kafka config");
        }
        return name.trim();
    }

    private static ZooKeeperPlan zookeeperPlan(Map<String, String> settings) {
        String mechanism = settings.get("zookeeper.sasl.mechanism");
        boolean explicitGssapi = mechanism != null && mechanism.trim().equalsIgnoreCase(GSSAPI);
        if (mechanism != null && !explicitGssapi) {
            return null;
        }
        if (!explicitGssapi && (settings.containsKey("zookeeper.sasl.username")
                || settings.containsKey("zookeeper.sasl.password"))) {
            return null; // DIGEST-MD5, read by the engine
        }
        // ZKClientConfig: Boolean.valueOf, so anything but "true" turns SASL off.
        if (!Boolean.valueOf(zookeeperValue(settings, "zookeeper.sasl.client", "true").trim())) {
            if (explicitGssapi) {
                throw new IllegalArgumentException(
                        "zookeeper.sasl.mechanism is GSSAPI but zookeeper.sasl.client is false");
            }
            return null;
        }
        String named = zookeeperValue(settings, "zookeeper.sasl.clientconfig", null);
        String section = named != null ? named.trim() : ZOOKEEPER_SECTION;
        boolean required = named != null || explicitGssapi;
        String why = named != null ? "zookeeper.sasl.clientconfig"
                : "zookeeper.sasl.mechanism=GSSAPI";
        Configuration jvm;
        try {
            jvm = Configuration.getConfiguration();
        } catch (SecurityException e) {
            if (!required) {
                return null; // as ZooKeeper's client: no JAAS, no SASL
            }
            // Neither its message nor the exception: both may quote the file's text.
            throw new IllegalArgumentException("ZooKeeper SASL (" + why + "): the JVM's JAAS"
                    + " configuration cannot be read: " + jaasFileError(e));
        }
        AppConfigurationEntry[] entries = section(jvm, section);
        if (entries == null) {
            if (!required) {
                return null; // as ZooKeeper's client: no section, no SASL
            }
            String file = System.getProperty(LOGIN_CONFIG);
            throw new IllegalArgumentException("ZooKeeper SASL (" + why + "): the JAAS"
                    + " configuration has no section '" + section + "'; system property '"
                    + LOGIN_CONFIG + "' is " + (file == null ? "not set" : file));
        }
        if (!isKerberos(entries)) {
            if (explicitGssapi) {
                throw new IllegalArgumentException("zookeeper.sasl.mechanism is GSSAPI but JAAS"
                        + " section '" + section + "' has no Krb5LoginModule");
            }
            return null;
        }
        String principal = zookeeperValue(settings, "zookeeper.server.principal", null);
        if (principal != null) {
            principal = principal.trim();
            if (principal.indexOf('/') <= 0) {
                throw new IllegalArgumentException("zookeeper.server.principal '" + principal
                        + "' has no host part; GSSAPI needs service/host[@REALM]");
            }
        }
        String username = zookeeperValue(settings, "zookeeper.sasl.client.username", "zookeeper");
        boolean canonicalize = Boolean.parseBoolean(zookeeperValue(settings,
                "zookeeper.sasl.client.canonicalize.hostname", "true").trim());
        String realm = zookeeperValue(settings, "zookeeper.server.realm", null);
        if (!explicitGssapi && !settings.containsKey("zookeeper.sasl.clientconfig")) {
            logTurnedOn(section);
        }
        long minRelogin = minTimeBeforeRelogin("system property " + ZOOKEEPER_MIN_RELOGIN,
                System.getProperty(ZOOKEEPER_MIN_RELOGIN));
        return new ZooKeeperPlan(
                KerberosLogins.Source.jvm(section, jvm).minTimeBeforeRelogin(minRelogin),
                GssapiClients.zookeeper(principal, username.trim(), canonicalize,
                        realm == null ? null : realm.trim()));
    }

    private static boolean isKerberos(AppConfigurationEntry[] entries) {
        for (AppConfigurationEntry entry : entries) {
            // OpenJDK's com.sun.security.auth.module, IBM's com.ibm.security.auth.module.
            if (entry.getLoginModuleName().trim().endsWith(".Krb5LoginModule")) {
                return true;
            }
        }
        return false;
    }

    /**
     * Says why ZooKeeper uses Kerberos when the keeper did not ask for it, as ZooKeeper's client
     * does silently: a JVM with a Kerberos {@code Client} section (a Hadoop cluster's) may
     * surprise a keeper meant for an unsecured ZooKeeper. Once per JVM and section, since
     * every build and open decides again.
     */
    private static void logTurnedOn(String section) {
        if (!LOGGED_SECTIONS.add(section)) {
            return;
        }
        try {
            LoggerFactory.getLogger("offsetkeeper.kerberos").info("ZooKeeper: Kerberos (SASL"
                    + " GSSAPI) is on, as in ZooKeeper's client, because JAAS section '" + section
                    + "' of the JVM's login configuration has Krb5LoginModule;"
                    + " zookeeper.sasl.client=false turns it off");
        } catch (Throwable ignored) {
            // A broken logging setup must not break offset handling (as NativeLog).
        }
    }

    private static final List<String> MECHANISM_KEYS =
            Arrays.asList("sasl.mechanism", "sasl.mechanisms");

    /**
     * The mechanism the engine will use: both keys count, the last one given wins, kafkaParams
     * before the keeper's settings (rust/core/src/kafka/params.rs {@code from_params}, config.rs
     * {@code from_settings_and_kafka_params}).
     */
    private static String kafkaMechanism(Map<String, String> settings,
            Map<String, String> kafkaParams) {
        String mechanism = null;
        for (Map<String, String> map : Arrays.asList(kafkaParams, settings)) {
            for (Map.Entry<String, String> entry : map.entrySet()) {
                if (MECHANISM_KEYS.contains(entry.getKey().trim())) {
                    mechanism = entry.getValue();
                }
            }
        }
        return mechanism;
    }

    /** Makes GSSAPI the map's only mechanism key; {@code always}: even if it had none. */
    private static void setGssapi(Map<String, String> map, boolean always) {
        boolean had = map.keySet().removeIf(key -> MECHANISM_KEYS.contains(key.trim()));
        if (had || always) {
            map.put("sasl.mechanism", GSSAPI);
        }
    }

    // ConfigFile's English messages: "Configuration Error:\n\tLine 3: expected [option key],
    // found [...]", "Configuration Error:\n\texpected [;], read [end of file]".
    private static final Pattern JAAS_ERROR = Pattern.compile(
            "Configuration Error:\\s*(Line (\\d[\\d,]*): )?(expected \\[([^\\]]*)\\])?");
    // ConfigFile's grammar words: what it expected, never a token of the file.
    private static final List<String> JAAS_EXPECTED = Arrays.asList("{", "}", ";", "=",
            "module class name", "controlFlag", "option key", "option value");

    /**
     * Where the JVM's JAAS file went wrong, from {@code ConfigFile}'s message but not quoting
     * it: parts of it ("found [...]", a control flag) may be a token of the file, such as a
     * password.
     */
    private static String jaasFileError(Throwable e) {
        String text = String.valueOf(e.getMessage());
        String file = System.getProperty(LOGIN_CONFIG);
        String where = file == null ? "" : " (" + LOGIN_CONFIG + " " + file + ")";
        int at = text.indexOf("Configuration Error:");
        Matcher m = JAAS_ERROR.matcher(text);
        if (at >= 0 && m.region(at, text.length()).lookingAt()) {
            String line = m.group(2);
            String expected = m.group(4) != null && JAAS_EXPECTED.contains(m.group(4))
                    ? ": expected [" + m.group(4) + "]" : "";
            if (line != null) {
                return "line " + line + " of the file" + where + " does not parse" + expected;
            }
            if (!expected.isEmpty()) {
                return "the file" + where + " ends too early" + expected;
            }
        }
        if (text.contains("No such file or directory")) {
            return "no such file" + where;
        }
        return "the file" + where + " does not parse or cannot be read";
    }

    /** A Kafka key's value: the keeper's setting wins over kafkaParams. */
    private static String kafkaValue(Map<String, String> settings, Map<String, String> kafkaParams,
            String key) {
        String value = settings.get(key);
        return value != null ? value : kafkaParams.get(key);
    }

    /** A ZooKeeper client key's value: the keeper's setting, else the system property. */
    private static String zookeeperValue(Map<String, String> settings, String key,
            String otherwise) {
        String value = settings.get(key);
        if (value == null) {
            value = System.getProperty(key);
        }
        return value != null ? value : otherwise;
    }

    /** A section's entries, null when missing (some Configurations throw instead). */
    private static AppConfigurationEntry[] section(Configuration configuration, String name) {
        try {
            AppConfigurationEntry[] entries = configuration.getAppConfigurationEntry(name);
            return entries == null || entries.length == 0 ? null : entries;
        } catch (IllegalArgumentException | SecurityException e) {
            return null;
        }
    }
}
