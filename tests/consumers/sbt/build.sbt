// A user's sbt build: offsetkeeper by its coordinates (`%%` picks offsetkeeper_2.12), from the
// repositories file run.sh writes (local, build/repo, Maven Central; -Dsbt.override.build.repos).
// kafka-clients is declared by the job (offsetkeeper's POM has it as provided); Spark's Kafka
// connector is provided, as spark-submit brings it (only OffsetRange is used, so intransitive).
scalaVersion := "2.12.20"

libraryDependencies ++= Seq(
  "io.offsetkeeper" %% "offsetkeeper" % sys.props("offsetkeeper.version"),
  "org.apache.kafka" % "kafka-clients" % "3.9.1",
  ("org.apache.spark" %% "spark-streaming-kafka-0-10" % "3.5.1" % Provided).intransitive()
)

// The job runs in a JVM of its own, with the provided jars, as spark-submit would give them.
fork := true
Compile / run := Defaults
  .runTask(Compile / fullClasspath, Compile / run / mainClass, Compile / run / runner)
  .evaluated
