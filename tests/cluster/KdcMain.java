import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Date;
import java.util.concurrent.CountDownLatch;

import org.apache.kerby.kerberos.kerb.KrbException;
import org.apache.kerby.kerberos.kerb.client.KrbClient;
import org.apache.kerby.kerberos.kerb.client.KrbConfig;
import org.apache.kerby.kerberos.kerb.server.KdcConfigKey;
import org.apache.kerby.kerberos.kerb.server.SimpleKdcServer;
import org.apache.kerby.kerberos.kerb.type.ticket.TgtTicket;

/**
 * The Kerberos cluster's KDC (cluster.sh start-kerberos): Apache Kerby's SimpleKdcServer, TCP only,
 * on a loopback port above 1024, so no root is needed. Run in source-file mode (Java 11+):
 *
 * <pre>
 *   java -cp KERBY-JARS KdcMain.java serve DIR PORT LIFETIME-SECONDS
 *       realm EXAMPLE.COM on 127.0.0.1:PORT; principals zookeeper/localhost, kafka/localhost,
 *       offsetkeeper and other, one keytab each (DIR/NAME.keytab, NAME the part before '/');
 *       tickets live LIFETIME-SECONDS at most; DIR/krb5.conf for the JVMs and MIT libraries;
 *       DIR/offsetkeeper.ccache, a ticket cache with a TGT of offsetkeeper; then DIR/kdc.ready.
 *       Runs until SIGTERM. The principals live in memory: a restarted KDC has new keys.
 *   java -cp KERBY-JARS KdcMain.java kinit PORT PRINCIPAL KEYTAB CCACHE
 *       a fresh TGT of PRINCIPAL (from KEYTAB) into the ticket cache CCACHE, replaced atomically
 *       (kinit -k -t KEYTAB -c CCACHE PRINCIPAL without MIT's tools)
 * </pre>
 */
public final class KdcMain {
    static final String REALM = "EXAMPLE.COM";
    static final String HOST = "127.0.0.1";
    static final String[] PRINCIPALS = {"zookeeper/localhost", "kafka/localhost", "offsetkeeper", "other"};
    // aes256 and aes128 only: Kerby's default list adds des3-cbc-sha1-kd, which JDK 17 refuses.
    static final String ENCTYPES = "aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96";

    public static void main(String[] args) throws Exception {
        if (args.length == 4 && args[0].equals("serve")) {
            serve(new File(args[1]), Integer.parseInt(args[2]), Long.parseLong(args[3]));
        } else if (args.length == 5 && args[0].equals("kinit")) {
            TgtTicket tgt = kinit(client(Integer.parseInt(args[1])), args[2], new File(args[3]), new File(args[4]));
            System.out.println("TGT of " + args[2] + " in " + args[4] + ", ends " + new Date(tgt.getEncKdcRepPart().getEndTime().getTime()));
        } else {
            System.err.println("usage: KdcMain serve DIR PORT LIFETIME-SECONDS | kinit PORT PRINCIPAL KEYTAB CCACHE");
            System.exit(2);
        }
    }

    static void serve(File dir, int port, long lifetimeSeconds) throws Exception {
        dir.mkdirs();
        SimpleKdcServer kdc = new SimpleKdcServer();
        kdc.setWorkDir(dir);
        kdc.setKdcRealm(REALM);
        kdc.setKdcHost(HOST);
        kdc.setKdcTcpPort(port);
        kdc.setAllowTcp(true);
        kdc.setAllowUdp(false);
        kdc.getKdcConfig().setLong(KdcConfigKey.MAXIMUM_TICKET_LIFETIME, lifetimeSeconds);
        // Kerby 2.1.0 compares this (seconds) with the ticket's lifetime in milliseconds; 1 lets
        // every lifetime through.
        kdc.getKdcConfig().setLong(KdcConfigKey.MINIMUM_TICKET_LIFETIME, 1L);
        kdc.getKdcConfig().setString(KdcConfigKey.ENCRYPTION_TYPES, ENCTYPES);
        kdc.init(); // also writes a krb5.conf of Kerby's own into dir, replaced below
        for (String p : PRINCIPALS) {
            kdc.createPrincipal(p);
            kdc.exportPrincipal(p, keytab(dir, p));
        }
        writeAtomically(new File(dir, "krb5.conf").toPath(), krb5Conf(port));
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                kdc.stop();
            } catch (KrbException e) {
                System.err.println("KDC stop: " + e);
            }
            stopped.countDown();
        }));
        kdc.start();
        TgtTicket tgt = kinit(kdc.getKrbClient(), "offsetkeeper@" + REALM, keytab(dir, "offsetkeeper"),
                new File(dir, "offsetkeeper.ccache"));
        writeAtomically(new File(dir, "kdc.ready").toPath(), "port=" + port + "\n");
        System.out.println("KDC up on " + HOST + ":" + port + " (TCP), realm " + REALM + ", tickets live "
                + lifetimeSeconds + " s; offsetkeeper's TGT ends "
                + new Date(tgt.getEncKdcRepPart().getEndTime().getTime()));
        stopped.await();
    }

    static File keytab(File dir, String principal) {
        return new File(dir, principal.replaceAll("[/@].*", "") + ".keytab");
    }

    static String krb5Conf(int port) {
        return String.join("\n",
                "[libdefaults]",
                "  default_realm = " + REALM,
                "  udp_preference_limit = 1",
                "  dns_lookup_kdc = false",
                "  dns_lookup_realm = false",
                "  dns_canonicalize_hostname = false",
                "  rdns = false",
                "  default_tkt_enctypes = " + ENCTYPES,
                "  default_tgs_enctypes = " + ENCTYPES,
                "  permitted_enctypes = " + ENCTYPES,
                "",
                "[realms]",
                "  " + REALM + " = {",
                "    kdc = " + HOST + ":" + port,
                "  }",
                "",
                "[domain_realm]",
                "  localhost = " + REALM,
                "");
    }

    static KrbClient client(int port) throws KrbException {
        KrbClient client = new KrbClient(new KrbConfig());
        client.setKdcRealm(REALM);
        client.setKdcHost(HOST);
        client.setKdcTcpPort(port);
        client.setAllowTcp(true);
        client.setAllowUdp(false);
        client.init();
        return client;
    }

    static TgtTicket kinit(KrbClient client, String principal, File keytab, File ccache) throws Exception {
        TgtTicket tgt = client.requestTgt(principal, keytab);
        File tmp = new File(ccache.getPath() + ".tmp");
        Files.deleteIfExists(tmp.toPath());
        client.storeTicket(tgt, tmp);
        Files.move(tmp.toPath(), ccache.toPath(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        return tgt;
    }

    static void writeAtomically(Path path, String text) throws IOException {
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        Files.write(tmp, text.getBytes(StandardCharsets.UTF_8));
        Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }
}
