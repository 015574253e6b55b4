//! The JNI surface of offsetkeeper: `io.offsetkeeper.NativeBridge`'s native methods.
//!
//! Each entry point converts its arguments, calls the engine and converts the answer. Every one
//! runs inside `with_env(..).resolve::<ThrowJavaException>()`, so errors and panics arrive in
//! Java as exceptions and never abort the JVM.

mod convert;
mod errors;
mod logging;

use std::sync::Arc;

use jni::objects::{JByteArray, JClass, JIntArray, JLongArray, JObject, JObjectArray, JString};
use jni::sys::jlong;
use jni::{Env, EnvUnowned};
use offsetkeeper::{
    Action, CommitBatch, KeeperConfig, OffsetKeeper, OnAboveRange, OnBelowRange, OnMissing,
    PartitionRange, Policy, Stored, TopicPartition,
};

use convert::{
    bytes, ints, longs, new_bytes, new_ints, new_longs, new_object_array, new_optional_strings,
    new_strings, optional_string, same_lengths, string, strings, topic_index,
};
use errors::{BridgeError, ThrowJavaException};
use offsetkeeper::kafka::params::is_secret_key;

type Result<T> = std::result::Result<T, BridgeError>;

/// The lag column's "unknown": a lag is a log end minus an offset, both 0 or more, so it is
/// never `i64::MIN` (Java's `Long.MIN_VALUE`).
const NO_LAG: i64 = i64::MIN;

/// The engine behind a handle. The Java side guarantees that no call runs during or after
/// `close`; 0 is refused.
fn keeper<'a>(handle: jlong) -> Result<&'a OffsetKeeper> {
    if handle == 0 {
        return Err(BridgeError::Closed);
    }
    // Safety: non-zero handles come from `open` (Box::into_raw) and stay valid until `close`.
    Ok(unsafe { &*(handle as *const OffsetKeeper) })
}

/// The keeper's settings (`zookeeper.*`, `offsetkeeper.*`, Kafka keys) and the job's
/// `kafkaParams`, as [`KeeperConfig::from_settings_and_kafka_params`] reads them.
fn config<'local>(
    env: &mut Env<'local>,
    keys: &JObjectArray<'local, JString<'local>>,
    values: &JObjectArray<'local, JString<'local>>,
    kafka_keys: &JObjectArray<'local, JString<'local>>,
    kafka_values: &JObjectArray<'local, JString<'local>>,
) -> Result<KeeperConfig> {
    let keys = strings(env, keys, "keys")?;
    let values = strings(env, values, "values")?;
    same_lengths(&["keys", "values"], &[keys.len(), values.len()])?;
    let kafka_keys = strings(env, kafka_keys, "kafkaKeys")?;
    let kafka_values = strings(env, kafka_values, "kafkaValues")?;
    same_lengths(
        &["kafkaKeys", "kafkaValues"],
        &[kafka_keys.len(), kafka_values.len()],
    )?;
    Ok(KeeperConfig::from_settings_and_kafka_params(
        keys.iter().zip(&values),
        kafka_keys.iter().zip(&kafka_values),
    )?)
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_offsetkeeper_NativeBridge_open<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    keys: JObjectArray<'local, JString<'local>>,
    values: JObjectArray<'local, JString<'local>>,
    kafka_keys: JObjectArray<'local, JString<'local>>,
    kafka_values: JObjectArray<'local, JString<'local>>,
) -> jlong {
    unowned
        .with_env(|env| -> Result<jlong> {
            init(env);
            let config = config(env, &keys, &values, &kafka_keys, &kafka_values)?;
            let engine = OffsetKeeper::open(config)?;
            Ok(Box::into_raw(Box::new(engine)) as jlong)
        })
        .resolve::<ThrowJavaException>()
}

