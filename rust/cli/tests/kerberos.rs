//! The built `offsetkeeper` binary over Kerberos, against the Kerberos test cluster
//! (`cluster.sh start-kerberos`: a Kerby KDC, a ZooKeeper that requires SASL GSSAPI on every
//! session, a broker whose SASL_PLAINTEXT listener takes only GSSAPI), through the system's
//! GSS-API (MIT krb5): a ticket cache as kinit leaves it, keytabs in `sasl.jaas.config` and in
//! a JAAS file, and the errors without a ticket. Offsets are written by the CLI and read back
//! with it: the cluster's ZooKeeper lets no one in without Kerberos.

#[path = "../../core/tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{kerberos_cluster, unique, Kafka, KerberosCluster};

#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// A scratch directory of one test: its copy of the ticket cache (libkrb5 adds service
/// tickets to a cache it uses) and its command configs.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(unique(name));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write");
        path.to_str().expect("utf-8 path").to_string()
    }

    /// A copy of the client's ticket cache (a TGT from the KDC's start, or `cluster.sh kinit`).
    fn ticket_cache(&self, krb: &KerberosCluster) -> String {
        let copy = self.path("krb5cc");
        std::fs::copy(krb.get("CLIENT_CCACHE"), &copy).expect("copy the ticket cache");
        format!("FILE:{}", copy.display())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs the binary against the Kerberos cluster's ZooKeeper and SASL listener, with the
/// cluster's krb5.conf, the command config and the ticket cache `ccache`.
fn run(krb: &KerberosCluster, config: &str, ccache: &str, args: &[&str]) -> Run {
    run_with(krb, krb.get("KRB5_CONF"), "20000", config, ccache, args)
}

/// [`run`] with another krb5.conf and `--timeout`.
fn run_with(
    krb: &KerberosCluster,
    krb5_conf: &str,
    timeout_ms: &str,
    config: &str,
    ccache: &str,
    args: &[&str],
) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_offsetkeeper"))
        .args([
            "--zookeeper",
            krb.get("ZK"),
            "--bootstrap-servers",
            krb.get("KAFKA_SASL_PLAINTEXT"),
            "--command-config",
            config,
            "--timeout",
            timeout_ms,
        ])
        .args(args)
        .env_remove("RUST_LOG")
        .env("KRB5_CONFIG", krb5_conf)
        .env("KRB5CCNAME", ccache)
        .output()
        .expect("run offsetkeeper");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn ok(run: Run) -> Run {
    assert_eq!(run.code, 0, "expected success: {run:?}");
    run
}

/// Asserts a failure with one stderr line holding every needle.
fn fails(run: Run, code: i32, needles: &[&str]) -> String {
    assert_eq!(run.code, code, "exit status: {run:?}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one stderr line expected: {run:?}");
    for needle in needles {
        assert!(
            lines[0].contains(needle),
            "stderr should contain {needle:?}: {run:?}"
        );
    }
    lines[0].to_string()
}

/// A topic of `partitions` partitions with `records` records each, made over the broker's
/// PLAINTEXT listener.
fn topic(krb: &KerberosCluster, partitions: i32, records: usize) -> String {
    let kafka = Kafka::new(&krb.plaintext());
    let topic = unique("krb-cli");
    kafka.create_topic(&topic, partitions);
    for p in 0..partitions {
        kafka.produce(&topic, p, records);
    }
    topic
}

/// The stored offsets `describe --format json` shows, by partition.
fn described(
    krb: &KerberosCluster,
    config: &str,
    ccache: &str,
    group: &str,
    topic: &str,
) -> Vec<Option<i64>> {
    let run = ok(run(
        krb,
        config,
        ccache,
        &[
            "--group", group, "describe", "--topic", topic, "--format", "json",
        ],
    ));
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let mut rows: Vec<(i64, Option<i64>)> = json["partitions"]
        .as_array()
        .expect("partitions")
        .iter()
        .map(|p| {
            (
                p["partition"].as_i64().expect("partition"),
                p["current_offset"].as_i64(),
            )
        })
        .collect();
    rows.sort();
    rows.into_iter().map(|(_, offset)| offset).collect()
}

/// Kafka over SASL_PLAINTEXT with Kerberos's defaults, ZooKeeper with
/// `zookeeper.sasl.mechanism=GSSAPI`: both from the ticket cache KRB5CCNAME names.
const TICKET_CACHE_CONFIG: &str = "security.protocol=SASL_PLAINTEXT\n\
sasl.kerberos.service.name=kafka\n\
zookeeper.sasl.mechanism=GSSAPI\n";

#[test]
fn describe_and_reset_over_kerberos_from_the_ticket_cache() {
    let krb = kerberos_cluster();
    let scratch = Scratch::new("krb-cache");
    let ccache = scratch.ticket_cache(&krb);
    let config = scratch.write("cache.properties", TICKET_CACHE_CONFIG);
    let topic = topic(&krb, 2, 5);
    let group = unique("krb-cli-group");

    assert_eq!(
        described(&krb, &config, &ccache, &group, &topic),
        [None, None]
    );
    let dry = ok(run(
        &krb,
        &config,
        &ccache,
        &[
            "--group",
            &group,
            "reset",
            "--topic",
            &topic,
            "--to-offset",
            "3",
        ],
    ));
    assert!(dry.stderr.contains("dry run"), "{dry:?}");
    assert_eq!(
        described(&krb, &config, &ccache, &group, &topic),
        [None, None]
    );
    ok(run(
        &krb,
        &config,
        &ccache,
        &[
            "--group",
            &group,
            "reset",
            "--topic",
            &topic,
            "--to-offset",
            "3",
            "--execute",
        ],
    ));
    assert_eq!(
        described(&krb, &config, &ccache, &group, &topic),
        [Some(3), Some(3)]
    );
    ok(run(
        &krb,
        &config,
        &ccache,
        &[
            "--group",
            &group,
            "reset",
            "--topic",
            &topic,
            "--to-latest",
            "--execute",
        ],
    ));
    assert_eq!(
        described(&krb, &config, &ccache, &group, &topic),
        [Some(5), Some(5)]
    );
    // ZooKeeper alone (list-groups, export) over Kerberos too.
    let groups = ok(run(&krb, &config, &ccache, &["list-groups"]));
    assert!(groups.stdout.contains(&group), "{groups:?}");
    let export = ok(run(&krb, &config, &ccache, &["--group", &group, "export"]));
    assert_eq!(export.stdout, format!("{topic},0,5\n{topic},1,5\n"));
    // migrate's consumer groups go through librdkafka, which has no Kerberos here: refused
    // before anything is asked.
    fails(
        run(
            &krb,
            &config,
            &ccache,
            &[
                "--group",
                &group,
                "migrate",
                "--to-kafka",
                "--topic",
                &topic,
            ],
        ),
        2,
        &[
            "migrate reads and commits Kafka consumer groups through librdkafka",
            "GSSAPI",
        ],
    );
}

#[test]
fn keytabs_in_sasl_jaas_config_and_a_jaas_file_leave_the_ticket_cache_alone() {
    let krb = kerberos_cluster();
    let scratch = Scratch::new("krb-keytab");
    // No ticket cache at all: the keytabs must do, and the cache is not created.
    let absent = scratch.path("no-such-cache");
    let ccache = format!("FILE:{}", absent.display());
    let config = scratch.write(
        "keytab.properties",
        &format!(
            "security.protocol=SASL_PLAINTEXT\n\
             sasl.kerberos.service.name=kafka\n\
             sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required \\\n  \
             useKeyTab=true storeKey=true keyTab=\"{}\" principal=\"{}\";\n\
             java.security.auth.login.config={}\n",
            krb.get("CLIENT_KEYTAB"),
            krb.get("CLIENT_PRINCIPAL"),
            krb.get("CLIENT_JAAS"),
        ),
    );
    let topic = topic(&krb, 1, 4);
    let group = unique("krb-cli-keytab");
    ok(run(
        &krb,
        &config,
        &ccache,
        &[
            "--group",
            &group,
            "reset",
            "--topic",
            &topic,
            "--to-offset",
            "2",
            "--execute",
        ],
    ));
    assert_eq!(described(&krb, &config, &ccache, &group, &topic), [Some(2)]);
    ok(run(
        &krb,
        &config,
        &ccache,
        &[
            "--group",
            &group,
            "reset",
            "--topic",
            &topic,
            "--to-earliest",
            "--execute",
        ],
    ));
    assert_eq!(described(&krb, &config, &ccache, &group, &topic), [Some(0)]);
    assert!(!absent.exists(), "the ticket cache was created");

    // Another JAAS section (zookeeper.sasl.clientconfig), another principal's keytab: it reads
    // the open nodes too.
    let other = scratch.write(
        "other.properties",
        &format!(
            "security.protocol=SASL_PLAINTEXT\n\
             sasl.kerberos.service.name=kafka\n\
             sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required \\\n  \
             useKeyTab=true keyTab=\"{}\" principal=\"{}\";\n\
             java.security.auth.login.config={}\n\
             zookeeper.sasl.clientconfig=OtherClient\n",
            krb.get("OTHER_KEYTAB"),
            krb.get("OTHER_PRINCIPAL"),
            krb.get("CLIENT_JAAS"),
        ),
    );
    assert_eq!(described(&krb, &other, &ccache, &group, &topic), [Some(0)]);
}

#[test]
fn without_a_ticket_the_error_names_the_principals_and_nothing_is_written() {
    let krb = kerberos_cluster();
    let scratch = Scratch::new("krb-noticket");
    let empty = format!("FILE:{}", scratch.path("empty-cache").display());
    let cache = scratch.ticket_cache(&krb);
    let topic = topic(&krb, 1, 4);
    let group = unique("krb-cli-noticket");
    let with_cache = scratch.write("cache.properties", TICKET_CACHE_CONFIG);
    ok(run(
        &krb,
        &with_cache,
        &cache,
        &[
            "--group",
            &group,
            "reset",
            "--topic",
            &topic,
            "--to-offset",
            "1",
            "--execute",
        ],
    ));

    // ZooKeeper first: its login fails, naming its principal and Kerberos' reason.
    let message = fails(
        run(&krb, &with_cache, &empty, &["--group", &group, "reset", "--topic", &topic, "--to-offset", "3", "--execute"]),
        1,
        &[
            "SASL GSSAPI login failed: Kerberos authentication to ZooKeeper as zookeeper/localhost failed",
            "no usable credentials in the default ticket cache",
            "No Kerberos credentials available",
            // Where the cache is and what it holds, in the jar's words.
            &format!(
                "the ticket cache {} (KRB5CCNAME) does not exist",
                scratch.path("empty-cache").display()
            ),
        ],
    );
    assert!(
        message.contains(&scratch.path("empty-cache").display().to_string()),
        "{message}"
    );

    // Both from their keytabs (the JAAS file's Client and KafkaClient sections), to read back.
    let keytabs = scratch.write(
        "keytabs.properties",
        &format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.kerberos.service.name=kafka\njava.security.auth.login.config={}\n",
            krb.get("CLIENT_JAAS")
        ),
    );
    // ZooKeeper from its keytab, Kafka from the empty cache named in sasl.jaas.config with the
    // client's principal: Kafka's login fails, naming both principals.
    let kafka_cache = scratch.write(
        "kafka-cache.properties",
        &format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.kerberos.service.name=kafka\njava.security.auth.login.config={}\n\
             sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true ticketCache=\"{}\" principal=\"{}\";\n",
            krb.get("CLIENT_JAAS"),
            scratch.path("empty-cache").display(),
            krb.get("CLIENT_PRINCIPAL"),
        ),
    );
    fails(
        run(
            &krb,
            &kafka_cache,
            &empty,
            &[
                "--group",
                &group,
                "reset",
                "--topic",
                &topic,
                "--to-offset",
                "3",
                "--execute",
            ],
        ),
        1,
        &[
            "SASL GSSAPI login failed",
            &format!(
                "Kerberos authentication of {} to Kafka as kafka/localhost failed",
                krb.get("CLIENT_PRINCIPAL")
            ),
            "sasl.jaas.config: no usable credentials in ticket cache",
            "No credentials cache found",
        ],
    );
    // Nothing was written: the offset is still 1.
    assert_eq!(described(&krb, &keytabs, &empty, &group, &topic), [Some(1)]);
    assert!(!Path::new(&scratch.path("empty-cache")).exists());
}

