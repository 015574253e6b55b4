"""PyFlink jobs starting from the offsets offsetkeeper keeps in ZooKeeper, on PyFlink's local
MiniCluster with the real Kafka connector, against the test cluster (gradle pyflinkTest):

- after a retention purge past the stored offset, and after the topic was deleted, re-created
  and refilled past the stored offset, a job started through the jar in the job
  (python/offsetkeeper_flink.py, by examples/pyflink/orders_job.py) and one started through the
  CLI (examples/pyflink/cli_start.py) each read every record Kafka holds past the valid start
  once, none purged, none skipped;
- what PyFlink's own KafkaOffsetsInitializer.committed_offsets(EARLIEST) reads instead in the
  same two situations: with the group's offsets in ZooKeeper only, and with them copied as they
  are into Kafka's group;
- a partition added after the offsets were loaded starts at its earliest;
- docs/pyflink.md shows these files' code as it is.

Environment (set by the gradle task): OFFSETKEEPER_CLUSTER_ENV (cluster.env of tests/cluster),
OFFSETKEEPER_PYFLINK_JARS (offsetkeeper's jar, flink-sql-connector-kafka and kafka-clients,
os.pathsep-separated), OFFSETKEEPER_CLI (the offsetkeeper binary).
"""

import os
import sys
import time
import unittest
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "examples" / "pyflink"), str(ROOT / "tests" / "readme")]

from py4j.java_gateway import get_java_class  # noqa: E402
from pyflink.common import WatermarkStrategy  # noqa: E402
from pyflink.common.serialization import SimpleStringSchema  # noqa: E402
from pyflink.datastream import StreamExecutionEnvironment  # noqa: E402
from pyflink.datastream.connectors.kafka import (KafkaOffsetResetStrategy, KafkaOffsetsInitializer,  # noqa: E402
                                                 KafkaSource, KafkaTopicPartition)
from pyflink.java_gateway import get_gateway  # noqa: E402

import cli_start  # noqa: E402  examples/pyflink/cli_start.py
import offsetkeeper_flink  # noqa: E402  python/offsetkeeper_flink.py
import orders_job  # noqa: E402  examples/pyflink/orders_job.py
import readme_check  # noqa: E402  tests/readme/readme_check.py

GROUP = "order-totals"  # the ZooKeeper group of examples/pyflink/orders_job.py
WAIT_SECONDS = 60


def required_env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise SystemExit(f"{name} is not set: run this through `gradle pyflinkTest`, which starts the cluster")
    return value


def cluster_env() -> dict:
    path = Path(required_env("OFFSETKEEPER_CLUSTER_ENV"))
    if not path.is_file():
        raise SystemExit(f"{path} is missing: the test cluster did not start (gradle clusterStart writes it)")
    values = {}
    for line in path.read_text().splitlines():
        key, eq, value = line.partition("=")
        if eq and key.strip():
            values[key.strip()] = value.strip()
    return values


