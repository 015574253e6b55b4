//! The command line: options every subcommand shares, the subcommands and their checks.

use std::collections::BTreeSet;
use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand};
use offsetkeeper::names::{check_name, check_partition};
use offsetkeeper::{OnAboveRange, OnBelowRange, OnMissing, OnRecreated};

use crate::datetime::{parse_datetime, parse_duration};
use crate::files::OffsetFormat;
use crate::output::{DescribeFormat, Format};
use crate::plan::Status;
use crate::reason;

const ABOUT: &str =
    "Describe, reset, export, import, delete, migrate and compare the Kafka offsets that Spark \
Streaming jobs keep in ZooKeeper under <base-path>/<group>/offsets/<topic>/<partition>";

const EXAMPLES: &str = "\
Examples:
  offsetkeeper --zookeeper zk:2181 --bootstrap-servers kafka:9092 --group my-job describe --all-topics
  offsetkeeper --zookeeper zk:2181 --bootstrap-servers kafka:9092 --group my-job reset --topic orders --to-datetime 2024-05-01T12:00:00Z
  offsetkeeper --zookeeper zk:2181 --bootstrap-servers kafka:9092 --group my-job reset --topic orders --to-datetime 2024-05-01T12:00:00Z --execute

Commands that change offsets are dry runs unless given --execute. Stop the job first: a running
job goes on from the offsets it holds, and its commits to a partition written here fail
(CommitConflictException, nothing written: fencing) until it loads again, as a restart does;
with offsetkeeper.fencing=false they overwrite it. During a move between stores give --store the
job's offsetkeeper.store (zookeeper,kafka or kafka,zookeeper): reset, import and delete then write
both stores, else the job's next start takes the other store's offset where it is ahead. Exit status: 0 on success, 1 when an operation
fails, 2 for a bad command line, 3 when compare finds the stores differ.

--command-config takes the Java clients' keys. TLS stores: PEM, or PKCS#12 (ssl.truststore.type /
ssl.keystore.type PKCS12, with their passwords; JKS: convert with keytool -importkeystore).
Kerberos (SASL GSSAPI: security.protocol SASL_*, sasl.kerberos.service.name; for ZooKeeper
zookeeper.sasl.mechanism=GSSAPI or a JAAS Client section) needs the system's MIT krb5 library
(libgssapi_krb5.so.2) and logs in from the ticket cache (KRB5CCNAME, as after kinit), or as
sasl.jaas.config or the JAAS file of a java.security.auth.login.config=FILE line in --command-config say (keyTab, principal,
ticketCache); krb5.conf is KRB5_CONFIG's or /etc/krb5.conf.";

/// `describe --help` after its options: the statuses (from the one list of them, `Status::ALL`),
/// then this.
const DESCRIBE_NOTES: &str = "\
LAG is LOG-END-OFFSET minus CURRENT-OFFSET.

--format prometheus writes gauges (offsetkeeper_committed_offset, offsetkeeper_log_start_offset,
offsetkeeper_log_end_offset, offsetkeeper_lag, offsetkeeper_partition_status) for node_exporter's
textfile collector; write to a temporary file and rename it, so the collector never reads half.

Examples:
  offsetkeeper --zookeeper zk:2181 --bootstrap-servers kafka:9092 --group my-job describe --topic orders --format json
  offsetkeeper --zookeeper zk:2181 --bootstrap-servers kafka:9092 --group my-job describe --all-topics --format prometheus > my-job.prom.tmp && mv my-job.prom.tmp my-job.prom";

/// `compare --help` after its options.
const COMPARE_NOTES: &str = "\
Reads the group's offsets in both stores, ZooKeeper and Kafka's group store, whatever --store
says (so it needs --zookeeper and --bootstrap-servers), and each partition's log start (EARLIEST)
and end (LATEST). ZOOKEEPER and KAFKA are the stored offsets, '-' where none; 'corrupt' is a znode
that holds no usable offset, counted as none, as a job's load counts it.

