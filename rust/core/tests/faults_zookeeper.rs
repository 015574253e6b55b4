//! ZooKeeper breaking under a committing job, for real: restarted during 1,000 commits, frozen
//! (SIGSTOP) for longer than the session timeout, and a 3-node ensemble losing one node, then
//! its quorum. Each test runs its own ensemble (`tests/cluster/ensemble.sh`), one test at a
//! time. What must hold: every commit that returned is readable after, no batch is ever seen
//! torn, stored offsets never move backwards nor past what the job committed, and calls fail
//! within their timeout while ZooKeeper cannot serve.
//!
//! Each test prints a `FAULT ...` summary line (`cargo test --test faults_zookeeper --
//! --nocapture`).

mod support;

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use offsetkeeper::{Action, Error, KeeperConfig, OffsetKeeper, Stored, ZkConfig};
use support::{
    batch, cluster, keeper_with, libfaketime, offset_path, unique, Cluster, Ensemble, Kafka, Zk,
};

/// One ensemble at a time: the tests measure timeouts on a 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// Scheduling and connection slack on a busy machine.
const SLACK: Duration = Duration::from_secs(3);

fn keeper_on(
    connect: &str,
    bootstrap: &str,
    tweak: impl FnOnce(&mut KeeperConfig),
) -> OffsetKeeper {
    let servers = Cluster {
        zookeeper: connect.to_string(),
        bootstrap: bootstrap.to_string(),
    };
    keeper_with(&servers, &[], |config| {
        config.zookeeper.request_timeout = REQUEST_TIMEOUT;
        config.zookeeper.session_timeout = Duration::from_secs(6);
        // Fail-fast commits: these tests count the failures (tests/outage.rs has the deferred ones).
        config.commit_outage_tolerance = Duration::ZERO;
        tweak(config);
    })
}

/// Reads a group's stored offsets of a topic: `Ok(None)` when nothing is stored,
/// `Ok(Some(v))` when every partition holds `v`, `Err` when the batch is torn.
struct Reader<'a> {
    keeper: &'a OffsetKeeper,
    group: &'a str,
    topic: &'a str,
    partitions: usize,
}

/// A ZooKeeper-only keeper on a session of its own, for reading what another keeper wrote.
fn reading_keeper(connect: &str) -> OffsetKeeper {
    let mut config = ZkConfig::new(connect);
    config.request_timeout = REQUEST_TIMEOUT;
    config.session_timeout = Duration::from_secs(6);
    OffsetKeeper::open_zookeeper_only(config).unwrap()
}

