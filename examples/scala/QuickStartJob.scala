// The quick start's job (README.md): a Spark Streaming direct stream whose offsets offsetkeeper
// keeps in ZooKeeper, with Assign, and a shutdown that commits the last batch and closes the
// keeper. The lines between the README markers are the README's snippet
// (tests/readme/readme_check.py checks it); the build compiles them (gradle :e2e:compileExamples)
// and ShutdownTest runs them, stopped by SIGTERM.
//
//   spark-submit --class QuickStartJob --jars offsetkeeper_2.12-0.1.0.jar app.jar zk:2181 broker:9092 clicks

// README: begin
import io.offsetkeeper.spark.SparkOffsetKeeper
import org.apache.kafka.common.serialization.StringDeserializer
import org.apache.spark.SparkConf
import org.apache.spark.streaming.kafka010.{ConsumerStrategies, HasOffsetRanges, KafkaUtils, LocationStrategies}
import org.apache.spark.streaming.{Seconds, StreamingContext}

import scala.annotation.nowarn

@nowarn("cat=deprecation") // Spark 3.4 deprecated DStreams
object QuickStartJob {
  def main(args: Array[String]): Unit = {
    val Array(zookeeper, brokers, topicList) = args
    val topics = topicList.split(",").toSeq
    val kafkaParams = Map[String, Object](
      "bootstrap.servers" -> brokers,
      "key.deserializer" -> classOf[StringDeserializer],
      "value.deserializer" -> classOf[StringDeserializer],
      "group.id" -> "click-count",             // the group whose offsets ZooKeeper holds
      "enable.auto.commit" -> (false: java.lang.Boolean))
    val ssc = new StreamingContext(new SparkConf().setAppName("click-count"), Seconds(10))

    val keeper = SparkOffsetKeeper(zookeeper, kafkaParams) // on the driver only
    keeper.closeOnShutdown(ssc)              // SIGTERM: the last batch commits, the group is released
    val offsets = keeper.load(topics)        // validated: purged, re-created, nothing stored
    val stream = KafkaUtils.createDirectStream[String, String](ssc, LocationStrategies.PreferConsistent,
      ConsumerStrategies.Assign[String, String](offsets.keys, kafkaParams, offsets))

    stream.foreachRDD { rdd =>
      val ranges = rdd.asInstanceOf[HasOffsetRanges].offsetRanges // the stream's own RDD
      rdd.map(_.value).countByValue().foreach { case (page, count) => println(s"$page: $count") }
      keeper.commit(ranges)                  // one atomic ZooKeeper multi per batch (split, with a WARN, past 1 MB)
    }
    ssc.start()
    ssc.awaitTermination()
  }
}
// README: end