class Kafka:
    """Kafka's admin client and a producer, through the gateway (the kafka-clients jar)."""

    def __init__(self, bootstrap: str):
        self.jvm = get_gateway().jvm
        props = self.jvm.java.util.Properties()
        props.setProperty("bootstrap.servers", bootstrap)
        self.admin = self.jvm.org.apache.kafka.clients.admin.AdminClient.create(props)
        producer_props = self.jvm.java.util.Properties()
        producer_props.setProperty("bootstrap.servers", bootstrap)
        producer_props.setProperty("acks", "all")
        serializer = "org.apache.kafka.common.serialization.StringSerializer"
        producer_props.setProperty("key.serializer", serializer)
        producer_props.setProperty("value.serializer", serializer)
        self.producer = self.jvm.org.apache.kafka.clients.producer.KafkaProducer(producer_props)

    def close(self):
        self.producer.close()
        self.admin.close()

    def _singleton(self, value):
        return self.jvm.java.util.Collections.singleton(value)

    def topic_names(self):
        return set(self.admin.listTopics().names().get())

    def partition_count(self, topic: str) -> int:
        if topic not in self.topic_names():
            return 0
        description = self.admin.describeTopics(self._singleton(topic)).allTopicNames().get().get(topic)
        return description.partitions().size()

    def wait_for(self, condition, what: str):
        deadline = time.monotonic() + WAIT_SECONDS
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {WAIT_SECONDS} s waiting for {what}")
            time.sleep(0.2)

    def create_topic(self, topic: str, partitions: int):
        optional = self.jvm.java.util.Optional
        new_topic = self.jvm.org.apache.kafka.clients.admin.NewTopic(topic, optional.of(partitions), optional.empty())
        deadline = time.monotonic() + WAIT_SECONDS
        while True:  # a topic just deleted may still be going
            try:
                self.admin.createTopics(self._singleton(new_topic)).all().get()
                break
            except Exception as err:  # Py4JJavaError: TopicExistsException while the deletion completes
                if "TopicExistsException" not in str(err) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        self.wait_for(lambda: self.partition_count(topic) == partitions, f"topic {topic} with {partitions} partitions")

    def delete_topic(self, topic: str):
        self.admin.deleteTopics(self._singleton(topic)).all().get()
        self.wait_for(lambda: topic not in self.topic_names(), f"topic {topic} to disappear")

    def add_partitions(self, topic: str, total: int):
        increase = self.jvm.org.apache.kafka.clients.admin.NewPartitions.increaseTo(total)
        self.admin.createPartitions(self.jvm.java.util.Collections.singletonMap(topic, increase)).all().get()
        self.wait_for(lambda: self.partition_count(topic) == total, f"topic {topic} with {total} partitions")

    def produce(self, topic: str, partition: int, count: int, prefix: str):
        """count records "<prefix>p<partition>-<i>", i from 0: unique values, so that a record
        read twice or missing shows."""
        record = self.jvm.org.apache.kafka.clients.producer.ProducerRecord
        for i in range(count):
            self.producer.send(record(topic, partition, "k", f"{prefix}p{partition}-{i}"))
        self.producer.flush()

    def delete_records(self, topic: str, partition: int, before: int):
        """Kafka's deleteRecords: what retention does, on demand."""
        tp = self.jvm.org.apache.kafka.common.TopicPartition(topic, partition)
        to_delete = self.jvm.org.apache.kafka.clients.admin.RecordsToDelete.beforeOffset(before)
        self.admin.deleteRecords(self.jvm.java.util.Collections.singletonMap(tp, to_delete)).all().get()

    def copy_into_group(self, group: str, offsets: dict):
        """Kafka's group offsets set to {(topic, partition): offset} as they are, as
        kafka-consumer-groups.sh --reset-offsets --from-file --execute would."""
        committed = self.jvm.java.util.HashMap()
        for (topic, partition), offset in offsets.items():
            committed.put(self.jvm.org.apache.kafka.common.TopicPartition(topic, partition),
                          self.jvm.org.apache.kafka.clients.consumer.OffsetAndMetadata(offset))
        self.admin.alterConsumerGroupOffsets(group, committed).all().get()


def store(zookeeper: str, bootstrap: str, topic: str, offsets: list):
    """What a previous job (a Spark Streaming one, say) stored when it stopped: it loaded at its
    start (so that its commits record the topic's ID), then committed, through the jar."""
    jvm = get_gateway().jvm
    params = jvm.java.util.HashMap()
    params.put("bootstrap.servers", bootstrap)
    params.put("group.id", GROUP)
    keeper = jvm.io.offsetkeeper.OffsetKeeper.builder().zookeeper(zookeeper).kafkaParams(params).build()
    try:
        keeper.load(jvm.java.util.Collections.singletonList(topic))
        # PyFlink's map wrapper makes java.lang.Long values (py4j would pass Integers).
        stored = jvm.org.apache.flink.python.util.HashMapWrapper(None, get_java_class(jvm.java.lang.Long))
        for partition, offset in enumerate(offsets):
            stored.put(jvm.org.apache.kafka.common.TopicPartition(topic, partition), offset)
        assert keeper.commit(stored.asMap()).written() == len(offsets)
    finally:
        keeper.close()


