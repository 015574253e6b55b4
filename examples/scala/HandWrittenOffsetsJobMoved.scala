// A job that kept its offsets in ZooKeeper with a hand-written KafkaOffsetCoordinator (ZkUtils
// reads and writes, one per partition), after the move to offsetkeeper, as the README's
// migration section shows it: the lines between the README markers are the README's snippet
// (tests/readme/readme_check.py checks it), and the build compiles them
// (gradle :e2e:compileExamples).
//
//   spark-submit --class HandWrittenOffsetsJobMoved --jars offsetkeeper_2.12-0.1.0.jar app.jar zk:2181 broker:9092 mi_topic

import io.offsetkeeper.OnMissing
import io.offsetkeeper.spark.SparkOffsetKeeper
import org.apache.kafka.common.serialization.{ByteArrayDeserializer, StringDeserializer}
import org.apache.spark.SparkConf
import org.apache.spark.streaming.kafka010.{ConsumerStrategies, HasOffsetRanges, KafkaUtils, LocationStrategies}
import org.apache.spark.streaming.{Seconds, StreamingContext}

import scala.annotation.nowarn

@nowarn("cat=deprecation")
object HandWrittenOffsetsJobMoved {
  def main(args: Array[String]): Unit = {
    val Array(zookeeper, brokers, topicList) = args
    val topics = topicList.split(",").toSeq
    val ssc = new StreamingContext(new SparkConf().setAppName("hand-written-offsets-job"), Seconds(10))
    // README: begin
    val kafkaParams = Map[String, Object](
      "bootstrap.servers" -> brokers,
      "key.deserializer" -> classOf[StringDeserializer],
      "value.deserializer" -> classOf[ByteArrayDeserializer],
      "group.id" -> "mi_grupo_consumidor",   // the group whose offsets ZooKeeper holds
      "auto.offset.reset" -> "latest",
      "enable.auto.commit" -> (false: java.lang.Boolean))

    // was: new KafkaOffsetCoordinator(zookeeper, kafkaParams)
    val keeper = SparkOffsetKeeper(zookeeper, kafkaParams,
      onMissing = OnMissing.EARLIEST)        // as before: nothing stored starts at earliest
    keeper.closeOnShutdown(ssc)              // SIGTERM: the last batch commits, the group is released

    // was: coordinator.createStream[String, Array[Byte]](ssc, topics)
    val stream = KafkaUtils.createDirectStream[String, Array[Byte]](ssc,
      LocationStrategies.PreferConsistent,
      ConsumerStrategies.Subscribe[String, Array[Byte]](topics, kafkaParams, keeper.load(topics)))

    stream.foreachRDD { rdd =>
      val ranges = rdd.asInstanceOf[HasOffsetRanges].offsetRanges // the stream's own RDD
      // ... process the batch ...
      keeper.commit(ranges)                  // was: coordinator.commitOffsets(rdd)
    }
    // README: end
    ssc.start()
    ssc.awaitTermination()
  }
}
