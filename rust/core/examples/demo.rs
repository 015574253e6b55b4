//! The demo: stages the three restart failures of Spark jobs that keep offsets in ZooKeeper
//! (retention purged the position, the topic was re-created, nothing stored), then loads,
//! prints what offsetkeeper decided, and commits.
//!
//! Runs on the cluster in `build/cluster/cluster.env` (as `gradle demo` starts it), or on the
//! cluster named by OFFSETKEEPER_ZK and OFFSETKEEPER_BOOTSTRAP.

#[path = "../tests/support/mod.rs"]
mod support;

use offsetkeeper::TopicPartition;
use support::{cluster, keeper, offset_path, Kafka, Zk};

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cluster = cluster();
    println!(
        "ZooKeeper {}  Kafka {}\n",
        cluster.zookeeper, cluster.bootstrap
    );
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    // Names of this run only, so the demo also runs on a shared cluster.
    let run = std::process::id();
    let group = format!("demo-job-{run}");
    let (purged, recreated, fresh) = (
        format!("clicks-{run}"),
        format!("orders-{run}"),
        format!("payments-{run}"),
    );

    println!(
        "1. A job processed clicks up to offset 40, then retention deleted the first 60 records."
    );
    kafka.create_topic(&purged, 1);
    kafka.produce(&purged, 0, 100);
    zk.put(&offset_path(&group, &purged, 0), b"40");
    kafka.delete_records(&purged, 0, 60);

    println!("2. It processed orders up to offset 500; the topic was then deleted and re-created with 20 records.");
    kafka.create_topic(&recreated, 2);
    for partition in 0..2 {
        kafka.produce(&recreated, partition, 600);
        zk.put(&offset_path(&group, &recreated, partition), b"500");
    }
    kafka.delete_topic(&recreated);
    kafka.create_topic(&recreated, 2);
    for partition in 0..2 {
        kafka.produce(&recreated, partition, 10);
    }

    println!(
        "3. payments is new to the job: nothing stored, and one znode was left empty by a crash."
    );
    kafka.create_topic(&fresh, 2);
    kafka.produce(&fresh, 0, 7);
    kafka.produce(&fresh, 1, 3);
    zk.put(&offset_path(&group, &fresh, 1), b"");

    let keeper = keeper(&cluster);
    let topics = vec![purged.clone(), recreated.clone(), fresh.clone()];
    let loaded = keeper
        .load(&group, &topics)
        .unwrap_or_else(|err| fail(&err));
    println!("\nkeeper.load(group, topics) decided, per partition:\n");
    print!("{}", loaded.table());
    println!(
        "\nWithout offsetkeeper: clicks dies with OffsetOutOfRangeException, orders with \
         'numRecords must not be negative', and payments starts at latest, skipping 10 records."
    );

    // The batch ran; the job commits each partition's untilOffset in one atomic multi.
    let until: Vec<(TopicPartition, i64)> = loaded
        .partitions
        .iter()
        .map(|r| (r.partition.clone(), r.range.latest))
        .collect();
    let summary = keeper
        .commit(&group, &until)
        .unwrap_or_else(|err| fail(&err));
    println!(
        "\nkeeper.commit(group, ranges) wrote {} offsets in {} ZooKeeper request(s); stored now:",
        summary.written, summary.requests
    );
    for (tp, _) in &until {
        let path = offset_path(&group, &tp.topic, tp.partition);
        let value = zk
            .get(&path)
            .map(|v| String::from_utf8_lossy(&v).into_owned());
        println!("  {path} = {}", value.unwrap_or_else(|| "(none)".into()));
    }
}

fn fail(err: &offsetkeeper::Error) -> ! {
    eprintln!("demo failed: {err}");
    std::process::exit(1)
}