/// Checks a configuration as `open` reads it, without opening anything. Returns the engine's
/// description of it, and the values of `values` and of `kafkaValues` as they may be shown:
/// `****` for secret keys (the keeper's `toString`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_offsetkeeper_NativeBridge_checkConfig<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    keys: JObjectArray<'local, JString<'local>>,
    values: JObjectArray<'local, JString<'local>>,
    kafka_keys: JObjectArray<'local, JString<'local>>,
    kafka_values: JObjectArray<'local, JString<'local>>,
) -> JObjectArray<'local> {
    unowned
        .with_env(|env| -> Result<JObjectArray<'local>> {
            init(env);
            let config = config(env, &keys, &values, &kafka_keys, &kafka_values)?;
            let description = env.new_string(format!("{config:?}"))?;
            let mut columns = vec![JObject::from(description)];
            for (keys, values) in [(&keys, &values), (&kafka_keys, &kafka_values)] {
                let keys = strings(env, keys, "keys")?;
                let shown: Vec<String> = keys
                    .iter()
                    .zip(strings(env, values, "values")?)
                    .map(|(key, value)| {
                        if is_secret_key(key) {
                            "****".to_string()
                        } else {
                            value
                        }
                    })
                    .collect();
                columns.push(new_strings(env, &shown)?);
            }
            new_object_array(env, columns)
        })
        .resolve::<ThrowJavaException>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_offsetkeeper_NativeBridge_close<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    unowned
        .with_env(|_env| -> Result<()> {
            if handle != 0 {
                // Safety: the handle came from `open` and Java frees it exactly once.
                drop(unsafe { Box::from_raw(handle as *mut OffsetKeeper) });
            }
            Ok(())
        })
        .resolve::<ThrowJavaException>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_offsetkeeper_NativeBridge_load<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    group: JString<'local>,
    topics: JObjectArray<'local, JString<'local>>,
) -> JObjectArray<'local> {
    unowned
        .with_env(|env| -> Result<JObjectArray<'local>> {
            let engine = keeper(handle)?;
            let group = string(env, &group, "group")?;
            let topics = strings(env, &topics, "topics")?;
            let loaded = engine.load(&group, &topics)?;
            let mut columns = inspected_columns(env, &loaded.partitions, |r| {
                (&r.partition, &r.stored, r.range)
            })?;
            let decisions = loaded.partitions.iter().map(|r| r.decision);
            let chosen: Vec<i64> = decisions.clone().map(|d| d.offset).collect();
            let actions: Vec<i8> = decisions.clone().map(|d| d.action as i8).collect();
            let lost: Vec<i64> = decisions.map(|d| d.records_lost).collect();
            columns.push(new_longs(env, &chosen)?);
            columns.push(new_bytes(env, &actions)?);
            columns.push(new_longs(env, &lost)?);
            // A re-created topic's IDs per row (null elsewhere), then the offsets stored for
            // partitions that no longer exist: topics, partitions, kinds, offsets, texts.
            let (from, to): (Vec<Option<String>>, Vec<Option<String>>) = loaded
                .partitions
                .iter()
                .map(|r| match &r.recreated {
                    Some(ids) => (Some(ids.stored_id.clone()), Some(ids.current_id.clone())),
                    None => (None, None),
                })
                .unzip();
            columns.push(new_optional_strings(env, &from)?);
            columns.push(new_optional_strings(env, &to)?);
            let stale_topics: Vec<String> = loaded
                .stale
                .iter()
                .map(|s| s.partition.topic.to_string())
                .collect();
            let stale_partitions: Vec<i32> =
                loaded.stale.iter().map(|s| s.partition.partition).collect();
            let (stale_kinds, stale_offsets): (Vec<i8>, Vec<i64>) =
                loaded.stale.iter().map(|s| stored_code(&s.stored)).unzip();
            let stale_texts: Vec<Option<String>> = loaded
                .stale
                .iter()
                .map(|s| Some(s.stored.to_string()))
                .collect();
            columns.push(new_strings(env, &stale_topics)?);
            columns.push(new_ints(env, &stale_partitions)?);
            columns.push(new_bytes(env, &stale_kinds)?);
            columns.push(new_longs(env, &stale_offsets)?);
            columns.push(new_optional_strings(env, &stale_texts)?);
            new_object_array(env, columns)
        })
        .resolve::<ThrowJavaException>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_offsetkeeper_NativeBridge_inspect<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    group: JString<'local>,
    topics: JObjectArray<'local, JString<'local>>,
) -> JObjectArray<'local> {
    unowned
        .with_env(|env| -> Result<JObjectArray<'local>> {
            let engine = keeper(handle)?;
            let group = string(env, &group, "group")?;
            let topics = strings(env, &topics, "topics")?;
            let inspected = engine.inspect(&group, &topics)?;
            let mut columns =
                inspected_columns(env, &inspected, |r| (&r.partition, &r.stored, r.range))?;
            let lags: Vec<i64> = inspected
                .iter()
                .map(|r| r.lag().unwrap_or(NO_LAG))
                .collect();
            columns.push(new_longs(env, &lags)?);
            new_object_array(env, columns)
        })
        .resolve::<ThrowJavaException>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_offsetkeeper_NativeBridge_commit<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    group: JString<'local>,
    topic_names: JObjectArray<'local, JString<'local>>,
    topic_index: JIntArray<'local>,
    partitions: JIntArray<'local>,
    offsets: JLongArray<'local>,
) -> JLongArray<'local> {
    unowned
        .with_env(|env| -> Result<JLongArray<'local>> {
            let engine = keeper(handle)?;
            let group = string(env, &group, "group")?;
            let names: Vec<Arc<str>> = strings(env, &topic_names, "topicNames")?
                .into_iter()
                .map(Arc::from)
                .collect();
            let index = ints(env, &topic_index, "topicIndex")?;
            let partitions = ints(env, &partitions, "partitions")?;
            let offsets = longs(env, &offsets, "offsets")?;
            same_lengths(
                &["topicIndex", "partitions", "offsets"],
                &[index.len(), partitions.len(), offsets.len()],
            )?;
            let batch = CommitBatch::new(names, index, partitions, offsets)?;
            let summary = engine.commit_batch(&group, &batch)?;
            let counts = [
                summary.written,
                summary.unchanged,
                summary.requests,
                summary.skipped,
                usize::from(summary.deferred),
                summary.pending,
            ]
            .map(|n| n as i64)
            .into_iter()
            .chain([i64::try_from(summary.behind.as_millis()).unwrap_or(i64::MAX)])
            .collect::<Vec<i64>>();
            let array = env.new_long_array(counts.len())?;
            array.set_region(env, 0, &counts)?;
            Ok(array)
        })
        .resolve::<ThrowJavaException>()
}

