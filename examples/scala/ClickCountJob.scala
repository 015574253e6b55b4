// A direct-stream job moved to offsetkeeper. The lines marked CHANGED are the only difference
// from the usual direct-stream job that kept offsets in ZooKeeper by hand.
//
//   spark-submit --class ClickCountJob --jars offsetkeeper_2.12-0.1.0.jar app.jar zk:2181 broker:9092 clicks

import io.offsetkeeper.spark.SparkOffsetKeeper // CHANGED
import org.apache.kafka.common.serialization.StringDeserializer
import org.apache.spark.SparkConf
import org.apache.spark.streaming.kafka010.{ConsumerStrategies, HasOffsetRanges, KafkaUtils, LocationStrategies}
import org.apache.spark.streaming.{Seconds, StreamingContext}

import scala.annotation.nowarn

// Spark 3.4 deprecated DStreams in favour of Structured Streaming; this is the API such jobs use.
@nowarn("cat=deprecation")
object ClickCountJob {
  def main(args: Array[String]): Unit = {
    val Array(zookeeper, brokers, topicList) = args
    val topics = topicList.split(",").toSeq
    val kafkaParams = Map[String, Object](
      "bootstrap.servers" -> brokers,
      "key.deserializer" -> classOf[StringDeserializer],
      "value.deserializer" -> classOf[StringDeserializer],
      "group.id" -> "click-count",
      "enable.auto.commit" -> (false: java.lang.Boolean))

    val ssc = new StreamingContext(new SparkConf().setAppName("click-count"), Seconds(10))
    val keeper = SparkOffsetKeeper(zookeeper, kafkaParams) // CHANGED: was KafkaOffsetCoordinator

    val stream = KafkaUtils.createDirectStream[String, String](
      ssc,
      LocationStrategies.PreferConsistent,
      ConsumerStrategies.Subscribe[String, String](topics, kafkaParams, keeper.load(topics))) // CHANGED

    stream.foreachRDD { rdd =>
      val ranges = rdd.asInstanceOf[HasOffsetRanges].offsetRanges
      val clicks = rdd.map(_.value).countByValue()
      clicks.foreach { case (page, count) => println(s"$page: $count") }
      keeper.commit(ranges) // CHANGED: one atomic ZooKeeper multi per batch
    }

    ssc.start()
    ssc.awaitTermination()
  }
}
