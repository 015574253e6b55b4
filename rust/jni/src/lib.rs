//! The JNI surface of offsetkeeper: `io.offsetkeeper.NativeBridge`'s native methods.
//!
//! Each entry point converts its arguments, calls the engine and converts the answer. Every one
//! runs inside `with_env(..).resolve::<ThrowJavaException>()`, so errors and panics arrive in
//! Java as exceptions and never abort the JVM.

mod convert;
mod errors;
mod logging;
mod results;
mod sasl;

use std::sync::Arc;

use jni::objects::{JByteArray, JClass, JIntArray, JLongArray, JObject, JObjectArray, JString};
use jni::sys::jlong;
use jni::{Env, EnvUnowned};
use offsetkeeper::kafka::params::masked_pairs;
use offsetkeeper::validate::validate_entry;
use offsetkeeper::{
    Action, CommitBatch, KeeperConfig, OffsetKeeper, OnAboveRange, OnBelowRange, OnMissing,
    PartitionRange, Policy, Recreated, Stored, TopicPartition,
};

use convert::{
    bytes, ints, longs, new_bytes, new_ints, new_longs, new_object_array, new_optional_strings,
    new_strings, optional_string, same_lengths, string, strings, topic_index,
};
use errors::{BridgeError, ThrowJavaException};
use results::{
    CheckedConfig, CommitCounts, InspectResult, LoadResult, MirrorState, NativePartitions,
    Partitions,
};

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

/// Key/value pairs as Java passed them: two arrays of equal length.
struct Pairs {
    keys: Vec<String>,
    values: Vec<String>,
}

impl Pairs {
    fn read<'local>(
        env: &mut Env<'local>,
        keys: &JObjectArray<'local, JString<'local>>,
        values: &JObjectArray<'local, JString<'local>>,
        names: [&str; 2],
    ) -> Result<Pairs> {
        let keys = strings(env, keys, names[0])?;
        let values = strings(env, values, names[1])?;
        same_lengths(&names, &[keys.len(), values.len()])?;
        Ok(Pairs { keys, values })
    }

    fn iter(&self) -> impl Iterator<Item = (&String, &String)> {
        self.keys.iter().zip(&self.values)
    }
}

/// The keeper's settings (`zookeeper.*`, `offsetkeeper.*`, Kafka keys) and the job's
/// `kafkaParams`, as [`KeeperConfig::from_settings_and_kafka_params`] reads them, with the
/// pairs as given.
fn config<'local>(
    env: &mut Env<'local>,
    keys: &JObjectArray<'local, JString<'local>>,
    values: &JObjectArray<'local, JString<'local>>,
    kafka_keys: &JObjectArray<'local, JString<'local>>,
    kafka_values: &JObjectArray<'local, JString<'local>>,
) -> Result<(KeeperConfig, Pairs, Pairs)> {
    let settings = Pairs::read(env, keys, values, ["keys", "values"])?;
    let kafka = Pairs::read(env, kafka_keys, kafka_values, ["kafkaKeys", "kafkaValues"])?;
    let config = KeeperConfig::from_settings_and_kafka_params(settings.iter(), kafka.iter())?;
    Ok((config, settings, kafka))
}

/// The configuration with the JVM's Kerberos (a `GssapiClients`, held by a global reference
/// until the engine drops it) when Java passed one.
fn with_gssapi(
    env: &mut Env<'_>,
    config: KeeperConfig,
    gssapi: &JObject<'_>,
) -> Result<KeeperConfig> {
    if gssapi.is_null() {
        return Ok(config);
    }
    Ok(config.with_sasl_provider(sasl::provider(env, gssapi)?))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_offsetkeeper_NativeBridge_open<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    keys: JObjectArray<'local, JString<'local>>,
    values: JObjectArray<'local, JString<'local>>,
    kafka_keys: JObjectArray<'local, JString<'local>>,
    kafka_values: JObjectArray<'local, JString<'local>>,
    gssapi: JObject<'local>,
) -> jlong {
    unowned
        .with_env(|env| -> Result<jlong> {
            init(env);
            let (config, _, _) = config(env, &keys, &values, &kafka_keys, &kafka_values)?;
            let config = with_gssapi(env, config, &gssapi)?;
            let engine = OffsetKeeper::open(config)?;
            Ok(Box::into_raw(Box::new(engine)) as jlong)
        })
        .resolve::<ThrowJavaException>()
}

