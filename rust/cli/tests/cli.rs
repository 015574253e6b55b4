//! The built `offsetkeeper` binary against the real test cluster: every subcommand, every reset
//! mode, dry runs that write nothing, export/import round trips, and each error path's exit
//! status and one-line message. Znodes are staged and read back with a raw ZooKeeper client.

#[path = "../../core/tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jiff::tz::{offset, TimeZone};
use jiff::Timestamp;
use offsetkeeper::{OffsetKeeper, Store, TopicPartition};
use rdkafka::consumer::{BaseConsumer, Consumer};
use support::{
    capabilities, cluster, keeper, keeper_with, offset_path, unique, Cluster, Kafka, Zk,
};

/// What one run of the binary did.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs the binary with exactly these arguments and extra environment.
fn raw_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_offsetkeeper"));
    command.args(args).env_remove("RUST_LOG");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("run offsetkeeper");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn raw(args: &[&str]) -> Run {
    raw_env(args, &[])
}

/// Runs with the cluster's ZooKeeper and Kafka.
fn run(cluster: &Cluster, args: &[&str]) -> Run {
    run_env(cluster, args, &[])
}

fn run_env(cluster: &Cluster, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec![
        "--zookeeper",
        cluster.zookeeper.as_str(),
        "--bootstrap-servers",
        cluster.bootstrap.as_str(),
    ];
    all.extend_from_slice(args);
    raw_env(&all, env)
}

/// Runs with ZooKeeper only.
fn run_zk(cluster: &Cluster, args: &[&str]) -> Run {
    let mut all = vec!["--zookeeper", cluster.zookeeper.as_str()];
    all.extend_from_slice(args);
    raw(&all)
}

/// Asserts success and returns the run.
fn ok(run: Run) -> Run {
    assert_eq!(run.code, 0, "expected success: {run:?}");
    run
}

/// Asserts the exit status and a single stderr line holding `needle`.
fn fails(run: Run, code: i32, needle: &str) -> Run {
    assert_eq!(run.code, code, "exit status: {run:?}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one stderr line expected: {run:?}");
    assert!(
        lines[0].contains(needle),
        "stderr should contain {needle:?}: {run:?}"
    );
    run
}

/// The rows of a table, each split into its whitespace-separated words, header left out.
fn rows(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().map(String::from).collect())
        .collect()
}

fn row(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// The value of a znode as text.
fn value(zk: &Zk, path: &str) -> Option<String> {
    zk.get(path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// The stored offsets of a topic's partitions, as text.
fn stored(zk: &Zk, group: &str, topic: &str, partitions: i32) -> Vec<Option<String>> {
    (0..partitions)
        .map(|p| value(zk, &offset_path(group, topic, p)))
        .collect()
}

fn some(values: &[&str]) -> Vec<Option<String>> {
    values
        .iter()
        .map(|v| (*v != "none").then(|| v.to_string()))
        .collect()
}

/// A topic with `records` records in each partition.
fn topic_with(kafka: &Kafka, prefix: &str, partitions: i32, records: usize) -> String {
    let topic = unique(prefix);
    kafka.create_topic(&topic, partitions);
    for p in 0..partitions {
        kafka.produce(&topic, p, records);
    }
    topic
}

/// [`topic_with`], the first `below` records of `partition` gone as retention leaves them (by
/// deleteRecords, or by time retention on brokers without it: support's `create_purged_topic`).
fn purged_topic_with(
    kafka: &Kafka,
    prefix: &str,
    partitions: i32,
    records: usize,
    (partition, below): (i32, i64),
) -> String {
    let topic = unique(prefix);
    let counts = vec![records; partitions as usize];
    kafka.create_purged_topic(&topic, &counts, &[(partition, below)]);
    topic
}

fn temp_file(name: &str, content: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(unique(name));
    std::fs::write(&path, content).expect("write temp file");
    path
}

/// `--command-config FILE --group GROUP ARGS...`, with the cluster's addresses on the command
/// line when given (otherwise the file must name them).
fn with_config(cluster: Option<&Cluster>, config: &Path, group: &str, args: &[&str]) -> Run {
    let config = config.to_str().expect("path");
    let mut all = vec!["--command-config", config, "--group", group];
    all.extend_from_slice(args);
    match cluster {
        Some(cluster) => run(cluster, &all),
        None => raw(&all),
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn iso_utc(ms: i64) -> String {
    format!("{:.3}", Timestamp::from_millisecond(ms).expect("timestamp"))
}

/// A loopback port nothing listens on.
/// A loopback port that refuses connections for as long as the returned socket lives: bound but
/// not listening, so no other process can take the port, and no client's own ephemeral port can
/// be it (a client connecting to its own port would connect to itself).
fn dead_port() -> (tokio::net::TcpSocket, u16) {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind(([127, 0, 0, 1], 0).into()).expect("bind");
    let port = socket.local_addr().expect("addr").port();
    (socket, port)
}

#[test]
fn describe_shows_each_status_in_every_format() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("desc");
    let topic = purged_topic_with(&kafka, "desc", 5, 10, (1, 5));
    let gone = unique("gone");
    zk.put(&offset_path(&group, &topic, 0), b"4");
    zk.put(&offset_path(&group, &topic, 1), b"2");
    zk.put(&offset_path(&group, &topic, 2), b"50");
    zk.put(&offset_path(&group, &topic, 4), b"garbage");
    zk.put(&offset_path(&group, &topic, 9), b"3");
    zk.put(&offset_path(&group, &gone, 0), b"7");

    let out = ok(run(
        &cluster,
        &["--group", &group, "describe", "--topic", &topic],
    ));
    assert_eq!(
        out.stdout
            .lines()
            .next()
            .map(|h| h.split_whitespace().collect::<Vec<_>>()),
        Some(vec![
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-START-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "STATUS"
        ])
    );
    let t = topic.as_str();
    assert_eq!(
        rows(&out.stdout),
        vec![
            row(&[t, "0", "4", "0", "10", "6", "ok"]),
            row(&[t, "1", "2", "5", "10", "8", "below", "range"]),
            row(&[t, "2", "50", "0", "10", "-40", "above", "range"]),
            row(&[t, "3", "-", "0", "10", "-", "missing"]),
            row(&[t, "4", "-", "0", "10", "-", "corrupt"]),
            row(&[t, "9", "3", "-", "-", "-", "partition", "gone"]),
        ]
    );
    assert_eq!(out.stderr, "");

    // Some partitions only.
    let out = ok(run(
        &cluster,
        &[
            "--group",
            &group,
            "describe",
            "--topic",
            &format!("{topic}:3,0"),
        ],
    ));
    assert_eq!(
        rows(&out.stdout),
        vec![
            row(&[t, "0", "4", "0", "10", "6", "ok"]),
            row(&[t, "3", "-", "0", "10", "-", "missing"]),
        ]
    );

    // CSV and JSON.
    let out = ok(run(
        &cluster,
        &[
            "--group", &group, "describe", "--topic", &topic, "--format", "csv",
        ],
    ));
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "topic,partition,current_offset,log_start_offset,log_end_offset,lag,status"
    );
    assert_eq!(lines[1], format!("{topic},0,4,0,10,6,ok"));
    assert_eq!(lines[6], format!("{topic},9,3,,,,partition gone"));
    let out = ok(run(
        &cluster,
        &[
            "--group", &group, "describe", "--topic", &topic, "--format", "json",
        ],
    ));
    assert!(
        out.stdout
            .starts_with(&format!("{{\"group\":\"{group}\",\"partitions\":[")),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains(&format!(
        "{{\"topic\":\"{topic}\",\"partition\":0,\"current_offset\":4,\"log_start_offset\":0,\"log_end_offset\":10,\"lag\":6,\"status\":\"ok\"}}"
    )));
    assert!(out.stdout.contains(&format!(
        "{{\"topic\":\"{topic}\",\"partition\":3,\"current_offset\":null,\"log_start_offset\":0,\"log_end_offset\":10,\"lag\":null,\"status\":\"missing\"}}"
    )));

    // Every stored topic, including one deleted from the brokers.
    let out = ok(run(
        &cluster,
        &["--group", &group, "describe", "--all-topics"],
    ));
    let all = rows(&out.stdout);
    assert_eq!(all.len(), 7, "{}", out.stdout);
    assert!(all.contains(&row(&[&gone, "0", "7", "-", "-", "-", "partition", "gone"])));
    // Describe reads only.
    assert_eq!(value(&zk, &offset_path(&group, &topic, 3)), None);
    assert_eq!(
        value(&zk, &offset_path(&group, &topic, 4)).as_deref(),
        Some("garbage")
    );
}

#[test]
fn describe_format_prometheus_writes_gauges_and_leaves_out_unknown_values() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("prom");
    let topic = purged_topic_with(&kafka, "prom", 5, 10, (1, 5));
    zk.put(&offset_path(&group, &topic, 0), b"4");
    zk.put(&offset_path(&group, &topic, 1), b"2");
    zk.put(&offset_path(&group, &topic, 2), b"50");
    zk.put(&offset_path(&group, &topic, 4), b"garbage");
    zk.put(&offset_path(&group, &topic, 9), b"3");
    let before = zk.tree(&format!("/consumers/{group}"));

    let out = ok(run(
        &cluster,
        &[
            "--group",
            &group,
            "describe",
            "--topic",
            &topic,
            "--format",
            "prometheus",
        ],
    ));
    assert_eq!(out.stderr, "");
    let labels = |p: i32| format!("{{group=\"{group}\",topic=\"{topic}\",partition=\"{p}\"");
    let sample = |family: &str, p: i32, value: i64| format!("{family}{}}} {value}", labels(p));
    let status = |p: i32, status: &str| {
        format!(
            "offsetkeeper_partition_status{},status=\"{status}\"}} 1",
            labels(p)
        )
    };
    // Missing and corrupt partitions have no committed offset and no lag; the gone one no
    // log start, log end or lag.
    let mut expected = vec![
        "# HELP offsetkeeper_committed_offset Offset stored in ZooKeeper (the next record the job reads); no sample when none usable is stored.".to_string(),
        "# TYPE offsetkeeper_committed_offset gauge".to_string(),
        sample("offsetkeeper_committed_offset", 0, 4),
        sample("offsetkeeper_committed_offset", 1, 2),
        sample("offsetkeeper_committed_offset", 2, 50),
        sample("offsetkeeper_committed_offset", 9, 3),
        "# HELP offsetkeeper_log_start_offset First offset the brokers still have; no sample for a partition that no longer exists.".to_string(),
        "# TYPE offsetkeeper_log_start_offset gauge".to_string(),
    ];
    for (p, start) in [(0, 0), (1, 5), (2, 0), (3, 0), (4, 0)] {
        expected.push(sample("offsetkeeper_log_start_offset", p, start));
    }
    expected.push("# HELP offsetkeeper_log_end_offset Offset of the next record written; no sample for a partition that no longer exists.".to_string());
    expected.push("# TYPE offsetkeeper_log_end_offset gauge".to_string());
    for p in 0..5 {
        expected.push(sample("offsetkeeper_log_end_offset", p, 10));
    }
    expected.extend([
        "# HELP offsetkeeper_lag Log end offset minus committed offset (negative above range); no sample when either is unknown.".to_string(),
        "# TYPE offsetkeeper_lag gauge".to_string(),
        sample("offsetkeeper_lag", 0, 6),
        sample("offsetkeeper_lag", 1, 8),
        sample("offsetkeeper_lag", 2, -40),
        "# HELP offsetkeeper_partition_status 1 for the partition's status: ok, below_range, above_range, missing, corrupt, partition_gone or recreated.".to_string(),
        "# TYPE offsetkeeper_partition_status gauge".to_string(),
        status(0, "ok"),
        status(1, "below_range"),
        status(2, "above_range"),
        status(3, "missing"),
        status(4, "corrupt"),
        status(9, "partition_gone"),
    ]);
    assert_eq!(out.stdout.lines().collect::<Vec<_>>(), expected);
    assert!(out.stdout.ends_with('\n'));
    assert_eq!(
        zk.tree(&format!("/consumers/{group}")),
        before,
        "describe reads only"
    );

    // Some partitions only: the families are declared all the same.
    let out = ok(run(
        &cluster,
        &[
            "--group",
            &group,
            "describe",
            "--topic",
            &format!("{topic}:0"),
            "--format",
            "prometheus",
        ],
    ));
    let samples: Vec<&str> = out.stdout.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        samples,
        vec![
            sample("offsetkeeper_committed_offset", 0, 4),
            sample("offsetkeeper_log_start_offset", 0, 0),
            sample("offsetkeeper_log_end_offset", 0, 10),
            sample("offsetkeeper_lag", 0, 6),
            status(0, "ok"),
        ]
    );
    assert_eq!(
        out.stdout
            .lines()
            .filter(|l| l.starts_with("# TYPE"))
            .count(),
        5
    );
}

#[test]
fn list_groups_counts_topics_under_the_base_path() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let base = format!("/{}", unique("lg"));
    let (g1, g2) = ("job-a", "job-b");
    for (group, topic) in [(g1, "t1"), (g1, "t2"), (g2, "t1")] {
        zk.put(&format!("{base}/{group}/offsets/{topic}/0"), b"1");
    }
    zk.put(&format!("{base}/no-offsets/owners/t1/0"), b"x");

    let out = ok(run_zk(&cluster, &["--base-path", &base, "list-groups"]));
    assert_eq!(out.stdout, "GROUP  TOPICS\njob-a  2\njob-b  1\n");
    let out = ok(run_zk(
        &cluster,
        &["--base-path", &base, "list-groups", "--format", "csv"],
    ));
    assert_eq!(out.stdout, "group,topics\njob-a,2\njob-b,1\n");
    let out = ok(run_zk(
        &cluster,
        &["--base-path", &base, "list-groups", "--format", "json"],
    ));
    assert_eq!(
        out.stdout,
        format!("{{\"base_path\":\"{base}\",\"groups\":[{{\"group\":\"job-a\",\"topics\":2}},{{\"group\":\"job-b\",\"topics\":1}}]}}\n")
    );
    // An empty base path lists nothing.
    let out = ok(run_zk(
        &cluster,
        &[
            "--base-path",
            &format!("/{}", unique("empty")),
            "list-groups",
        ],
    ));
    assert_eq!(out.stdout, "GROUP  TOPICS\n");
}

