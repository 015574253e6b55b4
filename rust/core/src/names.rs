//! Kafka's legal names, so that no group or topic can escape its folder in ZooKeeper.

use crate::error::{Error, Result};

/// Longest legal group or topic name, as Kafka allows.
pub const MAX_NAME_LEN: usize = 249;

/// Checks a group or topic name against Kafka's rules: `[a-zA-Z0-9._-]`, 1..249 long,
/// and neither `.` nor `..`.
pub fn check_name(kind: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(Error::invalid(format!(
            "{kind} name '{}' has length {}; allowed: 1..{MAX_NAME_LEN} characters of [a-zA-Z0-9._-]",
            shorten(name),
            name.len()
        )));
    }
    if name == "." || name == ".." {
        return Err(Error::invalid(format!(
            "{kind} name '{name}' is not allowed; '.' and '..' are reserved"
        )));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(Error::invalid(format!(
            "{kind} name '{}' contains {bad:?}; allowed: [a-zA-Z0-9._-]",
            shorten(name)
        )));
    }
    Ok(())
}

/// Checks a partition number: Kafka partitions are 0 or more.
pub fn check_partition(topic: &str, partition: i32) -> Result<()> {
    if partition < 0 {
        return Err(Error::invalid(format!(
            "partition {partition} of topic '{topic}' is negative; allowed: 0 or more"
        )));
    }
    Ok(())
}

/// Checks a ZooKeeper base path such as `/consumers`: absolute, no empty, `.` or `..` segment,
/// no trailing slash.
pub fn check_base_path(path: &str) -> Result<()> {
    let allowed =
        "an absolute ZooKeeper path such as /consumers, without trailing '/', '.' or '..' segments";
    let segments_ok = path
        .strip_prefix('/')
        .map(|rest| {
            rest.split('/')
                .all(|s| !s.is_empty() && s != "." && s != ".." && !s.contains('\0'))
        })
        .unwrap_or(false);
    if segments_ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "base path '{path}' is not {allowed}"
        )))
    }
}

/// Checks a group and a topic list, and drops repeated topics, keeping the first.
pub(crate) fn checked_topics(group: &str, topics: &[String]) -> Result<Vec<String>> {
    check_name("group", group)?;
    if topics.is_empty() {
        return Err(Error::invalid(
            "topic list is empty; give at least one topic",
        ));
    }
    let mut unique = std::collections::HashSet::new();
    let mut checked = Vec::with_capacity(topics.len());
    for topic in topics {
        check_name("topic", topic)?;
        if unique.insert(topic.as_str()) {
            checked.push(topic.clone());
        }
    }
    Ok(checked)
}

/// Long names are cut in messages so an error line stays readable.
fn shorten(name: &str) -> String {
    const SHOWN: usize = 64;
    if name.chars().count() <= SHOWN {
        name.to_string()
    } else {
        let head: String = name.chars().take(SHOWN).collect();
        format!("{head}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_are_checked_and_deduplicated_in_order() {
        let topics = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            checked_topics("g", &topics(&["b", "a", "b"])).unwrap(),
            topics(&["b", "a"])
        );
        assert!(checked_topics("g", &[]).is_err());
        let message = checked_topics("g", &topics(&["ok", "no/pe"]))
            .unwrap_err()
            .to_string();
        assert!(message.contains("'no/pe'"), "{message}");
        assert!(checked_topics("a b", &topics(&["t"])).is_err());
    }

    #[test]
    fn legal_names_pass() {
        for name in ["a", "orders", "my.topic-1_x", &"x".repeat(249)] {
            assert!(check_name("topic", name).is_ok(), "{name}");
        }
    }

    #[test]
    fn illegal_names_are_refused_with_the_value_named() {
        for (name, needle) in [
            ("", "length 0"),
            ("..", "reserved"),
            (".", "reserved"),
            ("a/b", "'/'"),
            ("../../etc", "'/'"),
            ("sp ace", "' '"),
            ("naïve", "'ï'"),
        ] {
            let message = check_name("group", name).unwrap_err().to_string();
            assert!(message.contains(needle), "{name}: {message}");
            assert!(message.contains("group"), "{message}");
        }
        let long = "y".repeat(250);
        assert!(check_name("topic", &long)
            .unwrap_err()
            .to_string()
            .contains("length 250"));
    }

    #[test]
    fn partitions_must_not_be_negative() {
        assert!(check_partition("t", 0).is_ok());
        let message = check_partition("t", -1).unwrap_err().to_string();
        assert!(
            message.contains("-1") && message.contains("'t'"),
            "{message}"
        );
    }

    #[test]
    fn base_paths() {
        for ok in ["/consumers", "/a/b", "/kafka-offsets"] {
            assert!(check_base_path(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "/",
            "consumers",
            "/consumers/",
            "/a//b",
            "/a/../b",
            "/.",
        ] {
            assert!(check_base_path(bad).is_err(), "{bad}");
        }
    }
}
