package io.offsetkeeper.spark

import io.offsetkeeper.{CommitResult, LoadReport, OffsetKeeper, OnAboveRange, OnBelowRange, OnMissing, OnRecreated, PartitionLag}
import org.apache.kafka.common.TopicPartition
import org.apache.spark.streaming.StreamingContext
import org.apache.spark.streaming.kafka010.OffsetRange

import scala.annotation.nowarn

/**
 * [[io.offsetkeeper.OffsetKeeper]] with Scala types, for Spark Streaming jobs:
 * {{{
 * val keeper = SparkOffsetKeeper("zk1:2181,zk2:2181", kafkaParams)
 * val offsets = keeper.load(topics)
 * val stream = KafkaUtils.createDirectStream[String, String](ssc, PreferConsistent,
 *   ConsumerStrategies.Assign[String, String](offsets.keys, kafkaParams, offsets))
 * stream.foreachRDD { rdd =>
 *   val ranges = rdd.asInstanceOf[HasOffsetRanges].offsetRanges
 *   // process the batch, then:
 *   keeper.commit(ranges)
 * }
 * }}}
 * Thread-safe and serializable (configuration only), like the keeper it wraps.
 */
final class SparkOffsetKeeper(val keeper: OffsetKeeper) extends AutoCloseable with Serializable {
  if (keeper == null) throw new IllegalArgumentException("keeper is null")

  /**
   * The validated offsets of every partition of the topics, for `ConsumerStrategies.Assign`
   * (`Assign(offsets.keys, kafkaParams, offsets)`).
   */
  def load(topics: Iterable[String]): Map[TopicPartition, Long] = {
    val offsets = Map.newBuilder[TopicPartition, Long]
    keeper.load(javaTopics(topics)).forEach((tp, offset) => offsets += tp -> offset.longValue)
    offsets.result()
  }

  /** The same offsets with what was stored and why each was chosen; `toString` is a table. */
  def loadWithReport(topics: Iterable[String]): LoadReport = keeper.loadWithReport(javaTopics(topics))

  /**
   * The same validated offsets as `load` (same policies, ownership and logged corrections) as
   * the JSON of Structured Streaming's Kafka option `startingOffsets`, `{"topic":{"0":23}}`:
   * {{{
   * spark.readStream.format("kafka").option("subscribe", "orders")
   *   .option("startingOffsets", keeper.startingOffsets(Seq("orders")))
   * }}}
   * Spark reads it only when the query has no checkpoint yet.
   */
  def startingOffsets(topics: Iterable[String]): String = keeper.startingOffsetsJson(javaTopics(topics))

  /**
   * Commits the batch's `untilOffset`s, all or nothing, read straight from the array (see
   * [[SparkOffsets.commit]]); an empty array does nothing. A partition named by two ranges is
   * refused (see [[SparkOffsets.untilOffsets]]). While ZooKeeper cannot be
   * reached the result is `deferred` and the next commit writes these offsets; it throws
   * `ServerTimeoutException` only once commits have failed for longer than the keeper's commit
   * outage tolerance (see [[io.offsetkeeper.OffsetKeeper#commit]]).
   */
  def commit(ranges: Array[OffsetRange]): CommitResult = SparkOffsets.commit(keeper, ranges)

  /**
   * Commits these offsets (each partition's next offset to read), all or nothing, as
   * `commit(ranges)` does; for jobs that keep their positions in a map.
   */
  def commit(offsets: collection.Map[TopicPartition, Long]): CommitResult = {
    if (offsets == null) keeper.commit(null: java.util.Map[TopicPartition, java.lang.Long])
    else {
      val javaOffsets = new java.util.LinkedHashMap[TopicPartition, java.lang.Long](offsets.size * 2)
      offsets.foreach { case (tp, offset) => javaOffsets.put(tp, offset) }
      keeper.commit(javaOffsets)
    }
  }

  /**
   * Commits the batch's `untilOffset`s without waiting (see [[SparkOffsets.commitAsync]]): the
   * keeper's writer thread writes them in order, merging batches handed over while it writes,
   * each partition keeping its highest offset. After a crash, at most the pending and in-flight
   * batches are processed again (at-least-once); the stored offsets are never more than the
   * in-flight plus the pending batch behind what was handed to `commitAsync`. A failed write is
   * thrown by the next `commitAsync`, `flush` or `close` (see
   * [[io.offsetkeeper.OffsetKeeper#commitAsync]]).
   */
  def commitAsync(ranges: Array[OffsetRange]): Unit = SparkOffsets.commitAsync(keeper, ranges)

  /** Commits these offsets without waiting, as `commitAsync(ranges)` does. */
  def commitAsync(offsets: collection.Map[TopicPartition, Long]): Unit = {
    if (offsets == null) keeper.commitAsync(null: java.util.Map[TopicPartition, java.lang.Long])
    else {
      val javaOffsets = new java.util.LinkedHashMap[TopicPartition, java.lang.Long](offsets.size * 2)
      offsets.foreach { case (tp, offset) => javaOffsets.put(tp, offset) }
      keeper.commitAsync(javaOffsets)
    }
  }

  /**
   * Waits until what was handed to `commitAsync` before this call is written; throws a failed
   * write's exception (see [[io.offsetkeeper.OffsetKeeper#flush]]).
   */
  def flush(): Unit = keeper.flush()

  /**
   * Committed offset, range and lag of every partition of the topics; the lag is the engine's,
   * as for Java and the CLI: log end minus committed, null when nothing usable is committed.
   */
  def lag(topics: Iterable[String]): Seq[PartitionLag] = {
    val lags = keeper.lag(javaTopics(topics))
    List.tabulate(lags.size)(lags.get)
  }