#[test]
fn reset_to_earliest_and_to_latest_dry_run_then_execute() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("rst");
    let topic = purged_topic_with(&kafka, "rst", 2, 10, (0, 3));
    zk.put(&offset_path(&group, &topic, 0), b"5");
    let t = topic.as_str();

    let args = ["--group", &group, "reset", "--topic", t, "--to-earliest"];
    let out = ok(run(&cluster, &args));
    assert_eq!(
        out.stdout
            .lines()
            .next()
            .map(|h| h.split_whitespace().collect::<Vec<_>>()),
        Some(vec![
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "NEW-OFFSET",
            "DELTA",
            "LOG-START-OFFSET",
            "LOG-END-OFFSET",
            "NOTE"
        ])
    );
    assert_eq!(
        rows(&out.stdout),
        vec![
            row(&[t, "0", "5", "3", "-2", "3", "10"]),
            row(&[t, "1", "-", "0", "-", "0", "10"]),
        ]
    );
    assert!(out.stderr.contains("dry run: nothing written"), "{out:?}");
    assert_eq!(stored(&zk, &group, t, 2), some(&["5", "none"]));

    // Kafka's tool spells the dry run out; the same plan, nothing written.
    let dry = ok(run(&cluster, &[&args[..], &["--dry-run"]].concat()));
    assert_eq!(dry.stdout, out.stdout);
    assert!(dry.stderr.contains("dry run: nothing written"), "{dry:?}");
    assert_eq!(stored(&zk, &group, t, 2), some(&["5", "none"]));
    fails(
        run(&cluster, &[&args[..], &["--dry-run", "--execute"]].concat()),
        2,
        "--dry-run",
    );
    assert_eq!(stored(&zk, &group, t, 2), some(&["5", "none"]));

    let out = ok(run(&cluster, &[&args[..], &["--execute"]].concat()));
    assert!(
        out.stderr
            .contains(&format!("reset 2 partition(s) of group '{group}': 2 written, 0 unchanged, in 1 ZooKeeper multi request(s)")),
        "{out:?}"
    );
    assert_eq!(stored(&zk, &group, t, 2), some(&["3", "0"]));

    ok(run(
        &cluster,
        &[
            "--group",
            &group,
            "reset",
            "--topic",
            t,
            "--to-latest",
            "--execute",
        ],
    ));
    assert_eq!(stored(&zk, &group, t, 2), some(&["10", "10"]));
}

#[test]
fn reset_to_offset_clamps_into_each_partitions_range() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("rst");
    let topic = unique("clamp");
    kafka.create_purged_topic(&topic, &[10, 10, 3], &[(1, 6)]);
    let t = topic.as_str();

    let args = ["--group", &group, "reset", "--topic", t, "--to-offset", "5"];
    let out = ok(run(&cluster, &args));
    assert_eq!(
        rows(&out.stdout),
        vec![
            row(&[t, "0", "-", "5", "-", "0", "10"]),
            row(&[t, "1", "-", "6", "-", "6", "10", "clamped", "to", "earliest"]),
            row(&[t, "2", "-", "3", "-", "0", "3", "clamped", "to", "latest"]),
        ]
    );
    assert_eq!(stored(&zk, &group, t, 3), some(&["none", "none", "none"]));
    ok(run(&cluster, &[&args[..], &["--execute"]].concat()));
    assert_eq!(stored(&zk, &group, t, 3), some(&["5", "6", "3"]));
}

/// A file gives each partition its offset: one above the log end refuses the whole reset,
/// unless --allow-beyond-log-end. `--to-offset` above it is clamped to latest, as
/// kafka-consumer-groups does.
#[test]
fn reset_from_file_above_the_log_end_is_refused_unless_allowed() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("rst");
    let topic = topic_with(&kafka, "beyond", 2, 10);
    let t = topic.as_str();
    zk.put(&offset_path(&group, t, 0), b"3");
    let file = temp_file("beyond.csv", &format!("{t},0,12\n{t},1,12\n"));
    let args = [
        "--group",
        &group,
        "reset",
        "--from-file",
        file.to_str().expect("path"),
    ];
    let refusal = format!(
        "error: reset refused, nothing written: 2 offset(s) above the log end: {t}-0: offset 12 is above the log end 10 (log start 0); {t}-1: offset 12 is above the log end 10 (log start 0); a job started above the log end skips"
    );
    // Refused whole, dry run or not: no table, nothing written.
    for extra in [&[][..], &["--execute"]] {
        let out = fails(run(&cluster, &[&args[..], extra].concat()), 1, &refusal);
        assert_eq!(out.stdout, "", "{out:?}");
    }
    assert_eq!(stored(&zk, &group, t, 2), some(&["3", "none"]));

    // --to-offset above the log end: clamped to latest, without the flag.
    let out = ok(run(
        &cluster,
        &[
            "--group",
            &group,
            "reset",
            "--topic",
            t,
            "--to-offset",
            "12",
        ],
    ));
    assert_eq!(
        rows(&out.stdout),
        vec![
            row(&[t, "0", "3", "10", "7", "0", "10", "clamped", "to", "latest"]),
            row(&[t, "1", "-", "10", "-", "0", "10", "clamped", "to", "latest"]),
        ]
    );
    assert!(!out.stderr.contains("log end"), "{out:?}");
    assert_eq!(stored(&zk, &group, t, 2), some(&["3", "none"]));

    // Allowed: written as asked, a WARN per partition.
    let out = ok(run(
        &cluster,
        &[&args[..], &["--allow-beyond-log-end", "--execute"]].concat(),
    ));
    assert_eq!(
        rows(&out.stdout),
        vec![
            row(&[t, "0", "3", "12", "9", "0", "10", "beyond", "log", "end"]),
            row(&[t, "1", "-", "12", "-", "0", "10", "beyond", "log", "end"]),
        ]
    );
    for partition in 0..2 {
        assert!(
            out.stderr.contains(&format!(
                "warning: {t}-{partition}: offset 12 is above the log end 10 (log start 0); allowed by --allow-beyond-log-end"
            )),
            "{out:?}"
        );
    }
    assert_eq!(stored(&zk, &group, t, 2), some(&["12", "12"]));
}

#[test]
fn import_above_the_log_end_is_refused_unless_allowed() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("imp");
    let topic = topic_with(&kafka, "beyond", 2, 50);
    let t = topic.as_str();
    zk.put(&offset_path(&group, t, 0), b"7");
    let file = temp_file("beyond.csv", &format!("{t},0,120\n{t},1,20\n"));
    let import = [
        "--group",
        &group,
        "import",
        "--from-file",
        file.to_str().expect("path"),
    ];

    // With the brokers: refused, dry run or not, nothing written.
    let refusal = format!(
        "error: import refused, nothing written: 1 offset(s) above the log end: {t}-0: offset 120 is above the log end 50 (log start 0); a job started above the log end skips"
    );
    for extra in [&[][..], &["--execute"]] {
        let out = fails(run(&cluster, &[&import[..], extra].concat()), 1, &refusal);
        assert_eq!(out.stdout, "", "{out:?}");
    }
    assert_eq!(stored(&zk, &group, t, 2), some(&["7", "none"]));

    // Allowed: written as asked, with a WARN naming the partition.
    let out = ok(run(
        &cluster,
        &[&import[..], &["--allow-beyond-log-end", "--execute"]].concat(),
    ));
    assert!(
        out.stderr.contains(&format!(
            "warning: {t}-0: offset 120 is above the log end 50 (log start 0); allowed by --allow-beyond-log-end"
        )),
        "{out:?}"
    );
    assert!(!out.stderr.contains(&format!("{t}-1: offset")), "{out:?}");
    assert_eq!(stored(&zk, &group, t, 2), some(&["120", "20"]));

    // Without the brokers nothing can be checked: written, with a WARN saying so.
    let other = unique("imp");
    let out = ok(run_zk(
        &cluster,
        &[
            "--group",
            &other,
            "import",
            "--from-file",
            file.to_str().expect("path"),
            "--execute",
        ],
    ));
    assert!(
        out.stderr.contains(
            "warning: the offsets were not checked against their partitions' log start and end (no --bootstrap-servers)"
        ),
        "{out:?}"
    );
    assert_eq!(stored(&zk, &other, t, 2), some(&["120", "20"]));
}

