// A user's sbt build, made of the docs' lines: the README's dependency lines and
// docs/installation.md's `sbt run` lines, verbatim. run.sh puts the file URL of build/repo in place
// of /path/to/offsetkeeper/build/repo and refuses a version other than the one built.
// QuickStartJob.scala (the README's job, copied in by run.sh) compiles against these lines alone.
scalaVersion := "2.12.20"

// README: begin
resolvers += "offsetkeeper" at "file:///path/to/offsetkeeper/build/repo"
libraryDependencies ++= Seq(
  "io.offsetkeeper" %% "offsetkeeper" % "0.1.0",
  "org.apache.spark" %% "spark-streaming" % "3.5.1" % Provided,
  "org.apache.spark" %% "spark-streaming-kafka-0-10" % "3.5.1" % Provided)
// README: end

Compile / run / mainClass := Some("ConsumerJob")

// README: begin run
fork := true
Compile / run := Defaults
  .runTask(Compile / fullClasspath, Compile / run / mainClass, Compile / run / runner)
  .evaluated
// README: end run