Verdicts:
  equal                  both stores hold the same offset
  kafka behind by N      Kafka's offset is N below ZooKeeper's
  zookeeper behind by N  ZooKeeper's offset is N below Kafka's
  only in zookeeper      Kafka holds no offset
  only in kafka          ZooKeeper holds no offset
  neither                neither store holds an offset
Where a stored offset is not within [EARLIEST, LATEST] the verdict goes on with ', below range',
', above range' or ', partition gone' (the brokers no longer have it), the store named
(', kafka below range') unless every offset stored for the partition is out of range alike.

Exit status: 0 when the stores agree on every partition (equal or neither), 3 when any other
verdict is shown (stderr says how many), 1 when an operation fails, 2 for a bad command line.
A move between stores can wait for 0 before its next phase.

Examples:
  offsetkeeper --zookeeper zk:2181 --bootstrap-servers kafka:9092 --group my-job compare --all-topics
  offsetkeeper --zookeeper zk:2181 --bootstrap-servers kafka:9092 --group my-job compare --topic orders:0,1 --format json";

fn describe_help() -> String {
    format!("{}\n{DESCRIBE_NOTES}", Status::help())
}

#[derive(Debug, Parser)]
#[command(name = "offsetkeeper", version, about = ABOUT, after_help = EXAMPLES)]
pub struct Cli {
    /// More log output on stderr: -v info, -vv debug, -vvv trace (RUST_LOG overrides)
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    // After the options without a heading: its heading would carry over to them.
    #[command(flatten)]
    pub connection: Connection,

    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand takes, before or after its name.
#[derive(Debug, Args)]
#[command(next_help_heading = "Connection")]
pub struct Connection {
    /// ZooKeeper connect string, with an optional chroot (or zookeeper.connect in --command-config)
    #[arg(long, global = true, value_name = "HOST:PORT[,...][/CHROOT]")]
    pub zookeeper: Option<String>,

    /// Kafka brokers (or bootstrap.servers in --command-config); describe, reset, migrate, compare and delete --stale need them
    #[arg(long, global = true, value_name = "HOST:PORT[,...]")]
    pub bootstrap_servers: Option<String>,

    /// Java properties file: Kafka client settings (security.protocol, sasl.*, ssl.*, ...), zookeeper.* and offsetkeeper.* keys, as a job's keeper reads them
    #[arg(long, global = true, value_name = "FILE")]
    pub command_config: Option<PathBuf>,

    /// The consumer group whose offsets to work on
    #[arg(long, global = true, value_name = "GROUP")]
    pub group: Option<String>,

    /// Where the group's offsets are kept (or offsetkeeper.store in --command-config): zookeeper (the default), kafka (Kafka's group store, which needs no --zookeeper), or during a move between them the job's two stores, zookeeper,kafka or kafka,zookeeper: reset, import and delete then write the first, then the second, and describe and export read the first; compare reads both whatever it says
    #[arg(
        long,
        global = true,
        value_name = "zookeeper|kafka|zookeeper,kafka|kafka,zookeeper"
    )]
    pub store: Option<String>,

    /// ZooKeeper folder holding the groups [default: /consumers, or offsetkeeper.base.path in --command-config]
    #[arg(long, global = true, value_name = "PATH")]
    pub base_path: Option<String>,

    /// One deadline for all the ZooKeeper work of the command (default 10000) and, when given, the
    /// deadline of each Kafka operation (else default.api.timeout.ms of --command-config, else
    /// 60000), in milliseconds
    #[arg(long, global = true, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(1..=i32::MAX as u64))]
    pub timeout: Option<u64>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show each partition's stored offset, log start and end, lag and status
    #[command(after_help = describe_help())]
    Describe(DescribeArgs),

    /// List the groups that have offsets under the base path, with their topic count
    #[command(after_help = "Example:\n  offsetkeeper --zookeeper zk:2181 list-groups")]
    ListGroups(ListGroupsArgs),

    /// Move stored offsets (a dry run unless --execute); targets are clamped into [log start, log end], but --from-file offsets above the log end are refused
    #[command(after_help = "\