#[test]
fn reset_shift_by_moves_from_the_stored_offsets() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("rst");
    let topic = topic_with(&kafka, "shift", 3, 10);
    let t = topic.as_str();
    zk.put(&offset_path(&group, t, 0), b"5");
    zk.put(&offset_path(&group, t, 1), b"8");
    zk.put(&offset_path(&group, t, 2), b"9");

    let shift = |spec: &str, by: &str| {
        ok(run(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--topic",
                spec,
                "--shift-by",
                by,
                "--execute",
            ],
        ))
    };
    let out = shift(t, "-3");
    assert_eq!(
        rows(&out.stdout),
        vec![
            row(&[t, "0", "5", "2", "-3", "0", "10"]),
            row(&[t, "1", "8", "5", "-3", "0", "10"]),
            row(&[t, "2", "9", "6", "-3", "0", "10"]),
        ]
    );
    assert_eq!(stored(&zk, &group, t, 3), some(&["2", "5", "6"]));
    shift(&format!("{t}:0,2"), "100");
    assert_eq!(stored(&zk, &group, t, 3), some(&["10", "5", "10"]));
    shift(&format!("{t}:1"), "-50");
    assert_eq!(stored(&zk, &group, t, 3), some(&["10", "0", "10"]));
}

#[test]
fn reset_to_datetime_finds_records_by_their_timestamps() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("rst");
    let topic = unique("dated");
    let t = topic.as_str();
    kafka.create_topic(t, 2);
    // Recent times, so that the brokers' retention (7 days) keeps them.
    let base = (now_ms() - 2 * 3_600_000) / 1000 * 1000;
    let minute = 60_000;
    let p0: Vec<i64> = (0..10).map(|i| base + i * minute).collect();
    let p1: Vec<i64> = (0..3).map(|i| base + (5 + i) * minute).collect();
    kafka.produce_at(t, 0, &p0);
    kafka.produce_at(t, 1, &p1);

    let reset_to = |when: &str, env: &[(&str, &str)]| {
        run_env(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--topic",
                t,
                "--to-datetime",
                when,
                "--execute",
            ],
            env,
        )
    };
    // Exactly at a record's time: that record.
    let out = ok(reset_to(&iso_utc(base + 3 * minute), &[]));
    assert_eq!(stored(&zk, &group, t, 2), some(&["3", "0"]), "{out:?}");
    // Between two records: the later one.
    ok(reset_to(&iso_utc(base + 3 * minute + 30_000), &[]));
    assert_eq!(stored(&zk, &group, t, 2), some(&["4", "0"]));
    // With a zone offset.
    let plus_two = Timestamp::from_millisecond(base + 6 * minute)
        .expect("timestamp")
        .to_zoned_datetime(TimeZone::fixed(offset(2)))
        .strftime("%Y-%m-%dT%H:%M:%S%:z")
        .to_string();
    assert!(plus_two.ends_with("+02:00"), "{plus_two}");
    ok(reset_to(&plus_two, &[]));
    assert_eq!(stored(&zk, &group, t, 2), some(&["6", "1"]));
    // Without a zone: the local time of the machine (TZ).
    let local = Timestamp::from_millisecond(base + 7 * minute)
        .expect("timestamp")
        .to_zoned_datetime(TimeZone::fixed(offset(-3)))
        .strftime("%Y-%m-%dT%H:%M:%S")
        .to_string();
    ok(reset_to(&local, &[("TZ", "Etc/GMT+3")]));
    assert_eq!(stored(&zk, &group, t, 2), some(&["7", "2"]));
    // After every record: the log end, with a note.
    let out = ok(reset_to(&iso_utc(base + 20 * minute), &[]));
    assert_eq!(stored(&zk, &group, t, 2), some(&["10", "3"]));
    assert!(out.stdout.contains("no record since; log end"), "{out:?}");
    // Before every record: the first.
    ok(reset_to(&iso_utc(base - 60 * minute), &[]));
    assert_eq!(stored(&zk, &group, t, 2), some(&["0", "0"]));
}

#[test]
fn reset_by_duration_counts_back_from_now() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("rst");
    let topic = unique("ago");
    let t = topic.as_str();
    kafka.create_topic(t, 1);
    let now = now_ms();
    let hour = 3_600_000;
    kafka.produce_at(
        t,
        0,
        &[now - 3 * hour, now - 2 * hour, now - hour, now - 600_000],
    );

    for (duration, expected) in [
        ("PT90M", "2"),
        ("P1D", "0"),
        ("PT5M", "4"),
        ("PT2H30M", "1"),
    ] {
        let out = ok(run(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--topic",
                t,
                "--by-duration",
                duration,
                "--execute",
            ],
        ));
        assert_eq!(
            value(&zk, &offset_path(&group, t, 0)).as_deref(),
            Some(expected),
            "{duration}: {out:?}"
        );
    }
}

#[test]
fn reset_from_file_reads_csv_and_export_zk_lines() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("rst");
    let topic = topic_with(&kafka, "file", 2, 10);
    let t = topic.as_str();
    zk.put(&offset_path(&group, t, 0), b"1");

    let csv = temp_file(
        "reset.csv",
        &format!("topic,partition,offset\n{t},0,4\n{t},1,10\n"),
    );
    let csv = csv.to_str().expect("path");
    let args = ["--group", &group, "reset", "--from-file", csv];
    let out = ok(run(&cluster, &args));
    assert_eq!(
        rows(&out.stdout),
        vec![
            row(&[t, "0", "1", "4", "3", "0", "10"]),
            row(&[t, "1", "-", "10", "-", "0", "10"]),
        ]
    );
    assert_eq!(stored(&zk, &group, t, 2), some(&["1", "none"]));
    ok(run(&cluster, &[&args[..], &["--execute"]].concat()));
    assert_eq!(stored(&zk, &group, t, 2), some(&["4", "10"]));

    // Only the file's partitions move.
    let lines = temp_file("reset.zk", &format!("/consumers/{group}/offsets/{t}/0:7\n"));
    ok(run(
        &cluster,
        &[
            "--group",
            &group,
            "reset",
            "--from-file",
            lines.to_str().expect("path"),
            "--execute",
        ],
    ));
    assert_eq!(stored(&zk, &group, t, 2), some(&["7", "10"]));
}

#[test]
fn reset_export_prints_a_plan_that_from_file_reads_back() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("rst");
    let topic = topic_with(&kafka, "plan", 2, 10);
    let t = topic.as_str();

    let out = ok(run(
        &cluster,
        &[
            "--group",
            &group,
            "reset",
            "--topic",
            t,
            "--to-offset",
            "6",
            "--export",
        ],
    ));
    assert_eq!(out.stdout, format!("{t},0,6\n{t},1,6\n"));
    assert_eq!(stored(&zk, &group, t, 2), some(&["none", "none"]));
    let plan = temp_file("plan.csv", &out.stdout);

    ok(run(
        &cluster,
        &[
            "--group",
            &group,
            "reset",
            "--topic",
            t,
            "--to-latest",
            "--execute",
        ],
    ));
    assert_eq!(stored(&zk, &group, t, 2), some(&["10", "10"]));
    let out = ok(run(
        &cluster,
        &[
            "--group",
            &group,
            "reset",
            "--from-file",
            plan.to_str().expect("path"),
            "--execute",
            "--export",
        ],
    ));
    assert_eq!(out.stdout, format!("{t},0,6\n{t},1,6\n"));
    assert_eq!(stored(&zk, &group, t, 2), some(&["6", "6"]));
}

#[test]
fn reset_to_valid_export_json_prints_the_offsets_a_load_would_start_from() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("flink");
    // Retention purged partition 1 past its stored offset; partition 2 has nothing stored.
    let topic = purged_topic_with(&kafka, "flink", 3, 10, (1, 6));
    let t = topic.as_str();
    zk.put(&offset_path(&group, t, 0), b"4");
    zk.put(&offset_path(&group, t, 1), b"2");
    let before = zk.tree(&format!("/consumers/{group}"));

    for extra in [
        &["--export", "json"][..],
        &["--dry-run", "--export=json"][..],
    ] {
        let args = [
            &["--group", &group, "reset", "--topic", t, "--to-valid"][..],
            extra,
        ]
        .concat();
        let out = ok(run(&cluster, &args));
        assert_eq!(
            out.stdout,
            format!(
                "{{\"group\":\"{group}\",\"offsets\":[\
                 {{\"topic\":\"{t}\",\"partition\":0,\"offset\":4}},\
                 {{\"topic\":\"{t}\",\"partition\":1,\"offset\":6}},\
                 {{\"topic\":\"{t}\",\"partition\":2,\"offset\":0}}]}}\n"
            ),
            "{out:?}"
        );
        assert!(out.stderr.contains("dry run: nothing written"), "{out:?}");
        assert_eq!(
            zk.tree(&format!("/consumers/{group}")),
            before,
            "nothing written"
        );
    }
    // The policies apply as to the table: a partition with nothing stored at the log end.
    let out = ok(run(
        &cluster,
        &[
            "--group",
            &group,
            "reset",
            "--topic",
            &format!("{t}:2"),
            "--to-valid",
            "--on-missing",
            "latest",
            "--export",
            "json",
        ],
    ));
    assert_eq!(
        out.stdout,
        format!("{{\"group\":\"{group}\",\"offsets\":[{{\"topic\":\"{t}\",\"partition\":2,\"offset\":10}}]}}\n")
    );
    assert_eq!(zk.tree(&format!("/consumers/{group}")), before);
    fails(
        run(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--topic",
                t,
                "--to-valid",
                "--export",
                "yaml",
            ],
        ),
        2,
        "'yaml'",
    );
}

#[test]
fn reset_to_valid_applies_the_load_policies() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("rst");
    let topic = purged_topic_with(&kafka, "valid", 5, 10, (1, 4));
    let t = topic.as_str();
    zk.put(&offset_path(&group, t, 0), b"5");
    zk.put(&offset_path(&group, t, 1), b"1");
    zk.put(&offset_path(&group, t, 2), b"99");
    zk.put(&offset_path(&group, t, 4), b"-1");

    let args = ["--group", &group, "reset", "--topic", t, "--to-valid"];
    let out = ok(run(&cluster, &args));
    assert_eq!(
        rows(&out.stdout),
        vec![
            row(&[t, "0", "5", "5", "0", "0", "10", "kept"]),
            row(&[t, "1", "1", "4", "3", "4", "10", "reset", "below", "range"]),
            row(&[t, "2", "99", "0", "-99", "0", "10", "reset", "above", "range"]),
            row(&[t, "3", "-", "0", "-", "0", "10", "initialized"]),
            row(&[t, "4", "corrupt", "0", "-", "0", "10", "corrupt", "replaced"]),
        ]
    );
    assert_eq!(
        stored(&zk, &group, t, 5),
        some(&["5", "1", "99", "none", "-1"])
    );
    let latest = [
        "--on-above-range",
        "latest",
        "--on-missing",
        "latest",
        "--execute",
    ];
    ok(run(&cluster, &[&args[..], &latest].concat()));
    assert_eq!(
        stored(&zk, &group, t, 5),
        some(&["5", "4", "10", "10", "10"])
    );
}

