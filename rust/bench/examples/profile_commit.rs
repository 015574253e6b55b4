//! A profiling driver, not a benchmark: loads one group's topics, then commits every partition
//! N times in a loop, for `perf record` on the engine alone (no JVM). All offsets change each
//! round, or with `CHANGED=1` only the first partition's (the bench's "commit 1 of P"); with
//! `HASH_ORDER=1` the batch comes in a hash map's order, not topic by topic. Run it
//! on a workload `gradle bench` left in a cluster (`-Pbench.clusterEnv=...`):
//!
//!   cargo build --profile profiling -p offsetkeeper-floor --example profile_commit
//!   perf record -g target/profiling/examples/profile_commit ZK BOOTSTRAP GROUP TOPICS ROUNDS

use std::hash::{Hash, Hasher};
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
    let mut partitions: Vec<_> = loaded.offsets().map(|(tp, _)| tp.clone()).collect();
    let only_first = std::env::var("CHANGED").is_ok_and(|v| v == "1");
    // With HASH_ORDER=1 the batch comes in a hash map's order (as Spark's ranges do).
    if std::env::var("HASH_ORDER").is_ok_and(|v| v == "1") {
        partitions.sort_by_cached_key(|tp| {
            let mut hasher = std::hash::DefaultHasher::new();
            tp.hash(&mut hasher);
            hasher.finish()
        });
    }
    eprintln!("{} partitions", partitions.len());
    // With CHANGED=1, one commit of all at `base` first: then each round moves one.
    if only_first {
        let batch: Vec<_> = partitions.iter().map(|tp| (tp.clone(), base)).collect();
        keeper.commit(group, &batch)?;
    }
    let mut times = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let offset = base + 1 + i64::try_from(round)?;
        let batch: Vec<_> = partitions
            .iter()
            .enumerate()
            .map(|(i, tp)| (tp.clone(), if only_first && i > 0 { base } else { offset }))
            .collect();
        let start = Instant::now();
        let summary = keeper.commit(group, &batch)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        let expected = if only_first { 1 } else { partitions.len() };
        assert_eq!(summary.written, expected);
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "commit {}: median {:.2} ms, min {:.2} ms over {rounds} rounds",
        if only_first { "1 of P" } else { "P" },
        times[times.len() / 2],
        times[0]
    );
    Ok(())
}
