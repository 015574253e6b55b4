//! Ownership after a crash and after a Spark checkpoint recovery, against the real cluster: a
//! keeper that commits without having loaded takes ownership as a load does; an owner that
//! registered from this host and whose process is gone is taken over at once, while its
//! ZooKeeper session still lives; a live owner is still waited for.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use offsetkeeper::{Error, OffsetKeeper};
use support::{
    batch, cluster, keeper_with, offset_path, unique, zk_connector, Cluster, Kafka, Zk, RUNTIME,
};
use zookeeper_client as zk;

/// The session timeout of the crashing owner: its nodes outlive it by this much.
const SESSION: Duration = Duration::from_secs(30);
const HOLDER_GROUP: &str = "OFFSETKEEPER_TEST_HOLDER_GROUP";
const HOLDER_TOPIC: &str = "OFFSETKEEPER_TEST_HOLDER_TOPIC";
const READY: &str = "HOLDER-OWNS-THE-PARTITIONS";

fn topic_with(cluster: &Cluster, partitions: i32) -> String {
    let kafka = Kafka::new(cluster);
    let topic = unique("own");
    kafka.create_topic(&topic, partitions);
    for p in 0..partitions {
        kafka.produce(&topic, p, 10);
    }
    topic
}

fn stored(zk: &Zk, group: &str, topic: &str, partition: i32) -> Option<String> {
    zk.get(&offset_path(group, topic, partition))
        .map(|raw| String::from_utf8_lossy(&raw).into_owned())
}

fn waiting(cluster: &Cluster, wait: Duration) -> OffsetKeeper {
    keeper_with(cluster, &[], |c| c.ownership.wait = Some(wait))
}

/// The body of the driver that `Holder` runs in a child process (this test binary again): it
/// loads the group, says so, and runs until killed. Ignored in normal runs.
#[test]
#[ignore = "the child process of the tests below; run by them"]
fn holder_process() {
    let group = std::env::var(HOLDER_GROUP).expect("run by Holder::start only");
    let topic = std::env::var(HOLDER_TOPIC).expect("run by Holder::start only");
    let keeper = keeper_with(&cluster(), &[], |c| c.zookeeper.session_timeout = SESSION);
    keeper.load(&group, &[topic]).expect("the holder loads");
    println!("{READY}");
    std::thread::sleep(Duration::from_secs(600));
}

/// A driver in a process of its own, owning a group's partitions.
struct Holder {
    child: Child,
}

impl Holder {
    fn start(group: &str, topic: &str) -> Holder {
        let mut child = Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "holder_process",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(HOLDER_GROUP, group)
            .env(HOLDER_TOPIC, topic)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the holder process");
        let stdout = child.stdout.take().expect("piped");
        let (ready, is_ready) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains(READY) {
                    let _ = ready.send(());
                }
            }
        });
        let mut holder = Holder { child };
        if is_ready.recv_timeout(Duration::from_secs(60)).is_err() {
            holder.kill();
            panic!("the holder process did not take ownership within 60 s");
        }
        holder
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, and reaped: its ZooKeeper session lives on until it expires.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.kill();
    }
}

fn ids(zk: &Zk, group: &str) -> Vec<String> {
    zk.children(&format!("/consumers/{group}/ids"))
}

fn owner_of(zk: &Zk, group: &str, topic: &str, partition: i32) -> String {
    let owner = format!("/consumers/{group}/owners/{topic}/{partition}");
    String::from_utf8(zk.get(&owner).unwrap_or_else(|| panic!("{owner} missing"))).unwrap()
}

