//! The file formats the CLI reads and writes: offset CSV (`topic,partition,offset`, as
//! `kafka-consumer-groups --reset-offsets --export` writes it), the line format of Kafka's old
//! ExportZkOffsets/ImportZkOffsets (`/consumers/<group>/offsets/<topic>/<partition>:<offset>`),
//! and Java properties files for `--command-config`.
//!
//! Every parse error names its 1-based line number; none repeats a property's value.

use std::collections::HashMap;

use offsetkeeper::names::{check_name, check_partition};
use offsetkeeper::zookeeper::layout::{parse_offset_path, GroupLayout};
use offsetkeeper::TopicPartition;

use crate::reason;

/// One offset read from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub partition: TopicPartition,
    pub offset: i64,
    /// 1-based line number, for messages.
    pub line: usize,
}

/// The two offset file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OffsetFormat {
    /// topic,partition,offset
    Csv,
    /// <base>/<group>/offsets/<topic>/<partition>:<offset>, as Kafka's ExportZkOffsets wrote it
    Zk,
}

/// The header line a CSV file may start with.
const CSV_HEADER: &str = "topic,partition,offset";

/// Lines that carry data: not blank and not a `#` comment, with their 1-based numbers.
fn data_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
}

/// The format of a file's first data line: a ZooKeeper path starts with '/'.
pub fn detect_format(text: &str) -> OffsetFormat {
    match data_lines(text).next() {
        Some((_, line)) if line.starts_with('/') => OffsetFormat::Zk,
        _ => OffsetFormat::Csv,
    }
}

/// Parses `topic,partition,offset` lines. A `topic,partition,offset` header, blank lines and
/// `#` comments are skipped.
pub fn parse_csv(text: &str) -> Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    for (number, line) in data_lines(text) {
        if entries.is_empty() && line.replace(' ', "").eq_ignore_ascii_case(CSV_HEADER) {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let [topic, partition, offset] = fields[..] else {
            return Err(format!(
                "line {number}: expected 3 fields topic,partition,offset, found {}",
                fields.len()
            ));
        };
        entries.push(entry(number, topic, partition, offset)?);
    }
    finish(entries)
}

/// Parses ExportZkOffsets lines, `<base>/<group>/offsets/<topic>/<partition>:<offset>`. Every
/// path must be under `base_path` and belong to `group`.
pub fn parse_zk_lines(text: &str, base_path: &str, group: &str) -> Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    for (number, line) in data_lines(text) {
        let (path, offset) = line
            .rsplit_once(':')
            .ok_or_else(|| format!("line {number}: expected <path>:<offset>, found no ':'"))?;
        let parsed = parse_offset_path(base_path, path.trim()).ok_or_else(|| {
            format!(
                "line {number}: '{}' is not a path {base_path}/<group>/offsets/<topic>/<partition>",
                path.trim()
            )
        })?;
        if parsed.group != group {
            return Err(format!(
                "line {number}: the path is of group '{}', not of --group '{group}'; import into another group from CSV",
                parsed.group
            ));
        }
        entries.push(entry(
            number,
            &parsed.topic,
            &parsed.partition.to_string(),
            offset,
        )?);
    }
    finish(entries)
}

fn entry(number: usize, topic: &str, partition: &str, offset: &str) -> Result<Entry, String> {
    let at = |message: String| format!("line {number}: {message}");
    check_name("topic", topic).map_err(|err| at(reason(err)))?;
    let partition: i32 = partition.trim().parse().map_err(|_| {
        at(format!(
            "partition '{partition}' is not a number; allowed: 0 or more"
        ))
    })?;
    check_partition(topic, partition).map_err(|err| at(reason(err)))?;
    let offset = offset.trim();
    let offset: i64 = offset
        .parse()
        .ok()
        .filter(|offset| *offset >= 0)
        .ok_or_else(|| {
            at(format!(
                "offset '{offset}' is not allowed; allowed: 0 or more"
            ))
        })?;
    Ok(Entry {
        partition: TopicPartition::new(topic, partition),
        offset,
        line: number,
    })
}

