//! The README's "Using the engine from Rust" example, compiled with the tests (`cargo test`
//! builds the examples) and compared with the README by `tests/readme/readme_check.py`.
//! Running it needs the servers it names.

// README: begin
use offsetkeeper::{KeeperConfig, OffsetKeeper, TopicPartition};

fn main() -> Result<(), offsetkeeper::Error> {
    let config = KeeperConfig::from_properties([
        ("zookeeper.connect", "zk:2181/kafka"),
        ("bootstrap.servers", "broker:9092"),
        ("offsetkeeper.on.missing", "latest"), // any key of docs/configuration.md
    ])?;
    let keeper = OffsetKeeper::open(config)?;
    let loaded = keeper.load("my-job", &["orders".to_string()])?;
    // What was decided, per partition:
    print!("{}", loaded.table());
    // ... process the batch ...
    keeper.commit("my-job", &[(TopicPartition::new("orders", 0), 1234)])?;
    Ok(())
}
// README: end
