//! The subcommands: each asks the engine, prints what it found or plans, and writes only
//! with `--execute`. Tables, CSV and JSON go to stdout; notes about what was (not) done go to
//! stderr, so that stdout can be redirected to a file.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use offsetkeeper::config::ZOOKEEPER_CONNECT;
use offsetkeeper::names::{check_base_path, check_name};
use offsetkeeper::sasl::SaslProviderHandle;
use offsetkeeper::{
    lag, CommitSummary, Error, KafkaSettings, KeeperConfig, OffsetKeeper, PartitionRange,
    Recreated, Store, Stored, Surveyed, TopicPartition, ZkConfig,
};
use serde::Serialize;
use serde_json::Value;

use crate::args::{
    merge_topic_specs, Cli, Command, CompareArgs, Connection, DeleteArgs, DescribeArgs, ExportArgs,
    ImportArgs, ListGroupsArgs, MigrateArgs, PlanExport, ResetArgs, TopicSpec,
};
use crate::compare::{verdict_text, Verdict};
use crate::files::{
    detect_format, format_csv, format_zk_lines, parse_csv, parse_properties, parse_zk_lines, Entry,
    OffsetFormat,
};
use crate::migrate::ConsumerGroups;
use crate::output::{Objects, Rows};
use crate::prometheus::{self, Sample};
use crate::{kerberos, keystores};

use crate::plan::{
    beyond_log_end, check_log_end, delta, plan, BeyondLogEnd, Planned, Status, Target,
};
use crate::{emit, reason, Failure};

type Outcome = Result<(), Failure>;

const DRY_RUN: &str = "dry run: nothing written; add --execute to apply";

/// The first columns of every table of offsets about to be written.
const PLAN_COLUMNS: [&str; 5] = [
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "NEW-OFFSET",
    "DELTA",
];

/// Runs one subcommand.
pub fn run(cli: Cli) -> Outcome {
    let cx = Context::new(&cli.connection)?;
    match cli.command {
        Command::Describe(args) => describe(&cx, args),
        Command::ListGroups(args) => list_groups(&cx, args),
        Command::Reset(args) => reset(&cx, args),
        Command::Export(args) => export(&cx, args),
        Command::Import(args) => import(&cx, args),
        Command::Delete(args) => delete(&cx, args),
        Command::Migrate(args) => migrate(&cx, args),
        Command::Compare(args) => compare(&cx, args),
    }
}

/// The shared options, checked, with the command config merged in.
struct Context {
    /// Where the offsets are kept (the authoritative store during a move between stores); with
    /// Kafka's group store alone `zookeeper` is not used.
    store: Store,
    /// During a move between stores (`--store zookeeper,kafka` or `kafka,zookeeper`), the
    /// mirror: `reset`, `import` and `delete` write it after the authoritative store, since a
    /// job's load starts at the mirror's offset where it is ahead.
    mirror: Option<Store>,
    zookeeper: ZkConfig,
    /// `--command-config`'s pairs, then the flags' (which win): what
    /// `KeeperConfig::from_properties` reads, Java keystores made PEM.
    properties: Vec<(String, String)>,
    group: Option<String>,
    /// ZooKeeper's request timeout, and the migrate consumer's.
    timeout: Duration,
    /// Which services authenticate with Kerberos; the GSS-API library is loaded only when a
    /// keeper for one of them is opened.
    kerberos: Option<kerberos::Plan>,
}

impl Context {
    fn new(connection: &Connection) -> Result<Context, Failure> {
        let mut properties = Vec::new();
        if let Some(path) = &connection.command_config {
            let text = read_file(path, "--command-config")?;
            properties = parse_properties(&text)
                .map_err(|why| Failure::usage(format!("{}: {why}", path.display())))?;
        }
        let flags = [
            (ZOOKEEPER_CONNECT, connection.zookeeper.clone()),
            ("bootstrap.servers", connection.bootstrap_servers.clone()),
            ("offsetkeeper.base.path", connection.base_path.clone()),
            ("offsetkeeper.store", connection.store.clone()),
            (
                "offsetkeeper.zookeeper.timeout.ms",
                connection.timeout.map(|ms| ms.to_string()),
            ),
            (
                "offsetkeeper.kafka.timeout.ms",
                connection.timeout.map(|ms| ms.to_string()),
            ),
        ];
        for (key, value) in flags {
            if let Some(value) = value {
                properties.push((key.to_string(), value));
            }
        }
        // Before anything reads them: the engine takes PEM and the GSSAPI mechanism keys.
        keystores::to_pem(&mut properties).map_err(|err| Failure::usage(err.to_string()))?;
        let kerberos = kerberos::configure(&mut properties).map_err(Failure::usage)?;
        let (store, mirror) = match properties
            .iter()
            .rev()
            .find(|(key, _)| key == "offsetkeeper.store")
        {
            Some((_, value)) => Store::parse(value).map_err(|err| Failure::usage(reason(err)))?,
            None => (Store::default(), None),
        };
        let connect_given = properties
            .iter()
            .any(|(key, value)| key == ZOOKEEPER_CONNECT && !value.trim().is_empty());
        if !connect_given && (store == Store::ZooKeeper || mirror == Some(Store::ZooKeeper)) {
            return Err(Failure::usage(
                "--zookeeper is required: host:port[,host:port...][/chroot] (or zookeeper.connect in --command-config)",
            ));
        }
        if let Some(path) = &connection.base_path {
            check_base_path(path).map_err(|err| Failure::usage(reason(err)))?;
        }
        let zookeeper = if connect_given {
            KeeperConfig::zookeeper_from_properties(properties.iter().map(|(k, v)| (k, v)))
                .map_err(|err| Failure::usage(reason(err)))?
        } else {
            // Kafka's group store without ZooKeeper: its settings are not used.
            ZkConfig::new(String::new())
        };
        Ok(Context {
            store,
            mirror,
            timeout: zookeeper.request_timeout,
            zookeeper,
            properties,
            group: connection.group.clone(),
            kerberos,
        })
    }

    /// The Kerberos provider when `needed` says a service of the plan is used, the
    /// GSS-API library loaded; `None` without Kerberos.
    fn sasl_provider(
        &self,
        needed: impl Fn(&kerberos::Plan) -> bool,
    ) -> Result<Option<SaslProviderHandle>, Failure> {
        match &self.kerberos {
            Some(plan) if needed(plan) => kerberos::Provider::handle(plan)
                .map(Some)
                .map_err(|err| Failure::failed(err.to_string())),
            _ => Ok(None),
        }
    }

    fn base_path(&self) -> &str {
        &self.zookeeper.base_path
    }

