package io.offsetkeeper

import io.offsetkeeper.spark.SparkOffsetKeeper
import java.util.concurrent.TimeUnit
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.StringDeserializer
import org.apache.spark.streaming.kafka010.{ConsumerStrategies, ConsumerStrategy, OffsetRange}
import org.junit.Assert.{assertEquals, assertFalse, assertThrows, assertTrue}
import org.junit.Test

/** The Scala facade, used the way a Spark job in Scala uses it. */
class SparkOffsetKeeperTest {

  private def kafkaParams(group: String): Map[String, Object] = Map(
    "bootstrap.servers" -> TestCluster.bootstrap(),
    "group.id" -> group,
    "key.deserializer" -> classOf[StringDeserializer],
    "value.deserializer" -> classOf[StringDeserializer],
    "enable.auto.commit" -> java.lang.Boolean.FALSE)

  /** Compiles only if load's result fits Subscribe; never called, Spark is not on the class path. */
  def subscribe(keeper: SparkOffsetKeeper, topics: Seq[String], params: Map[String, Object]): ConsumerStrategy[String, String] =
    ConsumerStrategies.Subscribe[String, String](topics, params, keeper.load(topics))

  @Test def loadCommitLoad(): Unit = {
    val topic = TestCluster.createTopic(2)
    TestCluster.produce(topic, 0, 10)
    val group = TestCluster.unique("group")
    val (p0, p1) = (new TopicPartition(topic, 0), new TopicPartition(topic, 1))
    val keeper = SparkOffsetKeeper(TestCluster.zookeeper(), kafkaParams(group))
    try {
      assertEquals(Map(p0 -> 0L, p1 -> 0L), keeper.load(Seq(topic)))
      val ranges = Array(OffsetRange.create(topic, 0, 0, 7), OffsetRange.create(topic, 1, 0, 0))
      assertEquals(2L, keeper.commit(ranges).written)
      assertEquals("7", TestCluster.readOffset(group, topic, 0))
      assertEquals(Map(p0 -> 7L, p1 -> 0L), keeper.load(List(topic)))
      assertEquals(List(3L, 0L), keeper.lag(Set(topic)).map(_.lag))
      assertEquals(0L, keeper.commit(Array.empty[OffsetRange]).written)
      // A job that keeps its positions in a Scala map commits it as it is.
      assertEquals(1L, keeper.commit(Map(p0 -> 8L)).written)
      assertEquals("8", TestCluster.readOffset(group, topic, 0))

      val copy = SerializationTest.roundTrip(keeper)
      try {
        // A copy is an instance of its own: it reads while the original owns the group, and
        // loads once the original closed.
        assertEquals(List(2L, 0L), copy.lag(Set(topic)).map(_.lag))
        keeper.close()
        assertEquals(Map(p0 -> 8L, p1 -> 0L), copy.load(Seq(topic)))
      } finally copy.close()
    } finally keeper.close()
    assertThrows(classOf[IllegalStateException], () => keeper.load(Seq(topic)))
  }

  @Test def commitAsyncFromRangesAndMaps(): Unit = {
    val topic = TestCluster.createTopic(1)
    TestCluster.produce(topic, 0, 10)
    val group = TestCluster.unique("group")
    val p0 = new TopicPartition(topic, 0)
    val keeper = SparkOffsetKeeper(TestCluster.zookeeper(), kafkaParams(group))
    try {
      keeper.load(Seq(topic))
      keeper.commitAsync(Array(OffsetRange.create(topic, 0, 0, 6)))
      keeper.flush()
      assertEquals("6", TestCluster.readOffset(group, topic, 0))
      keeper.commitAsync(Map(p0 -> 9L))
    } finally keeper.close() // writes the last batch
    assertEquals("9", TestCluster.readOffset(group, topic, 0))
  }

  @Test def bootstrapServersAsAJavaList(): Unit = {
    val topic = TestCluster.createTopic(1)
    val group = TestCluster.unique("group")
    // What KafkaConsumer takes, and so what a job may give Spark.
    val params = kafkaParams(group) + ("bootstrap.servers" -> java.util.Arrays.asList(TestCluster.bootstrap()))
    val keeper = SparkOffsetKeeper(TestCluster.zookeeper(), params)
    try assertEquals(Map(new TopicPartition(topic, 0) -> 0L), keeper.load(Seq(topic)))
    finally keeper.close()
  }

