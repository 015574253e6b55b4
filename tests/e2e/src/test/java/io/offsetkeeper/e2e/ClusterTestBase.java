package io.offsetkeeper.e2e;

import org.junit.AfterClass;
import org.junit.BeforeClass;

/**
 * A test class against the cluster the build started: {@link #cluster} is connected before the
 * class's first test ({@link Cluster#fromBuild()}) and closed after its last. Used by the e2e
 * tests and, compiled in by tests/flink/build.gradle, by the Flink test.
 */
public abstract class ClusterTestBase {
    protected static Cluster cluster;

    @BeforeClass
    public static void connect() {
        cluster = Cluster.fromBuild();
    }

    @AfterClass
    public static void disconnect() throws InterruptedException {
        if (cluster != null) {
            cluster.close();
            cluster = null;
        }
    }
}
