//! What the profiling drivers share: their arguments and the keeper they open.

use offsetkeeper::{KafkaSettings, KeeperConfig, OffsetKeeper, ZkConfig};

pub struct Driver {
    pub keeper: OffsetKeeper,
    pub group: String,
    pub topics: Vec<String>,
    pub rounds: usize,
}

/// Parses `ZK BOOTSTRAP GROUP TOPIC,TOPIC,... ROUNDS` and opens a keeper on them; ownership
/// only with `OWNERSHIP=1` (the loops measure what a warm call repeats).
pub fn open(name: &str) -> Result<Driver, Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, zk, bootstrap, group, topics, rounds] = &args[..] else {
        return Err(format!("usage: {name} ZK BOOTSTRAP GROUP TOPIC,TOPIC,... ROUNDS").into());
    };
    let settings = KafkaSettings::from_params([("bootstrap.servers", bootstrap.as_str())])?;
    let mut config = KeeperConfig::new(ZkConfig::new(zk.clone()), settings);
    config.ownership.enabled = std::env::var("OWNERSHIP").is_ok_and(|v| v == "1");
    Ok(Driver {
        keeper: OffsetKeeper::open(config)?,
        group: group.clone(),
        topics: topics.split(',').map(String::from).collect(),
        rounds: rounds.parse().map_err(|_| {
            format!("ROUNDS '{rounds}' is not a whole number of rounds (0 or more)")
        })?,
    })
}