    /// `--group`, which every command but list-groups needs.
    fn group(&self, command: &str) -> Result<&str, Failure> {
        let group = self
            .group
            .as_deref()
            .ok_or_else(|| Failure::usage(format!("{command} needs --group GROUP")))?;
        check_name("group", group).map_err(|err| Failure::usage(reason(err)))?;
        Ok(group)
    }

    /// A keeper of the store's offsets for work that needs no brokers on ZooKeeper (listing,
    /// export, import, delete); on Kafka's group store the brokers are the store.
    fn zookeeper_only(&self) -> Result<OffsetKeeper, Failure> {
        if self.store == Store::Kafka {
            return self.with_kafka("this command on Kafka's group store");
        }
        let provider = self.sasl_provider(|plan| plan.zookeeper.is_some())?;
        Ok(OffsetKeeper::open_zookeeper_only_with_sasl_provider(
            self.zookeeper.clone(),
            provider.as_ref(),
        )?)
    }

    fn with_kafka(&self, command: &str) -> Result<OffsetKeeper, Failure> {
        operators_keeper(self.config(command)?)
    }

    /// A keeper of `store` whatever `--store` says: `compare` reads both stores, `migrate`
    /// asks Kafka's group store who holds the group.
    fn keeper_of(&self, store: Store, command: &str) -> Result<OffsetKeeper, Failure> {
        if store == Store::ZooKeeper && self.zookeeper.connect.trim().is_empty() {
            return Err(Failure::usage(format!(
                "{command} needs ZooKeeper: give --zookeeper host:port[,host:port...][/chroot] (or zookeeper.connect in --command-config)"
            )));
        }
        let mut config = self.config(command)?;
        config.store = store;
        config.mirror = None;
        operators_keeper(config)
    }

    /// The configuration of the command line and the command config, as a job's keeper reads
    /// the same pairs; the brokers are required.
    fn config(&self, command: &str) -> Result<KeeperConfig, Failure> {
        if !self.has_brokers() {
            return Err(Failure::usage(format!(
                "{command} needs the Kafka brokers: give --bootstrap-servers (or bootstrap.servers in --command-config)"
            )));
        }
        let mut config =
            KeeperConfig::from_properties(self.properties.iter().map(|(k, v)| (k, v)))?;
        // The mirror is written by the commands themselves, at once (`Context::mirror_keeper`),
        // never in a writer thread's own time.
        config.mirror = None;
        if let Some(provider) = self.sasl_provider(|_| true)? {
            config = config.with_sasl_provider(provider);
        }
        log::debug!("configuration: {config:?}");
        Ok(config)
    }

    /// During a move between stores, a keeper of the mirror and its store; opened before the
    /// authoritative store is written, so that a bad setting writes nothing.
    fn mirror_keeper(&self, command: &str) -> Result<Option<Mirrored>, Failure> {
        self.mirror
            .map(|store| {
                Ok(Mirrored {
                    store,
                    authoritative: self.store,
                    keeper: self.keeper_of(store, command)?,
                })
            })
            .transpose()
    }

    /// Whether the brokers are given (`--bootstrap-servers` or `bootstrap.servers`).
    fn has_brokers(&self) -> bool {
        self.properties
            .iter()
            .any(|(key, value)| key == "bootstrap.servers" && !value.trim().is_empty())
    }

    fn kafka_settings(&self, command: &str) -> Result<KafkaSettings, Failure> {
        Ok(self.config(command)?.kafka)
    }
}

/// The mirror of a move between stores, written right after the authoritative store.
struct Mirrored {
    store: Store,
    authoritative: Store,
    keeper: OffsetKeeper,
}

impl Mirrored {
    /// Writes into the mirror what was just written into the authoritative store. A failure
    /// says what the authoritative store holds and `recover`, how to bring the mirror level.
    fn write<T>(
        &self,
        command: &str,
        recover: &str,
        write: impl FnOnce(&OffsetKeeper) -> Result<T, Error>,
    ) -> Result<T, Failure> {
        write(&self.keeper).map_err(|err| {
            Failure::failed(format!(
                "{command}: written to the authoritative store ({}), not to the mirror ({}): {err}; until the mirror holds the same, the job's next start takes the mirror's offset wherever it is ahead: {recover}",
                self.authoritative.name(),
                self.store.name()
            ))
        })
    }

    /// Commits the offsets the authoritative store just took.
    fn commit(&self, command: &str, group: &str, offsets: &[(TopicPartition, i64)]) -> Outcome {
        let topics: Vec<String> = offsets
            .iter()
            .map(|(tp, _)| tp.topic.to_string())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let recover = format!(
            "before starting the job, copy them: offsetkeeper --store {} --group {group} export --topic {} --output FILE, then offsetkeeper --store {} --group {group} import --from-file FILE --execute, with the same connection options; compare shows both stores",
            self.authoritative.name(),
            topics.join(" --topic "),
            self.store.name()
        );
        let summary = self.write(command, &recover, |keeper| keeper.commit(group, offsets))?;
        eprintln!(
            "and in the mirror ({}): {} written, {} unchanged",
            self.store.name(),
            summary.written,
            summary.unchanged
        );
        Ok(())
    }
}

/// A keeper of the configuration, as an operator's tool uses one.
fn operators_keeper(mut config: KeeperConfig) -> Result<OffsetKeeper, Failure> {
    // An operator's tool: it never takes a running job's partitions.
    config.ownership.enabled = false;
    // An operator must see a commit that did not go through fail, never deferred.
    config.commit_outage_tolerance = Duration::ZERO;
    Ok(OffsetKeeper::open(config)?)
}

/// `describe --format json`.
#[derive(Serialize)]
struct Describe<'a> {
    group: &'a str,
    partitions: Objects<'a>,
}

/// `list-groups --format json`.
#[derive(Serialize)]
struct GroupList<'a> {
    base_path: &'a str,
    groups: Objects<'a>,
}

fn describe(cx: &Context, args: DescribeArgs) -> Outcome {
    let group = cx.group("describe")?;
    let keeper = cx.with_kafka("describe")?;
    let specs = scope(cx, &keeper, group, &args.topic, args.all_topics)?;
    let surveyed = survey(&keeper, group, &specs, None)?;
    let Some(format) = args.format.rows() else {
        let samples: Vec<Sample> = surveyed
            .iter()
            .map(|s| Sample {
                topic: &s.partition.topic,
                partition: s.partition.partition,
                committed: offset_of(&s.stored),
                log_start: s.range.map(|r| r.earliest),
                log_end: s.range.map(|r| r.latest),
                lag: lag(&s.stored, s.range),
                status: match recreated(s) {
                    Some(_) => Status::Recreated.key(),
                    None => Status::of(&s.stored, s.range).key(),
                },
            })
            .collect();
        emit(&prometheus::render(group, &samples));
        return Ok(());
    };
    let mut rows = Rows::new(&[
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-START-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "STATUS",
    ]);
    for s in &surveyed {
        rows.push(vec![
            Value::from(&*s.partition.topic),
            Value::from(s.partition.partition),
            offset_of(&s.stored).into(),
            s.range.map(|r| r.earliest).into(),
            s.range.map(|r| r.latest).into(),
            lag(&s.stored, s.range).into(),
            match recreated(s) {
                Some(recreated) => recreated.to_string().as_str().into(),
                None => Status::of(&s.stored, s.range).name().into(),
            },
        ]);
    }
    emit(&rows.render(format, |partitions| Describe { group, partitions }));
    Ok(())
}

