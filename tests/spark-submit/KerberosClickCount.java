// The quick start's job for a Kerberized cluster, submitted by tests/spark-submit/run.sh's
// Kerberos cluster mode: JavaQuickStartJob (examples/java) with the kafkaParams of
// docs/security.md (SASL_SSL, GSSAPI, a JKS truststore) and nothing offsetkeeper-specific. The
// keeper and Spark's consumers log in through the JVM's JAAS file (Client and KafkaClient
// sections, a keytab), which --files ships with the keytab and the truststore, all named
// relatively. run.sh compiles it with javac against Spark's jars, offsetkeeper's and the
// connector's.
//
//   spark-submit --deploy-mode cluster --class KerberosClickCount \
//     --files jaas.conf,offsetkeeper.keytab,truststore.jks \
//     --driver-java-options "-Djava.security.auth.login.config=jaas.conf -Djava.security.krb5.conf=/etc/krb5.conf" \
//     --conf "spark.executor.extraJavaOptions=-Djava.security.auth.login.config=jaas.conf -Djava.security.krb5.conf=/etc/krb5.conf" \
//     --jars offsetkeeper_2.12-0.1.0.jar,... app.jar zk:2181 broker:9093 clicks TRUSTSTORE_PASSWORD

import io.offsetkeeper.OffsetKeeper;
import io.offsetkeeper.spark.SparkOffsets;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkFiles;
import org.apache.spark.streaming.Durations;
import org.apache.spark.streaming.api.java.JavaInputDStream;
import org.apache.spark.streaming.api.java.JavaStreamingContext;
import org.apache.spark.streaming.kafka010.ConsumerStrategies;
import org.apache.spark.streaming.kafka010.HasOffsetRanges;
import org.apache.spark.streaming.kafka010.KafkaUtils;
import org.apache.spark.streaming.kafka010.LocationStrategies;
import org.apache.spark.streaming.kafka010.OffsetRange;

/** Counts the clicks per page of each batch on a Kerberized cluster; offsetkeeper keeps the offsets in ZooKeeper. */
public final class KerberosClickCount {
    /** What --files ships; the JAAS file, the Java options and kafkaParams name them relatively. */
    private static final String[] SHIPPED = {"jaas.conf", "offsetkeeper.keytab", "truststore.jks"};

    private KerberosClickCount() {}

    /**
     * Runs the job until it is stopped.
     *
     * @param args the ZooKeeper connect string, the brokers' SASL_SSL listeners, the topics
     *     (comma-separated) and the truststore's password
     */
    public static void main(String[] args) throws IOException, InterruptedException {
        if (args.length != 4) {
            System.err.println("usage: KerberosClickCount ZOOKEEPER BROKERS TOPICS TRUSTSTORE_PASSWORD");
            System.exit(2);
        }
        String zookeeper = args[0];
        List<String> topics = Arrays.asList(args[2].split(","));
        // One map for the keeper and Spark's consumers, as docs/security.md shows it.
        Map<String, Object> kafkaParams = new HashMap<>();
        kafkaParams.put("bootstrap.servers", args[1]);
        kafkaParams.put("security.protocol", "SASL_SSL");
        kafkaParams.put("sasl.kerberos.service.name", "kafka"); // GSSAPI: the default sasl.mechanism
        kafkaParams.put("ssl.truststore.location", "truststore.jks"); // shipped by --files
        kafkaParams.put("ssl.truststore.type", "JKS");
        kafkaParams.put("ssl.truststore.password", args[3]);
        kafkaParams.put("key.deserializer", StringDeserializer.class);
        kafkaParams.put("value.deserializer", StringDeserializer.class);
        kafkaParams.put("group.id", "click-count"); // QuickStartJob's group, on the Kerberos cluster
        kafkaParams.put("enable.auto.commit", false);
        JavaStreamingContext ssc = new JavaStreamingContext(
                new SparkConf().setAppName("kerberos-click-count"), Durations.seconds(10));
        shippedIntoWorkingDirectory();

        OffsetKeeper keeper = OffsetKeeper.builder().zookeeper(zookeeper).kafkaParams(kafkaParams).build();
        SparkOffsets.closeOnShutdown(keeper, ssc); // SIGTERM: the last batch commits, the group is released
        Map<TopicPartition, Long> offsets = keeper.load(topics); // validated
        JavaInputDStream<ConsumerRecord<String, String>> stream = KafkaUtils.createDirectStream(ssc,
                LocationStrategies.PreferConsistent(),
                ConsumerStrategies.<String, String>Assign(new ArrayList<>(offsets.keySet()), kafkaParams, offsets));
        stream.foreachRDD(rdd -> {
            OffsetRange[] ranges = ((HasOffsetRanges) rdd.rdd()).offsetRanges(); // the stream's own RDD
            rdd.map(ConsumerRecord::value).countByValue().forEach((page, n) -> System.out.println(page + ": " + n));
            SparkOffsets.commit(keeper, ranges); // one atomic ZooKeeper multi per batch
        });

        ssc.start();
        ssc.awaitTermination();
    }

    /**
     * Copies each shipped file that the driver's working directory lacks from where Spark fetched
     * it for the driver. YARN puts --files in the working directory of the driver's container, as
     * docs/security.md assumes; a standalone cluster's Worker gives the driver's working
     * directory the app jar alone, and the driver's SparkContext fetches --files into its
     * SparkFiles directory, a temporary one (the executors' is their working directory). Called
     * once the SparkContext has fetched them and before anything reads them: the keeper's build
     * and Spark's consumers come after.
     */
    private static void shippedIntoWorkingDirectory() throws IOException {
        for (String name : SHIPPED) {
            Path here = Paths.get(name);
            if (!Files.exists(here)) {
                Files.copy(Paths.get(SparkFiles.get(name)), here);
                System.err.println("KerberosClickCount: " + name + " copied from SparkFiles into the working directory");
            }
        }
    }
}