#[test]
fn reset_all_topics_covers_every_stored_topic_and_skips_gone_partitions() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("rst");
    let (a, b) = (
        topic_with(&kafka, "all", 1, 10),
        topic_with(&kafka, "all", 2, 10),
    );
    zk.put(&offset_path(&group, &a, 0), b"3");
    zk.put(&offset_path(&group, &a, 5), b"3");
    zk.put(&offset_path(&group, &b, 1), b"4");

    let out = ok(run(
        &cluster,
        &[
            "--group",
            &group,
            "reset",
            "--all-topics",
            "--to-earliest",
            "--execute",
        ],
    ));
    assert_eq!(stored(&zk, &group, &a, 1), some(&["0"]));
    assert_eq!(stored(&zk, &group, &b, 2), some(&["0", "0"]));
    assert_eq!(
        value(&zk, &offset_path(&group, &a, 5)).as_deref(),
        Some("3")
    );
    assert!(
        out.stderr.contains(&format!(
            "{a}-5: the partition no longer exists on the brokers; not reset"
        )),
        "{out:?}"
    );
}

#[test]
fn export_and_import_round_trip_in_both_formats() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let (group, copy) = (unique("exp"), unique("copy"));
    let (a, b) = (unique("exa"), unique("exb"));
    zk.put(&offset_path(&group, &a, 0), b"3");
    zk.put(&offset_path(&group, &a, 1), b"7");
    zk.put(&offset_path(&group, &a, 2), b"oops");
    zk.put(&offset_path(&group, &b, 0), b"1");

    // CSV to stdout, without Kafka; the corrupt value is left out with a warning.
    let out = ok(run_zk(&cluster, &["--group", &group, "export"]));
    assert_eq!(out.stdout, format!("{a},0,3\n{a},1,7\n{b},0,1\n"));
    assert!(
        out.stderr
            .contains(&format!("{a}-2: stored value is not an offset")),
        "{out:?}"
    );
    let csv = temp_file("export.csv", &out.stdout);

    // Import into another group: a dry run writes nothing.
    let import = |group: &str, file: &PathBuf, execute: bool| {
        let mut args = vec![
            "--group",
            group,
            "import",
            "--from-file",
            file.to_str().expect("path"),
        ];
        if execute {
            args.push("--execute");
        }
        ok(run_zk(&cluster, &args))
    };
    let out = import(&copy, &csv, false);
    assert_eq!(
        rows(&out.stdout),
        vec![
            row(&[&a, "0", "-", "3", "-"]),
            row(&[&a, "1", "-", "7", "-"]),
            row(&[&b, "0", "-", "1", "-"]),
        ]
    );
    assert!(out.stderr.contains("dry run"), "{out:?}");
    assert_eq!(stored(&zk, &copy, &a, 2), some(&["none", "none"]));
    let out = import(&copy, &csv, true);
    assert!(out.stderr.contains("imported 3 offset(s)"), "{out:?}");
    assert_eq!(stored(&zk, &copy, &a, 2), some(&["3", "7"]));
    assert_eq!(stored(&zk, &copy, &b, 1), some(&["1"]));

    // ExportZkOffsets lines to a file, then back after the offsets moved.
    let zk_file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(unique("export.zk"));
    let out = ok(run_zk(
        &cluster,
        &[
            "--group",
            &group,
            "export",
            "--topic",
            &a,
            "--format",
            "zk",
            "--output",
            zk_file.to_str().expect("path"),
        ],
    ));
    assert_eq!(out.stdout, "");
    let text = std::fs::read_to_string(&zk_file).expect("export file");
    assert_eq!(
        text,
        format!("/consumers/{group}/offsets/{a}/0:3\n/consumers/{group}/offsets/{a}/1:7\n")
    );
    zk.put(&offset_path(&group, &a, 0), b"100");
    zk.put(&offset_path(&group, &a, 1), b"200");
    let out = import(&group, &zk_file, true);
    assert_eq!(
        rows(&out.stdout),
        vec![
            row(&[&a, "0", "100", "3", "-97"]),
            row(&[&a, "1", "200", "7", "-193"])
        ]
    );
    assert_eq!(stored(&zk, &group, &a, 2), some(&["3", "7"]));

    // A chosen base path is honoured both ways.
    let base = format!("/{}", unique("base"));
    let out = ok(run_zk(
        &cluster,
        &[
            "--base-path",
            &base,
            "--group",
            &group,
            "import",
            "--from-file",
            csv.to_str().expect("path"),
            "--execute",
        ],
    ));
    assert!(out.stderr.contains("imported 3"), "{out:?}");
    let out = ok(run_zk(
        &cluster,
        &[
            "--base-path",
            &base,
            "--group",
            &group,
            "export",
            "--format",
            "zk",
            "--topic",
            &format!("{a}:1"),
        ],
    ));
    assert_eq!(out.stdout, format!("{base}/{group}/offsets/{a}/1:7\n"));
}

#[test]
fn delete_removes_a_topics_offsets_only_with_execute() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let group = unique("del");
    let (a, b) = (unique("dela"), unique("delb"));
    zk.put(&offset_path(&group, &a, 0), b"3");
    zk.put(&offset_path(&group, &a, 1), b"bad");
    zk.put(&offset_path(&group, &b, 0), b"1");
    let dir = format!("/consumers/{group}/offsets/{a}");

    let out = ok(run_zk(
        &cluster,
        &["--group", &group, "delete", "--topic", &a],
    ));
    assert_eq!(
        rows(&out.stdout),
        vec![row(&[&a, "0", "3"]), row(&[&a, "1", "corrupt"])]
    );
    assert!(out.stderr.contains("dry run: nothing deleted"), "{out:?}");
    assert_eq!(stored(&zk, &group, &a, 2), some(&["3", "bad"]));

    let out = ok(run_zk(
        &cluster,
        &["--group", &group, "delete", "--topic", &a, "--execute"],
    ));
    assert!(
        out.stderr.contains(&format!(
            "deleted 2 stored offset(s) of 1 topic(s) from group '{group}'"
        )),
        "{out:?}"
    );
    assert_eq!(zk.get(&dir), None);
    assert_eq!(stored(&zk, &group, &b, 1), some(&["1"]));

    fails(
        run_zk(&cluster, &["--group", &group, "delete", "--topic", &a]),
        1,
        &format!("error: group '{group}' has no stored offsets for topic '{a}'"),
    );
}

#[test]
fn migrate_copies_offsets_to_and_from_kafka() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let (group, back) = (unique("mig"), unique("back"));
    let topic = topic_with(&kafka, "mig", 2, 10);
    let t = topic.as_str();
    zk.put(&offset_path(&group, t, 0), b"4");
    zk.put(&offset_path(&group, t, 1), b"6");

    let to_kafka = ["--group", &group, "migrate", "--to-kafka", "--topic", t];
    let out = ok(run(&cluster, &to_kafka));
    assert_eq!(
        rows(&out.stdout),
        vec![
            row(&[t, "0", "-", "4", "-", "ok"]),
            row(&[t, "1", "-", "6", "-", "ok"])
        ]
    );
    assert_eq!(kafka.group_offsets(&group, t, &[0, 1]), vec![None, None]);
    let out = ok(run(&cluster, &[&to_kafka[..], &["--execute"]].concat()));
    assert!(
        out.stderr.contains(&format!(
            "committed 2 offset(s) of ZooKeeper group '{group}' to Kafka group '{group}'"
        )),
        "{out:?}"
    );
    assert_eq!(
        kafka.group_offsets(&group, t, &[0, 1]),
        vec![Some(4), Some(6)]
    );

    // Back into another ZooKeeper group, from the Kafka group of the first.
    let from_kafka = [
        "--group",
        &back,
        "migrate",
        "--from-kafka",
        "--kafka-group",
        &group,
        "--topic",
        t,
    ];
    let out = ok(run(&cluster, &from_kafka));
    assert_eq!(
        rows(&out.stdout),
        vec![row(&[t, "0", "-", "4", "-"]), row(&[t, "1", "-", "6", "-"])]
    );
    assert_eq!(stored(&zk, &back, t, 2), some(&["none", "none"]));
    ok(run(&cluster, &[&from_kafka[..], &["--execute"]].concat()));
    assert_eq!(stored(&zk, &back, t, 2), some(&["4", "6"]));

    // --all-topics from Kafka finds the topics the Kafka group committed.
    let other = unique("kgrp");
    kafka.commit_group(&other, t, &[(1, 9)]);
    ok(run(
        &cluster,
        &[
            "--group",
            &other,
            "migrate",
            "--from-kafka",
            "--all-topics",
            "--execute",
        ],
    ));
    assert_eq!(stored(&zk, &other, t, 2), some(&["none", "9"]));
}

#[test]
fn migrate_to_kafka_is_refused_while_the_kafka_group_is_active() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("busy");
    let topic = topic_with(&kafka, "busy", 1, 5);
    zk.put(&offset_path(&group, &topic, 0), b"2");

    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", &cluster.bootstrap)
        .set("group.id", &group)
        .create()
        .expect("consumer");
    consumer.subscribe(&[&topic]).expect("subscribe");
    let deadline = Instant::now() + Duration::from_secs(30);
    while consumer.assignment().map(|a| a.count()).unwrap_or(0) == 0 {
        assert!(Instant::now() < deadline, "consumer got no assignment");
        let _ = consumer.poll(Duration::from_millis(100));
    }
    let out = run(
        &cluster,
        &[
            "--group",
            &group,
            "migrate",
            "--to-kafka",
            "--topic",
            &topic,
            "--execute",
        ],
    );
    fails(out, 1, "active member(s)");
    drop(consumer);
}

/// `migrate` is refused while a job holds the ZooKeeper group (a keeper with ownership on that
/// loaded it), naming its instance, with `--execute` and in a dry run; nothing reaches Kafka.
/// Once the job has gone it copies.
#[test]
fn migrate_is_refused_while_a_job_holds_the_zookeeper_group() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("held");
    let topic = topic_with(&kafka, "held", 1, 5);
    let t = topic.as_str();
    zk.put(&offset_path(&group, t, 0), b"2");
    let job = keeper(&cluster);
    job.load(&group, std::slice::from_ref(&topic))
        .expect("load");
    let instances = zk.children(&format!("/consumers/{group}/ids"));
    assert_eq!(instances.len(), 1, "{instances:?}");

    let migrate = ["--group", &group, "migrate", "--to-kafka", "--topic", t];
    let execute = [&migrate[..], &["--execute"]].concat();
    let out = fails(run(&cluster, &execute), 1, "migrate refused");
    assert!(out.stderr.contains(&instances[0]), "{out:?}");
    assert!(out.stderr.contains("stop the job first"), "{out:?}");
    assert_eq!(kafka.group_offsets(&group, t, &[0]), vec![None]);
    fails(run(&cluster, &migrate), 1, "--execute would be refused");
    assert_eq!(kafka.group_offsets(&group, t, &[0]), vec![None]);

    drop(job);
    ok(run(&cluster, &execute));
    assert_eq!(kafka.group_offsets(&group, t, &[0]), vec![Some(2)]);
}

