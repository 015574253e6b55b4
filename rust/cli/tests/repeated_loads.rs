//! Every kind of stored offset, loaded and committed over and over: four partitions, one stored
//! offset in range, one purged below the earliest (deleteRecords), one above the latest, one
//! missing. Each round opens a NEW keeper (a new ZooKeeper session, so ownership is taken with
//! creates), loads, and commits, creating the missing node and updating the others; every tenth
//! round also runs `describe` and `reset --to-valid --execute` through the CLI. Failures are
//! counted, not stopped at, so that an intermittent one shows how often it happens; the test
//! asserts there were none. Part of the normal `cargo test` and of every cell of the compatibility
//! matrix (tests/compat).
//!
//! The purge is Kafka's deleteRecords where the brokers have it (Kafka 0.11 and later), else (or
//! with OFFSETKEEPER_PURGE_BY=retention) time retention: partition 1's first records carry
//! timestamps ten days old, the topic rolls a segment when timestamps are a day apart and keeps a
//! day, so the broker deletes exactly the segment holding them (support's
//! `Kafka::create_purged_topic`).

#[path = "../../core/tests/support/mod.rs"]
mod support;

use std::process::Command;
use std::time::Instant;

use offsetkeeper::{Action, Stored, TopicPartition};
use support::{cluster, keeper, offset_path, unique, Cluster, Kafka, Zk};

const ROUNDS: usize = 50;
const CLI_EVERY: usize = 10;
const RECORDS: usize = 20;
const PURGED_BELOW: i64 = 12;

/// Stores the four situations for `group`: 5 (in range), 3 (purged), 99 (above), none.
fn stage(zk: &Zk, group: &str, topic: &str) {
    zk.put(&offset_path(group, topic, 0), b"5");
    zk.put(&offset_path(group, topic, 1), b"3");
    zk.put(&offset_path(group, topic, 2), b"99");
}

fn stored(zk: &Zk, group: &str, topic: &str) -> Vec<Option<String>> {
    (0..4)
        .map(|p| {
            zk.get(&offset_path(group, topic, p))
                .map(|raw| String::from_utf8_lossy(&raw).into_owned())
        })
        .collect()
}

fn expect<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, expected {want:?}"))
    }
}

/// One load on a new keeper, checked, then a commit of the chosen offsets + 1, read back.
fn load_and_commit(
    cluster: &Cluster,
    zk: &Zk,
    topic: &str,
) -> (Result<(), String>, Result<(), String>) {
    let group = unique("rep");
    stage(zk, &group, topic);
    let keeper = keeper(cluster);
    let loaded = match keeper.load(&group, &[topic.to_string()]) {
        Ok(loaded) => loaded,
        Err(err) => {
            return (
                Err(format!("load: {err}")),
                Err("no load, no commit".into()),
            )
        }
    };
    let got: Vec<(i32, Stored, i64, i64, Action)> = loaded
        .partitions
        .iter()
        .map(|r| {
            (
                r.partition.partition,
                r.stored.clone(),
                r.range.earliest,
                r.range.latest,
                r.decision.action,
            )
        })
        .collect();
    let want = vec![
        (0, Stored::Offset(5), 0, RECORDS as i64, Action::Kept),
        (
            1,
            Stored::Offset(3),
            PURGED_BELOW,
            RECORDS as i64,
            Action::ResetBelowRange,
        ),
        (
            2,
            Stored::Offset(99),
            0,
            RECORDS as i64,
            Action::ResetAboveRange,
        ),
        (3, Stored::Missing, 0, RECORDS as i64, Action::Initialized),
    ];
    let load = expect("load", got, want).and_then(|()| {
        expect(
            "chosen offsets of partitions 0 and 1",
            (
                loaded.partitions[0].decision.offset,
                loaded.partitions[1].decision.offset,
            ),
            (5, PURGED_BELOW),
        )
    });
    let batch: Vec<(TopicPartition, i64)> = loaded
        .partitions
        .iter()
        .map(|r| (r.partition.clone(), r.decision.offset + 1))
        .collect();
    let commit = match keeper.commit(&group, &batch) {
        Err(err) => Err(format!("commit: {err}")),
        Ok(_) => expect(
            "stored after commit",
            stored(zk, &group, topic),
            batch.iter().map(|(_, o)| Some(o.to_string())).collect(),
        )
        .and_then(|()| {
            expect(
                "owners of the new session",
                zk.children(&format!("/consumers/{group}/owners/{topic}")),
                vec!["0", "1", "2", "3"]
                    .into_iter()
                    .map(String::from)
                    .collect(),
            )
        }),
    };
    (load, commit)
}