Exactly one of --to-earliest, --to-latest, --to-offset, --shift-by, --to-datetime, --by-duration,
--from-file, --to-valid. Targets are clamped into [log start, log end], as Kafka's tool does,
except that a --from-file offset above its partition's log end refuses the whole reset, naming
it, unless --allow-beyond-log-end. The plan shows CURRENT-OFFSET, NEW-OFFSET and DELTA per
partition; --execute writes it in one atomic ZooKeeper multi. --export prints the plan as CSV
(topic,partition,offset), which --from-file reads back; --export json as one JSON document
{\"group\":G,\"offsets\":[{\"topic\":T,\"partition\":P,\"offset\":N},...]}, for a Flink job's starting
offsets, for example.

Examples:
  offsetkeeper --zookeeper zk:2181 --bootstrap-servers kafka:9092 --group my-job reset --topic orders:0,1 --shift-by -1000
  offsetkeeper --zookeeper zk:2181 --bootstrap-servers kafka:9092 --group my-job reset --all-topics --by-duration PT2H --execute
  offsetkeeper --zookeeper zk:2181 --bootstrap-servers kafka:9092 --group my-job reset --all-topics --to-valid --execute")]
    Reset(ResetArgs),

    /// Print a group's stored offsets as CSV or as ExportZkOffsets lines
    #[command(after_help = "\
Example:
  offsetkeeper --zookeeper zk:2181 --group my-job export --format zk --output my-job.offsets")]
    Export(ExportArgs),

    /// Write offsets from a CSV or ExportZkOffsets file (a dry run unless --execute)
    #[command(after_help = "\
With --bootstrap-servers (or on Kafka's group store) each offset is checked against its
partition's log end: one above it refuses the whole import, naming it, unless
--allow-beyond-log-end. Without the brokers nothing is checked, with a warning saying so.
Offsets below the log start are written as given; a job's load moves them by
offsetkeeper.on.below.range.

Example:
  offsetkeeper --zookeeper zk:2181 --group my-job import --from-file my-job.offsets --execute")]
    Import(ImportArgs),

    /// Remove stored offsets: of whole topics, of some partitions, or of partitions that no longer exist (a dry run unless --execute)
    #[command(after_help = "\
Refused while the group is active (a running job registered under <base>/<group>/ids).
--stale asks the brokers (--bootstrap-servers) which partitions exist.

Examples:
  offsetkeeper --zookeeper zk:2181 --group my-job delete --topic old-orders --execute
  offsetkeeper --zookeeper zk:2181 --group my-job delete --topic orders --partition 3 --partition 4 --execute
  offsetkeeper --zookeeper zk:2181 --bootstrap-servers kafka:9092 --group my-job delete --stale --execute")]
    Delete(DeleteArgs),

    /// Copy offsets between ZooKeeper and Kafka's own group offsets (a dry run unless --execute)
    #[command(after_help = "\
Copies the offsets as they are. Refused, nothing written, while a job holds the group: an
instance registered under <base>/<group>/ids in ZooKeeper, or a live member of the Kafka group;
a dry run says it would be refused. Stop the job first.

Example:
  offsetkeeper --zookeeper zk:2181 --bootstrap-servers kafka:9092 --group my-job migrate --to-kafka --all-topics --execute")]
    Migrate(MigrateArgs),

    /// Show each partition's offset in ZooKeeper beside its offset in Kafka's group store, with a verdict; exit status 3 when they differ
    #[command(after_help = COMPARE_NOTES)]
    Compare(CompareArgs),
}

/// `--topic` values: a topic, optionally with a list of its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    pub topic: String,
    /// `None`: every partition.
    pub partitions: Option<BTreeSet<i32>>,
}