def report(zookeeper: str, bootstrap: str, topic: str):
    """The load's report of partition 0: (action, chosen, records lost)."""
    jvm = get_gateway().jvm
    params = jvm.java.util.HashMap()
    params.put("bootstrap.servers", bootstrap)
    params.put("group.id", GROUP)
    keeper = jvm.io.offsetkeeper.OffsetKeeper.builder().zookeeper(zookeeper).kafkaParams(params).build()
    try:
        p0 = keeper.loadWithReport(jvm.java.util.Collections.singletonList(topic)).partitions().get(0)
        return p0.action().name(), p0.chosen(), p0.recordsLost()
    finally:
        keeper.close()


def kafka_store_keeper(bootstrap: str, group: str):
    """A keeper of offsets in Kafka's group store (no ZooKeeper), through the jar."""
    jvm = get_gateway().jvm
    params = jvm.java.util.HashMap()
    params.put("bootstrap.servers", bootstrap)
    params.put("group.id", group)
    return jvm.io.offsetkeeper.OffsetKeeper.builder().kafkaStore().kafkaParams(params).build()


def commit_in_kafka(keeper, topic: str, offsets: list):
    jvm = get_gateway().jvm
    stored = jvm.org.apache.flink.python.util.HashMapWrapper(None, get_java_class(jvm.java.lang.Long))
    for partition, offset in enumerate(offsets):
        stored.put(jvm.org.apache.kafka.common.TopicPartition(topic, partition), offset)
    assert keeper.commit(stored.asMap()).written() == len(offsets)


def kafka_store_report(bootstrap: str, group: str, topic: str):
    """The load's report of partition 0 from Kafka's group store: (action, chosen, records lost)."""
    keeper = kafka_store_keeper(bootstrap, group)
    try:
        topics = get_gateway().jvm.java.util.Collections.singletonList(topic)
        p0 = keeper.loadWithReport(topics).partitions().get(0)
        return p0.action().name(), p0.chosen(), p0.recordsLost()
    finally:
        keeper.close()


def expected(partition: int, start: int, end: int, prefix: str = "") -> list:
    return [f"{prefix}p{partition}-{i}" for i in range(start, end)]


