package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.auth.login.AppConfigurationEntry.LoginModuleControlFlag;
import org.junit.Test;

/**
 * {@link InlineJaas}: Kafka's {@code sasl.jaas.config} grammar, and messages that never quote a
 * token of the text (any token may be part of a password).
 */
public class InlineJaasTest {
    private static AppConfigurationEntry only(String text) {
        AppConfigurationEntry[] entries =
                InlineJaas.parse("KafkaClient", text).getAppConfigurationEntry("KafkaClient");
        assertEquals(1, entries.length);
        return entries[0];
    }

    private static Map<String, String> map(String... kv) {
        Map<String, String> map = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            map.put(kv[i], kv[i + 1]);
        }
        return map;
    }

    @Test
    public void readsModuleFlagAndOptions() {
        AppConfigurationEntry entry = only("com.sun.security.auth.module.Krb5LoginModule required"
                + " useKeyTab=true storeKey=true keyTab=\"/etc/security/a b.keytab\""
                + " principal='kafka-client/host.example.com@EXAMPLE.COM' serviceName=kafka;");
        assertEquals("com.sun.security.auth.module.Krb5LoginModule", entry.getLoginModuleName());
        assertEquals(LoginModuleControlFlag.REQUIRED, entry.getControlFlag());
        assertEquals(map("useKeyTab", "true", "storeKey", "true",
                "keyTab", "/etc/security/a b.keytab",
                "principal", "kafka-client/host.example.com@EXAMPLE.COM",
                "serviceName", "kafka"), entry.getOptions());
    }

    @Test
    public void onlyItsOwnSectionHasTheEntry() {
        InlineJaas jaas = InlineJaas.parse("Client", "a.B required;");
        assertEquals(1, jaas.getAppConfigurationEntry("Client").length);
        assertNull(jaas.getAppConfigurationEntry("KafkaClient"));
        // Each call gets its own array: a caller cannot change the configuration.
        jaas.getAppConfigurationEntry("Client")[0] = null;
        assertEquals("a.B", jaas.getAppConfigurationEntry("Client")[0].getLoginModuleName());
    }

    @Test
    public void controlFlagsInAnyCase() {
        assertEquals(LoginModuleControlFlag.REQUIRED, only("a.B REQUIRED;").getControlFlag());
        assertEquals(LoginModuleControlFlag.REQUISITE, only("a.B requisite;").getControlFlag());
        assertEquals(LoginModuleControlFlag.SUFFICIENT, only("a.B Sufficient;").getControlFlag());
        assertEquals(LoginModuleControlFlag.OPTIONAL, only("a.B optional;").getControlFlag());
    }

    @Test
    public void quotesKeepSpecialCharactersAndCommentsAreSkipped() {
        AppConfigurationEntry entry = only("// a comment\n  a.B /* another */ required\n"
                + "  one=\"x;y=z\" two='say \"hi\"' three=\"it's\" // to the end of the line\n"
                + "  four=/* none */plain;\n// after");
        assertEquals("a.B", entry.getLoginModuleName());
        assertEquals(map("one", "x;y=z", "two", "say \"hi\"", "three", "it's", "four", "plain"),
                entry.getOptions());
        assertTrue(only("a.B required;").getOptions().isEmpty());
        assertEquals(map("k", ""), only("a.B required k=\"\";").getOptions());
    }

    @Test
    public void exactlyOneLoginModule() {
        assertEquals("sasl.jaas.config has 0 login modules; it must have exactly 1",
                message(""));
        assertEquals("sasl.jaas.config has 0 login modules; it must have exactly 1",
                message("  // nothing but a comment"));
        assertEquals("sasl.jaas.config has 2 login modules; it must have exactly 1",
                message("a.B required; c.D optional x=y;"));
    }

    /** Each message names where the text goes wrong and what was expected. */
    @Test
    public void messagesSayWhereAndWhat() {
        assertEquals("sasl.jaas.config: entry 1: a login module class is expected first",
                message("= required;"));
        assertEquals("sasl.jaas.config: entry 1: a control flag is expected after the login"
                + " module class", message("a.B"));
        assertEquals("sasl.jaas.config: entry 1: a control flag is expected after the login"
                + " module class", message("a.B ;"));
        assertEquals("sasl.jaas.config: entry 1: the control flag is not one of required,"
                + " requisite, sufficient, optional", message("a.B mandatory;"));
        assertEquals("sasl.jaas.config: entry 1, option 1: an option name is expected",
                message("a.B required =x;"));
        String nameValue = "name=value is expected (a value with spaces or special characters"
                + " must be quoted)";
        assertEquals("sasl.jaas.config: entry 1, option 2: " + nameValue,
                message("a.B required one=1 two;"));
        assertEquals("sasl.jaas.config: entry 1, option 1: " + nameValue,
                message("a.B required one= ;"));
        assertEquals("sasl.jaas.config: entry 1, option 1: " + nameValue,
                message("a.B required one==x;"));
        assertEquals("sasl.jaas.config: entry 1: ';' is expected at its end",
                message("a.B required one=1"));
        assertEquals("sasl.jaas.config: entry 2: the control flag is not one of required,"
                + " requisite, sufficient, optional", message("a.B required; c.D x=y;"));
    }

    /**
     * Texts that do not parse, each token marked {@code Zq}: no message holds the mark, in any
     * case. An unquoted password with a space is the typical one.
     */
    @Test
    public void messagesNeverQuoteATokenOfTheText() {
        String[] texts = {
            "org.Zq.PlainLoginModule required username=Zqu password=Zqhunter2 Zqs3cret;",
            "org.Zq.PlainLoginModule required username=Zqu password=Zqhunter2 Zqs3cret",
            "org.Zq.PlainLoginModule Zqs3cret username=Zqu;",
            "org.Zq.PlainLoginModule required username=Zqu password=\"Zqs3cret;",
            "org.Zq.PlainLoginModule required Zqpassword;",
            "org.Zq.PlainLoginModule required Zqkey = Zqa = Zqb;",
            "Zqs3cret",
            "Zqs3cret = Zqvalue;",
            "org.Zq.A required a=Zq1; org.Zq.B required b=Zq2;",
            "org.Zq.A required a=Zq1; Zqs3cret",
        };
        for (String text : texts) {
            String message = message(text);
            assertFalse(text + " -> " + message,
                    message.toLowerCase(Locale.ROOT).contains("zq"));
        }
    }

    private static String message(String text) {
        return assertThrows(IllegalArgumentException.class,
                () -> InlineJaas.parse("KafkaClient", text)).getMessage();
    }
}