/// Checks a configuration and the group name as `open` and the calls read them, without opening
/// anything: the engine's description of it, and both sets of pairs as they may be shown
/// (`NativeCheckedConfig`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_offsetkeeper_NativeBridge_checkConfig<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    keys: JObjectArray<'local, JString<'local>>,
    values: JObjectArray<'local, JString<'local>>,
    kafka_keys: JObjectArray<'local, JString<'local>>,
    kafka_values: JObjectArray<'local, JString<'local>>,
    group: JString<'local>,
    gssapi: JObject<'local>,
) -> JObject<'local> {
    unowned
        .with_env(|env| -> Result<JObject<'local>> {
            init(env);
            offsetkeeper::names::check_name("group", &string(env, &group, "group")?)?;
            let (config, settings, kafka) =
                config(env, &keys, &values, &kafka_keys, &kafka_values)?;
            let config = with_gssapi(env, config, &gssapi)?;
            CheckedConfig {
                description: env.new_string(format!("{config:?}"))?,
                shown_settings: env.new_string(masked_pairs(settings.iter()))?,
                shown_kafka_params: env.new_string(masked_pairs(kafka.iter()))?,
            }
            .build(env)
        })
        .resolve::<ThrowJavaException>()
}

/// [`offsetkeeper::kerberos::ticket_cache_words`]: the engine's words for a ticket cache.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_offsetkeeper_NativeBridge_ticketCacheWords<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    configured: JString<'local>,
) -> JString<'local> {
    unowned
        .with_env(|env| -> Result<JString<'local>> {
            init(env);
            let configured = optional_string(env, &configured)?;
            let words = offsetkeeper::kerberos::ticket_cache_words(configured.as_deref());
            Ok(env.new_string(words)?)
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
) -> JObject<'local> {
    unowned
        .with_env(|env| -> Result<JObject<'local>> {
            let (engine, group, topics) = call_args(env, handle, &group, &topics)?;
            let loaded = engine.load(&group, &topics)?;
            let rows = &loaded.partitions;
            let partitions = partitions(env, rows, |r| (&r.partition, &r.stored, r.range))?;
            let chosen: Vec<i64> = rows.iter().map(|r| r.decision.offset).collect();
            let actions: Vec<i8> = rows.iter().map(|r| r.decision.action as i8).collect();
            let lost: Vec<i64> = rows.iter().map(|r| r.decision.records_lost).collect();
            // A re-created topic's IDs per row (when its ID changed), null elsewhere.
            let (from, to): (Vec<Option<String>>, Vec<Option<String>>) = rows
                .iter()
                .map(|r| match &r.recreated {
                    Some(Recreated::TopicId {
                        stored_id,
                        current_id,
                    }) => (Some(stored_id.clone()), Some(current_id.clone())),
                    _ => (None, None),
                })
                .unzip();
            // How the engine knew, for the rows it started elsewhere for it.
            let reasons: Vec<Option<String>> = rows
                .iter()
                .map(|r| (r.decision.action == Action::Recreated).then(|| r.action_text()))
                .collect();
            let stale = &loaded.stale;
            let stale_topics: Vec<String> = stale
                .iter()
                .map(|s| s.partition.topic.to_string())
                .collect();
            let stale_partitions: Vec<i32> = stale.iter().map(|s| s.partition.partition).collect();
            let (stale_kinds, stale_offsets): (Vec<i8>, Vec<i64>) =
                stale.iter().map(|s| stored_code(&s.stored)).unzip();
            let stale_texts: Vec<Option<String>> =
                stale.iter().map(|s| Some(s.stored.to_string())).collect();
            let differences = &loaded.mirror;
            let mirror_topics: Vec<String> = differences
                .iter()
                .map(|d| d.partition.topic.to_string())
                .collect();
            let mirror_partitions: Vec<i32> =
                differences.iter().map(|d| d.partition.partition).collect();
            let (authoritative_kinds, authoritative_offsets): (Vec<i8>, Vec<i64>) = differences
                .iter()
                .map(|d| stored_code(&d.authoritative))
                .unzip();
            let authoritative_texts: Vec<Option<String>> = differences
                .iter()
                .map(|d| Some(d.authoritative.to_string()))
                .collect();
            let (mirror_kinds, mirror_offsets): (Vec<i8>, Vec<i64>) =
                differences.iter().map(|d| stored_code(&d.mirror)).unzip();
            let mirror_texts: Vec<Option<String>> = differences
                .iter()
                .map(|d| Some(d.mirror.to_string()))
                .collect();
            let mirror_taken: Vec<i8> = differences.iter().map(|d| i8::from(d.taken)).collect();
            LoadResult {
                partitions,
                chosen: new_longs(env, &chosen)?,
                actions: new_bytes(env, &actions)?,
                records_lost: new_longs(env, &lost)?,
                recreated_from_ids: new_optional_strings(env, &from)?,
                recreated_to_ids: new_optional_strings(env, &to)?,
                recreated_reasons: new_optional_strings(env, &reasons)?,
                stale_topics: new_strings(env, &stale_topics)?,
                stale_partitions: new_ints(env, &stale_partitions)?,
                stale_kinds: new_bytes(env, &stale_kinds)?,
                stale_offsets: new_longs(env, &stale_offsets)?,
                stale_texts: new_optional_strings(env, &stale_texts)?,
                mirror_topics: new_strings(env, &mirror_topics)?,
                mirror_partitions: new_ints(env, &mirror_partitions)?,
                mirror_authoritative_kinds: new_bytes(env, &authoritative_kinds)?,
                mirror_authoritative_offsets: new_longs(env, &authoritative_offsets)?,
                mirror_authoritative_texts: new_optional_strings(env, &authoritative_texts)?,
                mirror_kinds: new_bytes(env, &mirror_kinds)?,
                mirror_offsets: new_longs(env, &mirror_offsets)?,
                mirror_texts: new_optional_strings(env, &mirror_texts)?,
                mirror_taken: new_bytes(env, &mirror_taken)?,
            }
            .build(env)
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
) -> JObject<'local> {
    unowned
        .with_env(|env| -> Result<JObject<'local>> {
            let (engine, group, topics) = call_args(env, handle, &group, &topics)?;
            let rows = engine.inspect(&group, &topics)?;
            let partitions = partitions(env, &rows, |r| (&r.partition, &r.stored, r.range))?;
            let lag: Vec<i64> = rows.iter().map(|r| r.lag().unwrap_or(NO_LAG)).collect();
            InspectResult {
                partitions,
                lag: new_longs(env, &lag)?,
            }
            .build(env)
        })
        .resolve::<ThrowJavaException>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_io_offsetkeeper_NativeBridge_mirrorStatus<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) -> JObject<'local> {
    unowned
        .with_env(|env| -> Result<JObject<'local>> {
            let Some(status) = keeper(handle)?.mirror_status() else {
                return Ok(JObject::null());
            };
            let last_error = match &status.last_error {
                Some(error) => env.new_string(error)?,
                None => JString::null(),
            };
            MirrorState {
                store: env.new_string(status.store.name())?,
                pending_partitions: i32::try_from(status.pending).unwrap_or(i32::MAX),
                failures: i64::try_from(status.failures).unwrap_or(i64::MAX),
                last_error,
                behind_ms: i64::try_from(status.behind.as_millis()).unwrap_or(i64::MAX),
            }
            .build(env)
        })
        .resolve::<ThrowJavaException>()
}

