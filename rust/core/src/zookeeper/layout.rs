//! Kafka's old consumer layout: `<base>/<group>/offsets/<topic>/<partition>`, as ZKGroupTopicDirs
//! wrote it and as Burrow, CMAK and KafkaOffsetMonitor read it.

pub use crate::config::defaults::DEFAULT_BASE_PATH;

/// Paths of one group's offsets under a base path. Names must be checked before use.
#[derive(Debug, Clone)]
pub struct GroupLayout<'a> {
    pub base_path: &'a str,
    pub group: &'a str,
}

impl GroupLayout<'_> {
    /// `<base>/<group>/offsets`
    pub fn offsets_dir(&self) -> String {
        format!("{}/{}/offsets", self.base_path, self.group)
    }

    /// `<base>/<group>/offsets/<topic>`
    pub fn topic_dir(&self, topic: &str) -> String {
        format!("{}/{}/offsets/{topic}", self.base_path, self.group)
    }

    /// `<base>/<group>/offsets/<topic>/<partition>`
    pub fn offset_path(&self, topic: &str, partition: i32) -> String {
        // Built at its final size: a load or commit makes one per partition.
        use std::fmt::Write as _;
        let mut path =
            String::with_capacity(self.base_path.len() + self.group.len() + topic.len() + 22);
        path.push_str(self.base_path);
        path.push('/');
        path.push_str(self.group);
        path.push_str("/offsets/");
        path.push_str(topic);
        path.push('/');
        let _ = write!(path, "{partition}");
        path
    }

    /// The folders above every topic folder, outermost first: each segment of the base path,
    /// then `<base>/<group>` and `<base>/<group>/offsets`.
    pub fn group_dirs(&self) -> Vec<String> {
        let mut dirs = self.ancestors();
        dirs.push(self.offsets_dir());
        dirs
    }

    /// Each segment of the base path, then `<base>/<group>`, outermost first.
    pub fn ancestors(&self) -> Vec<String> {
        let group_dir = format!("{}/{}", self.base_path, self.group);
        let mut dirs: Vec<String> = group_dir
            .match_indices('/')
            .skip(1)
            .map(|(end, _)| group_dir[..end].to_string())
            .collect();
        dirs.push(group_dir);
        dirs
    }

    /// Whether `dir` is a folder of the base path (shared by every group), not the group's.
    pub fn is_shared_dir(&self, dir: &str) -> bool {
        dir.len() <= self.base_path.len()
    }

    /// `<base>/<group>/ids`: the registered consumer instances, as Kafka's old consumer kept them.
    pub fn ids_dir(&self) -> String {
        format!("{}/{}/ids", self.base_path, self.group)
    }

    /// `<base>/<group>/ids/<consumer id>`
    pub fn id_path(&self, consumer_id: &str) -> String {
        format!("{}/{}/ids/{consumer_id}", self.base_path, self.group)
    }

    /// `<base>/<group>/lock`: the ephemeral node whose creator is the group's one running
    /// instance (offsetkeeper's own; Kafka's tools ignore it).
    pub fn lock_path(&self) -> String {
        format!("{}/{}/lock", self.base_path, self.group)
    }

    /// `<base>/<group>/clock-<consumer id>`: created, written and deleted in one multi to read
    /// ZooKeeper's clock (see `zookeeper::clock`); never seen by anyone.
    pub fn clock_path(&self, consumer_id: &str) -> String {
        format!("{}/{}/clock-{consumer_id}", self.base_path, self.group)
    }

    /// `<base>/<group>/owners`
    pub fn owners_dir(&self) -> String {
        format!("{}/{}/owners", self.base_path, self.group)
    }

    /// `<base>/<group>/owners/<topic>`
    pub fn owners_topic_dir(&self, topic: &str) -> String {
        format!("{}/{}/owners/{topic}", self.base_path, self.group)
    }

    /// `<base>/<group>/owners/<topic>/<partition>`: the owning consumer thread's id.
    pub fn owner_path(&self, topic: &str, partition: i32) -> String {
        format!(
            "{}/{}/owners/{topic}/{partition}",
            self.base_path, self.group
        )
    }
}

/// An offset path split into its parts: the inverse of [`GroupLayout::offset_path`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetPath {
    pub group: String,
    pub topic: String,
    pub partition: i32,
}

/// Splits `<base>/<group>/offsets/<topic>/<partition>` under `base_path`. `None` when the path
/// is not an offset path under that base; names are not checked here.
pub fn parse_offset_path(base_path: &str, path: &str) -> Option<OffsetPath> {
    let rest = path.strip_prefix(base_path)?.strip_prefix('/')?;
    let mut parts = rest.split('/');
    let (group, offsets, topic, partition) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || offsets != "offsets" || group.is_empty() || topic.is_empty() {
        return None;
    }
    Some(OffsetPath {
        group: group.to_string(),
        topic: topic.to_string(),
        partition: parse_partition(partition)?,
    })
}