/// The re-creation a partition's stored offset (or corrupt value) belongs to the old topic of.
fn recreated(s: &Surveyed) -> Option<&Recreated> {
    match (&s.recreated, &s.stored, s.range) {
        (Some(recreated), Stored::Offset(_) | Stored::Corrupt(_), Some(_)) => Some(recreated),
        _ => None,
    }
}

fn list_groups(cx: &Context, args: ListGroupsArgs) -> Outcome {
    let keeper = cx.zookeeper_only()?;
    let mut rows = Rows::new(&["GROUP", "TOPICS"]);
    for summary in keeper.groups()? {
        rows.push(vec![
            summary.group.as_str().into(),
            Value::from(summary.topics),
        ]);
    }
    emit(&rows.render(args.format, |groups| GroupList {
        base_path: cx.base_path(),
        groups,
    }));
    Ok(())
}

/// A partition a reset may move: what is stored and its range on the brokers.
type Existing = (TopicPartition, Stored, offsetkeeper::PartitionRange);

fn reset(cx: &Context, args: ResetArgs) -> Outcome {
    let group = cx.group("reset")?;
    let keeper = cx.with_kafka("reset")?;
    let entries = match &args.from_file {
        Some(path) => Some(read_offsets(path, None, cx, group)?),
        None => None,
    };
    let specs = match &entries {
        Some(entries) => file_topics(entries),
        None => scope(cx, &keeper, group, &args.topic, args.all_topics)?,
    };
    let surveyed = survey(&keeper, group, &specs, entries.as_deref())?;
    let named_explicitly = !args.all_topics && entries.is_none();
    let (mut existing, recreated_topics) = existing_partitions(surveyed, &specs, named_explicitly)?;
    let targets = match &entries {
        Some(entries) => file_targets(entries, &mut existing, args.from_file.as_deref())?,
        None => match reset_timestamp(&args) {
            Some(timestamp) => timestamp_targets(&keeper, &existing, timestamp)?,
            None => vec![uniform_target(&args, &keeper); existing.len()],
        },
    };
    let planned = plan_reset(&existing, targets, &recreated_topics)?;
    let beyond = planned.iter().filter_map(Planned::beyond_log_end).collect();
    allow_beyond_log_end("reset", beyond, args.allow_beyond_log_end)?;
    match args.export {
        Some(PlanExport::Csv) => emit(&format_csv(
            planned.iter().map(|p| (&p.partition, p.new_offset)),
        )),
        Some(PlanExport::Json) => emit(&offsets_json(group, &planned)),
        None => emit(&plan_table(&planned).table()),
    }
    if args.execute {
        let mirror = cx.mirror_keeper("reset")?;
        execute_reset(&keeper, cx.store, mirror.as_ref(), group, &planned)
    } else {
        eprintln!("{DRY_RUN}");
        Ok(())
    }
}

/// The surveyed partitions that exist on the brokers, and the topics re-created since their
/// offsets were stored. Partitions that no longer exist are not reset; asked for by name,
/// they (or a topic with none left) are an error.
fn existing_partitions(
    surveyed: Vec<Surveyed>,
    specs: &[TopicSpec],
    named_explicitly: bool,
) -> Result<(Vec<Existing>, HashSet<std::sync::Arc<str>>), Failure> {
    let mut existing = Vec::new();
    let mut recreated_topics = HashSet::new();
    for s in surveyed {
        if s.recreated.is_some() {
            recreated_topics.insert(s.partition.topic.clone());
        }
        match s.range {
            Some(range) => existing.push((s.partition, s.stored, range)),
            None if named_explicitly && partitions_named(specs, &s.partition) => {
                return Err(Failure::failed(format!(
                    "partition {} no longer exists on the brokers; only its stored offset is left",
                    s.partition
                )));
            }
            None => log::warn!(
                "{}: the partition no longer exists on the brokers; not reset (`offsetkeeper delete` removes a deleted topic's offsets)",
                s.partition
            ),
        }
    }
    if named_explicitly {
        for spec in specs {
            if !existing.iter().any(|(tp, _, _)| *tp.topic == *spec.topic) {
                return Err(Failure::failed(format!(
                    "topic '{}' no longer exists on the brokers; its stored offsets can only be deleted (offsetkeeper delete --topic {})",
                    spec.topic, spec.topic
                )));
            }
        }
    }
    Ok((existing, recreated_topics))
}

/// `--from-file`: each file entry's offset; `existing` keeps the partitions the file names,
/// every one of which must exist.
fn file_targets(
    entries: &[Entry],
    existing: &mut Vec<Existing>,
    file: Option<&Path>,
) -> Result<Vec<Target>, Failure> {
    let by_partition: HashMap<&TopicPartition, &Entry> =
        entries.iter().map(|e| (&e.partition, e)).collect();
    existing.retain(|(tp, _, _)| by_partition.contains_key(tp));
    for entry in entries {
        if !existing.iter().any(|(tp, _, _)| *tp == entry.partition) {
            return Err(Failure::failed(format!(
                "{}: line {}: partition {} does not exist on the brokers",
                path_shown(file),
                entry.line,
                entry.partition
            )));
        }
    }
    existing
        .iter()
        .map(|(tp, _, _)| by_partition.get(tp).map(|e| Target::FromFile(e.offset)))
        .collect::<Option<Vec<Target>>>()
        .ok_or_else(|| Failure::failed("internal error: a file entry went missing"))
}

/// `--to-datetime` / `--by-duration`: the brokers' offset for the timestamp, per partition.
fn timestamp_targets(
    keeper: &OffsetKeeper,
    existing: &[Existing],
    timestamp: i64,
) -> Result<Vec<Target>, Failure> {
    let partitions: Vec<TopicPartition> = existing.iter().map(|(tp, _, _)| tp.clone()).collect();
    let found = keeper.offsets_for_timestamp(&partitions, timestamp)?;
    partitions
        .iter()
        .map(|tp| {
            found
                .get(tp)
                .map(|offset| Target::AtTime(*offset))
                .ok_or_else(|| {
                    Failure::failed(format!(
                        "the brokers answered no offset for {tp} at timestamp {timestamp}"
                    ))
                })
        })
        .collect()
}

