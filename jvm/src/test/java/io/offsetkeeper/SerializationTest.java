package io.offsetkeeper;

import static io.offsetkeeper.TestCluster.tp;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.Collections;
import org.junit.Test;

/** Spark serializes foreachRDD closures when checkpointing is on: the keeper must survive it. */
public class SerializationTest {

    @SuppressWarnings("unchecked")
    static <T> T roundTrip(T value) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(value);
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            return (T) in.readObject();
        }
    }

    @Test
    public void aDeserializedKeeperOpensItsOwnEngine() throws Exception {
        String topic = TestCluster.createTopic(1);
        TestCluster.produce(topic, 0, 5);
        String group = TestCluster.unique("group");
        OffsetKeeper original = TestCluster.keeperBuilder(group).ownershipWait(0).build();
        OffsetKeeper unused = roundTrip(original); // before the original opened its engine
        // Its first commit, without a load, takes ownership of the partitions.
        original.commit(Collections.singletonMap(tp(topic, 0), 3L));

        OffsetKeeper copy = roundTrip(original); // while the original is open
        assertNotSame(original, copy);
        assertEquals(original.toString(), copy.toString());
        // Each copy is an instance of its own (a job recovered from a checkpoint): its first
        // commit takes ownership too, and is refused while the original owns the group.
        try {
            copy.commit(Collections.singletonMap(tp(topic, 0), 4L));
            fail("a copy committed while the original owns the group");
        } catch (PartitionOwnedException expected) {
            assertTrue(expected.getMessage(), expected.getMessage().contains("owned by another"));
        }
        assertEquals(Long.valueOf(3), original.load(Collections.singleton(topic)).get(tp(topic, 0)));
        original.close();
        copy.commit(Collections.singletonMap(tp(topic, 0), 4L));
        copy.close();

        OffsetKeeper afterClose = roundTrip(original); // configuration only: the copy is open
        assertEquals(Long.valueOf(4), afterClose.load(Collections.singleton(topic)).get(tp(topic, 0)));
        afterClose.close();
        assertEquals(Long.valueOf(4), unused.load(Collections.singleton(topic)).get(tp(topic, 0)));
        unused.close();

        LoadReport report = roundTrip(TestCluster.keeper(group).loadWithReport(Collections.singleton(topic)));
        assertEquals(Action.KEPT, report.partitions().get(0).action());
    }
}