#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_io_offsetkeeper_NativeBridge_validate<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    stored_kinds: JByteArray<'local>,
    stored_offsets: JLongArray<'local>,
    earliest: JLongArray<'local>,
    latest: JLongArray<'local>,
    on_missing: JString<'local>,
    on_below_range: JString<'local>,
    on_above_range: JString<'local>,
) -> JObjectArray<'local> {
    unowned
        .with_env(|env| -> Result<JObjectArray<'local>> {
            init(env);
            let kinds = bytes(env, &stored_kinds, "storedKinds")?;
            let offsets = longs(env, &stored_offsets, "storedOffsets")?;
            let earliest = longs(env, &earliest, "earliest")?;
            let latest = longs(env, &latest, "latest")?;
            same_lengths(
                &["storedKinds", "storedOffsets", "earliest", "latest"],
                &[kinds.len(), offsets.len(), earliest.len(), latest.len()],
            )?;
            let policy = policy(env, Policy::default(), &on_missing, &on_below_range, &on_above_range)?;
            let mut chosen = Vec::with_capacity(kinds.len());
            let mut actions = Vec::with_capacity(kinds.len());
            let mut lost = Vec::with_capacity(kinds.len());
            for index in 0..kinds.len() {
                let stored = stored_from_code(kinds[index], offsets[index], index)?;
                let range = PartitionRange {
                    earliest: earliest[index],
                    latest: latest[index],
                };
                if range.earliest < 0 || range.earliest > range.latest {
                    return Err(BridgeError::InvalidArgument(format!(
                        "range [{}, {}] at index {index} is not a partition range; allowed: 0 <= earliest <= latest",
                        range.earliest, range.latest
                    )));
                }
                let decision = offsetkeeper::validate(&stored, range, &policy).map_err(|refusal| {
                    offsetkeeper::Error::PolicyViolation(format!("entry {index}: {refusal}"))
                })?;
                chosen.push(decision.offset);
                actions.push(decision.action as i8);
                lost.push(decision.records_lost);
            }
            let columns = vec![
                new_longs(env, &chosen)?,
                new_bytes(env, &actions)?,
                new_longs(env, &lost)?,
            ];
            new_object_array(env, columns)
        })
        .resolve::<ThrowJavaException>()
}