/// Each partition's new offset; every refusal at once, or nothing to reset, is an error.
fn plan_reset(
    existing: &[Existing],
    targets: Vec<Target>,
    recreated_topics: &HashSet<std::sync::Arc<str>>,
) -> Result<Vec<Planned>, Failure> {
    let mut planned = Vec::with_capacity(existing.len());
    let mut refused = Vec::new();
    for ((tp, stored, range), target) in existing.iter().zip(targets) {
        let target = match target {
            Target::Valid(policy) if recreated_topics.contains(&tp.topic) => {
                Target::ValidRecreated(policy)
            }
            other => other,
        };
        match plan(tp, stored, *range, target) {
            Ok(p) => planned.push(p),
            Err(why) => refused.push(why),
        }
    }
    if !refused.is_empty() {
        return Err(Failure::failed(format!(
            "reset refused for {} partition(s): {}",
            refused.len(),
            refused.join("; ")
        )));
    }
    if planned.is_empty() {
        return Err(Failure::failed(
            "nothing to reset: none of these partitions exists on the brokers",
        ));
    }
    Ok(planned)
}

fn execute_reset(
    keeper: &OffsetKeeper,
    store: Store,
    mirror: Option<&Mirrored>,
    group: &str,
    planned: &[Planned],
) -> Outcome {
    let offsets: Vec<(TopicPartition, i64)> = planned
        .iter()
        .map(|p| (p.partition.clone(), p.new_offset))
        .collect();
    let summary = keeper.commit(group, &offsets)?;
    eprintln!(
        "reset {} partition(s) of group '{group}': {}",
        planned.len(),
        written(summary, store)
    );
    match mirror {
        Some(mirror) => mirror.commit("reset", group, &offsets),
        None => Ok(()),
    }
}

/// Offsets above their log end refuse the command, writing nothing, unless allowed: then a
/// WARN each.
fn allow_beyond_log_end(
    command: &'static str,
    beyond: Vec<BeyondLogEnd>,
    allowed: bool,
) -> Outcome {
    let allowed = check_log_end(command, beyond, allowed)
        .map_err(|refusal| Failure::failed(refusal.to_string()))?;
    for beyond in allowed {
        log::warn!(
            "{beyond}; allowed by --allow-beyond-log-end: a job started there skips the records produced up to it"
        );
    }
    Ok(())
}

/// The timestamp of `--to-datetime`, or now minus `--by-duration`.
fn reset_timestamp(args: &ResetArgs) -> Option<i64> {
    if let Some(at) = args.to_datetime {
        return Some(at);
    }
    let ago = args.by_duration?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    Some(now.saturating_sub(ago).max(0))
}

/// The target of the modes that treat every partition alike.
fn uniform_target(args: &ResetArgs, keeper: &OffsetKeeper) -> Target {
    if args.to_latest {
        Target::Latest
    } else if let Some(offset) = args.to_offset {
        Target::Offset(offset)
    } else if let Some(shift) = args.shift_by {
        Target::ShiftBy(shift)
    } else if args.to_valid {
        let mut policy = *keeper.policy();
        if let Some(on_missing) = args.on_missing {
            policy.on_missing = on_missing;
        }
        if let Some(on_below) = args.on_below_range {
            policy.on_below_range = on_below;
        }
        if let Some(on_above) = args.on_above_range {
            policy.on_above_range = on_above;
        }
        if let Some(on_recreated) = args.on_recreated {
            policy.on_recreated = on_recreated;
        }
        Target::Valid(policy)
    } else {
        Target::Earliest
    }
}

/// `reset --export json`: a document from which a PyFlink job builds the dict of
/// `KafkaTopicPartition` to offset that `KafkaOffsetsInitializer.offsets` takes.
#[derive(Serialize)]
struct PlannedOffsets<'a> {
    group: &'a str,
    offsets: Vec<PlannedOffset<'a>>,
}

#[derive(Serialize)]
struct PlannedOffset<'a> {
    topic: &'a str,
    partition: i32,
    offset: i64,
}

fn offsets_json(group: &str, planned: &[Planned]) -> String {
    let document = PlannedOffsets {
        group,
        offsets: planned
            .iter()
            .map(|p| PlannedOffset {
                topic: &p.partition.topic,
                partition: p.partition.partition,
                offset: p.new_offset,
            })
            .collect(),
    };
    // Strings and integers: serializing cannot fail.
    serde_json::to_string(&document).unwrap_or_default() + "\n"
}

fn plan_table(planned: &[Planned]) -> Rows {
    let mut rows = Rows::new(
        &[
            &PLAN_COLUMNS[..],
            &["LOG-START-OFFSET", "LOG-END-OFFSET", "NOTE"],
        ]
        .concat(),
    );
    for p in planned {
        rows.push(vec![
            Value::from(&*p.partition.topic),
            Value::from(p.partition.partition),
            stored_cell(&p.stored),
            Value::from(p.new_offset),
            p.delta().into(),
            Value::from(p.range.earliest),
            Value::from(p.range.latest),
            p.note.to_string().as_str().into(),
        ]);
    }
    rows
}

fn export(cx: &Context, args: ExportArgs) -> Outcome {
    let group = cx.group("export")?;
    let keeper = cx.zookeeper_only()?;
    let specs = scope(cx, &keeper, group, &args.topic, args.topic.is_empty())?;
    let stored = keeper.stored(group, &topic_names(&specs))?;
    let stored = select(stored, &specs, |(tp, _)| tp, "stored")?;
    let mut offsets = Vec::new();
    for (tp, value) in &stored {
        match value {
            Stored::Offset(offset) => offsets.push((tp, *offset)),
            other => log::warn!("{tp}: stored value is not an offset ({other}); not exported"),
        }
    }
    if offsets.is_empty() {
        return Err(Failure::failed(format!(
            "group '{group}' has no stored offsets for {}",
            topic_names(&specs).join(", ")
        )));
    }
    let text = match args.format {
        OffsetFormat::Csv => format_csv(offsets.iter().copied()),
        OffsetFormat::Zk => format_zk_lines(cx.base_path(), group, offsets.iter().copied()),
    };
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).map_err(|err| {
                Failure::failed(format!("cannot write {}: {err}", path.display()))
            })?;
            eprintln!(
                "exported {} offset(s) of group '{group}' to {}",
                offsets.len(),
                path.display()
            );
        }
        None => emit(&text),
    }
    Ok(())
}