fn cli(cluster: &Cluster, args: &[&str]) -> Result<String, String> {
    let output = Command::new(env!("CARGO_BIN_EXE_offsetkeeper"))
        .args([
            "--zookeeper",
            &cluster.zookeeper,
            "--bootstrap-servers",
            &cluster.bootstrap,
        ])
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .map_err(|err| format!("run offsetkeeper: {err}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "offsetkeeper {args:?} exited with {}: {}{}",
            output.status,
            stdout,
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// The STATUS words of each row of a `describe` table.
fn statuses(table: &str) -> Vec<String> {
    table
        .lines()
        .skip(1)
        .map(|line| {
            line.split_whitespace()
                .skip(6)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// `describe`, then `reset --to-valid --execute`, then `describe` again, on a new group.
fn through_the_cli(cluster: &Cluster, zk: &Zk, topic: &str) -> Result<(), String> {
    let group = unique("rep-cli");
    stage(zk, &group, topic);
    let before = cli(cluster, &["--group", &group, "describe", "--topic", topic])?;
    expect(
        "describe before the reset",
        statuses(&before),
        ["ok", "below range", "above range", "missing"]
            .map(String::from)
            .to_vec(),
    )?;
    cli(
        cluster,
        &[
            "--group",
            &group,
            "reset",
            "--topic",
            topic,
            "--to-valid",
            "--execute",
        ],
    )?;
    // The default policies: above range and missing start at the earliest offset.
    let twelve = PURGED_BELOW.to_string();
    expect(
        "stored after reset --to-valid --execute",
        stored(zk, &group, topic),
        ["5", twelve.as_str(), "0", "0"]
            .map(|v| Some(v.to_string()))
            .to_vec(),
    )?;
    let after = cli(cluster, &["--group", &group, "describe", "--topic", topic])?;
    expect(
        "describe after the reset",
        statuses(&after),
        vec!["ok".to_string(); 4],
    )
}

/// The topic with RECORDS records in each partition, the first PURGED_BELOW of partition 1 gone.
fn staged_topic(kafka: &Kafka) -> String {
    let topic = unique("repeated");
    kafka.create_purged_topic(&topic, &[RECORDS; 4], &[(1, PURGED_BELOW)]);
    topic
}

#[test]
fn repeated_loads_on_new_sessions_with_purged_above_and_missing_offsets() {
    let cluster = cluster();
    let (kafka, zk) = (Kafka::new(&cluster), Zk::new(&cluster));
    let topic = staged_topic(&kafka);

    let started = Instant::now();
    let (mut loads, mut commits, mut clis) = (0, 0, 0);
    let mut failures = Vec::new();
    for round in 1..=ROUNDS {
        let (load, commit) = load_and_commit(&cluster, &zk, &topic);
        match load {
            Ok(()) => loads += 1,
            Err(err) => failures.push(format!("round {round}: {err}")),
        }
        match commit {
            Ok(()) => commits += 1,
            Err(err) => failures.push(format!("round {round}: {err}")),
        }
        if round % CLI_EVERY == 0 {
            match through_the_cli(&cluster, &zk, &topic) {
                Ok(()) => clis += 1,
                Err(err) => failures.push(format!("round {round}, CLI: {err}")),
            }
        }
    }
    let cli_rounds = ROUNDS / CLI_EVERY;
    println!(
        "loads: {loads} of {ROUNDS}; commits: {commits} of {ROUNDS}; cli: {clis} of {cli_rounds} \
         (zookeeper {}, bootstrap {}, {:.1} s)",
        cluster.zookeeper,
        cluster.bootstrap,
        started.elapsed().as_secs_f64()
    );
    for failure in &failures {
        println!("FAILED {failure}");
    }
    assert!(
        failures.is_empty(),
        "{} failures (loads: {loads} of {ROUNDS}; commits: {commits} of {ROUNDS}; cli: {clis} of {cli_rounds}); first: {}",
        failures.len(),
        failures[0]
    );
}