/// Only in the test library (feature `test-panic`): the shipped one must not offer a panic.
#[cfg(feature = "test-panic")]
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_offsetkeeper_NativeBridge_panicForTest<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
) {
    unowned
        .with_env(|env| -> Result<()> {
            init(env);
            panic!("panicForTest was called")
        })
        .resolve::<ThrowJavaException>()
}

/// Once per process, on a JVM thread: the SLF4J log bridge and the panic report.
fn init(env: &mut Env<'_>) {
    logging::init(env);
    errors::report_panics_through_log();
}

/// The policy: the given base, with each of the three overridden where Java passed a name.
fn policy(
    env: &Env<'_>,
    base: Policy,
    on_missing: &JString<'_>,
    on_below_range: &JString<'_>,
    on_above_range: &JString<'_>,
) -> Result<Policy> {
    let mut policy = base;
    if let Some(name) = optional_string(env, on_missing)? {
        policy.on_missing = OnMissing::parse(&name)?;
    }
    if let Some(name) = optional_string(env, on_below_range)? {
        policy.on_below_range = OnBelowRange::parse(&name)?;
    }
    if let Some(name) = optional_string(env, on_above_range)? {
        policy.on_above_range = OnAboveRange::parse(&name)?;
    }
    Ok(policy)
}

/// Stored-value codes shared with Java: 0 missing, 1 corrupt, 2 offset.
fn stored_code(stored: &Stored) -> (i8, i64) {
    match stored {
        Stored::Missing => (0, -1),
        Stored::Corrupt(_) => (1, -1),
        Stored::Offset(offset) => (2, *offset),
    }
}

fn stored_from_code(kind: i8, offset: i64, index: usize) -> Result<Stored> {
    match kind {
        0 => Ok(Stored::Missing),
        1 => Ok(Stored::Corrupt(Vec::new())),
        2 if offset >= 0 => Ok(Stored::Offset(offset)),
        2 => Err(BridgeError::InvalidArgument(format!(
            "stored offset {offset} at index {index} is negative; allowed: 0 or more"
        ))),
        _ => Err(BridgeError::InvalidArgument(format!(
            "stored kind {kind} at index {index} is unknown; allowed: 0 (missing), 1 (corrupt), 2 (offset)"
        ))),
    }
}

/// The columns shared by load and inspect: topics, partitions, stored kinds, stored offsets,
/// stored texts, earliest, latest.
/// `view` picks each row's partition, stored value and range, so load's report rows and
/// inspect's rows convert without copies.
fn inspected_columns<'local, R>(
    env: &mut Env<'local>,
    rows: &[R],
    view: impl Fn(&R) -> (&TopicPartition, &Stored, PartitionRange),
) -> Result<Vec<JObject<'local>>> {
    let rows: Vec<_> = rows.iter().map(view).collect();
    let (names, index) = topic_index(rows.iter().map(|(tp, _, _)| tp.topic.as_ref()));
    let partitions: Vec<i32> = rows.iter().map(|(tp, _, _)| tp.partition).collect();
    let (kinds, offsets): (Vec<i8>, Vec<i64>) = rows
        .iter()
        .map(|(_, stored, _)| stored_code(stored))
        .unzip();
    // Only corrupt values need their text from here; Java renders "none" and numbers.
    let corrupt_texts: Vec<Option<String>> = rows
        .iter()
        .map(|(_, stored, _)| matches!(stored, Stored::Corrupt(_)).then(|| stored.to_string()))
        .collect();
    let earliest: Vec<i64> = rows.iter().map(|(_, _, range)| range.earliest).collect();
    let latest: Vec<i64> = rows.iter().map(|(_, _, range)| range.latest).collect();
    Ok(vec![
        new_strings(env, &names)?,
        new_ints(env, &index)?,
        new_ints(env, &partitions)?,
        new_bytes(env, &kinds)?,
        new_longs(env, &offsets)?,
        new_optional_strings(env, &corrupt_texts)?,
        new_longs(env, &earliest)?,
        new_longs(env, &latest)?,
    ])
}

// Action codes crossing the boundary are the enum's discriminants; keep them pinned.
const _: () = {
    assert!(Action::Kept as u8 == 0);
    assert!(Action::Initialized as u8 == 1);
    assert!(Action::ResetBelowRange as u8 == 2);
    assert!(Action::ResetAboveRange as u8 == 3);
    assert!(Action::CorruptReplaced as u8 == 4);
    assert!(Action::Recreated as u8 == 5);
};