fn import(cx: &Context, args: ImportArgs) -> Outcome {
    let group = cx.group("import")?;
    // With the brokers, each offset is checked against its partition's range.
    let keeper = if cx.has_brokers() {
        cx.with_kafka("import")?
    } else {
        cx.zookeeper_only()?
    };
    let entries = read_offsets(&args.from_file, args.format, cx, group)?;
    let topics = topic_names(&file_topics(&entries));
    let offsets: Vec<(TopicPartition, i64)> = entries
        .iter()
        .map(|e| (e.partition.clone(), e.offset))
        .collect();
    if cx.has_brokers() {
        let beyond = import_beyond_log_end(&keeper, group, &topics, &offsets)?;
        allow_beyond_log_end("import", beyond, args.allow_beyond_log_end)?;
    } else {
        log::warn!(
            "the offsets were not checked against their partitions' log start and end (no --bootstrap-servers): a job started above the log end skips the records produced up to its offset"
        );
    }
    emit(&write_plan(&keeper, group, &topics, &offsets)?.table());
    if args.execute {
        let mirror = cx.mirror_keeper("import")?;
        let summary = keeper.commit(group, &offsets)?;
        eprintln!(
            "imported {} offset(s) into group '{group}': {}",
            entries.len(),
            written(summary, cx.store)
        );
        if let Some(mirror) = &mirror {
            mirror.commit("import", group, &offsets)?;
        }
    } else {
        eprintln!("{DRY_RUN}");
    }
    Ok(())
}

/// The offsets to import that are above their partition's log end. A partition the brokers do
/// not have (or a topic neither stored nor on them) has no range to check: a WARN says so.
fn import_beyond_log_end(
    keeper: &OffsetKeeper,
    group: &str,
    topics: &[String],
    offsets: &[(TopicPartition, i64)],
) -> Result<Vec<BeyondLogEnd>, Failure> {
    let (surveyed, _unknown) = survey_known(keeper, group, topics)?;
    let ranges: HashMap<TopicPartition, PartitionRange> = surveyed
        .into_iter()
        .filter_map(|s| s.range.map(|range| (s.partition, range)))
        .collect();
    let mut beyond = Vec::new();
    for (tp, offset) in offsets {
        match ranges.get(tp) {
            Some(range) => beyond.extend(beyond_log_end(tp, *offset, *range)),
            None => log::warn!(
                "{tp}: the brokers do not have this partition; its offset {offset} was not checked against a log end"
            ),
        }
    }
    Ok(beyond)
}

fn delete(cx: &Context, args: DeleteArgs) -> Outcome {
    let group = cx.group("delete")?;
    let mut topics: Vec<String> = Vec::new();
    for topic in args.topic {
        if !topics.contains(&topic) {
            topics.push(topic);
        }
    }
    if !args.partition.is_empty() && topics.len() != 1 {
        return Err(Failure::usage(format!(
            "--partition needs exactly one --topic, got {}",
            topics.len()
        )));
    }
    // Offsets of whole topics or some partitions need ZooKeeper only; stale ones the brokers.
    let keeper = if args.stale {
        cx.with_kafka("delete --stale")?
    } else {
        cx.zookeeper_only()?
    };
    if args.stale && topics.is_empty() {
        topics = keeper.stored_topics(group)?;
        if topics.is_empty() {
            return Err(Failure::failed(format!(
                "group '{group}' has no stored offsets"
            )));
        }
    }
    let stored = keeper.stored(group, &topics)?;
    for topic in &topics {
        if !stored.iter().any(|(tp, _)| *tp.topic == **topic) {
            return Err(Failure::failed(format!(
                "group '{group}' has no stored offsets for topic '{topic}'"
            )));
        }
    }
    let chosen: Vec<(TopicPartition, Stored)> = if args.stale {
        let existing: HashSet<TopicPartition> = keeper
            .survey(group, &topics)?
            .into_iter()
            .filter(|s| s.range.is_some())
            .map(|s| s.partition)
            .collect();
        stored
            .into_iter()
            .filter(|(tp, _)| !existing.contains(tp))
            .collect()
    } else if !args.partition.is_empty() {
        let mut chosen = Vec::new();
        for partition in &args.partition {
            let tp = TopicPartition::new(topics[0].as_str(), *partition);
            match stored.iter().find(|(stored_tp, _)| *stored_tp == tp) {
                Some(found) => chosen.push(found.clone()),
                None => {
                    return Err(Failure::failed(format!(
                        "group '{group}' has no stored offset for {tp}"
                    )))
                }
            }
        }
        chosen
    } else {
        stored
    };
    let mut rows = Rows::new(&["TOPIC", "PARTITION", "CURRENT-OFFSET"]);
    for (tp, value) in &chosen {
        rows.push(vec![
            Value::from(&*tp.topic),
            Value::from(tp.partition),
            stored_cell(value),
        ]);
    }
    if chosen.is_empty() {
        eprintln!("group '{group}' has no stored offsets for partitions that no longer exist");
        return Ok(());
    }
    emit(&rows.table());
    if !args.execute {
        eprintln!("dry run: nothing deleted; add --execute to delete these offsets");
        return Ok(());
    }
    // As kafka-consumer-groups refuses to delete the offsets of an active group.
    let active = keeper.active_instances(group)?;
    if !active.is_empty() {
        return Err(Failure::failed(format!(
            "group '{group}' is active ({} instance(s) registered: {}); stop the job first, nothing deleted",
            active.len(),
            active.join(", ")
        )));
    }
    let mirror = cx.mirror_keeper("delete")?;
    if args.stale || !args.partition.is_empty() {
        let partitions: Vec<TopicPartition> = chosen.into_iter().map(|(tp, _)| tp).collect();
        let deleted = keeper.delete_partitions(group, &partitions)?;
        eprintln!("deleted {deleted} stored offset(s) from group '{group}'");
        if let Some(mirror) = &mirror {
            let recover = format!("run the same delete with --store {}", mirror.store.name());
            let deleted = mirror.write("delete", &recover, |keeper| {
                keeper.delete_partitions(group, &partitions)
            })?;
            eprintln!(
                "and from the mirror ({}): {deleted} stored offset(s)",
                mirror.store.name()
            );
        }
    } else {
        let deleted = keeper.delete_topics(group, &topics)?;
        eprintln!(
            "deleted {deleted} stored offset(s) of {} topic(s) from group '{group}'",
            topics.len()
        );
        if let Some(mirror) = &mirror {
            let recover = format!("run the same delete with --store {}", mirror.store.name());
            let deleted = mirror.write("delete", &recover, |keeper| {
                keeper.delete_topics(group, &topics)
            })?;
            eprintln!(
                "and from the mirror ({}): {deleted} stored offset(s)",
                mirror.store.name()
            );
        }
    }
    Ok(())
}

