use offsetkeeper::*;
use std::time::{Duration, Instant};
fn med(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}
fn main() {
    if std::env::var("PHASES").is_ok() {
        phases();
        return;
    }
    if std::env::var("WARM").is_ok() {
        warm_loop();
        return;
    }
    if std::env::var("C1").is_ok() {
        commit_loop();
        return;
    }
    let zkc = std::env::var("OFFSETKEEPER_ZK").unwrap();
    let bs = std::env::var("OFFSETKEEPER_BOOTSTRAP").unwrap();
    let topics: Vec<String> = (0..5).map(|t| format!("bench-p1000-t{t}")).collect();
    let open = || {
        let settings = KafkaSettings::from_params([("bootstrap.servers", bs.clone())]).unwrap();
        let mut c = KeeperConfig::new(ZkConfig::new(zkc.clone()), settings);
        c.ownership.enabled = std::env::var("OWN").is_err();
        OffsetKeeper::open(c).unwrap()
    };
    let group = format!("scratch-{}", std::process::id());
    let (mut cold, mut warm, mut c1) = (vec![], vec![], vec![]);
    for i in 0..9 {
        let t = Instant::now();
        let k = open();
        let l = k.load(&group, &topics).unwrap();
        cold.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let l = k.load(&group, &topics).unwrap();
        warm.push(t.elapsed().as_secs_f64() * 1e3);
        let mut offs: Vec<(TopicPartition, i64)> =
            l.offsets().map(|(tp, o)| (tp.clone(), o)).collect();
        k.commit(&group, &offs).unwrap();
        offs[0].1 += 1 + i;
        let t = Instant::now();
        k.commit(&group, &offs).unwrap();
        c1.push(t.elapsed().as_secs_f64() * 1e3);
        drop(k);
        std::thread::sleep(Duration::from_millis(100));
    }
    println!(
        "cold {:.2} warm {:.2} commit1 {:.2}",
        med(cold),
        med(warm),
        med(c1)
    );
}
#[allow(dead_code)]
pub fn phases() {
    use offsetkeeper::kafka::Brokers;
    use offsetkeeper::zookeeper::ZkStore;
    let zkc = std::env::var("OFFSETKEEPER_ZK").unwrap();
    let bs = std::env::var("OFFSETKEEPER_BOOTSTRAP").unwrap();
    let topics: Vec<String> = (0..5).map(|t| format!("bench-p1000-t{t}")).collect();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (mut a, mut b, mut c) = (vec![], vec![], vec![]);
    for _ in 0..9 {
        let t = Instant::now();
        let brokers = Brokers::new(
            KafkaSettings::from_params([("bootstrap.servers", bs.clone())]).unwrap(),
            Duration::from_secs(10),
        )
        .unwrap();
        let store = ZkStore::new(ZkConfig::new(zkc.clone())).unwrap();
        let (parts, ()) = rt
            .block_on(async { futures::try_join!(brokers.partitions(&topics), store.connect()) })
            .unwrap();
        a.push(t.elapsed().as_secs_f64() * 1e3);
        let paths: Vec<String> = parts
            .iter()
            .map(|tp| {
                format!(
                    "/consumers/bench-load-p1000/offsets/{}/{}",
                    tp.topic, tp.partition
                )
            })
            .collect();
        let t2 = Instant::now();
        rt.block_on(async { futures::try_join!(brokers.ranges(&parts), store.read_nodes(&paths)) })
            .unwrap();
        b.push(t2.elapsed().as_secs_f64() * 1e3);
        c.push(t.elapsed().as_secs_f64() * 1e3);
        drop(store);
        drop(brokers);
        std::thread::sleep(Duration::from_millis(100));
    }
    println!(
        "connect+meta {:.2} read+ranges {:.2} total {:.2}",
        med(a),
        med(b),
        med(c)
    );
}
#[allow(dead_code)]
pub fn warm_loop() {
    let zkc = std::env::var("OFFSETKEEPER_ZK").unwrap();
    let bs = std::env::var("OFFSETKEEPER_BOOTSTRAP").unwrap();
    let topics: Vec<String> = (0..5).map(|t| format!("bench-p1000-t{t}")).collect();
    let settings = KafkaSettings::from_params([("bootstrap.servers", bs.clone())]).unwrap();
    let k = OffsetKeeper::open(KeeperConfig::new(ZkConfig::new(zkc.clone()), settings)).unwrap();
    let group = format!("scratchw-{}", std::process::id());
    let mut w = vec![];
    for _ in 0..1500 {
        let t = Instant::now();
        k.load(&group, &topics).unwrap();
        w.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!("warm {:.2}", med(w));
}
#[allow(dead_code)]
pub fn commit_loop() {
    let zkc = std::env::var("OFFSETKEEPER_ZK").unwrap();
    let bs = std::env::var("OFFSETKEEPER_BOOTSTRAP").unwrap();
    let topics: Vec<String> = (0..5).map(|t| format!("bench-p1000-t{t}")).collect();
    let settings = KafkaSettings::from_params([("bootstrap.servers", bs.clone())]).unwrap();
    let k = OffsetKeeper::open(KeeperConfig::new(ZkConfig::new(zkc.clone()), settings)).unwrap();
    let group = format!("scratchc-{}", std::process::id());
    let l = k.load(&group, &topics).unwrap();
    let mut offs: Vec<(TopicPartition, i64)> = l.offsets().map(|(tp, o)| (tp.clone(), o)).collect();
    k.commit(&group, &offs).unwrap();
    let mut w = vec![];
    let mut cpu = vec![];
    for _ in 0..3000 {
        offs[0].1 += 1;
        let t = Instant::now();
        k.commit(&group, &offs).unwrap();
        w.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let _ = offsetkeeper::validate::Stored::parse(b"1");
        cpu.push(t.elapsed().as_secs_f64());
    }
    println!("commit1 {:.3}", med(w));
}
