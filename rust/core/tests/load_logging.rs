//! What a load logs, against the real cluster: a first start of many partitions prints no
//! WARN; many corrections that lose records print one WARN summary with the details at INFO;
//! a handful print one line each. The report keeps every row either way.

mod support;

use std::sync::Mutex;

use offsetkeeper::Action;
use once_cell::sync::Lazy;
use support::{cluster, keeper, offset_path, unique, Kafka, Zk};

static LOGGED: Lazy<Mutex<Vec<(log::Level, String)>>> = Lazy::new(|| Mutex::new(Vec::new()));

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        LOGGED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((record.level(), record.args().to_string()));
    }
    fn flush(&self) {}
}

/// The lines a load logged about `group` at `level`: its summary and its per-partition details.
fn lines(group: &str, level: log::Level) -> Vec<String> {
    let needle = format!("group {group}:");
    LOGGED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter(|(l, text)| *l == level && text.contains(&needle))
        .filter(|(_, text)| text.contains(": loaded ") || text.contains("; starting at "))
        .map(|(_, text)| text.clone())
        .collect()
}

#[test]
fn a_load_logs_warn_only_for_records_lost_and_sums_up_many_corrections() {
    log::set_logger(&Capture).expect("one logger");
    log::set_max_level(log::LevelFilter::Trace);
    let cluster = cluster();
    let kafka = Kafka::new(&cluster);
    let topic = unique("logs");
    kafka.create_topic(&topic, 30);
    for p in 0..30 {
        kafka.produce(&topic, p, 10);
        kafka.delete_records(&topic, p, 4);
    }
    let topics = std::slice::from_ref(&topic);
    let keeper = keeper(&cluster);

    // A first start: 30 partitions initialized, one INFO summary, no WARN.
    let first = unique("first");
    let loaded = keeper.load(&first, topics).expect("load");
    assert_eq!(loaded.partitions.len(), 30);
    assert!(loaded
        .partitions
        .iter()
        .all(|r| r.decision.action == Action::Initialized));
    assert_eq!(lines(&first, log::Level::Warn), Vec::<String>::new());
    let info = lines(&first, log::Level::Info);
    assert_eq!(info.len(), 1, "{info:?}");
    assert!(
        info[0].contains("loaded 30 partition(s): 30 initialized"),
        "{info:?}"
    );
    assert_eq!(lines(&first, log::Level::Debug).len(), 30);

    // 30 offsets below the log start: one WARN summary, the 30 details at INFO.
    let behind = unique("behind");
    let zk = Zk::new(&cluster);
    for p in 0..30 {
        zk.put(&offset_path(&behind, &topic, p), b"1");
    }
    let loaded = keeper.load(&behind, topics).expect("load");
    assert_eq!(loaded.partitions.len(), 30);
    let warn = lines(&behind, log::Level::Warn);
    assert_eq!(warn.len(), 1, "{warn:?}");
    assert!(
        warn[0].contains("30 reset below range") && warn[0].contains("90 records lost"),
        "{warn:?}"
    );
    assert_eq!(lines(&behind, log::Level::Info).len(), 30);

    // A handful: each correction on its own line, WARN for the records lost, INFO otherwise.
    let few = unique("few");
    let small = unique("logs-small");
    kafka.create_topic(&small, 3);
    kafka.produce(&small, 0, 10);
    kafka.delete_records(&small, 0, 4);
    zk.put(&offset_path(&few, &small, 0), b"1");
    keeper
        .load(&few, std::slice::from_ref(&small))
        .expect("load");
    let warn = lines(&few, log::Level::Warn);
    assert_eq!(warn.len(), 1, "{warn:?}");
    assert!(warn[0].contains("3 records lost"), "{warn:?}");
    let info = lines(&few, log::Level::Info);
    assert_eq!(info.len(), 3, "{info:?}"); // the summary and two partitions initialized
    assert!(
        info.iter()
            .filter(|l| l.contains("(initialized, 0 records lost)"))
            .count()
            == 2,
        "{info:?}"
    );
}