fn migrate(cx: &Context, args: MigrateArgs) -> Outcome {
    let group = cx.group("migrate")?;
    let kafka_group = args.kafka_group.as_deref().unwrap_or(group);
    check_name("group", kafka_group).map_err(|err| Failure::usage(reason(err)))?;
    if cx
        .kerberos
        .as_ref()
        .is_some_and(|plan| plan.kafka.is_some())
    {
        return Err(Failure::usage(
            "migrate reads and commits Kafka consumer groups through librdkafka, which this CLI has without Kerberos (GSSAPI); migrate over a listener with PLAIN, SCRAM or TLS, or use the jar",
        ));
    }
    let keeper = cx.with_kafka("migrate")?;
    let groups = ConsumerGroups::new(cx.kafka_settings("migrate")?, cx.timeout)?;
    let migration = Migration {
        cx,
        keeper: &keeper,
        groups: &groups,
        group,
        kafka_group,
        args: &args,
    };
    if args.to_kafka {
        migration.copy_to_kafka()
    } else {
        migration.copy_from_kafka()
    }
}

/// What `migrate` works with, whichever way it copies.
struct Migration<'a> {
    cx: &'a Context,
    keeper: &'a OffsetKeeper,
    groups: &'a ConsumerGroups,
    group: &'a str,
    kafka_group: &'a str,
    args: &'a MigrateArgs,
}

impl Migration<'_> {
    /// Refuses while a job holds either group, whichever way the copy goes: a running job goes
    /// on from the offsets it holds and writes over the copy. A dry run says it would refuse.
    fn refuse_while_held(&self) -> Outcome {
        let (group, kafka_group) = (self.group, self.kafka_group);
        let mut holders = Vec::new();
        let instances = self.keeper.active_instances(group)?;
        if !instances.is_empty() {
            holders.push(format!(
                "ZooKeeper group '{group}' has {} instance(s) registered: {}",
                instances.len(),
                instances.join(", ")
            ));
        }
        // The members of the Kafka group, which the Kafka store's keeper lists as its active
        // instances.
        let members = self
            .cx
            .keeper_of(Store::Kafka, "migrate")?
            .active_instances(kafka_group)?;
        if !members.is_empty() {
            holders.push(format!(
                "Kafka group '{kafka_group}' has {} active member(s): {}",
                members.len(),
                members.join("; ")
            ));
        }
        if holders.is_empty() {
            return Ok(());
        }
        let held = holders.join(", and ");
        let message = if self.args.execute {
            format!("migrate refused: {held}; stop the job first, nothing written")
        } else {
            format!(
                "dry run: nothing written; --execute would be refused: {held}; stop the job first"
            )
        };
        Err(Failure::failed(message))
    }

    fn copy_to_kafka(&self) -> Outcome {
        let (group, kafka_group, args) = (self.group, self.kafka_group, self.args);
        let specs = scope(self.cx, self.keeper, group, &args.topic, args.all_topics)?;
        let surveyed = survey(self.keeper, group, &specs, None)?;
        let mut usable = Vec::new();
        for s in surveyed {
            let status = Status::of(&s.stored, s.range);
            match (&s.stored, status) {
                (Stored::Offset(offset), Status::Ok | Status::BelowRange | Status::AboveRange) => {
                    usable.push((s.partition, *offset, status))
                }
                _ => log::warn!("{}: {}; not migrated", s.partition, status.name()),
            }
        }
        if usable.is_empty() {
            return Err(Failure::failed(format!(
                "nothing to migrate: group '{group}' has no usable stored offset for a partition that exists"
            )));
        }
        let partitions: Vec<TopicPartition> = usable.iter().map(|(tp, _, _)| tp.clone()).collect();
        let current: HashMap<TopicPartition, Option<i64>> = self
            .groups
            .committed(kafka_group, &partitions)?
            .into_iter()
            .collect();
        let mut rows = Rows::new(&[&PLAN_COLUMNS[..], &["STATUS"]].concat());
        for (tp, offset, status) in &usable {
            let now = current.get(tp).copied().flatten();
            rows.push(vec![
                Value::from(&*tp.topic),
                Value::from(tp.partition),
                now.into(),
                Value::from(*offset),
                now.map(|n| offset - n).into(),
                status.name().into(),
            ]);
        }
        emit(&rows.table());
        self.refuse_while_held()?;
        if args.execute {
            let offsets: Vec<(TopicPartition, i64)> =
                usable.iter().map(|(tp, o, _)| (tp.clone(), *o)).collect();
            self.groups.commit(kafka_group, &offsets)?;
            eprintln!(
                "committed {} offset(s) of ZooKeeper group '{group}' to Kafka group '{kafka_group}'",
                offsets.len()
            );
        } else {
            eprintln!("{DRY_RUN} (CURRENT-OFFSET: Kafka group '{kafka_group}'; NEW-OFFSET: ZooKeeper group '{group}')");
        }
        Ok(())
    }

    fn copy_from_kafka(&self) -> Outcome {
        let (group, kafka_group, args) = (self.group, self.kafka_group, self.args);
        let specs = if args.all_topics {
            all_partitions(self.keeper.kafka_topics()?)
        } else {
            merge_topic_specs(&args.topic)
        };
        let partitions = self.keeper.partitions(&topic_names(&specs))?;
        let partitions = select(partitions, &specs, |tp| tp, "on the brokers")?;
        let committed: Vec<(TopicPartition, i64)> = self
            .groups
            .committed(kafka_group, &partitions)?
            .into_iter()
            .filter_map(|(tp, offset)| offset.map(|o| (tp, o)))
            .collect();
        if committed.is_empty() {
            return Err(Failure::failed(format!(
                "nothing to migrate: Kafka group '{kafka_group}' has no committed offsets for {}",
                if args.all_topics {
                    "any topic".to_string()
                } else {
                    topic_names(&specs).join(", ")
                }
            )));
        }
        let mut topics: Vec<String> = Vec::new();
        for (tp, _) in &committed {
            if !topics.iter().any(|topic| **topic == *tp.topic) {
                topics.push(tp.topic.to_string());
            }
        }
        emit(&write_plan(self.keeper, group, &topics, &committed)?.table());
        self.refuse_while_held()?;
        if args.execute {
            let summary = self.keeper.commit(group, &committed)?;
            eprintln!(
                "copied {} offset(s) of Kafka group '{kafka_group}' into group '{group}' under {}: {}",
                committed.len(),
                self.cx.base_path(),
                written(summary, Store::ZooKeeper)
            );
        } else {
            eprintln!("{DRY_RUN} (CURRENT-OFFSET: ZooKeeper group '{group}'; NEW-OFFSET: Kafka group '{kafka_group}')");
        }
        Ok(())
    }
}

/// `compare --format json`.
#[derive(Serialize)]
struct Comparison<'a> {
    group: &'a str,
    /// The partitions whose stores do not agree (exit status 3 when any).
    differing: usize,
    partitions: Objects<'a>,
}

/// One partition as each store holds it.
struct Compared {
    partition: TopicPartition,
    zookeeper: Stored,
    kafka: Stored,
    /// `None` for a partition the brokers no longer have.
    range: Option<PartitionRange>,
}

