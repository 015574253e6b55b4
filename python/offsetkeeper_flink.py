"""offsetkeeper for PyFlink: a KafkaSource starts where a Spark Streaming job (or any consumer that
kept its offsets in ZooKeeper, /consumers/<group>/offsets/<topic>/<partition>) left off, at
offsets validated against the brokers, as a Java Flink job does with
OffsetsInitializer.offsets(keeper.load(topics), ...).

The keeper runs in the JVM of PyFlink's Java gateway: offsetkeeper's jar (it carries the native
library) and kafka-clients go on the job's jars beside flink-sql-connector-kafka:

    env.add_jars("file:///jobs/offsetkeeper_2.12-0.1.0.jar", "file:///jobs/kafka-clients-3.4.0.jar",
                 "file:///jobs/flink-sql-connector-kafka-3.2.0-1.19.jar")
    starting = offsetkeeper_flink.starting_offsets("zk:2181", {"bootstrap.servers": "kafka:9092",
                                                               "group.id": "order-totals"}, ["orders"])
    KafkaSource.builder()...set_starting_offsets(starting)

The keeper is closed once the offsets are loaded: nothing is written to ZooKeeper, and from then
on Flink keeps its positions in its own checkpoints and savepoints.
"""

import json
from typing import Dict, Iterable, Mapping, Optional, Tuple

from py4j.java_gateway import JavaClass
from pyflink.datastream.connectors.kafka import (KafkaOffsetResetStrategy, KafkaOffsetsInitializer,
                                                 KafkaTopicPartition)
from pyflink.java_gateway import get_gateway

__all__ = ["load", "starting_offsets"]


def _java_map(values: Mapping[str, object]):
    """A java.util.HashMap of the entries, each value as its text (the keeper parses them as
    KafkaConsumer does: "30000", "SASL_SSL", ...)."""
    result = get_gateway().jvm.java.util.HashMap()
    for key, value in values.items():
        result.put(str(key), str(value))
    return result


def _keeper_class():
    keeper = get_gateway().jvm.io.offsetkeeper.OffsetKeeper
    if not isinstance(keeper, JavaClass):
        raise RuntimeError("io.offsetkeeper.OffsetKeeper is not on the PyFlink gateway's class path: call "
                           "env.add_jars('file:///.../offsetkeeper_2.12-<version>.jar', "
                           "'file:///.../kafka-clients-<version>.jar', ...) before loading the offsets")
    return keeper


def load(zookeeper: Optional[str], kafka_params: Mapping[str, object], topics: Iterable[str],
         properties: Optional[Mapping[str, object]] = None) -> Dict[Tuple[str, int], int]:
    """{(topic, partition): offset} for every partition of the topics, validated against the
    brokers as a Spark job's load is: an offset purged by retention moves to the log start, one
    stored for a topic since re-created (another topic ID) to the new topic's earliest, a
    partition with nothing stored to auto.offset.reset or earliest. Corrections are logged at WARN
    in the gateway's log.

    kafka_params: the consumer settings (bootstrap.servers; group.id names the group unless
    properties has none; security settings as for Kafka's Java client). properties: further
    settings as the builder's property(key, value) takes them ("offsetkeeper.on.below.range":
    "fail", ...; "offsetkeeper.store": "kafka" for offsets kept in Kafka's group store, with
    zookeeper None). Raises the keeper's Java exception (a Py4JJavaError) when a topic does not
    exist, a FAIL policy applies or another running instance owns the group's partitions.
    """
    builder = _keeper_class().builder().kafkaParams(_java_map(kafka_params))
    if zookeeper is not None:
        builder = builder.zookeeper(zookeeper)
    if properties:
        builder = builder.properties(_java_map(properties))
    names = get_gateway().jvm.java.util.ArrayList()
    for topic in topics:
        names.add(topic)
    keeper = builder.build()
    try:
        # One string across the gateway, whatever the partition count: {"topic":{"0":23,...}}.
        chosen = json.loads(keeper.loadWithReport(names).startingOffsetsJson())
    finally:
        keeper.close()  # the group is not held: the job writes nothing to the store
    return {(topic, int(partition)): offset
            for topic, partitions in chosen.items() for partition, offset in partitions.items()}


# README: begin
def starting_offsets(zookeeper: Optional[str], kafka_params: Mapping[str, object], topics: Iterable[str],
                     reset: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.EARLIEST,
                     properties: Optional[Mapping[str, object]] = None) -> KafkaOffsetsInitializer:
    """The KafkaSource's starting offsets: the validated offsets of load(). A partition with no
    entry (added to a topic after the load) starts at the offset Kafka's group of the source has
    committed for it, if any, else as `reset` says."""
    offsets = load(zookeeper, kafka_params, topics, properties)
    return KafkaOffsetsInitializer.offsets(
        {KafkaTopicPartition(topic, partition): offset for (topic, partition), offset in offsets.items()}, reset)
# README: end