#[test]
fn a_keeper_that_never_loaded_owns_the_partitions_of_its_first_commit() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let topic = topic_with(&cluster, 2);
    let group = unique("g");
    // A keeper deserialized from a checkpoint: the job recovers without loading.
    let recovered = support::keeper(&cluster);
    recovered.commit(&group, &batch(&topic, 2, 5)).unwrap();

    let registered = ids(&zk, &group);
    assert_eq!(registered.len(), 1, "{registered:?}");
    assert!(zk.is_ephemeral(&format!("/consumers/{group}/ids/{}", registered[0])));
    for p in 0..2 {
        assert_eq!(
            owner_of(&zk, &group, &topic, p),
            format!("{}-0", registered[0])
        );
    }

    // A second instance is refused, by a load or by its own first commit, and writes nothing.
    let second = waiting(&cluster, Duration::ZERO);
    let err = second
        .load(&group, std::slice::from_ref(&topic))
        .unwrap_err();
    assert!(matches!(err, Error::Owned { .. }), "{err:?}");
    let other = waiting(&cluster, Duration::ZERO);
    let err = other.commit(&group, &batch(&topic, 2, 9)).unwrap_err();
    let Error::Owned { owner, .. } = &err else {
        panic!("expected Owned, got {err:?}");
    };
    assert!(owner.contains(&registered[0]), "{err}");
    assert_eq!(stored(&zk, &group, &topic, 0).as_deref(), Some("5"));
    assert_eq!(ids(&zk, &group), registered);

    // Its commits go on; a commit waits for the owner to go as a load does.
    recovered.commit(&group, &batch(&topic, 2, 6)).unwrap();
    let patient = waiting(&cluster, Duration::from_secs(20));
    let closer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        drop(recovered);
    });
    let started = Instant::now();
    patient.commit(&group, &batch(&topic, 2, 7)).unwrap();
    let waited = started.elapsed();
    closer.join().unwrap();
    assert!(
        waited >= Duration::from_millis(1000) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
    assert_eq!(stored(&zk, &group, &topic, 1).as_deref(), Some("7"));
    let now = ids(&zk, &group);
    assert_eq!(now.len(), 1);
    assert_ne!(now, registered);
    // It fences from what it read once it owned the partitions.
    zk.put(&offset_path(&group, &topic, 0), b"3");
    let err = patient.commit(&group, &batch(&topic, 2, 8)).unwrap_err();
    assert!(matches!(err, Error::CommitConflict { .. }), "{err:?}");
}

#[test]
fn an_owner_whose_process_died_on_this_host_is_taken_over_at_once() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let topic = topic_with(&cluster, 2);
    let group = unique("g");
    let mut holder = Holder::start(&group, &topic);
    let dead = ids(&zk, &group);
    assert_eq!(dead.len(), 1, "{dead:?}");
    let dead_path = format!("/consumers/{group}/ids/{}", dead[0]);
    let registration = String::from_utf8(zk.get(&dead_path).unwrap()).unwrap();
    assert!(
        registration.contains(&format!("\"pid\":{}", holder.pid()))
            && registration.contains("\"starttime\":")
            && registration.contains("\"pidns\":"),
        "{registration}"
    );
    holder.kill();
    assert!(
        zk.is_ephemeral(&dead_path),
        "the dead driver's session lives on"
    );

    // The restarted driver, with the default wait (session timeout + 5 s), loads at once.
    let restarted = support::keeper(&cluster);
    let started = Instant::now();
    restarted
        .load(&group, std::slice::from_ref(&topic))
        .unwrap();
    let took = started.elapsed();
    // The dead driver's session had not expired (its timeout is 30 s): nothing waited for it.
    assert!(took < Duration::from_secs(10), "{took:?}");
    // Its registration went with its lock and owner nodes, in the take-over's multi.
    assert_eq!(zk.ephemeral_owner(&dead_path), None, "{dead_path} is left");
    let now = ids(&zk, &group);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now[0], dead[0]);
    for p in 0..2 {
        assert_eq!(owner_of(&zk, &group, &topic, p), format!("{}-0", now[0]));
    }
    restarted.commit(&group, &batch(&topic, 2, 4)).unwrap();
    assert_eq!(stored(&zk, &group, &topic, 1).as_deref(), Some("4"));
}

#[test]
fn a_live_owner_on_this_host_is_still_waited_for() {
    let cluster = cluster();
    let zk = Zk::new(&cluster);
    let topic = topic_with(&cluster, 1);
    let group = unique("g");
    let mut holder = Holder::start(&group, &topic);
    let wait = Duration::from_secs(2);
    let started = Instant::now();
    let err = waiting(&cluster, wait)
        .load(&group, std::slice::from_ref(&topic))
        .unwrap_err();
    assert!(started.elapsed() >= wait, "{:?}", started.elapsed());
    let Error::Owned { owner, .. } = &err else {
        panic!("expected Owned, got {err:?}");
    };
    assert!(owner.contains(&format!("pid {}", holder.pid())), "{err}");
    // Nor does a first commit take it.
    let err = waiting(&cluster, wait)
        .commit(&group, &batch(&topic, 1, 3))
        .unwrap_err();
    assert!(matches!(err, Error::Owned { .. }), "{err:?}");
    assert_eq!(stored(&zk, &group, &topic, 0), None);
    // A wait longer than the request timeout is waited out too, and ends as Owned, not as a
    // ZooKeeper timeout (which a commit would defer).
    let long_wait = Duration::from_secs(3);
    let patient = keeper_with(&cluster, &[], |c| {
        c.ownership.wait = Some(long_wait);
        c.zookeeper.request_timeout = Duration::from_secs(1);
    });
    let started = Instant::now();
    let err = patient.commit(&group, &batch(&topic, 1, 3)).unwrap_err();
    assert!(matches!(err, Error::Owned { .. }), "{err:?}");
    assert!(started.elapsed() >= long_wait, "{:?}", started.elapsed());
    assert_eq!(stored(&zk, &group, &topic, 0), None);

    // Once it is killed, the same keeper's next try takes over at once.
    let keeper = waiting(&cluster, Duration::ZERO);
    holder.kill();
    keeper.commit(&group, &batch(&topic, 1, 3)).unwrap();
    assert_eq!(stored(&zk, &group, &topic, 0).as_deref(), Some("3"));
}