#[test]
fn error_paths_exit_non_zero_with_one_line() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("err");
    let topic = topic_with(&kafka, "err", 2, 10);
    let t = topic.as_str();
    zk.put(&offset_path(&group, t, 0), b"5");
    let missing = unique("nosuch");

    // The command line: status 2.
    fails(
        run(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--topic",
                t,
                "--to-earliest",
                "--to-latest",
            ],
        ),
        2,
        "error: the argument '--to-earliest' cannot be used with '--to-latest'",
    );
    fails(
        run(&cluster, &["--group", &group, "reset", "--all-topics"]),
        2,
        "the following required arguments were not provided",
    );
    fails(raw(&["list-groups"]), 2, "--zookeeper is required");
    fails(
        run(&cluster, &["describe", "--all-topics"]),
        2,
        "describe needs --group",
    );
    fails(
        run_zk(&cluster, &["--group", &group, "describe", "--all-topics"]),
        2,
        "describe needs the Kafka brokers: give --bootstrap-servers",
    );
    fails(
        run(&cluster, &["--group", "a/b", "describe", "--all-topics"]),
        2,
        "group name 'a/b' contains '/'",
    );
    fails(
        run(&cluster, &["--base-path", "consumers", "list-groups"]),
        2,
        "base path 'consumers'",
    );
    fails(
        run(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--topic",
                t,
                "--to-datetime",
                "last tuesday",
            ],
        ),
        2,
        "date-time 'last tuesday' is not ISO-8601",
    );
    fails(
        run(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--topic",
                t,
                "--by-duration",
                "2 hours",
            ],
        ),
        2,
        "duration '2 hours' does not start with P",
    );
    fails(
        run(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--topic",
                t,
                "--to-offset",
                "-1",
            ],
        ),
        2,
        "'-1'",
    );
    fails(
        run(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--topic",
                &format!("{t}:x"),
                "--to-latest",
            ],
        ),
        2,
        "partition 'x' of topic",
    );
    fails(
        raw(&["frobnicate"]),
        2,
        "unrecognized subcommand 'frobnicate'",
    );

    // Operations that fail: status 1.
    fails(
        run(
            &cluster,
            &["--group", &group, "describe", "--topic", &missing],
        ),
        1,
        &format!("error: unknown topic '{missing}'"),
    );
    fails(
        run(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--topic",
                &missing,
                "--to-latest",
            ],
        ),
        1,
        &format!("unknown topic '{missing}'"),
    );
    fails(
        run(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--topic",
                &format!("{t}:7"),
                "--to-latest",
            ],
        ),
        1,
        &format!("topic '{t}' has no partition 7"),
    );
    fails(
        run(
            &cluster,
            &["--group", &group, "reset", "--topic", t, "--shift-by", "1"],
        ),
        1,
        &format!("cannot shift {t}-1: its stored offset is none"),
    );
    fails(
        run(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--topic",
                t,
                "--to-valid",
                "--on-missing",
                "fail",
            ],
        ),
        1,
        "on_missing=fail",
    );
    let bad = temp_file("bad.csv", &format!("{t},0,1\n\n{t},x,2\n"));
    fails(
        run(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--from-file",
                bad.to_str().expect("path"),
            ],
        ),
        1,
        &format!("{}: line 3: partition 'x' is not a number", bad.display()),
    );
    let unknown = temp_file("unknown.csv", &format!("{t},0,1\n{missing},0,2\n"));
    fails(
        run(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--from-file",
                unknown.to_str().expect("path"),
            ],
        ),
        1,
        &format!("line 2: unknown topic '{missing}'"),
    );
    let beyond = temp_file("beyond.csv", &format!("{t},0,1\n{t},4,2\n"));
    fails(
        run(
            &cluster,
            &[
                "--group",
                &group,
                "reset",
                "--from-file",
                beyond.to_str().expect("path"),
            ],
        ),
        1,
        &format!("line 2: partition {t}-4 does not exist on the brokers"),
    );
    let other_group = temp_file("other.zk", "/consumers/someone-else/offsets/t/0:1\n");
    fails(
        run_zk(
            &cluster,
            &[
                "--group",
                &group,
                "import",
                "--from-file",
                other_group.to_str().expect("path"),
            ],
        ),
        1,
        "line 1: the path is of group 'someone-else'",
    );
    fails(
        run_zk(
            &cluster,
            &[
                "--group",
                &group,
                "import",
                "--from-file",
                "/nonexistent/offsets.csv",
            ],
        ),
        1,
        "cannot read offsets file /nonexistent/offsets.csv",
    );
    let empty_group = unique("empty");
    fails(
        run_zk(&cluster, &["--group", &empty_group, "export"]),
        1,
        &format!("group '{empty_group}' has no stored offsets under /consumers"),
    );
    fails(
        run(
            &cluster,
            &[
                "--group",
                &empty_group,
                "migrate",
                "--from-kafka",
                "--topic",
                t,
            ],
        ),
        1,
        &format!(
            "nothing to migrate: Kafka group '{empty_group}' has no committed offsets for {t}"
        ),
    );
    // Nothing was written by any of these.
    assert_eq!(stored(&zk, &group, t, 2), some(&["5", "none"]));
}