/// The engine, group and topics of a load or an inspect.
fn call_args<'a>(
    env: &mut Env<'_>,
    handle: jlong,
    group: &JString<'_>,
    topics: &JObjectArray<'_, JString<'_>>,
) -> Result<(&'a OffsetKeeper, String, Vec<String>)> {
    let engine = keeper(handle)?;
    let group = string(env, group, "group")?;
    let topics = strings(env, topics, "topics")?;
    Ok((engine, group, topics))
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
) -> JObject<'local> {
    unowned
        .with_env(|env| -> Result<JObject<'local>> {
            let engine = keeper(handle)?;
            let group = string(env, &group, "group")?;
            let batch = batch(env, &topic_names, &topic_index, &partitions, &offsets)?;
            let summary = engine.commit_batch(&group, &batch)?;
            let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
            CommitCounts {
                written: count(summary.written),
                unchanged: count(summary.unchanged),
                requests: count(summary.requests),
                skipped: count(summary.skipped),
                deferred: summary.deferred,
                pending: count(summary.pending),
                behind_ms: i64::try_from(summary.behind.as_millis()).unwrap_or(i64::MAX),
            }
            .build(env)
        })
        .resolve::<ThrowJavaException>()
}

/// Checks a batch as a commit checks it, writing nothing: `commitAsync` refuses bad input on
/// the caller's thread, before its writer holds offsets no retry could write.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_offsetkeeper_NativeBridge_checkCommit<'local>(
    mut unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
    group: JString<'local>,
    topic_names: JObjectArray<'local, JString<'local>>,
    topic_index: JIntArray<'local>,
    partitions: JIntArray<'local>,
    offsets: JLongArray<'local>,
) {
    unowned
        .with_env(|env| -> Result<()> {
            let group = string(env, &group, "group")?;
            batch(env, &topic_names, &topic_index, &partitions, &offsets)?.check(&group)?;
            Ok(())
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
            let policy = policy(
                env,
                Policy::default(),
                &on_missing,
                &on_below_range,
                &on_above_range,
            )?;
            let mut chosen = Vec::with_capacity(kinds.len());
            let mut actions = Vec::with_capacity(kinds.len());
            let mut lost = Vec::with_capacity(kinds.len());
            for index in 0..kinds.len() {
                let stored = stored_from_code(kinds[index], offsets[index], index)?;
                let decision =
                    validate_entry(index, &stored, earliest[index], latest[index], &policy)?;
                chosen.push(decision.offset);
                actions.push(decision.action as i8);
                lost.push(decision.records_lost);
            }
            let columns = vec![
                new_longs(env, &chosen)?.into(),
                new_bytes(env, &actions)?.into(),
                new_longs(env, &lost)?.into(),
            ];
            new_object_array(env, columns)
        })
        .resolve::<ThrowJavaException>()
}