  @Test def namedArguments(): Unit = {
    val topic = TestCluster.createTopic(1)
    TestCluster.produce(topic, 0, 4)
    val keeper = SparkOffsetKeeper(TestCluster.zookeeper(), kafkaParams("unused"),
      group = TestCluster.unique("group"), onMissing = OnMissing.LATEST)
    try {
      val report = keeper.loadWithReport(Seq(topic))
      assertEquals(4L, report.partitions.get(0).chosen)
      assertEquals(Action.INITIALIZED, report.partitions.get(0).action)
    } finally keeper.close()
  }

  /** What Kafka's group store holds for the group, read by Kafka's AdminClient. */
  private def kafkaOffsets(group: String): Map[TopicPartition, Long] = {
    val offsets = Map.newBuilder[TopicPartition, Long]
    TestCluster.admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
      .get(30, TimeUnit.SECONDS).forEach((tp, offset) => offsets += tp -> offset.offset)
    offsets.result()
  }

  @Test def kafkaStoreByPropertiesAlone(): Unit = {
    val topic = TestCluster.createTopic(2)
    TestCluster.produce(topic, 0, 10)
    TestCluster.produce(topic, 1, 5)
    val group = TestCluster.unique("group")
    val (p0, p1) = (new TopicPartition(topic, 0), new TopicPartition(topic, 1))
    def keeper() = SparkOffsetKeeper(kafkaParams(group), Map("offsetkeeper.store" -> "kafka")) // no ZooKeeper
    val first = keeper()
    try {
      assertEquals(Map(p0 -> 0L, p1 -> 0L), first.load(Seq(topic)))
      first.commit(Array(OffsetRange.create(topic, 0, 0, 7), OffsetRange.create(topic, 1, 0, 5)))
    } finally first.close()
    assertEquals(Map(p0 -> 7L, p1 -> 5L), kafkaOffsets(group))
    assertFalse(TestCluster.exists(TestCluster.offsetPath(group, topic, 0)))
    val restarted = keeper()
    try assertEquals(Map(p0 -> 7L, p1 -> 5L), restarted.load(Seq(topic)))
    finally restarted.close()
  }

  @Test def dualPhaseByPropertyWritesBothStores(): Unit = {
    val topic = TestCluster.createTopic(2)
    TestCluster.produce(topic, 0, 10)
    TestCluster.produce(topic, 1, 5)
    val group = TestCluster.unique("group")
    val (p0, p1) = (new TopicPartition(topic, 0), new TopicPartition(topic, 1))
    // Phase 2; the named onMissing wins over the same key in properties.
    val keeper = SparkOffsetKeeper(TestCluster.zookeeper(), kafkaParams(group), onMissing = OnMissing.LATEST,
      properties = Map("offsetkeeper.store" -> "zookeeper,kafka", "offsetkeeper.on.missing" -> "earliest"))
    try {
      assertEquals(Map(p0 -> 10L, p1 -> 5L), keeper.load(Seq(topic)))
      TestCluster.produce(topic, 0, 2)
      keeper.commit(Array(OffsetRange.create(topic, 0, 10, 12), OffsetRange.create(topic, 1, 5, 5)))
    } finally keeper.close() // writes what the mirror has pending
    assertEquals(("12", "5"), (TestCluster.readOffset(group, topic, 0), TestCluster.readOffset(group, topic, 1)))
    assertEquals(Map(p0 -> 12L, p1 -> 5L), kafkaOffsets(group))
  }

  @Test def badArguments(): Unit = {
    def illegal(needle: String)(call: => Any): Unit = {
      val e = assertThrows(classOf[IllegalArgumentException], () => call)
      assertTrue(e.getMessage, e.getMessage.contains(needle))
    }
    // A bare null would pick apply(kafkaParams, properties), the form without default arguments.
    illegal("zookeeper is null")(SparkOffsetKeeper(null: String, kafkaParams("g")))
    illegal("properties is null")(SparkOffsetKeeper(kafkaParams("g"), null))
    illegal("zookeeper is not set")(SparkOffsetKeeper(kafkaParams("g"), Map.empty[String, Any]))
    illegal("offsetkeeper.store")(SparkOffsetKeeper(kafkaParams("g"),
      Map("zookeeper.connect" -> "zk:2181", "offsetkeeper.store" -> "mysql")))
    illegal("kafkaParams is null")(SparkOffsetKeeper("zk:2181", null))
    illegal("keeper is null")(SparkOffsetKeeper(null: OffsetKeeper))
    val keeper = SparkOffsetKeeper(TestCluster.zookeeper(), kafkaParams(TestCluster.unique("group")))
    try {
      illegal("topics is null")(keeper.load(null))
      illegal("ranges is null")(keeper.commit(null: Array[OffsetRange]))
      illegal("a/b")(keeper.load(Seq("a/b")))
    } finally keeper.close()
  }
}