#[test]
fn unreachable_servers_fail_within_the_timeout_naming_the_server() {
    let cluster = cluster();
    let (_held, port) = dead_port();
    let dead = format!("127.0.0.1:{port}");
    let group = unique("dead");

    let started = Instant::now();
    fails(
        raw(&["--zookeeper", &dead, "--timeout", "1500", "list-groups"]),
        1,
        &format!("ZooKeeper at {dead}"),
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    let started = Instant::now();
    fails(
        raw(&[
            "--zookeeper",
            &cluster.zookeeper,
            "--bootstrap-servers",
            &dead,
            "--timeout",
            "1500",
            "--group",
            &group,
            "describe",
            "--topic",
            "anything",
        ]),
        1,
        &format!("Kafka metadata request failed (bootstrap.servers={dead})"),
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

/// The keeper's own keys in `--command-config` are read as a job's keeper reads them
/// (`KeeperConfig::from_properties`): the policy of `reset --to-valid` comes from the file, a
/// flag wins over it, and an unknown `offsetkeeper.*` key is refused naming the allowed ones.
#[test]
fn command_config_offsetkeeper_keys_set_the_policy() {
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let group = unique("okcfg");
    let topic = topic_with(&kafka, "okcfg", 1, 4);
    let config = temp_file(
        "policy.properties",
        "offsetkeeper.on.missing=latest\noffsetkeeper.zookeeper.timeout.ms=5000\n",
    );
    let valid = ["reset", "--topic", &topic, "--to-valid", "--export"];
    let out = ok(with_config(Some(&cluster), &config, &group, &valid));
    assert_eq!(out.stdout, format!("{topic},0,4\n"), "{out:?}");
    let mut earliest = valid.to_vec();
    earliest.extend(["--on-missing", "earliest"]);
    let out = ok(with_config(Some(&cluster), &config, &group, &earliest));
    assert_eq!(out.stdout, format!("{topic},0,0\n"), "{out:?}");

    let typo = temp_file("typo.properties", "offsetkeeper.on_missing=latest\n");
    fails(
        with_config(Some(&cluster), &typo, &group, &valid),
        2,
        "'offsetkeeper.on_missing' is not an offsetkeeper setting; allowed: offsetkeeper.base.path,",
    );
    let bad = temp_file("bad.properties", "offsetkeeper.ownership.wait.ms=-1\n");
    fails(
        with_config(Some(&cluster), &bad, &group, &["list-groups"]),
        2,
        "offsetkeeper.ownership.wait.ms '-1' is not allowed; allowed: whole milliseconds from 0 to 86400000",
    );
}

#[test]
fn command_config_supplies_settings_and_never_prints_secrets() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("cfg");
    let topic = topic_with(&kafka, "cfg", 1, 4);
    zk.put(&offset_path(&group, &topic, 0), b"1");

    // Connection settings from the file alone, ZooKeeper digest credentials included.
    let config = temp_file(
        "client.properties",
        &format!(
            "# operator settings\nbootstrap.servers={}\nzookeeper.connect={}\nclient.id=offsetkeeper-cli-test\nzookeeper.auth=digest\\:admin\\:Hunter2Secret\n",
            cluster.bootstrap, cluster.zookeeper
        ),
    );
    let out = ok(with_config(
        None,
        &config,
        &group,
        &["describe", "--topic", &topic],
    ));
    assert_eq!(
        rows(&out.stdout),
        vec![row(&[&topic, "0", "1", "0", "4", "3", "ok"])]
    );
    assert!(!out.stderr.contains("Hunter2Secret"), "{out:?}");

    // A ZooKeeper key offsetkeeper does not know is refused by name, with the allowed keys.
    let unknown = temp_file(
        "unknown.properties",
        "zookeeper.sasl.user=bob\nzookeeper.sasl.password=Hunter2Secret\n",
    );
    let out = with_config(
        Some(&cluster),
        &unknown,
        &group,
        &["describe", "--topic", &topic],
    );
    let out = fails(out, 2, "'zookeeper.sasl.user' is not a ZooKeeper setting");
    assert!(!out.stderr.contains("Hunter2Secret"), "{out:?}");

    // A client setting the brokers' client refuses: the error names no secret.
    let insecure = temp_file(
        "bad.properties",
        "security.protocol=nonsense\nsasl.password=TopSecret-42\n",
    );
    let out = with_config(
        Some(&cluster),
        &insecure,
        &group,
        &["describe", "--topic", &topic],
    );
    let out = fails(out, 1, "security.protocol 'nonsense'");
    assert!(!out.stderr.contains("TopSecret-42"), "{out:?}");

    let malformed = temp_file("malformed.properties", "ok=1\nssl.key.password=abc\\u12\n");
    let out = with_config(
        Some(&cluster),
        &malformed,
        &group,
        &["describe", "--topic", &topic],
    );
    let out = fails(
        out,
        2,
        "line 2: value of 'ssl.key.password' has a bad \\u escape",
    );
    assert!(!out.stderr.contains("abc"), "{out:?}");
}

#[test]
fn every_subcommand_has_help_with_an_example() {
    for command in [
        "describe",
        "list-groups",
        "reset",
        "export",
        "import",
        "delete",
        "migrate",
        "compare",
    ] {
        let out = ok(raw(&[command, "--help"]));
        assert!(out.stdout.contains("Example"), "{command}: {out:?}");
        assert!(out.stdout.contains("offsetkeeper --zookeeper"), "{command}");
    }
    let out = ok(raw(&["--help"]));
    assert!(out.stdout.contains("Exit status"), "{out:?}");
    for command in ["import", "delete", "migrate"] {
        let out = ok(raw(&[command, "--help"]));
        assert!(out.stdout.contains("--dry-run"), "{command}: {out:?}");
    }
}

/// `reset --help` groups its flags under headings, each flag under its own, in this order.
#[test]
fn reset_help_groups_flags_under_headings() {
    let out = ok(raw(&["reset", "--help"]));
    let sections = [
        ("Options:", &["--verbose...", "--help"][..]),
        ("Partitions:", &["--topic", "--all-topics"]),
        (
            "Reset mode (exactly one):",
            &[
                "--to-earliest",
                "--to-latest",
                "--to-offset",
                "--shift-by",
                "--to-datetime",
                "--by-duration",
                "--from-file",
                "--to-valid",
            ],
        ),
        (
            "Policies (with --to-valid):",
            &["--on-missing", "--on-below-range", "--on-above-range"],
        ),
        (
            "Run:",
            &[
                "--execute",
                "--dry-run",
                "--export",
                "--allow-beyond-log-end",
            ],
        ),
        (
            "Connection:",
            &[
                "--zookeeper",
                "--bootstrap-servers",
                "--command-config",
                "--group",
                "--base-path",
                "--timeout",
            ],
        ),
    ];
    let lines: Vec<&str> = out.stdout.lines().collect();
    let heading_at = |heading: &str| {
        lines
            .iter()
            .position(|l| *l == heading)
            .unwrap_or_else(|| panic!("no heading '{heading}' in:\n{}", out.stdout))
    };
    let mut previous = 0;
    for (heading, flags) in sections {
        let at = heading_at(heading);
        assert!(at >= previous, "'{heading}' out of order:\n{}", out.stdout);
        previous = at;
        // The section runs to the next blank line; each flag is defined there.
        let body: Vec<&str> = lines[at + 1..]
            .iter()
            .take_while(|l| !l.is_empty())
            .copied()
            .collect();
        for flag in flags {
            assert!(
                body.iter()
                    .any(|l| l.trim_start().split([' ', ',']).any(|w| w == *flag)),
                "{flag} is not under '{heading}':\n{}",
                out.stdout
            );
        }
    }
    let out = ok(raw(&["--version"]));
    assert!(out.stdout.starts_with("offsetkeeper "), "{out:?}");
}

/// The secured cluster through `--command-config` alone: ZooKeeper over SASL, Kafka over
/// SASL_SSL with SCRAM, in the keys a Kafka operator's client.properties already holds.
#[test]
fn command_config_reaches_the_secured_cluster_and_prints_no_secret() {
    let secure = support::secure_cluster();
    let kafka = Kafka::new(&secure.plaintext());
    let topic = topic_with(&kafka, "secure", 2, 6);
    let group = unique("secure-cli");
    let (zk_password, kafka_password) = (secure.get("ZK_PASSWORD"), secure.get("KAFKA_PASSWORD"));
    let properties = |kafka_password: &str| {
        format!(
            "zookeeper.connect={}\nzookeeper.sasl.username={}\nzookeeper.sasl.password={}\nzookeeper.acl=creator\n\
             bootstrap.servers={}\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n\
             sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{}\" password=\"{}\";\n\
             ssl.truststore.location={}\nssl.truststore.type=PEM\n",
            secure.get("ZK"),
            secure.get("ZK_USER"),
            zk_password,
            secure.get("KAFKA_SASL_SSL"),
            secure.get("KAFKA_USER"),
            kafka_password,
            secure.get("CA")
        )
    };
    let config = temp_file("secure.properties", &properties(kafka_password));
    let reset = ok(with_config(
        None,
        &config,
        &group,
        &["reset", "--topic", &topic, "--to-latest", "--execute"],
    ));
    let described = ok(with_config(
        None,
        &config,
        &group,
        &["describe", "--topic", &topic],
    ));
    assert_eq!(
        rows(&described.stdout),
        vec![
            row(&[&topic, "0", "6", "0", "6", "0", "ok"]),
            row(&[&topic, "1", "6", "0", "6", "0", "ok"]),
        ]
    );

    let wrong = temp_file("wrong.properties", &properties("Wrong-Cli-Secret-6"));
    let refused = fails(
        with_config(None, &wrong, &group, &["describe", "--topic", &topic]),
        1,
        "SASL SCRAM-SHA-256 login of user",
    );
    for run in [&reset, &described, &refused] {
        for secret in [zk_password, kafka_password, "Wrong-Cli-Secret-6"] {
            assert!(
                !run.stdout.contains(secret) && !run.stderr.contains(secret),
                "{run:?}"
            );
        }
    }
}

/// `migrate` both ways over one listener of the secured cluster, with ZooKeeper over SASL: the
/// offsets are staged with `reset`, committed to the Kafka group with `migrate --to-kafka`, and
/// a Kafka group's offsets read back with `migrate --from-kafka`, in the keys a Java client's
/// client.properties holds. Nothing printed holds a secret.
fn migrate_over_the_secured_cluster(
    listener: &str,
    kafka_keys: &[(&str, &str)],
    env: &[(&str, &str)],
) {
    let secure = support::secure_cluster();
    let kafka = Kafka::new(&secure.plaintext());
    let topic = topic_with(&kafka, "secmig", 2, 6);
    let t = topic.as_str();
    let (group, kafka_group, back) = (unique("secmig"), unique("secmig-k"), unique("secmig-b"));
    let mut properties = format!(
        "zookeeper.connect={}\nzookeeper.sasl.username={}\nzookeeper.sasl.password={}\nbootstrap.servers={}\n",
        secure.get("ZK"),
        secure.get("ZK_USER"),
        secure.get("ZK_PASSWORD"),
        secure.get(listener),
    );
    for (key, value) in kafka_keys {
        properties.push_str(&format!("{key}={value}\n"));
    }
    let config = temp_file("secmig.properties", &properties);
    let config = config.to_str().expect("path");
    let run = |group: &str, args: &[&str]| {
        let mut all = vec!["--command-config", config, "--group", group];
        all.extend_from_slice(args);
        raw_env(&all, env)
    };
    let mut runs = vec![ok(run(
        &group,
        &["reset", "--topic", t, "--to-offset", "4", "--execute"],
    ))];
    runs.push(ok(run(
        &group,
        &["migrate", "--to-kafka", "--topic", t, "--execute"],
    )));
    assert_eq!(
        kafka.group_offsets(&group, t, &[0, 1]),
        vec![Some(4), Some(4)]
    );
    kafka.commit_group(&kafka_group, t, &[(0, 2), (1, 3)]);
    let read = ok(run(
        &back,
        &[
            "migrate",
            "--from-kafka",
            "--kafka-group",
            &kafka_group,
            "--topic",
            t,
        ],
    ));
    assert_eq!(
        rows(&read.stdout),
        vec![row(&[t, "0", "-", "2", "-"]), row(&[t, "1", "-", "3", "-"])]
    );
    runs.push(read);
    for run in &runs {
        for secret in [secure.get("ZK_PASSWORD"), secure.get("KAFKA_PASSWORD")] {
            assert!(
                !run.stdout.contains(secret) && !run.stderr.contains(secret),
                "{run:?}"
            );
        }
    }
}

/// The SASL settings of one mechanism as a Java client writes them.
fn jaas_keys<'a>(secure: &'a support::SecureCluster, mechanism: &'a str) -> [(&'a str, String); 2] {
    let module = if mechanism == "PLAIN" {
        "plain.PlainLoginModule"
    } else {
        "scram.ScramLoginModule"
    };
    [
        ("sasl.mechanism", mechanism.to_string()),
        (
            "sasl.jaas.config",
            format!(
                "org.apache.kafka.common.security.{module} required username=\"{}\" password=\"{}\";",
                secure.get("KAFKA_USER"),
                secure.get("KAFKA_PASSWORD")
            ),
        ),
    ]
}

fn migrate_over_sasl(protocol: &str, mechanism: &str) {
    let secure = support::secure_cluster();
    let [mechanism_key, jaas] = jaas_keys(&secure, mechanism);
    let mut keys = vec![
        ("security.protocol", protocol),
        (mechanism_key.0, mechanism_key.1.as_str()),
        (jaas.0, jaas.1.as_str()),
    ];
    let listener = if protocol == "SASL_SSL" {
        keys.extend([
            ("ssl.truststore.location", secure.get("CA")),
            ("ssl.truststore.type", "PEM"),
        ]);
        "KAFKA_SASL_SSL"
    } else {
        "KAFKA_SASL_PLAINTEXT"
    };
    migrate_over_the_secured_cluster(listener, &keys, &[]);
}

#[test]
fn migrate_over_sasl_ssl_with_plain() {
    migrate_over_sasl("SASL_SSL", "PLAIN");
}

#[test]
fn migrate_over_sasl_ssl_with_scram_sha_256() {
    migrate_over_sasl("SASL_SSL", "SCRAM-SHA-256");
}

#[test]
fn migrate_over_sasl_ssl_with_scram_sha_512() {
    migrate_over_sasl("SASL_SSL", "SCRAM-SHA-512");
}

#[test]
fn migrate_over_sasl_plaintext_with_plain() {
    migrate_over_sasl("SASL_PLAINTEXT", "PLAIN");
}

#[test]
fn migrate_over_sasl_plaintext_with_scram_sha_256() {
    migrate_over_sasl("SASL_PLAINTEXT", "SCRAM-SHA-256");
}

#[test]
fn migrate_over_sasl_plaintext_with_scram_sha_512() {
    migrate_over_sasl("SASL_PLAINTEXT", "SCRAM-SHA-512");
}

/// SSL with a client certificate: the listener requires one, given as a PEM keystore.
#[test]
fn migrate_over_ssl_with_a_client_certificate() {
    let secure = support::secure_cluster();
    migrate_over_the_secured_cluster(
        "KAFKA_SSL_CLIENT_AUTH",
        &[
            ("security.protocol", "SSL"),
            ("ssl.truststore.location", secure.get("CA")),
            ("ssl.truststore.type", "PEM"),
            ("ssl.keystore.location", secure.get("CLIENT_KEYSTORE")),
            ("ssl.keystore.type", "PEM"),
        ],
        &[],
    );
}

/// A PKCS#12 truststore of the test CA, made by the JDK's keytool as Java shops make one.
fn pkcs12_truststore(secure: &support::SecureCluster, password: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(unique("trust.p12"));
    let keytool = std::env::var("JAVA_HOME")
        .map(|home| PathBuf::from(home).join("bin/keytool"))
        .unwrap_or_else(|_| PathBuf::from("keytool"));
    let output = Command::new(&keytool)
        .args([
            "-importcert",
            "-noprompt",
            "-alias",
            "ca",
            "-storetype",
            "PKCS12",
        ])
        .arg("-file")
        .arg(secure.get("CA"))
        .arg("-keystore")
        .arg(&path)
        .args(["-storepass", password])
        .output()
        .unwrap_or_else(|err| panic!("{} (JDK 17) is needed: {err}", keytool.display()));
    assert!(output.status.success(), "keytool: {output:?}");
    path
}

/// SSL with a client certificate, both stores PKCS#12 (the client's from openssl, the
/// truststore from keytool): loads read them through the CLI's conversion to PEM, and
/// `migrate` gets the same PEM.
#[test]
fn migrate_over_ssl_with_pkcs12_stores() {
    let secure = support::secure_cluster();
    let truststore = pkcs12_truststore(&secure, "trust-Secret-9");
    migrate_over_the_secured_cluster(
        "KAFKA_SSL_CLIENT_AUTH",
        &[
            ("security.protocol", "SSL"),
            (
                "ssl.truststore.location",
                truststore.to_str().expect("path"),
            ),
            ("ssl.truststore.type", "PKCS12"),
            ("ssl.truststore.password", "trust-Secret-9"),
            ("ssl.keystore.location", secure.get("CLIENT_P12")),
            ("ssl.keystore.type", "PKCS12"),
            ("ssl.keystore.password", secure.get("CLIENT_P12_PASSWORD")),
        ],
        &[],
    );
}

