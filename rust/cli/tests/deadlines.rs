//! ZooKeeper deadlines through the built binary, against real servers: a ZooKeeper chroot that
//! does not exist fails every command with one line naming it (exit 1, nothing created), and with
//! ZooKeeper stopped or frozen (SIGSTOP, an ensemble of the test's own) a command ends within its
//! `--timeout` plus 20%.

#[path = "../../core/tests/support/mod.rs"]
mod support;

use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use support::{cluster, unique, Ensemble, Kafka, Zk};

/// One ensemble at a time: the tests measure timeouts on a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

const TIMEOUT_MS: u64 = 2000;

/// Starting the binary, its runtime and its exit, and scheduling on a small machine shared with
/// builds; far less than the timeout a second wait would add.
const SLACK: Duration = Duration::from_millis(700);

fn bound() -> Duration {
    Duration::from_millis(TIMEOUT_MS).mul_f64(1.2) + SLACK
}

/// Runs the binary; exit status, stderr and how long it took.
fn run(args: &[&str]) -> (i32, String, Duration) {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_offsetkeeper"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run offsetkeeper");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        started.elapsed(),
    )
}

/// Every subcommand that reads or writes ZooKeeper, with `--zookeeper ZK` and the brokers.
fn commands<'a>(
    zk: &'a str,
    bootstrap: &'a str,
    group: &'a str,
    topic: &'a str,
) -> Vec<Vec<&'a str>> {
    let common = [
        "--zookeeper",
        zk,
        "--bootstrap-servers",
        bootstrap,
        "--timeout",
        "2000",
    ];
    let with = |rest: &[&'a str]| -> Vec<&'a str> {
        common.iter().copied().chain(rest.iter().copied()).collect()
    };
    vec![
        with(&["list-groups"]),
        with(&["--group", group, "describe", "--topic", topic]),
        with(&["--group", group, "describe", "--all-topics"]),
        with(&["--group", group, "export", "--topic", topic]),
        with(&[
            "--group",
            group,
            "reset",
            "--topic",
            topic,
            "--to-earliest",
            "--execute",
        ]),
        with(&["--group", group, "delete", "--topic", topic, "--execute"]),
        with(&["--group", group, "migrate", "--to-kafka", "--topic", topic]),
        with(&["--group", group, "compare", "--topic", topic]),
    ]
}

#[test]
fn a_missing_chroot_fails_every_command_naming_it() {
    let shared = cluster();
    let topic = unique("clichroot");
    Kafka::new(&shared).create_topic(&topic, 1);
    let chroot = format!("/{}", unique("newroot"));
    let rooted = format!("{}{chroot}", shared.zookeeper);
    let group = unique("g");
    for args in commands(&rooted, &shared.bootstrap, &group, &topic) {
        let (code, stderr, took) = run(&args);
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert_eq!(lines.len(), 1, "{args:?}: one line expected: {stderr}");
        assert!(
            lines[0].contains(&format!("ZooKeeper chroot '{chroot}'"))
                && lines[0].contains(&format!("zkCli.sh create {chroot}")),
            "{args:?}: {stderr}"
        );
        assert!(took <= bound(), "{args:?} took {took:?}");
    }
    assert_eq!(
        Zk::new(&shared).get(&chroot),
        None,
        "the chroot was created"
    );
}

#[test]
fn with_zookeeper_stopped_a_command_ends_within_its_timeout() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    outage("stop-node", "start-node");
}

#[test]
fn with_zookeeper_frozen_a_command_ends_within_its_timeout() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    outage("freeze", "thaw");
}

fn outage(down: &str, up: &str) {
    let shared = cluster();
    let topic = unique("clideadline");
    Kafka::new(&shared).create_topic(&topic, 1);
    let ensemble = Ensemble::start("cli-deadline", 1);
    let group = unique("g");
    ensemble.node(down, 1);
    for args in commands(&ensemble.connect, &shared.bootstrap, &group, &topic) {
        let (code, stderr, took) = run(&args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("ZooKeeper at {} did not answer", ensemble.connect)),
            "{args:?}: {stderr}"
        );
        assert!(took <= bound(), "{down}: {args:?} took {took:?}: {stderr}");
        println!(
            "DEADLINE {down}: {} took {} ms",
            args[6..].join(" "),
            took.as_millis()
        );
    }
    ensemble.node(up, 1);
}
