// docs/kafka-store.md's job: the quick start's job (QuickStartJob.scala) with its offsets in
// Kafka's group store instead of ZooKeeper, set through the Scala facade; and docs/migration.md's
// keeper of each phase of a move between the two stores. The lines between the README markers
// are the pages' snippets (tests/readme/readme_check.py checks them); the build compiles them
// (gradle :e2e:compileExamples).
//
//   spark-submit --class KafkaStoreJob --jars offsetkeeper_2.12-0.1.0.jar app.jar broker:9092 clicks

// README: begin job
import io.offsetkeeper.spark.SparkOffsetKeeper
import org.apache.kafka.common.serialization.StringDeserializer
import org.apache.spark.SparkConf
import org.apache.spark.streaming.kafka010.{ConsumerStrategies, HasOffsetRanges, KafkaUtils, LocationStrategies}
import org.apache.spark.streaming.{Seconds, StreamingContext}

import scala.annotation.nowarn

@nowarn("cat=deprecation") // Spark 3.4 deprecated DStreams
object KafkaStoreJob {
  def main(args: Array[String]): Unit = {
    val Array(brokers, topicList) = args
    val topics = topicList.split(",").toSeq
    val kafkaParams = Map[String, Object](
      "bootstrap.servers" -> brokers,
      "key.deserializer" -> classOf[StringDeserializer],
      "value.deserializer" -> classOf[StringDeserializer],
      "group.id" -> "click-count",             // the group whose offsets Kafka holds
      "enable.auto.commit" -> (false: java.lang.Boolean))
    val ssc = new StreamingContext(new SparkConf().setAppName("click-count"), Seconds(10))

    val keeper = SparkOffsetKeeper(kafkaParams, Map("offsetkeeper.store" -> "kafka")) // no ZooKeeper
    keeper.closeOnShutdown(ssc)              // SIGTERM: the last batch commits, the group is released
    val offsets = keeper.load(topics)        // joins the group as its only member
    val stream = KafkaUtils.createDirectStream[String, String](ssc, LocationStrategies.PreferConsistent,
      ConsumerStrategies.Assign[String, String](offsets.keys, kafkaParams, offsets)) // Assign, not Subscribe

    stream.foreachRDD { rdd =>
      val ranges = rdd.asInstanceOf[HasOffsetRanges].offsetRanges
      rdd.map(_.value).countByValue().foreach { case (page, count) => println(s"$page: $count") }
      keeper.commit(ranges)                  // one OffsetCommit per batch (split, with a WARN, past ~5,000 partitions)
    }
    ssc.start()
    ssc.awaitTermination()
  }
}
// README: end job

object StorePhases {
  // README: begin phases
  // The keeper of each phase of the move (docs/migration.md): one setting, one restart.
  def keeper(phase: Int, zookeeper: String, kafkaParams: Map[String, Object]): SparkOffsetKeeper = phase match {
    case 1 => SparkOffsetKeeper(zookeeper, kafkaParams) // offsetkeeper.store=zookeeper, the default
    case 2 => SparkOffsetKeeper(zookeeper, kafkaParams, properties = Map("offsetkeeper.store" -> "zookeeper,kafka"))
    case 3 => SparkOffsetKeeper(zookeeper, kafkaParams, properties = Map("offsetkeeper.store" -> "kafka,zookeeper"))
    case 4 => SparkOffsetKeeper(kafkaParams, Map("offsetkeeper.store" -> "kafka")) // ZooKeeper no longer needed
    case _ => throw new IllegalArgumentException(s"phase $phase: the phases are 1 to 4")
  }
  // README: end phases
}
