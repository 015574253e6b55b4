package io.offsetkeeper;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.security.auth.login.AppConfigurationEntry;
import javax.security.auth.login.AppConfigurationEntry.LoginModuleControlFlag;
import javax.security.auth.login.Configuration;

/**
 * A JAAS configuration for the Kerberos logic tests, built in code: sections of one required
 * login module each. Every instance is a distinct configuration, so logins of
 * {@link KerberosLogins.Source#jvm} sources on different instances are never shared.
 */
final class JaasSections extends Configuration {
    private final Map<String, AppConfigurationEntry[]> sections = new LinkedHashMap<>();

    /** Adds section {@code name}: {@code module} required, options as key, value, ... */
    JaasSections with(String name, String module, String... options) {
        Map<String, String> map = new HashMap<>();
        for (int i = 0; i < options.length; i += 2) {
            map.put(options[i], options[i + 1]);
        }
        sections.put(name, new AppConfigurationEntry[] {
                new AppConfigurationEntry(module, LoginModuleControlFlag.REQUIRED, map)});
        return this;
    }

    @Override
    public AppConfigurationEntry[] getAppConfigurationEntry(String name) {
        AppConfigurationEntry[] entries = sections.get(name);
        return entries == null ? null : entries.clone();
    }
}