  /**
   * At the JVM's shutdown (SIGTERM too), stops `ssc` gracefully, so that the running batch and
   * the last one commit, then closes the keeper, releasing the group so a restart elsewhere does
   * not wait. Runs before Spark's own shutdown hooks; see `SparkOffsets.closeOnShutdown`.
   */
  @nowarn("cat=deprecation") // Spark 3.4 deprecated DStreams, which this is for
  def closeOnShutdown(ssc: StreamingContext): Unit = SparkOffsets.closeOnShutdown(keeper, ssc)

  /**
   * Writes what was handed to `commitAsync`, then frees the native engine; later calls throw
   * `IllegalStateException`.
   */
  override def close(): Unit = keeper.close()

  override def toString: String = keeper.toString

  // Copied by hand instead of with JavaConverters, so that this source compiles without
  // deprecation warnings for Scala 2.12 and 2.13 alike. Null is passed on, for the keeper to
  // name it in its IllegalArgumentException.
  private def javaTopics(topics: Iterable[String]): java.util.Collection[String] =
    if (topics == null) null
    else {
      val list = new java.util.ArrayList[String]
      topics.foreach(list.add)
      list
    }
}

object SparkOffsetKeeper {

  /**
   * A keeper for the job's `kafkaParams` (the map given to Spark) whose offsets ZooKeeper holds,
   * or, with `offsetkeeper.store` in `properties`, a keeper in one of the phases of a move to
   * Kafka's group store (docs/migration.md). Arguments left null take the defaults: the group is
   * `group.id`, policies keep data (a partition with nothing stored follows `auto.offset.reset`;
   * a re-created topic's stored offsets, caught by its topic ID, start at earliest:
   * `onRecreated`), the base path is `/consumers`.
   *
   * `properties` are settings by key, as `OffsetKeeper.Builder.property` takes them (values as
   * `String.valueOf`): the `offsetkeeper.*` keys of docs/configuration.md (the store, timeouts,
   * ownership, ...), `zookeeper.*` (security) and any Kafka consumer setting, which wins over
   * `kafkaParams`. A named argument given (not null) wins over the same setting in `properties`.
   * {{{
   * SparkOffsetKeeper(zookeeper, kafkaParams)                                    // phase 1: ZooKeeper
   * SparkOffsetKeeper(zookeeper, kafkaParams,
   *   properties = Map("offsetkeeper.store" -> "zookeeper,kafka"))               // phase 2
   * SparkOffsetKeeper(zookeeper, kafkaParams,
   *   properties = Map("offsetkeeper.store" -> "kafka,zookeeper"))               // phase 3
   * }}}
   * Phase 4, Kafka's group store alone (no ZooKeeper): `apply(kafkaParams, properties)` below.
   * An unknown `offsetkeeper.*` or `zookeeper.*` key, or a bad value, throws
   * `IllegalArgumentException` naming the key.
   */
  def apply(
      zookeeper: String,
      kafkaParams: collection.Map[String, Any],
      group: String = null,
      onMissing: OnMissing = null,
      onBelowRange: OnBelowRange = null,
      onAboveRange: OnAboveRange = null,
      basePath: String = null,
      onRecreated: OnRecreated = null,
      properties: collection.Map[String, Any] = null): SparkOffsetKeeper = {
    val builder = OffsetKeeper.builder()
    // First, so that the arguments given win over the same keys there.
    if (properties != null) builder.properties(javaParams(properties))
    builder.zookeeper(zookeeper).kafkaParams(javaParams(kafkaParams))
    if (onMissing != null) builder.onMissing(onMissing)
    if (onBelowRange != null) builder.onBelowRange(onBelowRange)
    if (onAboveRange != null) builder.onAboveRange(onAboveRange)
    if (onRecreated != null) builder.onRecreated(onRecreated)
    if (group != null) builder.group(group)
    if (basePath != null) builder.basePath(basePath)
    new SparkOffsetKeeper(builder.build())
  }

  /**
   * A keeper configured by its `properties` alone, beside the job's `kafkaParams`: the keys of
   * `OffsetKeeper.Builder.property` (see the other `apply`), e.g. Kafka's group store with no
   * ZooKeeper (docs/kafka-store.md), or a phase of the move given ZooKeeper as a property:
   * {{{
   * SparkOffsetKeeper(kafkaParams, Map("offsetkeeper.store" -> "kafka"))
   * SparkOffsetKeeper(kafkaParams, Map("zookeeper.connect" -> zookeeper,
   *   "offsetkeeper.store" -> "kafka,zookeeper", "offsetkeeper.on.missing" -> "latest"))
   * }}}
   * The group is `kafkaParams`'s `group.id`. Without `offsetkeeper.store=kafka`,
   * `zookeeper.connect` is required. A null map, an unknown `offsetkeeper.*` or `zookeeper.*`
   * key or a bad value throws `IllegalArgumentException` naming it.
   */
  def apply(kafkaParams: collection.Map[String, Any], properties: collection.Map[String, Any]): SparkOffsetKeeper = {
    val builder = OffsetKeeper.builder().kafkaParams(javaParams(kafkaParams))
    builder.properties(javaParams(properties))
    new SparkOffsetKeeper(builder.build())
  }

  /** Wraps a keeper built in Java (`OffsetKeeper.builder()`), for settings the other forms lack. */
  def apply(keeper: OffsetKeeper): SparkOffsetKeeper = new SparkOffsetKeeper(keeper)

  private def javaParams(params: collection.Map[String, Any]): java.util.Map[String, Any] =
    if (params == null) null
    else {
      val map = new java.util.LinkedHashMap[String, Any]
      params.foreach { case (key, value) => map.put(key, value) }
      map
    }
}