/// Only in the test library (feature `test-panic`), for `io.offsetkeeper.PanicTest`: a panic
/// inside the bridge's wrapper, as every entry point has it. The shipped library has no such
/// entry point (packaging/native/audit_elf.py refuses `*ForTest` exports).
#[cfg(feature = "test-panic")]
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_offsetkeeper_PanicTest_panicForTest<'local>(
    unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
) {
    panic_for_test(unowned)
}

/// The same for the aarch64 smoke (tests/aarch64), which declares its own `panicForTest`.
#[cfg(feature = "test-panic")]
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_offsetkeeper_Aarch64Smoke_panicForTest<'local>(
    unowned: EnvUnowned<'local>,
    _class: JClass<'local>,
) {
    panic_for_test(unowned)
}

#[cfg(feature = "test-panic")]
fn panic_for_test(mut unowned: EnvUnowned<'_>) {
    unowned
        .with_env(|env| -> Result<()> {
            init(env);
            panic!("panicForTest was called")
        })
        .resolve::<ThrowJavaException>()
}

/// Once per process, on a JVM thread: the SLF4J log bridge and the panic report.
/// A commit's columns as they cross JNI: checked for equal lengths, then as a [`CommitBatch`].
fn batch<'local>(
    env: &mut Env<'local>,
    topic_names: &JObjectArray<'local, JString<'local>>,
    topic_index: &JIntArray<'local>,
    partitions: &JIntArray<'local>,
    offsets: &JLongArray<'local>,
) -> Result<CommitBatch> {
    let names: Vec<Arc<str>> = strings(env, topic_names, "topicNames")?
        .into_iter()
        .map(Arc::from)
        .collect();
    let index = ints(env, topic_index, "topicIndex")?;
    let partitions = ints(env, partitions, "partitions")?;
    let offsets = longs(env, offsets, "offsets")?;
    same_lengths(
        &["topicIndex", "partitions", "offsets"],
        &[index.len(), partitions.len(), offsets.len()],
    )?;
    Ok(CommitBatch::new(names, index, partitions, offsets)?)
}

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

/// The `NativePartitions` of load's and inspect's rows. `view` picks each row's partition,
/// stored value and range, so both kinds of row convert without copies.
fn partitions<'local, R>(
    env: &mut Env<'local>,
    rows: &[R],
    view: impl Fn(&R) -> (&TopicPartition, &Stored, PartitionRange),
) -> Result<NativePartitions<'local>> {
    let rows: Vec<_> = rows.iter().map(view).collect();
    let (names, index) = topic_index(rows.iter().map(|(tp, _, _)| tp.topic.as_ref()));
    let numbers: Vec<i32> = rows.iter().map(|(tp, _, _)| tp.partition).collect();
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
    Partitions {
        topic_names: new_strings(env, &names)?,
        topic_index: new_ints(env, &index)?,
        partitions: new_ints(env, &numbers)?,
        stored_kinds: new_bytes(env, &kinds)?,
        stored_offsets: new_longs(env, &offsets)?,
        corrupt_texts: new_optional_strings(env, &corrupt_texts)?,
        earliest: new_longs(env, &earliest)?,
        latest: new_longs(env, &latest)?,
    }
    .build(env)
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