/// This host's name as offsetkeeper writes it, its pid namespace and this process's start time.
fn this_process() -> (String, u64, u64) {
    let host: String = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let ns = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let ns: u64 = ns
        .to_str()
        .unwrap()
        .trim_start_matches("pid:[")
        .trim_end_matches(']')
        .parse()
        .unwrap();
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let start: u64 = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    (host, ns, start)
}

/// Ownership nodes as another process left them, in a ZooKeeper session of this test that
/// stays open: `ids/<consumer>` with the registration and `owners/<topic>/0`.
async fn stage_owner(client: &zk::Client, group: &str, topic: &str, registration: &str) {
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let ephemeral = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    let consumer = format!("{group}_staged-1-0000abcd");
    for dir in [
        format!("/consumers/{group}/ids"),
        format!("/consumers/{group}/owners/{topic}"),
    ] {
        client.mkdir(&dir, &persistent).await.unwrap();
    }
    client
        .create(
            &format!("/consumers/{group}/ids/{consumer}"),
            registration.as_bytes(),
            &ephemeral,
        )
        .await
        .unwrap();
    client
        .create(
            &format!("/consumers/{group}/owners/{topic}/0"),
            format!("{consumer}-0").as_bytes(),
            &ephemeral,
        )
        .await
        .unwrap();
}

#[test]
fn only_a_process_of_this_host_and_namespace_that_is_gone_is_taken_over() {
    let cluster = cluster();
    let topic = topic_with(&cluster, 1);
    let (host, ns, start) = this_process();
    let me = std::process::id();
    let free_pid = 4_194_304 + 17; // above Linux's highest pid_max: never a process
    let registration = |host: &str, pid: u32, extra: &str| {
        format!("{{\"version\":1,\"subscription\":{{\"{topic}\":1}},\"pattern\":\"static\",\"timestamp\":\"1\",\"host\":\"{host}\",\"pid\":{pid}{extra},\"client\":\"staged\"}}")
    };
    let cases = [
        // This pid, but started at another time: the owner's pid was reused.
        (
            registration(
                &host,
                me,
                &format!(",\"starttime\":{},\"pidns\":{ns}", start + 1),
            ),
            true,
        ),
        (
            registration(&host, free_pid, &format!(",\"starttime\":5,\"pidns\":{ns}")),
            true,
        ),
        // Alive: this very process.
        (
            registration(&host, me, &format!(",\"starttime\":{start},\"pidns\":{ns}")),
            false,
        ),
        // Another host, another pid namespace (a container), or no way to tell.
        (
            registration(
                "elsewhere",
                free_pid,
                &format!(",\"starttime\":5,\"pidns\":{ns}"),
            ),
            false,
        ),
        (
            registration(
                &host,
                free_pid,
                &format!(",\"starttime\":5,\"pidns\":{}", ns + 1),
            ),
            false,
        ),
        (registration(&host, free_pid, ""), false),
    ];
    let client = RUNTIME
        .block_on(async {
            zk_connector(&cluster.zookeeper)
                .await
                .connect(&cluster.zookeeper)
                .await
        })
        .expect("connect to ZooKeeper");
    for (registration, taken) in cases {
        let group = unique("g");
        RUNTIME.block_on(stage_owner(&client, &group, &topic, &registration));
        let keeper = waiting(&cluster, Duration::ZERO);
        let outcome = keeper.load(&group, std::slice::from_ref(&topic));
        assert_eq!(outcome.is_ok(), taken, "{registration}: {outcome:?}");
        if !taken {
            assert!(matches!(outcome, Err(Error::Owned { .. })), "{outcome:?}");
        } else {
            let zk = Zk::new(&cluster);
            let owner = owner_of(&zk, &group, &topic, 0);
            assert!(!owner.contains("staged"), "{owner}");
            // The dead owner's registration went with its nodes; only the new keeper's is left.
            let now = ids(&zk, &group);
            assert_eq!(now.len(), 1, "{now:?}");
            assert!(!now[0].contains("staged"), "{now:?}");
        }
        drop(keeper);
    }
}