fn compare(cx: &Context, args: CompareArgs) -> Outcome {
    let group = cx.group("compare")?;
    let zookeeper = cx.keeper_of(Store::ZooKeeper, "compare")?;
    let kafka = cx.keeper_of(Store::Kafka, "compare")?;
    let specs = if args.all_topics {
        let mut topics: BTreeSet<String> = zookeeper.stored_topics(group)?.into_iter().collect();
        topics.extend(kafka.stored_topics(group)?);
        if topics.is_empty() {
            return Err(Failure::failed(format!(
                "group '{group}' has no stored offsets, neither under {} in ZooKeeper nor in Kafka's group store",
                cx.base_path()
            )));
        }
        all_partitions(topics.into_iter().collect())
    } else {
        merge_topic_specs(&args.topic)
    };
    let compared = compare_stores(group, &specs, &zookeeper, &kafka)?;
    let mut rows = Rows::new(&[
        "TOPIC",
        "PARTITION",
        "ZOOKEEPER",
        "KAFKA",
        "EARLIEST",
        "LATEST",
        "VERDICT",
    ]);
    let mut differing = 0;
    for c in &compared {
        let (in_zookeeper, in_kafka) = (offset_of(&c.zookeeper), offset_of(&c.kafka));
        if !Verdict::of(in_zookeeper, in_kafka).agrees() {
            differing += 1;
        }
        rows.push(vec![
            Value::from(&*c.partition.topic),
            Value::from(c.partition.partition),
            stored_cell(&c.zookeeper),
            stored_cell(&c.kafka),
            c.range.map(|r| r.earliest).into(),
            c.range.map(|r| r.latest).into(),
            Value::from(verdict_text(in_zookeeper, in_kafka, c.range)),
        ]);
    }
    emit(&rows.render(args.format, |partitions| Comparison {
        group,
        differing,
        partitions,
    }));
    if differing > 0 {
        return Err(Failure::differs(format!(
            "group '{group}': {differing} of {} partition(s) differ between ZooKeeper and Kafka's group store",
            compared.len()
        )));
    }
    Ok(())
}

/// Both stores' offsets of the specs' partitions with the brokers' ranges, in the order of the
/// topics, then partition order. A topic stored in neither store nor on the brokers is an error,
/// as in `describe`.
fn compare_stores(
    group: &str,
    specs: &[TopicSpec],
    zookeeper: &OffsetKeeper,
    kafka: &OffsetKeeper,
) -> Result<Vec<Compared>, Failure> {
    let topics = topic_names(specs);
    let (in_zookeeper, mut unknown) = survey_known(zookeeper, group, &topics)?;
    let (in_kafka, _) = survey_known(kafka, group, &topics)?;
    let mut by_partition: BTreeMap<(usize, i32), Compared> = BTreeMap::new();
    let surveyed = in_zookeeper
        .into_iter()
        .map(|s| (Store::ZooKeeper, s))
        .chain(in_kafka.into_iter().map(|s| (Store::Kafka, s)));
    for (store, s) in surveyed {
        let topic_at = topics
            .iter()
            .position(|t| **t == *s.partition.topic)
            .unwrap_or(usize::MAX);
        let c = by_partition
            .entry((topic_at, s.partition.partition))
            .or_insert_with(|| Compared {
                partition: s.partition.clone(),
                zookeeper: Stored::Missing,
                kafka: Stored::Missing,
                range: None,
            });
        // Both surveys ask the same brokers; the first range read stands.
        c.range = c.range.or(s.range);
        match store {
            Store::ZooKeeper => c.zookeeper = s.stored,
            Store::Kafka => c.kafka = s.stored,
        }
    }
    let compared: Vec<Compared> = by_partition.into_values().collect();
    for topic in &topics {
        if !compared.iter().any(|c| *c.partition.topic == **topic) {
            return Err(match unknown.remove(topic) {
                Some(err) => Failure::from(err),
                None => Failure::failed(format!(
                    "unknown topic '{topic}': neither stored for group '{group}' nor on the brokers"
                )),
            });
        }
    }
    select(
        compared,
        specs,
        |c| &c.partition,
        "stored or on the brokers",
    )
}

/// A store's survey of the topics, leaving out those neither stored there nor on the brokers
/// (the other store may hold them): they come back with their errors.
fn survey_known(
    keeper: &OffsetKeeper,
    group: &str,
    topics: &[String],
) -> Result<(Vec<Surveyed>, HashMap<String, Error>), Failure> {
    let mut topics = topics.to_vec();
    let mut unknown = HashMap::new();
    // Each round leaves out one topic: it ends.
    while !topics.is_empty() {
        match keeper.survey(group, &topics) {
            Ok(surveyed) => return Ok((surveyed, unknown)),
            Err(Error::UnknownTopic { topic, bootstrap }) if topics.contains(&topic) => {
                topics.retain(|t| *t != topic);
                let err = Error::UnknownTopic {
                    topic: topic.clone(),
                    bootstrap,
                };
                unknown.insert(topic, err);
            }
            Err(err) => return Err(err.into()),
        }
    }
    Ok((Vec::new(), unknown))
}

/// The table of offsets to write into a ZooKeeper group, beside what it stores for `topics`.
fn write_plan(
    keeper: &OffsetKeeper,
    group: &str,
    topics: &[String],
    offsets: &[(TopicPartition, i64)],
) -> Result<Rows, Failure> {
    let current: HashMap<TopicPartition, Stored> =
        keeper.stored(group, topics)?.into_iter().collect();
    let mut rows = Rows::new(&PLAN_COLUMNS);
    for (tp, offset) in offsets {
        let stored = current.get(tp).cloned().unwrap_or(Stored::Missing);
        rows.push(vec![
            Value::from(&*tp.topic),
            Value::from(tp.partition),
            stored_cell(&stored),
            Value::from(*offset),
            delta(&stored, *offset).into(),
        ]);
    }
    Ok(rows)
}

/// The topics a command covers: those named, or with `all`, every topic the group stored.
fn scope(
    cx: &Context,
    keeper: &OffsetKeeper,
    group: &str,
    named: &[TopicSpec],
    all: bool,
) -> Result<Vec<TopicSpec>, Failure> {
    if !all {
        return Ok(merge_topic_specs(named));
    }
    let topics = keeper.stored_topics(group)?;
    if topics.is_empty() {
        return Err(Failure::failed(format!(
            "group '{group}' has no stored offsets under {}",
            cx.base_path()
        )));
    }
    Ok(all_partitions(topics))
}

fn all_partitions(topics: Vec<String>) -> Vec<TopicSpec> {
    topics
        .into_iter()
        .map(|topic| TopicSpec {
            topic,
            partitions: None,
        })
        .collect()
}

