package io.offsetkeeper;

import static io.offsetkeeper.TestCluster.admin;
import static io.offsetkeeper.TestCluster.createTopic;
import static io.offsetkeeper.TestCluster.deleteRecordsBefore;
import static io.offsetkeeper.TestCluster.kafkaParams;
import static io.offsetkeeper.TestCluster.produce;
import static io.offsetkeeper.TestCluster.tp;
import static io.offsetkeeper.TestCluster.unique;
import static org.junit.Assert.assertEquals;

import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;

/**
 * The Java API on Kafka's group store ({@code kafkaStore()}): no ZooKeeper setting, offsets that
 * Kafka's AdminClient reads back, and a retention purge decided and reported as on ZooKeeper.
 */
public class KafkaStoreTest {
    private static OffsetKeeper kafkaKeeper(String group) {
        return OffsetKeeper.builder().kafkaStore().kafkaParams(kafkaParams(group)).build();
    }

    @Test
    public void offsetsRoundTripThroughKafkasGroupStoreWithoutZooKeeper() throws Exception {
        String topic = createTopic(2);
        String group = unique("kafka-store");
        produce(topic, 0, 20);
        produce(topic, 1, 20);
        try (OffsetKeeper keeper = kafkaKeeper(group)) {
            Map<TopicPartition, Long> first = keeper.load(Collections.singleton(topic));
            assertEquals(Long.valueOf(0), first.get(tp(topic, 0)));
            Map<TopicPartition, Long> batch = new HashMap<>();
            batch.put(tp(topic, 0), 6L);
            batch.put(tp(topic, 1), 9L);
            keeper.commit(batch);
        }
        Map<TopicPartition, OffsetAndMetadata> committed = admin()
                .listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                .get(30, TimeUnit.SECONDS);
        assertEquals(6L, committed.get(tp(topic, 0)).offset());
        assertEquals(9L, committed.get(tp(topic, 1)).offset());

        deleteRecordsBefore(topic, 0, 10);
        try (OffsetKeeper keeper = kafkaKeeper(group)) {
            LoadReport report = keeper.loadWithReport(Collections.singleton(topic));
            PartitionReport purged = report.partitions().get(0);
            assertEquals(Action.RESET_BELOW_RANGE, purged.action());
            assertEquals(10L, purged.chosen());
            assertEquals(4L, purged.recordsLost());
            assertEquals(Long.valueOf(9), report.offsets().get(tp(topic, 1)));
        }
    }
}