/// Refuses an empty file and a partition given twice.
fn finish(entries: Vec<Entry>) -> Result<Vec<Entry>, String> {
    if entries.is_empty() {
        return Err("the file has no offsets".to_string());
    }
    let mut first_line: HashMap<&TopicPartition, usize> = HashMap::new();
    for entry in &entries {
        if let Some(first) = first_line.insert(&entry.partition, entry.line) {
            return Err(format!(
                "line {}: {} appears twice (first on line {first})",
                entry.line, entry.partition
            ));
        }
    }
    Ok(entries)
}

/// Offsets as CSV lines `topic,partition,offset`, no header (the form Kafka's tool exports).
pub fn format_csv<'a>(offsets: impl IntoIterator<Item = (&'a TopicPartition, i64)>) -> String {
    offsets
        .into_iter()
        .map(|(tp, offset)| format!("{},{},{offset}\n", tp.topic, tp.partition))
        .collect()
}

/// Offsets as ExportZkOffsets lines.
pub fn format_zk_lines<'a>(
    base_path: &str,
    group: &str,
    offsets: impl IntoIterator<Item = (&'a TopicPartition, i64)>,
) -> String {
    let layout = GroupLayout { base_path, group };
    offsets
        .into_iter()
        .map(|(tp, offset)| format!("{}:{offset}\n", layout.offset_path(&tp.topic, tp.partition)))
        .collect()
}

/// Parses a Java properties file: `key=value`, `key: value` or `key value`; `#` and `!`
/// comments; a trailing `\` continues a line; `\t`, `\n`, `\r`, `\f`, `\uXXXX` and `\<char>`
/// escapes. Later keys win. Errors name the line, never a value.
pub fn parse_properties(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut properties: Vec<(String, String)> = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, first)) = lines.next() {
        let number = index + 1;
        let first = first.trim_start();
        if first.is_empty() || first.starts_with('#') || first.starts_with('!') {
            continue;
        }
        // Join continuation lines: an odd number of trailing backslashes continues.
        let mut logical = String::new();
        let mut current = first;
        loop {
            let trailing = current.chars().rev().take_while(|c| *c == '\\').count();
            if trailing % 2 == 1 {
                logical.push_str(&current[..current.len() - 1]);
                match lines.next() {
                    Some((_, next)) => current = next.trim_start(),
                    None => break,
                }
            } else {
                logical.push_str(current);
                break;
            }
        }
        let (key, value) = split_property(&logical);
        let key = unescape(key).map_err(|why| format!("line {number}: key {why}"))?;
        let value =
            unescape(value).map_err(|why| format!("line {number}: value of '{key}' {why}"))?;
        properties.retain(|(existing, _)| *existing != key);
        properties.push((key, value));
    }
    Ok(properties)
}

/// Splits at the first unescaped `=`, `:` or whitespace, as java.util.Properties does.
fn split_property(line: &str) -> (&str, &str) {
    let mut escaped = false;
    for (at, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '=' | ':' => return (&line[..at], line[at + 1..].trim_start()),
            c if c.is_whitespace() => {
                let rest = line[at..].trim_start();
                let rest = rest
                    .strip_prefix(['=', ':'])
                    .map(str::trim_start)
                    .unwrap_or(rest);
                return (&line[..at], rest);
            }
            _ => {}
        }
    }
    (line, "")
}