/// Parses `TOPIC` or `TOPIC:P,P,...`.
pub fn parse_topic_spec(text: &str) -> Result<TopicSpec, String> {
    let (topic, partitions) = match text.split_once(':') {
        Some((topic, list)) => (topic, Some(list)),
        None => (text, None),
    };
    check_name("topic", topic).map_err(reason)?;
    let partitions = match partitions {
        None => None,
        Some(list) => {
            let mut set = BTreeSet::new();
            for item in list.split(',') {
                let partition: i32 = item.trim().parse().map_err(|_| {
                    format!("partition '{item}' of topic '{topic}' is not a number; expected TOPIC or TOPIC:P,P,...")
                })?;
                check_partition(topic, partition).map_err(reason)?;
                set.insert(partition);
            }
            Some(set)
        }
    };
    Ok(TopicSpec {
        topic: topic.to_string(),
        partitions,
    })
}

/// Merges repeated topics: a topic named without partitions covers all of them.
pub fn merge_topic_specs(specs: &[TopicSpec]) -> Vec<TopicSpec> {
    let mut merged: Vec<TopicSpec> = Vec::new();
    for spec in specs {
        match merged.iter_mut().find(|m| m.topic == spec.topic) {
            None => merged.push(spec.clone()),
            Some(existing) => match (&mut existing.partitions, &spec.partitions) {
                (Some(have), Some(more)) => have.extend(more.iter().copied()),
                (have, _) => *have = None,
            },
        }
    }
    merged
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("scope").required(true).args(["topic", "all_topics"])))]
pub struct DescribeArgs {
    /// A topic, optionally with some of its partitions; repeat for more
    #[arg(long, value_name = "TOPIC[:P,P...]", value_parser = parse_topic_spec)]
    pub topic: Vec<TopicSpec>,

    /// Every topic the group has offsets for
    #[arg(long)]
    pub all_topics: bool,

    #[arg(long, value_enum, default_value = "table")]
    pub format: DescribeFormat,
}

