//! A profiling driver, not a benchmark: loads one group's topics (warm) N times in a loop, for
//! `perf record` or callgrind on the engine alone (no JVM). Run it on a workload `gradle bench`
//! left in a cluster (`-Pbench.clusterEnv=...`):
//!
//!   cargo build --profile profiling -p offsetkeeper-floor --example profile_load
//!   perf record -g target/profiling/examples/profile_load ZK BOOTSTRAP GROUP TOPICS ROUNDS

use std::time::Instant;

mod driver;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let driver::Driver {
        keeper,
        group,
        topics,
        rounds,
    } = driver::open("profile_load")?;
    let group = group.as_str();
    let first = keeper.load(group, &topics)?;
    eprintln!("{} partitions", first.partitions.len());
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        let loaded = keeper.load(group, &topics)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        assert_eq!(loaded.partitions.len(), first.partitions.len());
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "warm load: median {:.2} ms, min {:.2} ms over {rounds} rounds",
        times[times.len() / 2],
        times[0]
    );
    Ok(())
}
