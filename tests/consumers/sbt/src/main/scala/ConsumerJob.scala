import io.offsetkeeper.spark.SparkOffsetKeeper
import java.util.Collections
import org.apache.kafka.clients.admin.{Admin, NewTopic}
import org.apache.kafka.clients.producer.{KafkaProducer, ProducerRecord}
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.StringSerializer
import org.apache.spark.streaming.kafka010.OffsetRange

/** A Spark job's offset handling in Scala: load, commit a batch's ranges, load again. */
object ConsumerJob {
  def main(args: Array[String]): Unit = {
    val Array(zookeeper, bootstrap) = args
    val topic = s"consumer-sbt-${System.currentTimeMillis}"
    val kafkaParams = Map[String, Any]("bootstrap.servers" -> bootstrap, "group.id" -> s"$topic-group")
    createAndFill(bootstrap, topic)
    val tp = new TopicPartition(topic, 0)

    // The three lines of a job: keeper, load, commit.
    val keeper = SparkOffsetKeeper(zookeeper, kafkaParams)
    val first = keeper.load(Seq(topic))
    require(first == Map(tp -> 0L), s"first load $first")
    keeper.commit(Array(OffsetRange.create(topic, 0, 0, 3))) // a batch of 3 records
    keeper.close()

    val again = SparkOffsetKeeper(zookeeper, kafkaParams)
    val second = again.load(Seq(topic))
    again.close()
    require(second == Map(tp -> 3L), s"second load $second")
    println(s"CONSUMER OK sbt $second")
  }

  private def createAndFill(bootstrap: String, topic: String): Unit = {
    val config = new java.util.HashMap[String, AnyRef]
    config.put("bootstrap.servers", bootstrap)
    val admin = Admin.create(config)
    try {
      admin.createTopics(Collections.singleton(new NewTopic(topic, 1, 1.toShort))).all().get()
    } finally admin.close()
    val producer = new KafkaProducer[String, String](config, new StringSerializer, new StringSerializer)
    try {
      for (i <- 0 until 5) producer.send(new ProducerRecord(topic, Integer.valueOf(0), null: String, s"record $i")).get()
    } finally producer.close()
  }
}