/// ZooKeeper's TLS port with a PKCS#12 truststore (`zookeeper.ssl.*`); a JKS store and a wrong
/// password are refused before anything connects, naming the key and the file, never the
/// password.
#[test]
fn command_config_reaches_the_secured_cluster_over_zookeeper_tls_with_a_pkcs12_truststore() {
    let secure = support::secure_cluster();
    let truststore = pkcs12_truststore(&secure, "trust-Secret-8");
    let truststore = truststore.to_str().expect("path");
    let config = |store: &str, kind: &str, password: &str| {
        temp_file(
            "zk-p12.properties",
            &format!(
                "zookeeper.sasl.username={}\nzookeeper.sasl.password={}\nzookeeper.ssl.client.enable=true\nzookeeper.ssl.truststore.location={store}\nzookeeper.ssl.truststore.type={kind}\nzookeeper.ssl.truststore.password={password}\n",
                secure.get("ZK_USER"),
                secure.get("ZK_PASSWORD"),
            ),
        )
    };
    let list = |config: &Path| {
        raw(&[
            "--zookeeper",
            secure.get("ZK_TLS"),
            "--command-config",
            config.to_str().expect("path"),
            "list-groups",
        ])
    };
    let listed = ok(list(&config(truststore, "PKCS12", "trust-Secret-8")));
    assert!(listed.stdout.starts_with("GROUP"), "{listed:?}");
    let run = fails(list(&config(truststore, "PKCS12", "wrong-Secret")), 2, &format!(
        "zookeeper.ssl.truststore.location {truststore} (PKCS12): cannot read it: the password zookeeper.ssl.truststore.password is wrong"
    ));
    assert!(!run.stderr.contains("Secret"), "{run:?}");
    let jks = secure.get("JKS");
    let run = fails(list(&config(jks, "JKS", secure.get("JKS_PASSWORD"))), 2, &format!(
        "zookeeper.ssl.truststore.location {jks} is a Java KeyStore (JKS), which only the jar reads; convert it to PKCS#12"
    ));
    assert!(!run.stderr.contains(secure.get("JKS_PASSWORD")), "{run:?}");
}

/// With no truststore, `migrate` trusts the roots loads trust: here `SSL_CERT_FILE` names the
/// test CA, which the system's bundle does not hold.
#[test]
fn migrate_over_sasl_ssl_without_a_truststore_trusts_ssl_cert_file() {
    let secure = support::secure_cluster();
    let [mechanism, jaas] = jaas_keys(&secure, "SCRAM-SHA-512");
    migrate_over_the_secured_cluster(
        "KAFKA_SASL_SSL",
        &[
            ("security.protocol", "SASL_SSL"),
            (mechanism.0, mechanism.1.as_str()),
            (jaas.0, jaas.1.as_str()),
        ],
        &[("SSL_CERT_FILE", secure.get("CA"))],
    );
}

/// With topic IDs (Kafka 2.8+) the re-created topic is known by its new ID. Older brokers have
/// none: nothing is recorded, and the re-created topic is judged by its range alone, where the
/// stored 6 is within [0, 10] and kept.
#[test]
fn a_recreated_topic_shows_in_describe_and_reset_and_delete_removes_stale_partitions() {
    use offsetkeeper::zookeeper::layout::parse_topic_identity;
    let ids = support::capabilities().topic_ids;
    let kafka_release = &support::capabilities().kafka;
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("ident");
    let topic = topic_with(&kafka, "ident", 3, 10);
    let folder = format!("/consumers/{group}/offsets/{topic}");
    {
        // A job's run: its commit records the topic ID beside the offsets.
        let keeper = support::keeper(&cluster);
        keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
        keeper
            .commit(&group, &support::batch(&topic, 3, 6))
            .unwrap();
    }
    let old_id = parse_topic_identity(&zk.get(&folder).unwrap());
    if !ids {
        assert_eq!(
            old_id, None,
            "Kafka {kafka_release} has no topic IDs to record"
        );
    }
    let old_id = old_id.unwrap_or_default();
    assert_eq!(!old_id.is_empty(), ids, "the commit records the topic ID");
    kafka.delete_topic(&topic);
    kafka.create_topic(&topic, 1);
    kafka.produce(&topic, 0, 10);

    let out = ok(run(
        &cluster,
        &["--group", &group, "describe", "--topic", &topic],
    ));
    let table = rows(&out.stdout);
    assert_eq!(table.len(), 3, "{out:?}");
    assert_eq!(table[0][..6], row(&[&topic, "0", "6", "0", "10", "4"])[..]);
    let status = table[0][6..].join(" ");
    if ids {
        assert!(
            status.starts_with(&format!("re-created (id {old_id} -> "))
                && status.ends_with(')')
                && !status.ends_with(&format!("-> {old_id})")),
            "{out:?}"
        );
    } else {
        assert_eq!(status, "ok", "{out:?}");
    }
    assert_eq!(
        table[1].join(" "),
        format!("{topic} 1 6 - - - partition gone")
    );
    let out = ok(run(
        &cluster,
        &[
            "--group",
            &group,
            "describe",
            "--topic",
            &topic,
            "--format",
            "prometheus",
        ],
    ));
    let labels = format!("group=\"{group}\",topic=\"{topic}\"");
    let status = if ids { "recreated" } else { "ok" };
    for line in [
        format!("offsetkeeper_partition_status{{{labels},partition=\"0\",status=\"{status}\"}} 1"),
        format!(
            "offsetkeeper_partition_status{{{labels},partition=\"1\",status=\"partition_gone\"}} 1"
        ),
        format!("offsetkeeper_lag{{{labels},partition=\"0\"}} 4"),
    ] {
        assert!(out.stdout.lines().any(|l| l == line), "{line} in {out:?}");
    }

    // --to-valid: the load's decision for a re-created topic, earliest though 6 is in range;
    // without topic IDs, 6 is kept.
    let out = ok(run(
        &cluster,
        &[
            "--group",
            &group,
            "reset",
            "--topic",
            &topic,
            "--to-valid",
            "--execute",
        ],
    ));
    let p0 = if ids {
        assert!(out.stdout.contains("re-created"), "{out:?}");
        "0"
    } else {
        assert!(
            rows(&out.stdout).contains(&row(&[&topic, "0", "6", "6", "0", "0", "10", "kept"])),
            "{out:?}"
        );
        "6"
    };
    assert_eq!(
        value(&zk, &offset_path(&group, &topic, 0)).as_deref(),
        Some(p0)
    );
    let new_id = parse_topic_identity(&zk.get(&folder).unwrap());
    if ids {
        let recorded = new_id.as_deref().expect("recorded");
        assert_ne!(recorded, old_id, "the reset records the new topic's ID");
    } else {
        assert_eq!(
            new_id, None,
            "Kafka {kafka_release} has no topic IDs to record"
        );
    }

    // delete --stale: a dry run lists the partitions that no longer exist.
    let out = ok(run(&cluster, &["--group", &group, "delete", "--stale"]));
    assert_eq!(
        rows(&out.stdout),
        vec![row(&[&topic, "1", "6"]), row(&[&topic, "2", "6"])]
    );
    assert!(out.stderr.contains("dry run: nothing deleted"), "{out:?}");
    assert_eq!(stored(&zk, &group, &topic, 3), some(&[p0, "6", "6"]));
    {
        // Refused while a job owns the group, as kafka-consumer-groups refuses for an active one.
        let keeper = support::keeper(&cluster);
        keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
        fails(
            run(
                &cluster,
                &["--group", &group, "delete", "--stale", "--execute"],
            ),
            1,
            &format!("group '{group}' is active"),
        );
        assert_eq!(stored(&zk, &group, &topic, 3), some(&[p0, "6", "6"]));
    }
    let out = ok(run(
        &cluster,
        &["--group", &group, "delete", "--stale", "--execute"],
    ));
    assert!(
        out.stderr
            .contains(&format!("deleted 2 stored offset(s) from group '{group}'")),
        "{out:?}"
    );
    assert_eq!(stored(&zk, &group, &topic, 3), some(&[p0, "none", "none"]));

    // --partition: one partition's offset; the folder, with its ID (if any), stays.
    ok(run_zk(
        &cluster,
        &[
            "--group",
            &group,
            "delete",
            "--topic",
            &topic,
            "--partition",
            "0",
            "--execute",
        ],
    ));
    assert_eq!(stored(&zk, &group, &topic, 1), some(&["none"]));
    assert_eq!(parse_topic_identity(&zk.get(&folder).unwrap()), new_id);
    fails(
        run_zk(
            &cluster,
            &[
                "--group",
                &group,
                "delete",
                "--topic",
                &topic,
                "--partition",
                "0",
            ],
        ),
        1,
        "has no stored offset",
    );
}

/// Runs with the brokers only, on Kafka's group store.
fn run_kafka_store(cluster: &Cluster, args: &[&str]) -> Run {
    let mut all = vec![
        "--store",
        "kafka",
        "--bootstrap-servers",
        cluster.bootstrap.as_str(),
    ];
    all.extend_from_slice(args);
    raw(&all)
}

#[test]
fn every_offsets_command_works_on_kafkas_group_store_without_zookeeper() {
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let group = unique("cli-ks");
    let topic = topic_with(&kafka, "cli-ks", 2, 10);
    let t = topic.as_str();
    // Committed by a Kafka consumer: what describe shows, as kafka-consumer-groups would.
    kafka.commit_group(&group, t, &[(0, 4)]);
    let out = ok(run_kafka_store(
        &cluster,
        &["--group", &group, "describe", "--topic", t],
    ));
    assert_eq!(
        rows(&out.stdout),
        vec![
            row(&[t, "0", "4", "0", "10", "6", "ok"]),
            row(&[t, "1", "-", "0", "10", "-", "missing"]),
        ],
        "{out:?}"
    );

    // A reset writes to the group store, dry run first.
    let args = ["--group", &group, "reset", "--topic", t, "--to-latest"];
    ok(run_kafka_store(&cluster, &args));
    assert_eq!(kafka.group_offsets(&group, t, &[0, 1]), vec![Some(4), None]);
    ok(run_kafka_store(
        &cluster,
        &[&args[..], &["--execute"]].concat(),
    ));
    assert_eq!(
        kafka.group_offsets(&group, t, &[0, 1]),
        vec![Some(10), Some(10)]
    );

    // Export, then import another plan; then delete one partition's offset.
    let exported = ok(run_kafka_store(
        &cluster,
        &["--group", &group, "export", "--topic", t],
    ));
    assert!(
        exported.stdout.contains(&format!("{t},0,10")),
        "{exported:?}"
    );
    let file = temp_file("cli-ks.csv", &format!("{t},0,7\n{t},1,8\n"));
    ok(run_kafka_store(
        &cluster,
        &[
            "--group",
            &group,
            "import",
            "--from-file",
            &file.to_string_lossy(),
            "--execute",
        ],
    ));
    assert_eq!(
        kafka.group_offsets(&group, t, &[0, 1]),
        vec![Some(7), Some(8)]
    );
    let delete = [
        "--group",
        &group,
        "delete",
        "--topic",
        t,
        "--partition",
        "1",
        "--execute",
    ];
    let left = if capabilities().offset_delete {
        ok(run_kafka_store(&cluster, &delete));
        vec![Some(7), None]
    } else {
        // Before Kafka 2.4 the brokers have no OffsetDelete: refused by name, nothing deleted.
        fails(
            run_kafka_store(&cluster, &delete),
            1,
            "needs Kafka 2.4 or later",
        );
        vec![Some(7), Some(8)]
    };
    assert_eq!(kafka.group_offsets(&group, t, &[0, 1]), left);

    // A live consumer in the group: a reset refuses, nothing written.
    let consumer = kafka.subscribed_member(&group, t, &[]);
    let refused = run_kafka_store(
        &cluster,
        &[
            "--group",
            &group,
            "reset",
            "--topic",
            t,
            "--to-earliest",
            "--execute",
        ],
    );
    assert_ne!(refused.code, 0, "{refused:?}");
    drop(consumer);
    assert_eq!(kafka.group_offsets(&group, t, &[0, 1]), left);
}

