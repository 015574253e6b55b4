// The records of the spark-submit test (tests/spark-submit/run.sh): creates TOPIC with 2
// partitions if it is missing, then produces COUNT records alternately to partitions 0 and 1,
// whose values are page0..page4 (QuickStartJob counts them by value). Every send must be
// acknowledged by all replicas, so the log ends afterwards hold exactly what was produced.
// Needs kafka-clients and slf4j-api only; run.sh compiles it once with javac.
//
//   java -cp CLASSES:kafka-clients.jar:slf4j-api.jar Produce BOOTSTRAP TOPIC COUNT

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringSerializer;

public class Produce {
    private static final int PARTITIONS = 2;
    private static final int PAGES = 5;

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: Produce BOOTSTRAP TOPIC COUNT");
            System.exit(2);
        }
        String bootstrap = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[2]);

        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(Collections.singletonList(new NewTopic(topic, PARTITIONS, (short) 1)))
                    .all().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
        }

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        List<Future<RecordMetadata>> sends = new ArrayList<>();
        try (Producer<String, String> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < count; i++) {
                sends.add(producer.send(new ProducerRecord<>(topic, i % PARTITIONS, null, "page" + (i % PAGES))));
            }
            producer.flush();
            for (Future<RecordMetadata> send : sends) {
                send.get(); // a failed send fails the run
            }
        }
        System.out.println("produced " + count + " records to " + topic);
    }
}