#[derive(Debug, Args)]
pub struct ListGroupsArgs {
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

/// Reset modes other than --to-valid, which its policy options cannot go with.
const OTHER_MODES: [&str; 7] = [
    "to_earliest",
    "to_latest",
    "to_offset",
    "shift_by",
    "to_datetime",
    "by_duration",
    "from_file",
];

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("mode").required(true).multiple(false).args([
    "to_earliest", "to_latest", "to_offset", "shift_by", "to_datetime", "by_duration", "from_file", "to_valid",
])))]
pub struct ResetArgs {
    /// A topic, optionally with some of its partitions; repeat for more
    #[arg(long, help_heading = "Partitions", value_name = "TOPIC[:P,P...]", value_parser = parse_topic_spec,
          required_unless_present_any = ["all_topics", "from_file"])]
    pub topic: Vec<TopicSpec>,

    /// Every topic the group has offsets for
    #[arg(long, help_heading = "Partitions", conflicts_with = "topic")]
    pub all_topics: bool,

    /// To each partition's log start offset
    #[arg(long, help_heading = "Reset mode (exactly one)")]
    pub to_earliest: bool,

    /// To each partition's log end offset
    #[arg(long, help_heading = "Reset mode (exactly one)")]
    pub to_latest: bool,

    /// To this offset
    #[arg(long, help_heading = "Reset mode (exactly one)", value_name = "N", value_parser = clap::value_parser!(i64).range(0..))]
    pub to_offset: Option<i64>,

    /// By N records from the stored offset (negative: back)
    #[arg(
        long,
        help_heading = "Reset mode (exactly one)",
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub shift_by: Option<i64>,

    /// To the first record at or after this time
    #[arg(long, help_heading = "Reset mode (exactly one)", value_name = "YYYY-MM-DDTHH:mm:SS[.sss][ZONE]", value_parser = parse_datetime)]
    pub to_datetime: Option<i64>,

    /// To the first record at or after this long ago
    #[arg(long, help_heading = "Reset mode (exactly one)", value_name = "PnDTnHnMnS", value_parser = parse_duration)]
    pub by_duration: Option<i64>,

    /// To the offsets in a CSV (topic,partition,offset) or ExportZkOffsets file; it names the partitions
    #[arg(long, help_heading = "Reset mode (exactly one)", value_name = "FILE", conflicts_with_all = ["topic", "all_topics"])]
    pub from_file: Option<PathBuf>,

    /// To what a job's load would choose: keep offsets in range, correct the others by policy
    #[arg(long, help_heading = "Reset mode (exactly one)")]
    pub to_valid: bool,

    /// With --to-valid: where partitions with no usable offset go (default: auto.offset.reset or earliest)
    #[arg(long, help_heading = "Policies (with --to-valid)", value_name = "earliest|latest|fail", conflicts_with_all = OTHER_MODES,
          value_parser = |v: &str| OnMissing::parse(v).map_err(reason))]
    pub on_missing: Option<OnMissing>,

    /// With --to-valid: where offsets below the log start go
    #[arg(long, help_heading = "Policies (with --to-valid)", value_name = "earliest|fail", conflicts_with_all = OTHER_MODES,
          value_parser = |v: &str| OnBelowRange::parse(v).map_err(reason))]
    pub on_below_range: Option<OnBelowRange>,

    /// With --to-valid: where offsets above the log end go
    #[arg(long, help_heading = "Policies (with --to-valid)", value_name = "earliest|latest|fail", conflicts_with_all = OTHER_MODES,
          value_parser = |v: &str| OnAboveRange::parse(v).map_err(reason))]
    pub on_above_range: Option<OnAboveRange>,

    /// With --to-valid: where the stored offsets of a topic re-created since they were stored go (told by its topic ID, Kafka 2.8+, or by its records' timestamps)
    #[arg(long, help_heading = "Policies (with --to-valid)", value_name = "earliest|latest|fail", conflicts_with_all = OTHER_MODES,
          value_parser = |v: &str| OnRecreated::parse(v).map_err(reason))]
    pub on_recreated: Option<OnRecreated>,

    /// Write the plan (one atomic ZooKeeper multi)
    #[arg(long, help_heading = "Run")]
    pub execute: bool,

    /// Only show the plan; the default without --execute (Kafka's tool spells it out)
    #[arg(long, help_heading = "Run", conflicts_with = "execute")]
    pub dry_run: bool,

    /// With --from-file: write its offsets above their partition's log end as asked, with a warning each (a job started there skips the records produced up to them); without it such a reset is refused. Other modes clamp to the log end
    #[arg(long, help_heading = "Run")]
    pub allow_beyond_log_end: bool,

    /// Print only the planned offsets instead of the table: CSV topic,partition,offset (the default; what --from-file reads) or JSON {"group":G,"offsets":[{"topic":T,"partition":P,"offset":N},...]}
    #[arg(long, help_heading = "Run", value_enum, value_name = "csv|json", num_args = 0..=1,
          default_missing_value = "csv", hide_possible_values = true)]
    pub export: Option<PlanExport>,
}

