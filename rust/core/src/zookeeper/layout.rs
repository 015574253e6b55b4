//! Kafka's old consumer layout: `<base>/<group>/offsets/<topic>/<partition>`, as ZKGroupTopicDirs
//! wrote it and as Burrow, CMAK and KafkaOffsetMonitor read it.

/// The default base path, as Kafka's old consumer used it.
pub const DEFAULT_BASE_PATH: &str = "/consumers";

/// Paths of one group's offsets under a base path. Names must be checked before use.
#[derive(Debug, Clone)]
pub struct GroupLayout<'a> {
    pub base_path: &'a str,
    pub group: &'a str,
}

impl GroupLayout<'_> {
    /// `<base>/<group>/offsets/<topic>`
    pub fn topic_dir(&self, topic: &str) -> String {
        format!("{}/{}/offsets/{topic}", self.base_path, self.group)
    }

    /// `<base>/<group>/offsets/<topic>/<partition>`
    pub fn offset_path(&self, topic: &str, partition: i32) -> String {
        format!(
            "{}/{}/offsets/{topic}/{partition}",
            self.base_path, self.group
        )
    }

    /// The folders above every topic folder, outermost first: each segment of the base path,
    /// then `<base>/<group>` and `<base>/<group>/offsets`.
    pub fn group_dirs(&self) -> Vec<String> {
        let offsets_dir = format!("{}/{}/offsets", self.base_path, self.group);
        let mut dirs: Vec<String> = offsets_dir
            .match_indices('/')
            .skip(1)
            .map(|(end, _)| offsets_dir[..end].to_string())
            .collect();
        dirs.push(offsets_dir);
        dirs
    }
}

/// The value written for an offset: bare decimal ASCII.
pub fn encode_offset(offset: i64) -> Vec<u8> {
    offset.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_kafkas_old_layout() {
        let layout = GroupLayout {
            base_path: "/consumers",
            group: "g1",
        };
        assert_eq!(
            layout.offset_path("orders", 3),
            "/consumers/g1/offsets/orders/3"
        );
        assert_eq!(layout.topic_dir("orders"), "/consumers/g1/offsets/orders");
        assert_eq!(
            layout.group_dirs(),
            ["/consumers", "/consumers/g1", "/consumers/g1/offsets"]
        );
    }

    #[test]
    fn nested_base_path_lists_every_ancestor() {
        let layout = GroupLayout {
            base_path: "/a/b",
            group: "g",
        };
        assert_eq!(
            layout.group_dirs(),
            ["/a", "/a/b", "/a/b/g", "/a/b/g/offsets"]
        );
    }

    #[test]
    fn offsets_are_bare_decimal() {
        assert_eq!(encode_offset(0), b"0");
        assert_eq!(encode_offset(1234567890123), b"1234567890123");
    }
}
