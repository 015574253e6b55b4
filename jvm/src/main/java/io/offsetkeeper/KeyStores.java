package io.offsetkeeper;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.UnrecoverableKeyException;
import java.security.cert.Certificate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Java keystores (JKS, PKCS12) in the settings, read with the JVM's {@link KeyStore} and handed
 * to the engine as Kafka's in-memory PEM keys, which the engine reads for Kafka
 * ({@code ssl.truststore.certificates}, {@code ssl.keystore.certificate.chain},
 * {@code ssl.keystore.key}) and, under {@code zookeeper.}, for ZooKeeper. The keeper keeps the
 * settings as given and converts them each time it checks or opens the engine, so a private
 * key never sits in a serialized keeper and a replaced store file is read at the next open.
 */
final class KeyStores {
    private static final List<String> STORE_TYPES = Arrays.asList("JKS", "PKCS12", "JCEKS");

    private KeyStores() {}

    /**
     * The settings with each Java keystore under {@code prefix} ("" for kafkaParams,
     * "zookeeper." for ZooKeeper) replaced by its PEM text; a PEM store is left as it is.
     *
     * @throws IllegalArgumentException naming the key and the file when a store cannot be read
     *     (never a password)
     */
    static LinkedHashMap<String, String> asPem(Map<String, String> settings, String prefix) {
        LinkedHashMap<String, String> out = new LinkedHashMap<>(settings);
        String truststore = prefix + "ssl.truststore.";
        if (isJavaStore(out, truststore)) {
            KeyStore store = open(out, truststore);
            out.put(truststore + "certificates", trustedCertificates(store, truststore));
            out.put(truststore + "type", "PEM");
        }
        String keystore = prefix + "ssl.keystore.";
        if (isJavaStore(out, keystore)) {
            // Kafka's key password for the key entry (ssl.key.password), else the store's.
            String keyPassword = out.remove(prefix + "ssl.key.password");
            if (keyPassword == null) {
                keyPassword = out.get(keystore + "password");
            }
            if (keyPassword == null) {
                throw new IllegalArgumentException(keystore + "location is a Java keystore and "
                        + keystore + "password is not set; its key cannot be read without it");
            }
            KeyStore store = open(out, keystore);
            identity(store, keyPassword, out, keystore);
            out.put(keystore + "type", "PEM");
        }
        return out;
    }

    private static boolean isJavaStore(Map<String, String> settings, String store) {
        if (!settings.containsKey(store + "location")) {
            return false;
        }
        // Kafka's clients and ZooKeeper's default to JKS when no type is given.
        String type = settings.getOrDefault(store + "type", "JKS").trim().toUpperCase(Locale.ROOT);
        return STORE_TYPES.contains(type);
    }

    /** Loads the store and removes its location and password from the settings. */
    private static KeyStore open(Map<String, String> settings, String store) {
        String location = settings.remove(store + "location").trim();
        String type = settings.getOrDefault(store + "type", "JKS").trim().toUpperCase(Locale.ROOT);
        String password = settings.remove(store + "password");
        String what = store + "location " + location + " (" + type + ")";
        try (InputStream in = Files.newInputStream(Paths.get(location))) {
            KeyStore keyStore = KeyStore.getInstance(type);
            keyStore.load(in, password == null ? null : password.toCharArray());
            return keyStore;
        } catch (IOException | GeneralSecurityException e) {
            // The JVM's messages name neither the password nor the key material.
            String why = e.getCause() instanceof UnrecoverableKeyException
                    ? "the password " + store + "password is wrong or missing"
                    : e.toString();
            throw new IllegalArgumentException(what + ": cannot read it: " + why, e);
        }
    }

    private static String trustedCertificates(KeyStore store, String prefix) {
        StringBuilder pem = new StringBuilder();
        try {
            for (String alias : Collections.list(store.aliases())) {
                if (store.isCertificateEntry(alias)) {
                    appendPem(pem, "CERTIFICATE", store.getCertificate(alias).getEncoded());
                }
            }
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException(prefix + "location: cannot read it: " + e, e);
        }
        if (pem.length() == 0) {
            throw new IllegalArgumentException(prefix
                    + "location holds no trusted certificate entry (keytool -importcert adds one)");
        }
        return pem.toString();
    }

    /** The first key entry's certificate chain and private key, as PKCS#8 PEM. */
    private static void identity(KeyStore store, String keyPassword, Map<String, String> settings,
            String prefix) {
        try {
            List<String> keyAliases = new ArrayList<>();
            for (String alias : Collections.list(store.aliases())) {
                if (store.isKeyEntry(alias)) {
                    keyAliases.add(alias);
                }
            }
            if (keyAliases.isEmpty()) {
                throw new IllegalArgumentException(prefix + "location holds no private key entry");
            }
            String alias = keyAliases.get(0);
            Key key = store.getKey(alias, keyPassword.toCharArray());
            if (!(key instanceof PrivateKey)) {
                throw new IllegalArgumentException(prefix + "location: the entry '" + alias
                        + "' holds no private key");
            }
            StringBuilder chain = new StringBuilder();
            for (Certificate certificate : store.getCertificateChain(alias)) {
                appendPem(chain, "CERTIFICATE", certificate.getEncoded());
            }
            StringBuilder pkcs8 = new StringBuilder();
            appendPem(pkcs8, "PRIVATE KEY", key.getEncoded());
            settings.put(prefix + "certificate.chain", chain.toString());
            settings.put(prefix + "key", pkcs8.toString());
        } catch (UnrecoverableKeyException e) {
            throw new IllegalArgumentException(prefix + "location: the key password (ssl.key.password, "
                    + "else " + prefix + "password) is wrong or missing", e);
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException(prefix + "location: cannot read its key: " + e, e);
        }
    }

    private static void appendPem(StringBuilder out, String label, byte[] der) {
        out.append("-----BEGIN ").append(label).append("-----\n")
                .append(Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der))
                .append("\n-----END ").append(label).append("-----\n");
    }
}
