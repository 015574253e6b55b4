package io.offsetkeeper.e2e;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.offsetkeeper.OffsetKeeper;
import java.io.File;
import org.apache.kafka.common.utils.AppInfoParser;
import org.junit.Test;

/**
 * The restart scenarios run on the Spark, Scala, offsetkeeper jar and kafka-clients the build
 * says they do ({@code :e2e:test}: Spark 3.5 / Scala 2.12 / offsetkeeper_2.12; the other lines
 * of spark-lines.gradle, such as {@code :e2e:testSpark4}: Spark 4 / Scala 2.13 /
 * offsetkeeper_2.13), so a class path mix-up cannot pass for another line's run. kafka-clients is
 * the version the line's connector asks for, as a job submitted with it gets.
 */
public class SparkVersionTest {
    @Test
    public void runsOnTheSparkScalaJarAndKafkaClientsTheBuildNames() throws Exception {
        String spark = StreamingJob.spark().version();
        String scalaVersion = scala.util.Properties.versionNumberString();
        String jar = new File(OffsetKeeper.class.getProtectionDomain().getCodeSource().getLocation()
                .toURI()).getName();
        String kafkaClients = AppInfoParser.getVersion();
        System.out.println("offsetkeeper-e2e: Spark " + spark + ", Scala " + scalaVersion + ", "
                + jar + ", kafka-clients " + kafkaClients + ", Java " + System.getProperty("java.version"));
        String expectedSpark = System.getProperty("offsetkeeper.e2e.spark");
        String expectedScala = System.getProperty("offsetkeeper.e2e.scala");
        String expectedJar = System.getProperty("offsetkeeper.e2e.jar");
        String expectedKafkaClients = System.getProperty("offsetkeeper.e2e.kafkaClients");
        assertTrue("Gradle sets offsetkeeper.e2e.spark, .scala, .jar and .kafkaClients",
                expectedSpark != null && expectedScala != null && expectedJar != null
                        && expectedKafkaClients != null);
        assertEquals(expectedSpark, spark);
        assertTrue("Scala " + scalaVersion + " is not " + expectedScala, scalaVersion.startsWith(expectedScala + "."));
        assertEquals(expectedJar, jar);
        assertEquals(expectedKafkaClients, kafkaClients);
    }
}
