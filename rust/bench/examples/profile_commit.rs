//! A profiling driver, not a benchmark: loads one group's topics, then commits every partition
//! (all offsets changed) N times in a loop, for `perf record` on the engine alone (no JVM). Run
//! it on a workload `gradle bench` left in a cluster (`-Pbench.clusterEnv=...`):
//!
//!   cargo build --profile profiling -p offsetkeeper-floor --example profile_commit
//!   perf record -g target/profiling/examples/profile_commit ZK BOOTSTRAP GROUP TOPICS ROUNDS

use std::time::Instant;

mod driver;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let driver::Driver {
        keeper,
        group,
        topics,
        rounds,
    } = driver::open("profile_commit")?;
    let group = group.as_str();
    let loaded = keeper.load(group, &topics)?;
    let base = loaded
        .offsets()
        .map(|(_, offset)| offset)
        .max()
        .unwrap_or(0)
        + 1;
    let partitions: Vec<_> = loaded.offsets().map(|(tp, _)| tp.clone()).collect();
    eprintln!("{} partitions", partitions.len());
    let mut times = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let offset = base + i64::try_from(round)?;
        let batch: Vec<_> = partitions.iter().map(|tp| (tp.clone(), offset)).collect();
        let start = Instant::now();
        let summary = keeper.commit(group, &batch)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        assert_eq!(summary.written, partitions.len());
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "commit P: median {:.2} ms, min {:.2} ms over {rounds} rounds",
        times[times.len() / 2],
        times[0]
    );
    Ok(())
}