/// A partition znode's name: decimal digits only, within `i32`.
pub(crate) fn parse_partition(name: &str) -> Option<i32> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok()
}

/// The value written for an offset: bare decimal ASCII.
pub fn encode_offset(offset: i64) -> Vec<u8> {
    offset.to_string().into_bytes()
}

/// The first line of a topic folder's data: the format's name and version.
const IDENTITY_HEADER: &str = "offsetkeeper-topic-identity 1";

/// The data of the topic folder `<base>/<group>/offsets/<topic>`: the topic ID (KIP-516) the
/// stored offsets belong to, in two lines of text, `offsetkeeper-topic-identity 1` then
/// `topic_id=<id as Kafka prints it>`. Readers of the old layout list the folder's children and
/// never read its data, which Kafka's old consumer left empty.
pub fn encode_topic_identity(topic_id: &str) -> Vec<u8> {
    format!("{IDENTITY_HEADER}\ntopic_id={topic_id}\n").into_bytes()
}

/// The topic ID a topic folder's data records; `None` for an empty folder (written by Kafka's
/// old consumer, an older offsetkeeper or another tool) and for data in another format, which
/// is then treated as no ID at all.
pub fn parse_topic_identity(data: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(data).ok()?;
    let mut lines = text.lines().map(str::trim);
    if lines.next()? != IDENTITY_HEADER {
        return None;
    }
    lines
        .filter_map(|line| line.strip_prefix("topic_id="))
        .map(str::trim)
        .find(|id| {
            !id.is_empty()
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_names_are_plain_numbers() {
        assert_eq!(parse_partition("0"), Some(0));
        assert_eq!(parse_partition("17"), Some(17));
        for bad in ["", "-1", "+1", "1a", "x", "99999999999", " 1"] {
            assert_eq!(parse_partition(bad), None, "{bad}");
        }
    }

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
        assert_eq!(layout.ancestors(), ["/consumers", "/consumers/g1"]);
        assert_eq!(layout.id_path("g1_h-1-ab"), "/consumers/g1/ids/g1_h-1-ab");
        assert_eq!(
            layout.owner_path("orders", 3),
            "/consumers/g1/owners/orders/3"
        );
        assert_eq!(
            layout.owners_topic_dir("orders"),
            "/consumers/g1/owners/orders"
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
        let shared: Vec<bool> = layout
            .group_dirs()
            .iter()
            .map(|dir| layout.is_shared_dir(dir))
            .collect();
        assert_eq!(shared, [true, true, false, false]);
    }

    #[test]
    fn offset_paths_parse_back_into_their_parts() {
        let layout = GroupLayout {
            base_path: "/a/b",
            group: "g.1",
        };
        let path = layout.offset_path("orders", 12);
        assert_eq!(
            parse_offset_path("/a/b", &path),
            Some(OffsetPath {
                group: "g.1".into(),
                topic: "orders".into(),
                partition: 12
            })
        );
        for bad in [
            "/consumers/g/offsets/t/0",
            "/a/b/g/offsets/t",
            "/a/b/g/owners/t/0",
            "/a/b/g/offsets/t/0/x",
            "/a/b/g/offsets/t/-1",
            "/a/b/g/offsets/t/+1",
            "/a/b/g/offsets/t/99999999999",
            "/a/bc/g/offsets/t/0",
            "/a/b//offsets/t/0",
        ] {
            assert_eq!(parse_offset_path("/a/b", bad), None, "{bad}");
        }
    }

    #[test]
    fn topic_identity_round_trips_and_anything_else_is_no_identity() {
        let data = encode_topic_identity("MkRv2K8MQzCr0e4uK3iLmw");
        assert_eq!(
            std::str::from_utf8(&data).unwrap(),
            "offsetkeeper-topic-identity 1\ntopic_id=MkRv2K8MQzCr0e4uK3iLmw\n"
        );
        assert_eq!(
            parse_topic_identity(&data).as_deref(),
            Some("MkRv2K8MQzCr0e4uK3iLmw")
        );
        for other in [
            &b""[..],
            b"topic_id=abc",
            b"offsetkeeper-topic-identity 2\ntopic_id=abc",
            b"offsetkeeper-topic-identity 1\n",
            b"offsetkeeper-topic-identity 1\ntopic_id=a/b",
            b"\xff",
        ] {
            assert_eq!(parse_topic_identity(other), None, "{other:?}");
        }
    }

    #[test]
    fn offsets_are_bare_decimal() {
        assert_eq!(encode_offset(0), b"0");
        assert_eq!(encode_offset(1234567890123), b"1234567890123");
    }
}