/// `reset --export`: how the planned offsets print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlanExport {
    /// topic,partition,offset lines
    Csv,
    /// one JSON document
    Json,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A topic, optionally with some of its partitions; repeat for more (default: every topic)
    #[arg(long, value_name = "TOPIC[:P,P...]", value_parser = parse_topic_spec)]
    pub topic: Vec<TopicSpec>,

    #[arg(long, value_enum, default_value = "csv")]
    pub format: OffsetFormat,

    /// Write to this file instead of stdout
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The file to read
    #[arg(long, value_name = "FILE")]
    pub from_file: PathBuf,

    /// The file's format (default: ExportZkOffsets lines if the first line starts with '/', else CSV)
    #[arg(long, value_enum)]
    pub format: Option<OffsetFormat>,

    /// Write the offsets (one atomic ZooKeeper multi)
    #[arg(long)]
    pub execute: bool,

    /// Only show what would change; the default without --execute
    #[arg(long, conflicts_with = "execute")]
    pub dry_run: bool,

    /// Write offsets above their partition's log end as asked, with a warning each (a job started there skips the records produced up to them); without it such an import is refused when the brokers are given
    #[arg(long)]
    pub allow_beyond_log_end: bool,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("what").required(true).args(["topic", "stale"]).multiple(true)))]
pub struct DeleteArgs {
    /// A topic whose stored offsets go; repeat for more (with --stale: the topics to look at, default every stored topic)
    #[arg(long, value_name = "TOPIC",
          value_parser = |v: &str| check_name("topic", v).map(|_| v.to_string()).map_err(reason))]
    pub topic: Vec<String>,

    /// Only this partition of the one --topic; repeat for more (the topic folder stays)
    #[arg(long, value_name = "N", requires = "topic", conflicts_with = "stale",
          value_parser = clap::value_parser!(i32).range(0..))]
    pub partition: Vec<i32>,

    /// Only the offsets stored for partitions that no longer exist on the brokers (a topic re-created with fewer partitions)
    #[arg(long)]
    pub stale: bool,

    /// Delete (one atomic ZooKeeper multi)
    #[arg(long)]
    pub execute: bool,

    /// Only show what would change; the default without --execute
    #[arg(long, conflicts_with = "execute")]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("scope").required(true).args(["topic", "all_topics"])))]
pub struct CompareArgs {
    /// A topic, optionally with some of its partitions; repeat for more
    #[arg(long, value_name = "TOPIC[:P,P...]", value_parser = parse_topic_spec)]
    pub topic: Vec<TopicSpec>,

    /// Every topic the group has offsets for in either store
    #[arg(long)]
    pub all_topics: bool,

    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("direction").required(true).args(["to_kafka", "from_kafka"])))]
#[command(group(ArgGroup::new("scope").required(true).args(["topic", "all_topics"])))]
pub struct MigrateArgs {
    /// Copy ZooKeeper's offsets into the Kafka group's
    #[arg(long)]
    pub to_kafka: bool,

    /// Copy the Kafka group's offsets into ZooKeeper
    #[arg(long)]
    pub from_kafka: bool,

    /// A topic, optionally with some of its partitions; repeat for more
    #[arg(long, value_name = "TOPIC[:P,P...]", value_parser = parse_topic_spec)]
    pub topic: Vec<TopicSpec>,

    /// Every topic stored in ZooKeeper (--to-kafka) or on the cluster (--from-kafka)
    #[arg(long)]
    pub all_topics: bool,

    /// The Kafka group's name, when it is not --group
    #[arg(long, value_name = "GROUP")]
    pub kafka_group: Option<String>,

    /// Write the offsets
    #[arg(long)]
    pub execute: bool,