fn topic_names(specs: &[TopicSpec]) -> Vec<String> {
    specs.iter().map(|s| s.topic.clone()).collect()
}

/// The topics of a file's entries, in the order they first appear.
fn file_topics(entries: &[Entry]) -> Vec<TopicSpec> {
    let mut seen = HashSet::new();
    all_partitions(
        entries
            .iter()
            .filter(|e| seen.insert(e.partition.topic.clone()))
            .map(|e| e.partition.topic.to_string())
            .collect(),
    )
}

/// Whether the specs name this partition by number.
fn partitions_named(specs: &[TopicSpec], tp: &TopicPartition) -> bool {
    specs.iter().any(|s| {
        *s.topic == *tp.topic
            && s.partitions
                .as_ref()
                .is_some_and(|set| set.contains(&tp.partition))
    })
}

/// The survey of the specs' partitions; `entries`, the file they come from, if any.
fn survey(
    keeper: &OffsetKeeper,
    group: &str,
    specs: &[TopicSpec],
    entries: Option<&[Entry]>,
) -> Result<Vec<Surveyed>, Failure> {
    let surveyed = keeper
        .survey(group, &topic_names(specs))
        .map_err(|err| with_line(err, entries))?;
    select(
        surveyed,
        specs,
        |s| &s.partition,
        "stored or on the brokers",
    )
}

/// Keeps the items of the partitions the specs name; a partition named but absent is an error.
fn select<T>(
    items: Vec<T>,
    specs: &[TopicSpec],
    partition_of: impl Fn(&T) -> &TopicPartition,
    where_looked: &str,
) -> Result<Vec<T>, Failure> {
    let named: HashMap<&str, &BTreeSet<i32>> = specs
        .iter()
        .filter_map(|s| s.partitions.as_ref().map(|set| (s.topic.as_str(), set)))
        .collect();
    let kept: Vec<T> = items
        .into_iter()
        .filter(|item| {
            let tp = partition_of(item);
            named
                .get(&*tp.topic)
                .is_none_or(|set| set.contains(&tp.partition))
        })
        .collect();
    for (topic, set) in &named {
        for partition in *set {
            let found = kept.iter().any(|item| {
                let tp = partition_of(item);
                *tp.topic == **topic && tp.partition == *partition
            });
            if !found {
                return Err(Failure::failed(format!(
                    "topic '{topic}' has no partition {partition} ({where_looked})"
                )));
            }
        }
    }
    Ok(kept)
}

/// Reads an offsets file in the given format, or the one its first line shows.
fn read_offsets(
    path: &Path,
    format: Option<OffsetFormat>,
    cx: &Context,
    group: &str,
) -> Result<Vec<Entry>, Failure> {
    let text = read_file(path, "offsets file")?;
    let parsed = match format.unwrap_or_else(|| detect_format(&text)) {
        OffsetFormat::Csv => parse_csv(&text),
        OffsetFormat::Zk => parse_zk_lines(&text, cx.base_path(), group),
    };
    parsed.map_err(|why| Failure::failed(format!("{}: {why}", path.display())))
}

fn read_file(path: &Path, what: &str) -> Result<String, Failure> {
    std::fs::read_to_string(path)
        .map_err(|err| Failure::failed(format!("cannot read {what} {}: {err}", path.display())))
}

fn path_shown(path: Option<&Path>) -> String {
    path.map(|p| p.display().to_string()).unwrap_or_default()
}

/// An unknown topic from a file names the first line that has it.
fn with_line(err: Error, entries: Option<&[Entry]>) -> Failure {
    if let (Error::UnknownTopic { topic, .. }, Some(entries)) = (&err, entries) {
        if let Some(entry) = entries.iter().find(|e| *e.partition.topic == **topic) {
            return Failure::failed(format!("line {}: {err}", entry.line));
        }
    }
    err.into()
}

fn offset_of(stored: &Stored) -> Option<i64> {
    match stored {
        Stored::Offset(offset) => Some(*offset),
        _ => None,
    }
}

/// A stored value in a plan: the offset, `-` when none, `corrupt` when not an offset.
fn stored_cell(stored: &Stored) -> Value {
    match stored {
        Stored::Offset(offset) => Value::from(*offset),
        Stored::Missing => Value::Null,
        Stored::Corrupt(_) => "corrupt".into(),
    }
}

/// What a commit wrote, and in how many requests of the store: ZooKeeper multis, or Kafka's
/// OffsetCommit requests.
fn written(summary: CommitSummary, store: Store) -> String {
    let requests = match store {
        Store::ZooKeeper => "ZooKeeper multi",
        Store::Kafka => "OffsetCommit",
    };
    format!(
        "{} written, {} unchanged, in {} {requests} request(s)",
        summary.written, summary.unchanged, summary.requests
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse_topic_spec;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition::new(topic, partition)
    }

    #[test]
    fn select_keeps_named_partitions_and_refuses_absent_ones() {
        let items = vec![tp("a", 0), tp("a", 1), tp("a", 2), tp("b", 0)];
        let specs: Vec<TopicSpec> = ["a:0,2", "b"]
            .iter()
            .map(|s| parse_topic_spec(s).unwrap())
            .collect();
        let kept = select(items.clone(), &specs, |t| t, "here").unwrap();
        assert_eq!(kept, vec![tp("a", 0), tp("a", 2), tp("b", 0)]);
        let specs = vec![parse_topic_spec("a:7").unwrap()];
        let failure = select(items, &specs, |t| t, "on the brokers").unwrap_err();
        assert_eq!(
            failure.message,
            "topic 'a' has no partition 7 (on the brokers)"
        );
        assert_eq!(failure.code, 1);
    }

    #[test]
    fn planned_offsets_as_json() {
        let planned = |topic: &str, partition: i32, new_offset: i64| Planned {
            partition: tp(topic, partition),
            stored: Stored::Missing,
            range: offsetkeeper::PartitionRange {
                earliest: 0,
                latest: 100,
            },
            new_offset,
            note: crate::plan::Note::None,
        };
        assert_eq!(
            offsets_json("job-1", &[planned("orders", 0, 42), planned("orders", 3, 0)]),
            "{\"group\":\"job-1\",\"offsets\":[{\"topic\":\"orders\",\"partition\":0,\"offset\":42},{\"topic\":\"orders\",\"partition\":3,\"offset\":0}]}\n"
        );
    }

    #[test]
    fn named_partitions() {
        let specs = vec![
            parse_topic_spec("a:1").unwrap(),
            parse_topic_spec("b").unwrap(),
        ];
        assert!(partitions_named(&specs, &tp("a", 1)));
        assert!(!partitions_named(&specs, &tp("a", 2)));
        assert!(!partitions_named(&specs, &tp("b", 0)));
    }
}