fn unescape(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)
                    .and_then(char::from_u32)
                    .ok_or_else(|| "has a bad \\u escape".to_string())?;
                out.push(code);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition::new(topic, partition)
    }

    fn offsets(entries: &[Entry]) -> Vec<(TopicPartition, i64)> {
        entries
            .iter()
            .map(|e| (e.partition.clone(), e.offset))
            .collect()
    }

    #[test]
    fn csv_lines_parse_with_header_comments_and_blanks() {
        let text = "topic,partition,offset\n# saved before the replay\n\norders,0,10\n orders , 1 , 0 \nclicks.v2,3,123456789012\n";
        let entries = parse_csv(text).unwrap();
        assert_eq!(
            offsets(&entries),
            vec![
                (tp("orders", 0), 10),
                (tp("orders", 1), 0),
                (tp("clicks.v2", 3), 123_456_789_012)
            ]
        );
        assert_eq!(entries[0].line, 4);
        assert_eq!(entries[2].line, 6);
    }

    #[test]
    fn bad_csv_lines_are_refused_with_their_line_number() {
        for (text, needle) in [
            ("t,0,1\nt,1\n", "line 2: expected 3 fields"),
            ("t,0,1,9\n", "line 1: expected 3 fields"),
            ("t,x,1\n", "line 1: partition 'x' is not a number"),
            ("t,-1,1\n", "line 1: partition -1"),
            ("t,0,-5\n", "line 1: offset '-5' is not allowed"),
            ("t,0,abc\n", "line 1: offset 'abc'"),
            ("a/b,0,1\n", "line 1: topic name 'a/b'"),
            (
                "t,0,1\n\nt,0,2\n",
                "line 3: t-0 appears twice (first on line 1)",
            ),
            ("# nothing\n\n", "no offsets"),
            ("topic,partition,offset\n", "no offsets"),
        ] {
            let message = parse_csv(text).unwrap_err();
            assert!(message.contains(needle), "{needle}: {message}");
        }
    }

    #[test]
    fn zk_lines_round_trip() {
        let rows = [(tp("orders", 0), 10), (tp("orders", 11), 0)];
        let text = format_zk_lines("/consumers", "job", rows.iter().map(|(t, o)| (t, *o)));
        assert_eq!(
            text,
            "/consumers/job/offsets/orders/0:10\n/consumers/job/offsets/orders/11:0\n"
        );
        assert_eq!(detect_format(&text), OffsetFormat::Zk);
        let parsed = parse_zk_lines(&text, "/consumers", "job").unwrap();
        assert_eq!(offsets(&parsed), rows.to_vec());
    }

    #[test]
    fn csv_round_trips() {
        let rows = [(tp("a", 0), 5), (tp("b", 2), 7)];
        let text = format_csv(rows.iter().map(|(t, o)| (t, *o)));
        assert_eq!(text, "a,0,5\nb,2,7\n");
        assert_eq!(detect_format(&text), OffsetFormat::Csv);
        assert_eq!(offsets(&parse_csv(&text).unwrap()), rows.to_vec());
    }

    #[test]
    fn bad_zk_lines_are_refused_with_their_line_number() {
        for (text, needle) in [
            (
                "/consumers/g/offsets/t/0\n",
                "line 1: expected <path>:<offset>",
            ),
            (
                "/consumers/g/offsets/t/0:1\n/other/g/offsets/t/1:2\n",
                "line 2: '/other/g/offsets/t/1' is not a path /consumers/<group>",
            ),
            (
                "/consumers/h/offsets/t/0:1\n",
                "line 1: the path is of group 'h', not of --group 'g'",
            ),
            ("/consumers/g/offsets/t/0:x\n", "line 1: offset 'x'"),
            ("/consumers/g/offsets/t/0:-1\n", "line 1: offset '-1'"),
            ("/consumers/g/offsets/t\u{e9}/0:1\n", "line 1: topic name"),
            (
                "/consumers/g/offsets/t/0:1\n/consumers/g/offsets/t/0:1\n",
                "line 2: t-0 appears twice",
            ),
        ] {
            let message = parse_zk_lines(text, "/consumers", "g").unwrap_err();
            assert!(message.contains(needle), "{needle}: {message}");
        }
    }

    #[test]
    fn properties_follow_javas_rules() {
        let text = "# security\n! also a comment\nsecurity.protocol=SASL_SSL\nsasl.mechanism : PLAIN\nsasl.jaas.config org.apache.kafka.common.security.plain.PlainLoginModule required \\\n    username=\"u\" \\\n    password=\"p\";\nkey\\=with\\:escapes = a\\tb\\u0041\nempty=\nclient.id=first\nclient.id=second\n";
        let props = parse_properties(text).unwrap();
        let get = |key: &str| {
            props
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("security.protocol"), Some("SASL_SSL"));
        assert_eq!(get("sasl.mechanism"), Some("PLAIN"));
        assert_eq!(
            get("sasl.jaas.config"),
            Some("org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"p\";")
        );
        assert_eq!(get("key=with:escapes"), Some("a\tbA"));
        assert_eq!(get("empty"), Some(""));
        assert_eq!(get("client.id"), Some("second"));
        assert_eq!(props.len(), 6);
    }

    #[test]
    fn bad_property_escapes_name_the_line_and_key_not_the_value() {
        let message = parse_properties("a=1\nssl.key.password=s3cret\\u12\n").unwrap_err();
        assert!(message.contains("line 2"), "{message}");
        assert!(message.contains("ssl.key.password"), "{message}");
        assert!(!message.contains("s3cret"), "{message}");
    }
}
