package io.offsetkeeper.spark;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;

/** What the listener takes from a progress event's source offsets, and what it leaves. */
public class ProgressOffsetsTest {
    @Test
    public void readsSparksKafkaOffsetJson() {
        Map<TopicPartition, Long> expected = new LinkedHashMap<>();
        expected.put(new TopicPartition("orders", 0), 23L);
        expected.put(new TopicPartition("orders", 1), 42L);
        expected.put(new TopicPartition("refunds", 0), 7L);
        assertEquals(expected, ZooKeeperProgressListener.parseKafkaOffsets(
                "{\"orders\":{\"1\":42,\"0\":23},\"refunds\":{\"0\":7}}"));
    }

    @Test
    public void leavesOtherShapesAndSpecialOffsetsOut() {
        assertTrue(ZooKeeperProgressListener.parseKafkaOffsets(null).isEmpty());
        assertTrue(ZooKeeperProgressListener.parseKafkaOffsets("12").isEmpty()); // rate source
        assertTrue(ZooKeeperProgressListener.parseKafkaOffsets("{\"logOffset\":3}").isEmpty()); // file source
        assertTrue(ZooKeeperProgressListener.parseKafkaOffsets("{\"t\":{\"x\":3}}").isEmpty());
        assertTrue(ZooKeeperProgressListener.parseKafkaOffsets("{\"t\":{\"0\":\"3\"}}").isEmpty());
        assertTrue(ZooKeeperProgressListener.parseKafkaOffsets("not json").isEmpty());
        assertEquals(1, ZooKeeperProgressListener.parseKafkaOffsets("{\"t\":{\"0\":-2,\"1\":5}}").size());
    }
}