class PyFlinkRestartTest(unittest.TestCase):
    env = None
    kafka = None

    @classmethod
    def setUpClass(cls):
        cluster = cluster_env()
        cls.zookeeper = cluster["OFFSETKEEPER_ZK"]
        cls.bootstrap = cluster["OFFSETKEEPER_BOOTSTRAP"]
        cls.cli = required_env("OFFSETKEEPER_CLI")
        if not os.access(cls.cli, os.X_OK):
            raise SystemExit(f"{cls.cli} is not an executable: build it first (cargo build -p offsetkeeper-cli)")
        jars = [Path(p) for p in required_env("OFFSETKEEPER_PYFLINK_JARS").split(os.pathsep)]
        missing = [str(j) for j in jars if not j.is_file()]
        if missing:
            raise SystemExit(f"jars missing: {missing}")
        cls.env = StreamExecutionEnvironment.get_execution_environment()
        cls.env.set_parallelism(1)
        # As a job does (examples/pyflink/orders_job.py): the jars on the gateway and the job.
        cls.env.add_jars(*[j.as_uri() for j in jars])
        cls.kafka = Kafka(cls.bootstrap)

    @classmethod
    def tearDownClass(cls):
        if cls.kafka is not None:
            cls.kafka.close()

    def read(self, source_builder) -> list:
        """Every record from the source's start to the topics' current end, on a MiniCluster."""
        source = source_builder.set_bounded(KafkaOffsetsInitializer.latest()).build()
        stream = self.env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka")
        with stream.execute_and_collect("offsetkeeper-pyflink") as records:
            return list(records)

    def source(self, topic: str, starting, group: str = GROUP):
        return (KafkaSource.builder()
                .set_bootstrap_servers(self.bootstrap)
                .set_topics(topic)
                .set_group_id(group)
                .set_starting_offsets(starting)
                .set_value_only_deserializer(SimpleStringSchema()))

    def read_through_the_jar(self, topic: str) -> list:
        return self.read(orders_job.orders_source(self.zookeeper, self.bootstrap, [topic]))

    def read_through_the_cli(self, topic: str) -> list:
        starting = cli_start.starting_offsets(self.zookeeper, self.bootstrap, GROUP, [topic], cli=self.cli)
        return self.read(self.source(topic, starting))

    def read_committed(self, topic: str, group: str) -> list:
        """PyFlink's own start: Kafka's committed offsets of the group, else EARLIEST."""
        return self.read(self.source(topic, KafkaOffsetsInitializer.committed_offsets(
            KafkaOffsetResetStrategy.EARLIEST), group))

    def assert_exactly_once(self, want: list, read: list, how: str):
        self.assertEqual(sorted(want), sorted(set(read)), f"{how}: the records read")
        self.assertEqual(len(want), len(read), f"{how}: records read twice")

    def test_restarts_after_a_retention_purge(self):
        topic = f"pyflink-purge-{uuid.uuid4().hex[:8]}"
        self.kafka.create_topic(topic, 2)
        self.kafka.produce(topic, 0, 100, "")
        self.kafka.produce(topic, 1, 100, "")
        store(self.zookeeper, self.bootstrap, topic, [20, 50])
        self.kafka.delete_records(topic, 0, 70)  # retention went past the stored 20
        self.assertEqual(("RESET_BELOW_RANGE", 70, 50), report(self.zookeeper, self.bootstrap, topic))

        want = expected(0, 70, 100) + expected(1, 50, 100)
        self.assert_exactly_once(want, self.read_through_the_jar(topic), "through the jar")
        self.assert_exactly_once(want, self.read_through_the_cli(topic), "through the CLI")

        # PyFlink's own committed_offsets(EARLIEST): Kafka has no offsets of a group kept in
        # ZooKeeper, so every partition starts at its earliest: partition 1 is read again from 0.
        naive = self.read_committed(topic, f"{topic}-kafka-group")
        self.assert_exactly_once(expected(0, 70, 100) + expected(1, 0, 100), naive, "committed_offsets, Kafka group empty")
        # The stored offsets copied into Kafka's group as they are: the purged 20 is out of
        # range and the consumer resets it to the log start, as offsetkeeper does.
        copied = f"{topic}-copied-group"
        self.kafka.copy_into_group(copied, {(topic, 0): 20, (topic, 1): 50})
        self.assert_exactly_once(want, self.read_committed(topic, copied), "committed_offsets, offsets copied")
        print(f"pyflink: after the purge, {len(want)} records read from 0:70 and 1:50 through the jar and "
              f"through the CLI, none purged, none twice; committed_offsets(EARLIEST) with the offsets only in "
              f"ZooKeeper read {len(naive)} ({len(naive) - len(want)} again)", flush=True)

    def test_restarts_after_the_topic_was_recreated_and_refilled(self):
        topic = f"pyflink-recreated-{uuid.uuid4().hex[:8]}"
        self.kafka.create_topic(topic, 1)
        self.kafka.produce(topic, 0, 50, "old-")
        store(self.zookeeper, self.bootstrap, topic, [50])  # also records the topic's ID
        self.kafka.delete_topic(topic)
        self.kafka.create_topic(topic, 1)
        self.kafka.produce(topic, 0, 80, "new-")  # past the stored 50
        action, chosen, _ = report(self.zookeeper, self.bootstrap, topic)
        self.assertEqual(("RECREATED", 0), (action, chosen))

        want = expected(0, 0, 80, "new-")
        jar = self.read_through_the_jar(topic)
        self.assert_exactly_once(want, jar, "through the jar")
        self.assert_exactly_once(want, self.read_through_the_cli(topic), "through the CLI")
        self.assertFalse([r for r in jar if r.startswith("old-")])

        # The stored offsets copied into Kafka's group as they are: 50 is within the new topic's
        # range, so committed_offsets starts there and silently skips the new topic's first 50.
        copied = f"{topic}-copied-group"
        self.kafka.copy_into_group(copied, {(topic, 0): 50})
        skipped = self.read_committed(topic, copied)
        self.assert_exactly_once(expected(0, 50, 80, "new-"), skipped, "committed_offsets, offsets copied")
        # With nothing in Kafka's group, EARLIEST: the whole new topic, as offsetkeeper chose.
        self.assert_exactly_once(want, self.read_committed(topic, f"{topic}-kafka-group"), "committed_offsets, Kafka group empty")
        print(f"pyflink: after the re-creation, {len(want)} new records read through the jar and through the CLI; "
              f"committed_offsets(EARLIEST) with the stored offsets copied into Kafka's group read {len(skipped)} "
              f"(skipped {len(want) - len(skipped)})", flush=True)

    def read_kafka_store(self, topic: str, group: str) -> list:
        starting = offsetkeeper_flink.starting_offsets(
            None, {"bootstrap.servers": self.bootstrap, "group.id": group}, [topic],
            properties={"offsetkeeper.store": "kafka"})
        return self.read(self.source(topic, starting, group))

    def test_a_group_kept_in_kafka_restarts_after_a_purge_and_a_recreation(self):
        topic = f"pyflink-kafka-store-{uuid.uuid4().hex[:8]}"
        group = f"{topic}-group"
        self.kafka.create_topic(topic, 1)
        self.kafka.produce(topic, 0, 100, "old-")
        jvm = get_gateway().jvm
        topics = jvm.java.util.Collections.singletonList(topic)
        keeper = kafka_store_keeper(self.bootstrap, group)
        try:
            keeper.load(topics)
            commit_in_kafka(keeper, topic, [20])
        finally:
            keeper.close()
        self.kafka.delete_records(topic, 0, 70)  # retention went past the committed 20
        self.assertEqual(("RESET_BELOW_RANGE", 70, 50), kafka_store_report(self.bootstrap, group, topic))
        want = expected(0, 70, 100, "old-")
        self.assert_exactly_once(want, self.read_kafka_store(topic, group), "purged, through the jar")
        # committed_offsets(EARLIEST) starts at the log start too (the consumer's reset), but
        # nothing tells that 50 records were lost.
        self.assert_exactly_once(want, self.read_committed(topic, group), "purged, committed_offsets")

        # Re-created and refilled while a job ran: its last commit (100, the old topic's end)
        # lands in the new log, with the old topic's ID recorded beside it.
        running = kafka_store_keeper(self.bootstrap, group)
        try:
            running.load(topics)
            self.kafka.delete_topic(topic)
            self.kafka.create_topic(topic, 1)
            self.kafka.produce(topic, 0, 120, "new-")
            commit_in_kafka(running, topic, [100])
        finally:
            running.close()
        action, chosen, _ = kafka_store_report(self.bootstrap, group, topic)
        self.assertEqual(("RECREATED", 0), (action, chosen))
        want = expected(0, 0, 120, "new-")
        self.assert_exactly_once(want, self.read_kafka_store(topic, group), "re-created, through the jar")
        skipped = self.read_committed(topic, group)
        self.assert_exactly_once(expected(0, 100, 120, "new-"), skipped, "re-created, committed_offsets")
        print(f"pyflink: a group kept in Kafka: after the purge 30 records read from offset 70, 50 reported lost; "
              f"after the re-creation the whole new topic ({len(want)}) through the jar, "
              f"committed_offsets(EARLIEST) read {len(skipped)} (skipped {len(want) - len(skipped)})", flush=True)

    def test_a_partition_added_after_the_load_starts_at_its_earliest(self):
        topic = f"pyflink-added-{uuid.uuid4().hex[:8]}"
        self.kafka.create_topic(topic, 1)
        self.kafka.produce(topic, 0, 20, "")
        store(self.zookeeper, self.bootstrap, topic, [10])
        builder = orders_job.orders_source(self.zookeeper, self.bootstrap, [topic])  # loads now
        self.kafka.add_partitions(topic, 2)
        self.kafka.produce(topic, 1, 5, "")
        self.assert_exactly_once(expected(0, 10, 20) + expected(1, 0, 5), self.read(builder), "partition added")

    def test_the_docs_show_the_tested_code(self):
        doc = ROOT / "docs" / "pyflink.md"
        text = doc.read_text(encoding="utf-8")
        blocks = text.count("<!-- readme-check: ")
        self.assertGreaterEqual(blocks, 3, f"{doc}: the held snippets")
        # The page's own snippets (the docs check reads every page; here only this one).
        page = "docs/pyflink.md"
        problems = readme_check.snippet_problems(ROOT, {page: text})
        self.assertEqual([], [p for p in problems if p.startswith(page)])


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    failed = len(result.failures) + len(result.errors)
    print(f"pyflink: {result.testsRun - failed - len(result.skipped)} passed, {failed} failed")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
