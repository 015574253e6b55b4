package io.offsetkeeper.e2e;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.offsetkeeper.OffsetKeeper;
import java.io.File;
import org.junit.Test;

/**
 * The restart scenarios run on the Spark, Scala and offsetkeeper jar the build says they do
 * ({@code :e2e:test}: Spark 3.5 / Scala 2.12 / offsetkeeper_2.12; {@code :e2e:testSpark4}:
 * Spark 4 / Scala 2.13 / offsetkeeper_2.13, see spark4.gradle), so a class path mix-up cannot
 * pass for a Spark 4 run.
 */
public class SparkVersionTest {
    @Test
    public void runsOnTheSparkScalaAndJarTheBuildNames() throws Exception {
        String spark = StreamingJob.spark().version();
        String scalaVersion = scala.util.Properties.versionNumberString();
        String jar = new File(OffsetKeeper.class.getProtectionDomain().getCodeSource().getLocation()
                .toURI()).getName();
        System.out.println("offsetkeeper-e2e: Spark " + spark + ", Scala " + scalaVersion + ", "
                + jar + ", Java " + System.getProperty("java.version"));
        String expectedSpark = System.getProperty("offsetkeeper.e2e.spark");
        String expectedScala = System.getProperty("offsetkeeper.e2e.scala");
        String expectedJar = System.getProperty("offsetkeeper.e2e.jar");
        assertTrue("Gradle sets offsetkeeper.e2e.spark, .scala and .jar",
                expectedSpark != null && expectedScala != null && expectedJar != null);
        assertEquals(expectedSpark, spark);
        assertTrue("Scala " + scalaVersion + " is not " + expectedScala, scalaVersion.startsWith(expectedScala + "."));
        assertEquals(expectedJar, jar);
    }
}
