//! `describe --format prometheus`: Prometheus' text exposition format 0.0.4, for node_exporter's
//! textfile collector or any scraper of files.
//!
//! The value families carry only group, topic and partition, so that a series keeps its
//! identity when a partition's status changes (an alert's `for:` is not restarted by it); the
//! status is a label of `offsetkeeper_partition_status` alone, value 1. A value that is not
//! known (nothing usable stored, a partition the brokers no longer have) has no sample.

use std::fmt::Write;

/// One partition as `describe` found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub committed: Option<i64>,
    pub log_start: Option<i64>,
    pub log_end: Option<i64>,
    pub lag: Option<i64>,
    /// snake_case: ok, below_range, above_range, missing, corrupt, partition_gone, recreated.
    pub status: &'static str,
}

/// The families in the order they are written: name, help, and the value of a sample.
type Family = (&'static str, &'static str, fn(&Sample) -> Option<i64>);

const FAMILIES: [Family; 5] = [
    (
        "offsetkeeper_committed_offset",
        "Offset stored in ZooKeeper (the next record the job reads); no sample when none usable is stored.",
        |s| s.committed,
    ),
    (
        "offsetkeeper_log_start_offset",
        "First offset the brokers still have; no sample for a partition that no longer exists.",
        |s| s.log_start,
    ),
    (
        "offsetkeeper_log_end_offset",
        "Offset of the next record written; no sample for a partition that no longer exists.",
        |s| s.log_end,
    ),
    (
        "offsetkeeper_lag",
        "Log end offset minus committed offset (negative above range); no sample when either is unknown.",
        |s| s.lag,
    ),
    (
        "offsetkeeper_partition_status",
        "1 for the partition's status: ok, below_range, above_range, missing, corrupt, partition_gone or recreated.",
        |_| Some(1),
    ),
];

const STATUS_FAMILY: &str = "offsetkeeper_partition_status";

/// The exposition text of one group's partitions: every family's `# HELP` and `# TYPE gauge`
/// lines, even with no sample, then its samples in the order given.
pub fn render(group: &str, samples: &[Sample]) -> String {
    let mut out = String::new();
    for (name, help, value_of) in FAMILIES {
        // Writing to a String cannot fail.
        let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(out, "# TYPE {name} gauge");
        for sample in samples {
            let Some(value) = value_of(sample) else {
                continue;
            };
            let _ = write!(
                out,
                "{name}{{group=\"{}\",topic=\"{}\",partition=\"{}\"",
                escape_label(group),
                escape_label(sample.topic),
                sample.partition
            );
            if name == STATUS_FAMILY {
                let _ = write!(out, ",status=\"{}\"", escape_label(sample.status));
            }
            let _ = writeln!(out, "}} {value}");
        }
    }
    out
}

/// A label value: backslash, double quote and line feed escaped, as the format requires.
fn escape_label(value: &str) -> String {
    escape(value, true)
}

/// A help text: backslash and line feed escaped (a quote is plain there).
fn escape_help(text: &str) -> String {
    escape(text, false)
}

fn escape(text: &str, quote: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if quote => out.push_str("\\\""),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(partition: i32, status: &'static str) -> Sample<'static> {
        Sample {
            topic: "orders",
            partition,
            committed: Some(4),
            log_start: Some(0),
            log_end: Some(10),
            lag: Some(6),
            status,
        }
    }

    fn samples_of<'t>(text: &'t str, family: &str) -> Vec<&'t str> {
        text.lines()
            .filter(|line| line.starts_with(&format!("{family}{{")))
            .collect()
    }

    #[test]
    fn every_family_has_help_and_type_then_its_samples() {
        let gone = Sample {
            committed: Some(3),
            log_start: None,
            log_end: None,
            lag: None,
            ..sample(9, "partition_gone")
        };
        let missing = Sample {
            committed: None,
            lag: None,
            ..sample(3, "missing")
        };
        let text = render("billing", &[sample(0, "ok"), missing, gone]);
        let expected = "\
# HELP offsetkeeper_committed_offset Offset stored in ZooKeeper (the next record the job reads); no sample when none usable is stored.
# TYPE offsetkeeper_committed_offset gauge
offsetkeeper_committed_offset{group=\"billing\",topic=\"orders\",partition=\"0\"} 4
offsetkeeper_committed_offset{group=\"billing\",topic=\"orders\",partition=\"9\"} 3
# HELP offsetkeeper_log_start_offset First offset the brokers still have; no sample for a partition that no longer exists.
# TYPE offsetkeeper_log_start_offset gauge
offsetkeeper_log_start_offset{group=\"billing\",topic=\"orders\",partition=\"0\"} 0
offsetkeeper_log_start_offset{group=\"billing\",topic=\"orders\",partition=\"3\"} 0
# HELP offsetkeeper_log_end_offset Offset of the next record written; no sample for a partition that no longer exists.
# TYPE offsetkeeper_log_end_offset gauge
offsetkeeper_log_end_offset{group=\"billing\",topic=\"orders\",partition=\"0\"} 10
offsetkeeper_log_end_offset{group=\"billing\",topic=\"orders\",partition=\"3\"} 10
# HELP offsetkeeper_lag Log end offset minus committed offset (negative above range); no sample when either is unknown.
# TYPE offsetkeeper_lag gauge
offsetkeeper_lag{group=\"billing\",topic=\"orders\",partition=\"0\"} 6
# HELP offsetkeeper_partition_status 1 for the partition's status: ok, below_range, above_range, missing, corrupt, partition_gone or recreated.
# TYPE offsetkeeper_partition_status gauge
offsetkeeper_partition_status{group=\"billing\",topic=\"orders\",partition=\"0\",status=\"ok\"} 1
offsetkeeper_partition_status{group=\"billing\",topic=\"orders\",partition=\"3\",status=\"missing\"} 1
offsetkeeper_partition_status{group=\"billing\",topic=\"orders\",partition=\"9\",status=\"partition_gone\"} 1
";
        assert_eq!(text, expected);
    }

    #[test]
    fn no_partitions_still_declares_the_families() {
        let text = render("g", &[]);
        assert_eq!(text.lines().count(), 10);
        assert!(text.lines().all(|line| line.starts_with('#')), "{text}");
    }

    #[test]
    fn negative_lag_is_written_as_is() {
        let above = Sample {
            committed: Some(50),
            lag: Some(-40),
            ..sample(2, "above_range")
        };
        let text = render("g", &[above]);
        assert_eq!(
            samples_of(&text, "offsetkeeper_lag"),
            vec!["offsetkeeper_lag{group=\"g\",topic=\"orders\",partition=\"2\"} -40"]
        );
    }

    #[test]
    fn label_values_escape_backslash_quote_and_newline() {
        assert_eq!(escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        assert_eq!(escape_label("plain-name_1.x"), "plain-name_1.x");
        assert_eq!(escape_help("say \"x\" \\ y\nz"), "say \"x\" \\\\ y\\nz");
        let odd = Sample {
            topic: "t\"1",
            ..sample(0, "ok")
        };
        let text = render("g\\\n", &[odd]);
        assert_eq!(
            samples_of(&text, "offsetkeeper_lag"),
            vec!["offsetkeeper_lag{group=\"g\\\\\\n\",topic=\"t\\\"1\",partition=\"0\"} 6"]
        );
        // Every line stays one sample or one comment.
        assert_eq!(text.lines().count(), 15);
    }
}