/// A KDC that takes connections and never answers, with a krb5.conf as MIT users write it (no
/// timeouts of its own): the command ends at its `--timeout`, its error naming the login, the
/// KDC krb5.conf gives and the deadline, not the healthy ZooKeeper or brokers.
#[test]
fn a_kdc_that_never_answers_is_named_when_the_deadline_comes() {
    let krb = kerberos_cluster();
    let scratch = Scratch::new("krb-silent-kdc");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    // Takes connections and holds them, unanswered, until the test process ends.
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().map_while(Result::ok).collect();
        drop(held);
    });
    let principal = krb.get("CLIENT_PRINCIPAL");
    let realm = principal.rsplit_once('@').expect("principal@REALM").1;
    let conf = scratch.write(
        "krb5.conf",
        &format!(
            "[libdefaults]\n  default_realm = {realm}\n  udp_preference_limit = 1\n  dns_lookup_kdc = false\n  dns_lookup_realm = false\n\
             [realms]\n  {realm} = {{\n    kdc = 127.0.0.1:{port}\n  }}\n"
        ),
    );
    // Both services from their keytabs (the JAAS file's Client and KafkaClient sections): a
    // keytab login asks the KDC.
    let keytabs = scratch.write(
        "keytabs.properties",
        &format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.kerberos.service.name=kafka\njava.security.auth.login.config={}\n",
            krb.get("CLIENT_JAAS")
        ),
    );
    let empty = format!("FILE:{}", scratch.path("empty-cache").display());
    let started = std::time::Instant::now();
    let message = fails(
        run_with(
            &krb,
            &conf,
            "3000",
            &keytabs,
            &empty,
            &["--group", &unique("g"), "describe", "--topic", &unique("t")],
        ),
        1,
        &[
            &format!("Kerberos login of {principal} ("),
            " did not finish within ",
            &format!(
                "ms: no answer from the KDC at 127.0.0.1:{port} (realm {realm}, krb5.conf {conf})"
            ),
        ],
    );
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_secs(8),
        "took {took:?}: {message}"
    );
}

#[test]
fn an_unknown_service_principal_is_named_with_kerberos_reason() {
    let krb = kerberos_cluster();
    let scratch = Scratch::new("krb-unknown");
    let ccache = scratch.ticket_cache(&krb);
    let config = scratch.write(
        "unknown.properties",
        "security.protocol=SASL_PLAINTEXT\nsasl.kerberos.service.name=notkafka\nzookeeper.sasl.mechanism=GSSAPI\n",
    );
    let topic = topic(&krb, 1, 1);
    fails(
        run(
            &krb,
            &config,
            &ccache,
            &[
                "--group",
                &unique("krb-unknown"),
                "describe",
                "--topic",
                &topic,
            ],
        ),
        1,
        &[
            "to Kafka as notkafka/localhost failed",
            "Server notkafka/localhost@EXAMPLE.COM not found in Kerberos database",
        ],
    );
}