    /// Only show what would change; the default without --execute
    #[arg(long, conflicts_with = "execute")]
    pub dry_run: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("offsetkeeper").chain(args.iter().copied()))
    }

    fn set(items: &[i32]) -> Option<BTreeSet<i32>> {
        Some(items.iter().copied().collect())
    }

    #[test]
    fn the_command_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// docs/cli-reference.md is the help that clap renders from these definitions, so that it
    /// cannot go stale; `OFFSETKEEPER_UPDATE_DOCS=1 cargo test -p offsetkeeper-cli` rewrites it.
    #[test]
    fn the_cli_reference_page_is_the_rendered_help() {
        let mut command = Cli::command();
        command.build();
        let mut page = String::from(
            "# CLI reference\n\n<!-- Generated from rust/cli/src/args.rs: OFFSETKEEPER_UPDATE_DOCS=1 cargo test -p offsetkeeper-cli rewrites this page. -->\n\nWhat `offsetkeeper --help` and `offsetkeeper <command> --help` print. The guide to the\ncommands is [cli.md](cli.md).\n",
        );
        let mut section = |title: &str, help: String| {
            page.push_str(&format!(
                "\n## {title}\n\n```text\n{}\n```\n",
                help.trim_end()
            ));
        };
        section("offsetkeeper", command.render_long_help().to_string());
        let names: Vec<String> = command
            .get_subcommands()
            .filter(|sub| sub.get_name() != "help")
            .map(|sub| sub.get_name().to_string())
            .collect();
        for name in names {
            let sub = command
                .find_subcommand_mut(&name)
                .expect("a subcommand listed a moment ago");
            section(
                &format!("offsetkeeper {name}"),
                sub.render_long_help().to_string(),
            );
        }
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli-reference.md");
        if std::env::var_os("OFFSETKEEPER_UPDATE_DOCS").is_some() {
            std::fs::write(&path, &page).expect("docs/cli-reference.md is writable");
        }
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            current == page,
            "docs/cli-reference.md differs from the CLI's help; run OFFSETKEEPER_UPDATE_DOCS=1 cargo test -p offsetkeeper-cli the_cli_reference_page"
        );
    }

    #[test]
    fn topic_specs() {
        assert_eq!(
            parse_topic_spec("orders"),
            Ok(TopicSpec {
                topic: "orders".into(),
                partitions: None
            })
        );
        assert_eq!(
            parse_topic_spec("orders:2,0, 1,2").map(|s| s.partitions),
            Ok(set(&[0, 1, 2]))
        );
        for (text, needle) in [
            ("orders:", "partition '' of topic 'orders'"),
            ("orders:a", "partition 'a'"),
            ("orders:-1", "partition -1"),
            ("a/b", "topic name 'a/b'"),
            (":1", "topic name ''"),
        ] {
            let message = parse_topic_spec(text).unwrap_err();
            assert!(message.contains(needle), "{text}: {message}");
        }
    }

    #[test]
    fn repeated_topics_merge() {
        let specs: Vec<TopicSpec> = ["a:1", "b", "a:0", "b:3", "c:1"]
            .iter()
            .map(|s| parse_topic_spec(s).unwrap())
            .collect();
        let merged = merge_topic_specs(&specs);
        let shown: Vec<(&str, Option<BTreeSet<i32>>)> = merged
            .iter()
            .map(|s| (s.topic.as_str(), s.partitions.clone()))
            .collect();
        assert_eq!(
            shown,
            vec![("a", set(&[0, 1])), ("b", None), ("c", set(&[1]))]
        );
    }

    #[test]
    fn shared_options_go_before_or_after_the_subcommand() {
        let before = parse(&[
            "--zookeeper",
            "z:1",
            "--group",
            "g",
            "describe",
            "--all-topics",
        ])
        .unwrap();
        let after = parse(&[
            "describe",
            "--all-topics",
            "--zookeeper",
            "z:1",
            "--group",
            "g",
        ])
        .unwrap();
        for cli in [before, after] {
            assert_eq!(cli.connection.zookeeper.as_deref(), Some("z:1"));
            assert_eq!(cli.connection.group.as_deref(), Some("g"));
            assert_eq!(cli.connection.base_path, None);
            assert_eq!(cli.connection.timeout, None);
        }
    }

    #[test]
    fn reset_export_is_csv_unless_json_is_named() {
        let export = |extra: &[&str]| match parse(
            &[&["reset", "--all-topics", "--to-valid"], extra].concat(),
        ) {
            Ok(Cli {
                command: Command::Reset(args),
                ..
            }) => Ok(args.export),
            Ok(other) => panic!("{other:?}"),
            Err(err) => Err(err.to_string()),
        };
        assert_eq!(export(&[]), Ok(None));
        assert_eq!(export(&["--export"]), Ok(Some(PlanExport::Csv)));
        assert_eq!(
            export(&["--export", "--dry-run"]),
            Ok(Some(PlanExport::Csv))
        );
        assert_eq!(export(&["--export", "json"]), Ok(Some(PlanExport::Json)));
        assert_eq!(export(&["--export=json"]), Ok(Some(PlanExport::Json)));
        assert_eq!(export(&["--export", "csv"]), Ok(Some(PlanExport::Csv)));
        let message = export(&["--export", "yaml"]).unwrap_err();
        assert!(message.contains("'yaml'"), "{message}");
    }

    #[test]
    fn describe_formats() {
        for (name, format) in [
            ("table", DescribeFormat::Table),
            ("prometheus", DescribeFormat::Prometheus),
        ] {
            match parse(&["describe", "--all-topics", "--format", name]).map(|c| c.command) {
                Ok(Command::Describe(args)) => assert_eq!(args.format, format),
                other => panic!("{other:?}"),
            }
        }
        let message = parse(&["list-groups", "--format", "prometheus"])
            .unwrap_err()
            .to_string();
        assert!(message.contains("'prometheus'"), "{message}");
    }

    #[test]
    fn reset_takes_exactly_one_mode_and_one_scope() {
        let ok = parse(&["reset", "--topic", "t:0", "--shift-by", "-5"]).unwrap();
        match ok.command {
            Command::Reset(args) => {
                assert_eq!(args.shift_by, Some(-5));
                assert!(!args.execute);
            }
            other => panic!("{other:?}"),
        }
        assert!(parse(&["reset", "--from-file", "x.csv"]).is_ok());
        assert!(parse(&[
            "reset",
            "--all-topics",
            "--to-valid",
            "--on-missing",
            "latest"
        ])
        .is_ok());
        for (args, needle) in [
            (&["reset", "--topic", "t"][..], "required"),
            (&["reset", "--to-earliest"][..], "--topic"),
            (
                &["reset", "--topic", "t", "--to-earliest", "--to-latest"][..],
                "cannot be used with",
            ),
            (
                &["reset", "--topic", "t", "--all-topics", "--to-latest"][..],
                "cannot be used with",
            ),
            (
                &["reset", "--topic", "t", "--from-file", "f"][..],
                "cannot be used with",
            ),
            (&["reset", "--topic", "t", "--to-offset", "-3"][..], "-3"),
            (
                &["reset", "--topic", "t", "--to-datetime", "soon"][..],
                "'soon' is not ISO-8601",
            ),
            (
                &["reset", "--topic", "t", "--by-duration", "2h"][..],
                "'2h'",
            ),
            (
                &[
                    "reset",
                    "--topic",
                    "t",
                    "--to-latest",
                    "--on-missing",
                    "latest",
                ][..],
                "cannot be used with",
            ),
            (
                &[
                    "reset",
                    "--topic",
                    "t",
                    "--to-valid",
                    "--on-missing",
                    "oldest",
                ][..],
                "'oldest'",
            ),
            (&["describe"][..], "required"),
            (&["compare"][..], "required"),
            (
                &["compare", "--topic", "t", "--all-topics"][..],
                "cannot be used with",
            ),
            (
                &["compare", "--all-topics", "--format", "prometheus"][..],
                "'prometheus'",
            ),
            (&["migrate", "--all-topics"][..], "required"),
            (
                &["migrate", "--to-kafka", "--from-kafka", "--all-topics"][..],
                "cannot be used with",
            ),
            (&["delete"][..], "--topic"),
            (&["--timeout", "0", "list-groups"][..], "0"),
        ] {
            let message = parse(args).unwrap_err().to_string();
            assert!(message.contains(needle), "{args:?}: {message}");
        }
    }
}
