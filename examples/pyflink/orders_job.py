# A PyFlink job that starts where a Spark Streaming job (or any consumer) left off in ZooKeeper,
# at offsets offsetkeeper validated against the brokers, through offsetkeeper's jar in the job
# (python/offsetkeeper_flink.py beside the job). The lines marked CHANGED are the only
# difference from a job that starts at committed offsets. Flink keeps its own positions in its
# checkpoints from then on; the stored offsets are for the first start (or one without state).
#
#   python orders_job.py zk:2181 broker:9092 orders \
#       file:///jobs/offsetkeeper_2.12-0.1.0.jar file:///jobs/kafka-clients-3.4.0.jar \
#       file:///jobs/flink-sql-connector-kafka-3.2.0-1.19.jar

import sys

from pyflink.common import WatermarkStrategy
from pyflink.common.serialization import SimpleStringSchema
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.kafka import KafkaSource, KafkaSourceBuilder

import offsetkeeper_flink  # CHANGED


# README: begin
def orders_source(zookeeper: str, bootstrap: str, topics: list) -> KafkaSourceBuilder:
    kafka_params = {"bootstrap.servers": bootstrap, "group.id": "order-totals"}
    return (KafkaSource.builder()
            .set_bootstrap_servers(bootstrap)
            .set_topics(*topics)
            .set_group_id("order-totals")
            .set_starting_offsets(offsetkeeper_flink.starting_offsets(zookeeper, kafka_params, topics))  # CHANGED
            .set_value_only_deserializer(SimpleStringSchema()))


def main(zookeeper: str, bootstrap: str, topics: str, *jars: str) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    # offsetkeeper's jar and kafka-clients (CHANGED) beside flink-sql-connector-kafka
    env.add_jars(*jars)
    source = orders_source(zookeeper, bootstrap, topics.split(",")).build()
    env.from_source(source, WatermarkStrategy.no_watermarks(), "orders").print()
    env.execute("order-totals")
# README: end


if __name__ == "__main__":
    main(*sys.argv[1:])
