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

    /** panicForTest is in the tests' build only (PanicTest); these tests load the shipped one. */
    @Test
    public void theShippedLibraryHasNoTestEntryPoint() {
        NativeLibrary.load();
        assertEquals(null, System.getProperty(NativeLibrary.OVERRIDE_PROPERTY));
        UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, PanicTest::panicForTest);
        assertTrue(String.valueOf(e.getMessage()), String.valueOf(e.getMessage()).contains("panicForTest"));
        assertEquals(Action.KEPT, OffsetKeeper.validate(1L, 0, 2, null, null, null).action());
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