/// A keeper of one store that never owns the group: it commits there as a job would.
fn store_keeper(cluster: &Cluster, store: Store) -> OffsetKeeper {
    keeper_with(cluster, &[], |config| {
        config.store = store;
        config.ownership.enabled = false;
        config.commit_outage_tolerance = Duration::ZERO;
    })
}

/// `compare` of what keepers of each store committed: the table's verdicts and exit status 3
/// while the stores differ, the same in JSON, and exit status 0 once they agree.
#[test]
fn compare_shows_both_stores_and_exits_3_until_they_agree() {
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let group = unique("cmp");
    let topic = topic_with(&kafka, "cmp", 3, 10);
    let t = topic.as_str();
    let tp = |partition: i32| TopicPartition::new(t, partition);
    let in_zookeeper = store_keeper(&cluster, Store::ZooKeeper);
    let in_kafka = store_keeper(&cluster, Store::Kafka);
    in_zookeeper
        .commit(&group, &[(tp(0), 5), (tp(1), 7), (tp(2), 6)])
        .expect("commit to ZooKeeper");
    in_kafka
        .commit(&group, &[(tp(0), 5), (tp(1), 4)])
        .expect("commit to Kafka");
    // Each row's words joined again: a verdict is several words.
    let table = |done: &Run| -> Vec<String> {
        rows(&done.stdout)
            .iter()
            .map(|words| words.join(" "))
            .collect()
    };

    let compare = ["--group", &group, "compare", "--topic", t];
    let out = fails(
        run(&cluster, &compare),
        3,
        "2 of 3 partition(s) differ between ZooKeeper and Kafka's group store",
    );
    assert!(!out.stderr.starts_with("error"), "{out:?}");
    let header = "PARTITION  ZOOKEEPER  KAFKA  EARLIEST  LATEST  VERDICT\n";
    assert!(out.stdout.contains(header), "{out:?}");
    assert_eq!(
        table(&out),
        [
            format!("{t} 0 5 5 0 10 equal"),
            format!("{t} 1 7 4 0 10 kafka behind by 3"),
            format!("{t} 2 6 - 0 10 only in zookeeper"),
        ],
        "{out:?}"
    );
    // --all-topics: the topics stored in either store, here the one.
    let all = fails(
        run(&cluster, &["--group", &group, "compare", "--all-topics"]),
        3,
        "2 of 3 partition(s) differ",
    );
    assert_eq!(all.stdout, out.stdout);
    let json = fails(
        run(&cluster, &[&compare[..], &["--format", "json"]].concat()),
        3,
        "2 of 3 partition(s) differ",
    );
    let document: serde_json::Value = serde_json::from_str(&json.stdout).expect("one document");
    let expected = serde_json::json!({
        "group": group,
        "differing": 2,
        "partitions": [
            {"topic": t, "partition": 0, "zookeeper": 5, "kafka": 5,
             "earliest": 0, "latest": 10, "verdict": "equal"},
            {"topic": t, "partition": 1, "zookeeper": 7, "kafka": 4,
             "earliest": 0, "latest": 10, "verdict": "kafka behind by 3"},
            {"topic": t, "partition": 2, "zookeeper": 6, "kafka": null,
             "earliest": 0, "latest": 10, "verdict": "only in zookeeper"}
        ]
    });
    assert_eq!(document, expected, "{json:?}");

    // Kafka catches up: the stores agree, exit status 0 and nothing on stderr.
    in_kafka
        .commit(&group, &[(tp(1), 7), (tp(2), 6)])
        .expect("commit to Kafka");
    let out = ok(run(&cluster, &compare));
    assert_eq!(
        table(&out),
        [
            format!("{t} 0 5 5 0 10 equal"),
            format!("{t} 1 7 7 0 10 equal"),
            format!("{t} 2 6 6 0 10 equal"),
        ],
        "{out:?}"
    );
    assert_eq!(out.stderr, "", "{out:?}");
}

/// A keeper of a job in a move between stores: `store` authoritative, `mirror` mirrored (the
/// job's `offsetkeeper.store`), never owning the group.
fn phase_keeper(cluster: &Cluster, store: Store, mirror: Store) -> OffsetKeeper {
    keeper_with(cluster, &[], |config| {
        config.store = store;
        config.mirror = Some(mirror);
        config.ownership.enabled = false;
        config.commit_outage_tolerance = Duration::ZERO;
    })
}

/// Where the next start of a job in the move would begin each partition, and whether its load
/// found the stores differing.
fn next_start(
    cluster: &Cluster,
    store: Store,
    mirror: Store,
    group: &str,
    topic: &str,
) -> (Vec<i64>, usize) {
    let loaded = phase_keeper(cluster, store, mirror)
        .load(group, &[topic.to_string()])
        .expect("load");
    let offsets = loaded.offsets().map(|(_, offset)| offset).collect();
    (offsets, loaded.mirror.len())
}

/// In phase 2 a rewind written to ZooKeeper alone is undone by the next start, which
/// takes the Kafka mirror's offset, ahead of it. With the job's two stores as `--store`, reset,
/// import and delete write both, the authoritative store first, and the next start takes the
/// operator's offsets, in phase 2 and in phase 3.
#[test]
fn a_rewind_during_a_move_writes_both_stores_and_the_next_start_takes_it() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let group = unique("move");
    let topic = topic_with(&kafka, "move", 2, 30);
    let t = topic.as_str();
    let tp = |partition: i32| TopicPartition::new(t, partition);
    // The job's commits in a dual phase leave both stores equal.
    let in_both = |offsets: &[(TopicPartition, i64)]| {
        for store in [Store::ZooKeeper, Store::Kafka] {
            store_keeper(&cluster, store)
                .commit(&group, offsets)
                .expect("commit");
        }
    };
    in_both(&[(tp(0), 25), (tp(1), 25)]);
    let compare = ["--group", &group, "compare", "--topic", t];

    // Phase 2 with one store named: the rewind reaches ZooKeeper only, and the next start
    // takes the mirror's 25 (the issue).
    let rewind = [
        "--group",
        &group,
        "reset",
        "--topic",
        &format!("{t}:0"),
        "--shift-by",
        "-10",
        "--execute",
    ];
    ok(run(&cluster, &rewind));
    assert_eq!(
        value(&zk, &offset_path(&group, t, 0)).as_deref(),
        Some("15")
    );
    assert_eq!(kafka.group_offsets(&group, t, &[0]), vec![Some(25)]);
    assert_eq!(
        next_start(&cluster, Store::ZooKeeper, Store::Kafka, &group, t),
        (vec![25, 25], 1)
    );

    // Phase 2 with the job's stores: both rewound, ZooKeeper first; compare equal; the next
    // start takes it.
    in_both(&[(tp(0), 25)]);
    let phase_2 = [&["--store", "zookeeper,kafka"][..], &rewind[..]].concat();
    let out = ok(run(&cluster, &phase_2));
    assert!(
        out.stderr.contains(&format!(
            "reset 1 partition(s) of group '{group}': 1 written, 0 unchanged"
        )) && out
            .stderr
            .contains("and in the mirror (kafka): 1 written, 0 unchanged"),
        "{out:?}"
    );
    assert_eq!(
        value(&zk, &offset_path(&group, t, 0)).as_deref(),
        Some("15")
    );
    assert_eq!(
        kafka.group_offsets(&group, t, &[0, 1]),
        vec![Some(15), Some(25)]
    );
    ok(run(&cluster, &compare));
    assert_eq!(
        next_start(&cluster, Store::ZooKeeper, Store::Kafka, &group, t),
        (vec![15, 25], 0)
    );

    // Phase 3: an import, Kafka first, then ZooKeeper.
    in_both(&[(tp(0), 28), (tp(1), 28)]);
    let file = temp_file("move.csv", &format!("{t},0,20\n{t},1,12\n"));
    let out = ok(run(
        &cluster,
        &[
            "--store",
            "kafka,zookeeper",
            "--group",
            &group,
            "import",
            "--from-file",
            file.to_str().expect("path"),
            "--execute",
        ],
    ));
    assert!(
        out.stderr
            .contains("and in the mirror (zookeeper): 2 written, 0 unchanged"),
        "{out:?}"
    );
    assert_eq!(
        kafka.group_offsets(&group, t, &[0, 1]),
        vec![Some(20), Some(12)]
    );
    assert_eq!(stored(&zk, &group, t, 2), some(&["20", "12"]));
    ok(run(&cluster, &compare));
    assert_eq!(
        next_start(&cluster, Store::Kafka, Store::ZooKeeper, &group, t),
        (vec![20, 12], 0)
    );

    // Phase 3: a reset rewinds both too.
    in_both(&[(tp(0), 28), (tp(1), 28)]);
    ok(run(
        &cluster,
        &[
            "--store",
            "kafka,zookeeper",
            "--group",
            &group,
            "reset",
            "--topic",
            t,
            "--to-offset",
            "5",
            "--execute",
        ],
    ));
    assert_eq!(
        kafka.group_offsets(&group, t, &[0, 1]),
        vec![Some(5), Some(5)]
    );
    assert_eq!(stored(&zk, &group, t, 2), some(&["5", "5"]));
    ok(run(&cluster, &compare));
    assert_eq!(
        next_start(&cluster, Store::Kafka, Store::ZooKeeper, &group, t),
        (vec![5, 5], 0)
    );

    // A delete leaves no offset in the mirror for the next start to take (OffsetDelete: Kafka
    // 2.4+).
    if capabilities().offset_delete {
        let out = ok(run(
            &cluster,
            &[
                "--store",
                "zookeeper,kafka",
                "--group",
                &group,
                "delete",
                "--topic",
                t,
                "--partition",
                "1",
                "--execute",
            ],
        ));
        assert!(
            out.stderr
                .contains("and from the mirror (kafka): 1 stored offset(s)"),
            "{out:?}"
        );
        assert_eq!(stored(&zk, &group, t, 2), some(&["5", "none"]));
        assert_eq!(kafka.group_offsets(&group, t, &[0, 1]), vec![Some(5), None]);
    }
}
