package io.offsetkeeper;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.Collections;
import org.junit.Test;

/**
 * A panic inside native code arrives as an exception and the JVM lives on. Run by the
 * {@code testPanic} task alone, on the tests' build of the library (cargo feature
 * {@code test-panic}, a host debug build named by {@code -Doffsetkeeper.native.library}): only
 * that build has {@link #panicForTest}; {@link NativeTest} checks the shipped one lacks it.
 */
public class PanicTest {

    /**
     * Panics inside the bridge's wrapper ({@code with_env(..).resolve::<ThrowJavaException>()}),
     * as every entry point of {@link NativeBridge} runs. Only in the test library
     * ({@code Java_io_offsetkeeper_PanicTest_panicForTest}).
     */
    static native void panicForTest();

    @Test
    public void aPanicIsAnExceptionAndTheJvmLivesOn() throws Exception {
        String library = System.getProperty(NativeLibrary.OVERRIDE_PROPERTY);
        assertTrue("run by gradle :jvm:testPanic, on the test library: " + library,
                library != null && library.contains("test_panic"));
        NativeLibrary.load();
        for (int i = 0; i < 3; i++) {
            OffsetKeeperException e = assertThrows(OffsetKeeperException.class, PanicTest::panicForTest);
            assertTrue(String.valueOf(e.getMessage()), e.getMessage() != null && !e.getMessage().isEmpty());
        }
        assertEquals(Action.KEPT, OffsetKeeper.validate(1L, 0, 2, null, null, null).action());
        String topic = TestCluster.createTopic(1);
        try (OffsetKeeper keeper = TestCluster.keeper(TestCluster.unique("group"))) {
            assertEquals(1, keeper.load(Collections.singleton(topic)).size());
        }
    }
}
