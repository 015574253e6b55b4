package io.offsetkeeper;

import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import org.apache.kafka.common.TopicPartition;

/**
 * A keeper in a JVM of its own, for {@link KerberosTest}'s cases that need another krb5.conf or
 * another clock than the test JVM's (a KDC that is down, a skewed clock): loads one topic, then
 * commits offset 0 of its partition 0, and prints one line for each call:
 * {@code load OK <offsets>} or {@code load FAILED <exception class> <elapsed ms> <message>},
 * then the same for {@code commit}. The JVM's JAAS file and krb5.conf come from its command
 * line, as on a job's driver.
 *
 * <p>Arguments: zookeeper bootstrap group topic timeout-ms [kafka-key=value ...]; both the
 * ZooKeeper and the Kafka timeout are timeout-ms.
 */
public final class KerberosProbe {
    private KerberosProbe() {}

    public static void main(String[] args) {
        Map<String, Object> params = new HashMap<>();
        params.put("bootstrap.servers", args[1]);
        params.put("security.protocol", "SASL_PLAINTEXT");
        params.put("sasl.kerberos.service.name", "kafka");
        params.put("group.id", args[2]);
        for (int i = 5; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            params.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        String topic = args[3];
        long timeout = Long.parseLong(args[4]);
        try (OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(args[0]).kafkaParams(params)
                .zookeeperTimeout(timeout).kafkaTimeout(timeout).build()) {
            call("load", () -> keeper.load(Collections.singleton(topic)));
            call("commit", () -> {
                CommitResult result = keeper.commit(
                        Collections.singletonMap(new TopicPartition(topic, 0), 0L));
                if (result.deferred()) {
                    throw new DeferredCommit();
                }
                return result.written();
            });
        }
        // As spark-submit's driver ends: a Kerberos login still waiting for its KDC on an engine
        // thread (attached to this JVM) would hold a plain end of main until the KDC gives up.
        System.exit(0);
    }

    /** A commit deferred as in a ZooKeeper outage (a ZooKeeper connect that timed out): nothing written. */
    static final class DeferredCommit extends Exception {
        DeferredCommit() {
            super("deferred: ZooKeeper timed out, nothing written");
        }
    }

    private static void call(String name, Callable<Object> call) {
        long start = System.nanoTime();
        try {
            System.out.println(name + " OK " + call.call());
        } catch (Exception e) {
            long elapsed = (System.nanoTime() - start) / 1_000_000;
            System.out.println(name + " FAILED " + e.getClass().getSimpleName() + " " + elapsed
                    + " " + String.valueOf(e.getMessage()).replace('\n', ' '));
        }
    }
}
