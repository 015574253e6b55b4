package io.offsetkeeper;

import static io.offsetkeeper.TestCluster.tp;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotSame;

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
        OffsetKeeper original = TestCluster.keeper(group);
        OffsetKeeper unused = roundTrip(original); // before the original opened its engine
        original.commit(Collections.singletonMap(tp(topic, 0), 3L));

        OffsetKeeper copy = roundTrip(original); // while the original is open
        assertNotSame(original, copy);
        assertEquals(original.toString(), copy.toString());
        copy.commit(Collections.singletonMap(tp(topic, 0), 4L));
        assertEquals(Long.valueOf(4), original.load(Collections.singleton(topic)).get(tp(topic, 0)));

        original.close();
        OffsetKeeper afterClose = roundTrip(original); // configuration only: the copy is open
        assertEquals(Long.valueOf(4), afterClose.load(Collections.singleton(topic)).get(tp(topic, 0)));
        // Each copy is an instance of its own: it loads once the one owning the group closed.
        afterClose.close();
        assertEquals(Long.valueOf(4), unused.load(Collections.singleton(topic)).get(tp(topic, 0)));
        copy.close();
        unused.close();

        LoadReport report = roundTrip(TestCluster.keeper(group).loadWithReport(Collections.singleton(topic)));
        assertEquals(Action.KEPT, report.partitions().get(0).action());
    }
}
