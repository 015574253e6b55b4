# A PyFlink job that starts where a Spark Streaming job (or any consumer) left off in ZooKeeper,
# at the offsets the offsetkeeper CLI validated against the brokers: no offsetkeeper jar in the
# job, the CLI runs beside it. `reset --to-valid --export json` is a dry run (nothing is written
# to ZooKeeper) that prints the offsets a job's load would start from, corrected by the same
# policies (a purged offset moves to the log start, a re-created topic starts at its earliest).
#
#   python cli_start.py zk:2181 broker:9092 order-totals orders \
#       file:///jobs/flink-sql-connector-kafka-3.2.0-1.19.jar

import json
import subprocess
import sys

from pyflink.common import WatermarkStrategy
from pyflink.common.serialization import SimpleStringSchema
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.kafka import (KafkaOffsetResetStrategy, KafkaOffsetsInitializer, KafkaSource,
                                                 KafkaTopicPartition)


# README: begin
def starting_offsets(zookeeper: str, bootstrap: str, group: str, topics: list,
                     cli: str = "offsetkeeper") -> KafkaOffsetsInitializer:
    command = [cli, "--zookeeper", zookeeper, "--bootstrap-servers", bootstrap, "--group", group, "reset"]
    for topic in topics:
        command += ["--topic", topic]
    command += ["--to-valid", "--export", "json"]
    # {"group":G,"offsets":[{"topic":T,"partition":P,"offset":N},...]}; a failure raises
    # CalledProcessError, the CLI's reason on its stderr
    doc = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    offsets = {KafkaTopicPartition(o["topic"], o["partition"]): o["offset"] for o in doc["offsets"]}
    # a partition added since: Kafka's committed offset of the source's group, else EARLIEST
    return KafkaOffsetsInitializer.offsets(offsets, KafkaOffsetResetStrategy.EARLIEST)
# README: end


def main(zookeeper: str, bootstrap: str, group: str, topics: str, *jars: str) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.add_jars(*jars)
    source = (KafkaSource.builder()
              .set_bootstrap_servers(bootstrap)
              .set_topics(*topics.split(","))
              .set_group_id(group)
              .set_starting_offsets(starting_offsets(zookeeper, bootstrap, group, topics.split(",")))
              .set_value_only_deserializer(SimpleStringSchema())
              .build())
    env.from_source(source, WatermarkStrategy.no_watermarks(), "orders").print()
    env.execute(group)


if __name__ == "__main__":
    main(*sys.argv[1:])
