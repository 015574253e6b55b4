package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.Collections;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.Test;
import org.slf4j.LoggerFactory;

/** The JNI library itself: loading, panics, and the log bridge. */
public class NativeTest {

    @Test
    public void loadingTwiceIsHarmless() {
        NativeLibrary.load();
        NativeLibrary.load();
    }

    @Test
    public void aPanicIsAnExceptionAndTheJvmLivesOn() throws Exception {
        NativeLibrary.load();
        for (int i = 0; i < 3; i++) {
            OffsetKeeperException e = assertThrows(OffsetKeeperException.class, NativeBridge::panicForTest);
            assertTrue(String.valueOf(e.getMessage()), e.getMessage() != null && !e.getMessage().isEmpty());
        }
        assertEquals(Action.KEPT, OffsetKeeper.validate(1L, 0, 2, null, null, null).action());
        String topic = TestCluster.createTopic(1);
        try (OffsetKeeper keeper = TestCluster.keeper(TestCluster.unique("group"))) {
            assertEquals(1, keeper.load(Collections.singleton(topic)).size());
        }
    }

    @Test
    public void nativeLogNeverThrows() {
        for (int level = -1; level <= 6; level++) {
            NativeLog.log(level, "offsetkeeper::test", "level " + level);
            NativeLog.log(level, null, null);
            NativeLog.log(level, "", "empty target");
        }
        // logback-test.xml sets the offsetkeeper logger to INFO.
        assertEquals(3, NativeLog.maxLevel());
    }

    @Test
    public void rustWarningsArriveInSlf4j() throws Exception {
        String topic = TestCluster.createTopic(1);
        TestCluster.produce(topic, 0, 10);
        String group = TestCluster.unique("group");
        TestCluster.write(TestCluster.offsetPath(group, topic, 0), "1");
        TestCluster.deleteRecordsBefore(topic, 0, 4);

        Logger root = (Logger) LoggerFactory.getLogger(NativeLog.ROOT_LOGGER);
        ListAppender<ILoggingEvent> appender = new ListAppender<>();
        appender.start();
        root.addAppender(appender);
        try (OffsetKeeper keeper = TestCluster.keeper(group)) {
            assertEquals(Action.RESET_BELOW_RANGE,
                    keeper.loadWithReport(Collections.singleton(topic)).partitions().get(0).action());
        } finally {
            root.detachAppender(appender);
        }
        List<ILoggingEvent> warnings = appender.list.stream()
                .filter(e -> e.getLevel() == Level.WARN && e.getFormattedMessage().contains(topic + "-0"))
                .collect(Collectors.toList());
        String seen = appender.list.stream()
                .map(e -> e.getLevel() + " " + e.getLoggerName() + ": " + e.getFormattedMessage())
                .collect(Collectors.joining("\n"));
        assertEquals(seen, 1, warnings.size());
        ILoggingEvent warning = warnings.get(0);
        assertTrue(seen, warning.getFormattedMessage().contains("reset below range"));
        assertTrue(seen, warning.getLoggerName().startsWith(NativeLog.ROOT_LOGGER + "."));
    }
}