impl Reader<'_> {
    /// One read; `None` when ZooKeeper could not answer.
    fn try_read(&self) -> Option<Result<Option<i64>, String>> {
        let stored = self
            .keeper
            .stored(self.group, &[self.topic.to_string()])
            .ok()?;
        if stored.is_empty() {
            return Some(Ok(None));
        }
        let values: Vec<Option<i64>> = stored
            .iter()
            .map(|(_, s)| match s {
                Stored::Offset(v) => Some(*v),
                _ => None,
            })
            .collect();
        if stored.len() != self.partitions || values.windows(2).any(|w| w[0] != w[1]) {
            return Some(Err(format!("torn batch: {stored:?}")));
        }
        Some(Ok(values[0]))
    }

    /// Reads until ZooKeeper answers, for at most `within`.
    fn read(&self, within: Duration) -> Result<Option<i64>, String> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(value) = self.try_read() {
                return value;
            }
            assert!(Instant::now() < deadline, "no read answered in {within:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Reads until the value is `expected` (a session on another server of an ensemble may
    /// lag behind the leader for a moment), for at most `within`; the last value read.
    fn read_until(&self, expected: Option<i64>, within: Duration) -> Result<Option<i64>, String> {
        let deadline = Instant::now() + within;
        loop {
            let value = self.read(within)?;
            if value == expected || Instant::now() >= deadline {
                return Ok(value);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn kind(err: &Error) -> String {
    match err {
        Error::Timeout { .. } => "timeout".into(),
        Error::ZooKeeper { source, .. } => format!("zookeeper: {source}"),
        other => format!("{other}"),
    }
}

#[test]
#[ignore = "stops, freezes or cuts servers for minutes: run by `gradle cargoTestSlow`"]
fn zookeeper_restarted_during_a_thousand_commits() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ensemble = Ensemble::start("zk-restart", 1);
    let keeper = keeper_on(&ensemble.connect, "127.0.0.1:1", |_| {});
    let (group, topic) = (unique("g"), unique("restarted"));
    let other = reading_keeper(&ensemble.connect);
    let reader = Reader {
        keeper: &other,
        group: &group,
        topic: &topic,
        partitions: 20,
    };
    let started = Instant::now();
    let deadline = started + Duration::from_secs(240);
    let (mut ok, mut failed, mut last_ok) = (0, Vec::new(), 0);
    let mut errors = std::collections::BTreeMap::new();
    let mut triggered = Vec::new();
    let (mut verified, mut unverified) = (0, Vec::new());
    std::thread::scope(|scope| {
        let mut restarter: Option<std::thread::ScopedJoinHandle<'_, ()>> = None;
        for i in 1..=1000i64 {
            assert!(Instant::now() < deadline, "1,000 commits took over 240 s");
            // Two restarts, the second once the first is over; commits go on meanwhile.
            let due = match triggered.len() {
                0 => i >= 200,
                1 => i >= 550 && restarter.as_ref().is_some_and(|r| r.is_finished()),
                _ => false,
            };
            if due {
                if let Some(previous) = restarter.take() {
                    previous.join().unwrap();
                }
                triggered.push(i);
                let ensemble = &ensemble;
                restarter = Some(scope.spawn(move || {
                    ensemble.node("stop-node", 1);
                    std::thread::sleep(Duration::from_secs(3));
                    ensemble.node("start-node", 1);
                }));
            }
            let attempt = Instant::now();
            match keeper.commit(&group, &batch(&topic, 20, i)) {
                Ok(_) => {
                    ok += 1;
                    last_ok = i;
                    // Readable at once, whole (one writer: exactly this batch), unless
                    // ZooKeeper went down just now: commits go on meanwhile.
                    match reader.try_read() {
                        Some(read) => {
                            assert_eq!(read, Ok(Some(i)), "commit {i} reads back {read:?}");
                            verified += 1;
                        }
                        None => unverified.push(i),
                    }
                }
                Err(err) => {
                    let took = attempt.elapsed();
                    assert!(
                        took < REQUEST_TIMEOUT * 2 + SLACK,
                        "commit {i} failed after {took:?}: {err}"
                    );
                    failed.push(i);
                    *errors.entry(kind(&err)).or_insert(0) += 1;
                }
            }
            // Paced (1,000 commits take about 15 s), so that both restarts fall within them.
            std::thread::sleep(Duration::from_millis(12));
        }
        if let Some(last) = restarter.take() {
            last.join().unwrap();
        }
    });
    let final_value = reader.read(Duration::from_secs(60));
    assert_eq!(final_value, Ok(Some(last_ok)));
    assert!(ok >= 900, "only {ok} of 1,000 commits went through");
    assert_eq!(triggered.len(), 2, "the second restart never came");
    assert!(
        failed
            .iter()
            .any(|i| (triggered[0]..triggered[1]).contains(i))
            && failed.iter().any(|i| *i >= triggered[1]),
        "the restarts (at commits {triggered:?}) were not met: failed {failed:?}"
    );
    println!(
        "FAULT zookeeper restarted (down 3 s) at commits {triggered:?} of 1,000 commits of 20 partitions: {ok} ok, {} failed ({errors:?}) at {:?}; {verified} returned commits read back whole at once, {} while ZooKeeper was down ({unverified:?}) and later; final {last_ok}; {:.1} s",
        failed.len(),
        failed,
        unverified.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
#[ignore = "stops, freezes or cuts servers for minutes: run by `gradle cargoTestSlow`"]
fn zookeeper_frozen_longer_than_the_session_timeout() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ensemble = Ensemble::start("zk-freeze", 1);
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let (group, topic) = (unique("g"), unique("frozen"));
    kafka.create_topic(&topic, 3);
    // Sessions of 4 s (the ensemble's tick is 1 s); the freeze lasts 8 s.
    let keeper = keeper_on(&ensemble.connect, &cluster.bootstrap, |c| {
        c.zookeeper.session_timeout = Duration::from_secs(4);
        c.ownership.wait = Some(Duration::from_secs(10));
    });
    keeper.load(&group, std::slice::from_ref(&topic)).unwrap();
    let session_before = keeper.zookeeper_session().map(|s| s.id());
    let other = reading_keeper(&ensemble.connect);
    let reader = Reader {
        keeper: &other,
        group: &group,
        topic: &topic,
        partitions: 3,
    };

    let attempted = AtomicI64::new(0); // highest value a commit was started with
    let acknowledged = AtomicI64::new(0); // highest value a commit returned Ok for
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(120);
    let mut observations = Vec::new();
    let mut results = Vec::new();
    let mut frozen_at = None;
    std::thread::scope(|scope| {
        let committer = scope.spawn(|| {
            let mut results = Vec::new();
            let mut ok_after_thaw = 0;
            for i in 1..=2_000i64 {
                if Instant::now() > deadline || stop.load(Ordering::SeqCst) {
                    break;
                }
                attempted.store(i, Ordering::SeqCst);
                let t = Instant::now();
                let result = keeper.commit(&group, &batch(&topic, 3, i));
                if result.is_ok() {
                    acknowledged.store(i, Ordering::SeqCst);
                    if results.len() > 100 {
                        ok_after_thaw += 1;
                    }
                }
                results.push((i, t.elapsed(), result.map(|_| ()).map_err(|e| kind(&e))));
                if ok_after_thaw >= 50 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            stop.store(true, Ordering::SeqCst);
            results
        });
        let observer = scope.spawn(|| {
            let mut seen = Vec::new();
            while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                let floor = acknowledged.load(Ordering::SeqCst);
                if let Some(read) = reader.try_read() {
                    let ceiling = attempted.load(Ordering::SeqCst);
                    seen.push((floor, read, ceiling));
                }
                std::thread::sleep(Duration::from_millis(30));
            }
            seen
        });
        // Freeze once 50 commits went through; thaw after 8 s.
        while acknowledged.load(Ordering::SeqCst) < 50 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        frozen_at = Some(acknowledged.load(Ordering::SeqCst));
        ensemble.node("freeze", 1);
        std::thread::sleep(Duration::from_secs(8));
        ensemble.node("thaw", 1);
        results = committer.join().unwrap();
        observations = observer.join().unwrap();
    });

    // No torn batch, no backward move, no lost commit, no forward jump.
    let mut previous = 0;
    for (floor, read, ceiling) in &observations {
        let value = read
            .clone()
            .unwrap_or_else(|torn| panic!("{torn}"))
            .unwrap_or(0);
        assert!(
            value >= previous,
            "stored offsets moved back from {previous} to {value}"
        );
        assert!(
            value >= *floor,
            "commit {floor} returned, then {value} was stored"
        );
        assert!(
            value <= *ceiling,
            "stored {value} before a commit of it started"
        );
        previous = value;
    }
    let last_ok = acknowledged.load(Ordering::SeqCst);
    assert_eq!(reader.read(Duration::from_secs(30)), Ok(Some(last_ok)));
    let failed: Vec<_> = results.iter().filter(|r| r.2.is_err()).collect();
    for (i, took, _) in &failed {
        assert!(
            *took < REQUEST_TIMEOUT * 2 + SLACK,
            "commit {i} failed after {took:?}"
        );
    }
    let recovered = results.iter().rev().take(50).all(|r| r.2.is_ok());
    assert!(recovered, "the keeper did not recover after the thaw");
    let session_after = keeper.zookeeper_session().map(|s| s.id());
    let mut errors = std::collections::BTreeMap::new();
    for (_, _, result) in &failed {
        if let Err(kind) = result {
            *errors.entry(kind.clone()).or_insert(0) += 1;
        }
    }
    println!(
        "FAULT zookeeper frozen 8 s (session timeout 4 s) after commit {:?}: {} commits, {} failed ({errors:?}), session {}; {} observations never torn, backwards, below an acknowledged commit or ahead of an attempted one; final {last_ok}; {:.1} s",
        frozen_at,
        results.len(),
        failed.len(),
        if session_before != session_after { "expired and replaced, ownership taken again" } else { "kept" },
        observations.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
#[ignore = "stops, freezes or cuts servers for minutes: run by `gradle cargoTestSlow`"]
fn a_three_node_ensemble_commits_while_a_quorum_stands() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ensemble = Ensemble::start("zk-quorum", 3);
    let keeper = keeper_on(&ensemble.connect, "127.0.0.1:1", |_| {});
    let (group, topic) = (unique("g"), unique("quorum"));
    // Read back through the committing keeper's own session (reads of one session see its
    // writes); at the end also through another session.
    let reader = Reader {
        keeper: &keeper,
        group: &group,
        topic: &topic,
        partitions: 10,
    };
    let other = reading_keeper(&ensemble.connect);
    let elsewhere = Reader {
        keeper: &other,
        group: &group,
        topic: &topic,
        partitions: 10,
    };
    let started = Instant::now();
    let mut state = Phases {
        keeper: &keeper,
        reader: &reader,
        group: &group,
        topic: &topic,
        next: 0,
        last_ok: 0,
        log: Vec::new(),
    };

    let (ok, failed) = state.run("3 nodes", 50, 50);
    assert_eq!((ok, failed), (50, 0));

    ensemble.node("kill-node", 1);
    let (ok, failed) = state.run("node 1 killed", 50, 120);
    assert_eq!(
        ok, 50,
        "commits did not go on with 2 of 3 nodes ({failed} failed)"
    );

    // Node 2 restarted: while it is down, one node of three is no quorum.
    ensemble.node("stop-node", 2);
    let before = state.last_ok;
    let t = Instant::now();
    for _ in 0..4 {
        state.next += 1;
        let attempt = Instant::now();
        let err = keeper
            .commit(&group, &batch(&topic, 10, state.next))
            .expect_err("a commit went through without a quorum");
        assert!(
            attempt.elapsed() < REQUEST_TIMEOUT * 2 + SLACK,
            "failing took {:?}: {err}",
            attempt.elapsed()
        );
        assert!(
            matches!(err, Error::Timeout { .. } | Error::ZooKeeper { .. }),
            "{err:?}"
        );
    }
    state.log.push(format!(
        "no quorum: 4 commits failed cleanly in {:.1} s",
        t.elapsed().as_secs_f64()
    ));
    ensemble.node("start-node", 2);
    assert_eq!(
        reader.read(Duration::from_secs(30)),
        Ok(Some(before)),
        "a commit refused without quorum was stored"
    );
    let (ok, failed) = state.run("node 2 back", 50, 120);
    assert_eq!(
        ok, 50,
        "commits did not go on after the quorum came back ({failed} failed)"
    );
    let (last_ok, log) = (state.last_ok, state.log);
    assert_eq!(reader.read(Duration::from_secs(30)), Ok(Some(last_ok)));
    assert_eq!(
        elsewhere.read_until(Some(last_ok), Duration::from_secs(10)),
        Ok(Some(last_ok))
    );
    println!(
        "FAULT 3-node ensemble: {}; final {last_ok}, read back whole after every commit; {:.1} s",
        log.join("; "),
        started.elapsed().as_secs_f64()
    );
}

/// The phases of the ensemble test: commits numbered on, each returned one read back.
struct Phases<'a> {
    keeper: &'a OffsetKeeper,
    reader: &'a Reader<'a>,
    group: &'a str,
    topic: &'a str,
    next: i64,
    last_ok: i64,
    log: Vec<String>,
}

impl Phases<'_> {
    /// Commits until `wanted` went through, at most `attempts`; returns (ok, failed).
    fn run(&mut self, label: &str, wanted: usize, attempts: usize) -> (usize, usize) {
        let (mut ok, mut failed) = (0, 0);
        let phase = Instant::now();
        while ok < wanted && ok + failed < attempts {
            self.next += 1;
            let t = Instant::now();
            match self
                .keeper
                .commit(self.group, &batch(self.topic, 10, self.next))
            {
                Ok(_) => {
                    ok += 1;
                    self.last_ok = self.next;
                    assert_eq!(
                        self.reader.read(Duration::from_secs(30)),
                        Ok(Some(self.next))
                    );
                }
                Err(err) => {
                    assert!(t.elapsed() < REQUEST_TIMEOUT * 2 + SLACK, "{err}");
                    failed += 1;
                }
            }
        }
        self.log.push(format!(
            "{label}: {ok} ok, {failed} failed in {:.1} s",
            phase.elapsed().as_secs_f64()
        ));
        (ok, failed)
    }
}

/// A ZooKeeper server whose clock runs 10 minutes behind the brokers' (libfaketime), holding
/// offsets with no topic ID beside them (written by hand, as a job before offsetkeeper did): its
/// znode times say the offsets were committed 10 minutes before they were, before records that
/// lie below them. The load measures ZooKeeper's clock on its lock node and corrects the
/// commit times: every offset is kept, on a CreateTime and a LogAppendTime topic alike.
#[test]
#[ignore = "stops, freezes or cuts servers for minutes: run by `gradle cargoTestSlow`"]
fn a_zookeeper_clock_behind_the_brokers_never_resets_a_live_topic() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let library = libfaketime();
    let ensemble = Ensemble::start_with_env(
        "zk-behind",
        1,
        &[
            ("LD_PRELOAD", library.as_str()),
            ("FAKETIME", "-10m"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
        ],
    );
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let skewed = Cluster {
        zookeeper: ensemble.connect.clone(),
        bootstrap: cluster.bootstrap.clone(),
    };
    let zk = Zk::new(&skewed);
    let group = unique("g");
    let create_time = unique("behind-create");
    let append_time = unique("behind-append");
    kafka.create_topic(&create_time, 2);
    kafka.create_topic_with(
        &append_time,
        2,
        1,
        &[("message.timestamp.type", "LogAppendTime")],
    );
    let topics = vec![create_time.clone(), append_time.clone()];
    for topic in &topics {
        for partition in 0..2 {
            kafka.produce(topic, partition, 10);
            let path = offset_path(&group, topic, partition);
            let before = now_ms();
            zk.put(&path, b"8");
            let behind = before - zk.mtime(&path);
            assert!(
                (540_000..=660_000).contains(&behind),
                "ZooKeeper's clock is {behind} ms behind, expected about 10 minutes (libfaketime)"
            );
            // The topic lives on.
            kafka.produce(topic, partition, 10);
        }
    }

    let keeper = keeper_on(&ensemble.connect, &cluster.bootstrap, |_| {});
    let loaded = keeper.load(&group, &topics).unwrap();
    let rows: Vec<(String, i32, i64, Action)> = loaded
        .partitions
        .iter()
        .map(|r| {
            (
                r.partition.topic.to_string(),
                r.partition.partition,
                r.decision.offset,
                r.decision.action,
            )
        })
        .collect();
    let kept: Vec<(String, i32, i64, Action)> = topics
        .iter()
        .flat_map(|t| (0..2).map(move |p| (t.clone(), p, 8, Action::Kept)))
        .collect();
    assert_eq!(rows, kept, "{}", loaded.table());
    // A commit still works and moves the offsets on.
    keeper.commit(&group, &batch(&create_time, 2, 15)).unwrap();
    assert_eq!(
        zk.get(&offset_path(&group, &create_time, 0)).unwrap(),
        b"15"
    );
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .expect("clock after 1970")
}
