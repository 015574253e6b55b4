package io.offsetkeeper;

import java.io.IOException;
import java.io.StreamTokenizer;
import java.io.StringReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.auth.login.AppConfigurationEntry.LoginModuleControlFlag;
import javax.security.auth.login.Configuration;

/**
 * A JAAS configuration of one section read from Kafka's {@code sasl.jaas.config} text:
 * {@code <loginModuleClass> <controlFlag> (<option>=<value>)* ;}, with Kafka's token rules
 * (values may be quoted with {@code "} or {@code '}; {@code //} and {@code /* *}{@code /}
 * comments). Kafka's own parser is an internal class of kafka-clients, which the jar does not
 * use at run time. Messages name positions, never a token of the text: an unquoted value with
 * spaces is split into tokens, so any token may be part of a password.
 */
final class InlineJaas extends Configuration {
    private final String section;
    private final AppConfigurationEntry[] entries;

    private InlineJaas(String section, AppConfigurationEntry[] entries) {
        this.section = section;
        this.entries = entries;
    }

    /**
     * The configuration holding {@code text}'s entries under {@code section}; Kafka's client
     * allows exactly one login module there.
     *
     * @throws IllegalArgumentException when the text does not parse, naming what is wrong
     */
    static InlineJaas parse(String section, String text) {
        List<AppConfigurationEntry> entries = new ArrayList<>();
        StreamTokenizer tokens = tokenizer(text);
        try {
            while (tokens.nextToken() != StreamTokenizer.TT_EOF) {
                entries.add(entry(tokens, entries.size() + 1));
            }
        } catch (IOException e) {
            // A StringReader does not fail.
            throw new IllegalStateException(e);
        }
        if (entries.size() != 1) {
            throw new IllegalArgumentException("sasl.jaas.config has " + entries.size()
                    + " login modules; it must have exactly 1");
        }
        return new InlineJaas(section, entries.toArray(new AppConfigurationEntry[0]));
    }

    @Override
    public AppConfigurationEntry[] getAppConfigurationEntry(String name) {
        return section.equals(name) ? entries.clone() : null;
    }

    private static StreamTokenizer tokenizer(String text) {
        StreamTokenizer tokens = new StreamTokenizer(new StringReader(text));
        tokens.resetSyntax();
        tokens.wordChars(32, 128);
        tokens.wordChars(128 + 32, 255);
        tokens.ordinaryChar(';');
        tokens.ordinaryChar('=');
        tokens.whitespaceChars(0, ' ');
        tokens.commentChar('/');
        tokens.quoteChar('"');
        tokens.quoteChar('\'');
        tokens.slashSlashComments(true);
        tokens.slashStarComments(true);
        return tokens;
    }

    /** Entry {@code number} (from 1); the tokenizer is on its first token. */
    private static AppConfigurationEntry entry(StreamTokenizer tokens, int number)
            throws IOException {
        String at = "sasl.jaas.config: entry " + number;
        String module = tokens.sval;
        if (module == null) {
            throw new IllegalArgumentException(at + ": a login module class is expected first");
        }
        if (tokens.nextToken() == StreamTokenizer.TT_EOF || tokens.sval == null) {
            throw new IllegalArgumentException(
                    at + ": a control flag is expected after the login module class");
        }
        LoginModuleControlFlag flag = flag(tokens.sval, at);
        Map<String, String> options = new HashMap<>();
        int count = 0;
        while (tokens.nextToken() != StreamTokenizer.TT_EOF && tokens.ttype != ';') {
            String option = at + ", option " + ++count;
            String key = tokens.sval;
            if (key == null) {
                throw new IllegalArgumentException(option + ": an option name is expected");
            }
            if (tokens.nextToken() != '=' || tokens.nextToken() == StreamTokenizer.TT_EOF
                    || tokens.sval == null) {
                throw new IllegalArgumentException(option + ": name=value is expected (a value"
                        + " with spaces or special characters must be quoted)");
            }
            options.put(key, tokens.sval);
        }
        if (tokens.ttype != ';') {
            throw new IllegalArgumentException(at + ": ';' is expected at its end");
        }
        return new AppConfigurationEntry(module, flag, options);
    }

    private static LoginModuleControlFlag flag(String flag, String at) {
        switch (flag.toUpperCase(Locale.ROOT)) {
            case "REQUIRED":
                return LoginModuleControlFlag.REQUIRED;
            case "REQUISITE":
                return LoginModuleControlFlag.REQUISITE;
            case "SUFFICIENT":
                return LoginModuleControlFlag.SUFFICIENT;
            case "OPTIONAL":
                return LoginModuleControlFlag.OPTIONAL;
            default:
                throw new IllegalArgumentException(at + ": the control flag is not one of"
                        + " required, requisite, sufficient, optional");
        }
    }
}
