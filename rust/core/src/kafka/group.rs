//! The group coordinator's requests (FindCoordinator, OffsetFetch, OffsetCommit, DescribeGroups,
//! JoinGroup, SyncGroup, Heartbeat, LeaveGroup): what the Kafka group store
//! ([`crate::kafka_store`]) speaks. Each is sent to the group's coordinator, found once and
//! kept; an answer that says the coordinator moved or is loading (`NOT_COORDINATOR`,
//! `COORDINATOR_NOT_AVAILABLE`, `COORDINATOR_LOAD_IN_PROGRESS`) or a broker that does not answer
//! makes it find the coordinator again and ask again, within the operation's deadline.
//!
//! Versions: OffsetFetch v2-v7 and OffsetCommit v2-v8 (Kafka 0.10.2 to 4.x: the one-group
//! forms; v8+ of OffsetFetch batches groups, v9 of OffsetCommit is the new consumer protocol's),
//! FindCoordinator v0-v3, DescribeGroups v0-v5, JoinGroup v1-v7 (static membership from v5,
//! Kafka 2.3), SyncGroup v0-v5, Heartbeat v0-v4, LeaveGroup v0-v5.

use std::collections::HashMap;
use std::ops::RangeInclusive;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiKey, ConsumerProtocolAssignment, ConsumerProtocolSubscription, DescribeGroupsRequest,
    FindCoordinatorRequest, GroupId, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupRequest, OffsetCommitRequest, OffsetFetchRequest, SyncGroupRequest, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, Request, StrBytes};

use super::connection::CallError;
use super::{protocol, Attempt, Brokers, Retriable, LANE_GROUP, LANE_JOIN, LANE_MEMBERSHIP};
use crate::error::{Error, Result};
use crate::TopicPartition;

const FIND_COORDINATOR_VERSIONS: RangeInclusive<i16> = 0..=3;
const OFFSET_FETCH_VERSIONS: RangeInclusive<i16> = 2..=7;
const OFFSET_COMMIT_VERSIONS: RangeInclusive<i16> = 2..=8;
const DESCRIBE_GROUPS_VERSIONS: RangeInclusive<i16> = 0..=5;
const JOIN_GROUP_VERSIONS: RangeInclusive<i16> = 1..=7;
const SYNC_GROUP_VERSIONS: RangeInclusive<i16> = 0..=5;
const HEARTBEAT_VERSIONS: RangeInclusive<i16> = 0..=4;
const LEAVE_GROUP_VERSIONS: RangeInclusive<i16> = 0..=5;
/// OffsetDelete (KIP-496): Kafka 2.4 and later.
const OFFSET_DELETE_VERSIONS: RangeInclusive<i16> = 0..=0;

/// Error codes of the group coordinator (Kafka's `Errors`).
pub mod codes {
    pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
    pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
    pub const NOT_COORDINATOR: i16 = 16;
    pub const REQUEST_TIMED_OUT: i16 = 7;
    pub const ILLEGAL_GENERATION: i16 = 22;
    pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
    pub const UNKNOWN_MEMBER_ID: i16 = 25;
    pub const INVALID_SESSION_TIMEOUT: i16 = 26;
    pub const REBALANCE_IN_PROGRESS: i16 = 27;
    pub const MEMBER_ID_REQUIRED: i16 = 79;
    pub const FENCED_INSTANCE_ID: i16 = 82;
}

/// The protocol type offsetkeeper joins with: Kafka's consumers' own, so that
/// `kafka-consumer-groups --describe` shows the member and its partitions, and a consumer of
/// another assignor (Spark's `Subscribe`, any `KafkaConsumer`) is refused by the coordinator
/// (`INCONSISTENT_GROUP_PROTOCOL`) while offsetkeeper holds the group.
pub const PROTOCOL_TYPE: &str = "consumer";
/// The only assignor offsetkeeper names: no consumer shares it.
pub const PROTOCOL_NAME: &str = "offsetkeeper";

/// The coordinator's refusal of a member session outside the broker's limits, naming the value
/// asked, the broker settings that bound it and the keeper's setting that sets it. The broker
/// does not say its limits (Kafka's defaults are named).
fn invalid_session_timeout(group: &str, session_timeout_ms: i32) -> String {
    format!(
        "{group}: the group coordinator refused the member session of {session_timeout_ms} ms (INVALID_SESSION_TIMEOUT): it is outside the broker's limits, group.min.session.timeout.ms and group.max.session.timeout.ms (Kafka's defaults 6000 and 1800000; older brokers' maximum is lower). Set offsetkeeper.kafka.session.timeout.ms within the broker's limits"
    )
}

/// Whether a coordinator error means: find the coordinator again and ask again.
fn coordinator_moved(code: i16) -> bool {
    matches!(
        code,
        codes::COORDINATOR_LOAD_IN_PROGRESS
            | codes::COORDINATOR_NOT_AVAILABLE
            | codes::NOT_COORDINATOR
            | codes::REQUEST_TIMED_OUT
    )
}

/// One committed offset as OffsetFetch returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedOffset {
    pub partition: TopicPartition,
    pub offset: i64,
    /// The commit's metadata string (empty when none).
    pub metadata: String,
}

/// A group as DescribeGroups shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupView {
    /// `Empty`, `Stable`, `PreparingRebalance`, `CompletingRebalance`, `Dead` (classic groups),
    /// or a new consumer group's state.
    pub state: String,
    pub protocol_type: String,
    /// The assignor the members agreed on (`range`, `offsetkeeper`, ...).
    pub protocol: String,
    pub members: Vec<GroupMember>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub host: String,
    /// The member's protocol metadata (a consumer's subscription), when it has any.
    pub subscription: Option<Vec<u8>>,
    /// The user data of that subscription, when it is a consumer's and has any.
    pub subscription_user_data: Option<Vec<u8>>,
}

impl GroupMember {
    /// `member M (client C, host H)`, for messages.
    pub fn describe(&self) -> String {
        format!(
            "member {} (client.id {}, host {}{})",
            self.member_id,
            self.client_id,
            self.host.trim_start_matches('/'),
            self.instance_id
                .as_ref()
                .map(|id| format!(", group.instance.id {id}"))
                .unwrap_or_default()
        )
    }
}

/// A member's place in the group: what OffsetCommit and Heartbeat carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    pub member_id: String,
    pub generation: i32,
    pub instance_id: Option<String>,
}

/// What a JoinGroup then SyncGroup gave.
#[derive(Debug)]
pub enum Joined {
    /// A member with exactly the partitions it asked for: the group is this keeper's.
    Member(Membership),
    /// A member given other partitions than it asked for: another member leads the group (an
    /// instance that joined first), or the coordinator assigns them itself (a consumer group of
    /// Kafka 4's protocol, KIP-848). The caller leaves.
    NotAlone(Membership),
    /// The coordinator refused the join: the group's members speak another protocol.
    Refused(i16),
}

fn group_id(group: &str) -> GroupId {
    GroupId(StrBytes::from_string(group.to_string()))
}

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

/// Consumer protocol bytes: a version, then the message at that version (Kafka's
/// `ConsumerProtocol` layout).
fn consumer_protocol_bytes<M: Encodable>(message: &M) -> Result<Bytes> {
    let mut buf = BytesMut::new();
    buf.put_i16(0);
    message
        .encode(&mut buf, 0)
        .map_err(|err| Error::Internal(format!("encoding consumer protocol data: {err}")))?;
    Ok(buf.freeze())
}

/// The subscription offsetkeeper joins with: its topics, so that tools show them, and
/// `user_data` (who this keeper is).
pub fn subscription(topics: &[String], user_data: &[u8]) -> Result<Bytes> {
    let mut subscription = ConsumerProtocolSubscription::default();
    subscription.topics = topics.iter().map(|t| text(t)).collect();
    subscription.user_data = Some(Bytes::copy_from_slice(user_data));
    consumer_protocol_bytes(&subscription)
}

fn decode_subscription(metadata: &[u8]) -> Option<ConsumerProtocolSubscription> {
    let mut bytes = Bytes::copy_from_slice(metadata);
    if bytes.remaining() < 2 {
        return None;
    }
    let version = bytes.get_i16();
    ConsumerProtocolSubscription::decode(&mut bytes, version.clamp(0, 3)).ok()
}

/// The assignment of a member: the partitions, by topic.
pub fn assignment(partitions: &[TopicPartition]) -> Result<Bytes> {
    let mut by_topic: Vec<(String, Vec<i32>)> = Vec::new();
    for tp in partitions {
        match by_topic.last_mut() {
            Some((topic, numbers)) if **topic == *tp.topic => numbers.push(tp.partition),
            _ => by_topic.push((tp.topic.to_string(), vec![tp.partition])),
        }
    }
    let mut assignment = ConsumerProtocolAssignment::default();
    assignment.assigned_partitions = by_topic
        .into_iter()
        .map(|(topic, partitions)| {
            let mut entry =
                kafka_protocol::messages::consumer_protocol_assignment::TopicPartition::default();
            entry.topic = TopicName(text(&topic));
            entry.partitions = partitions;
            entry
        })
        .collect();
    consumer_protocol_bytes(&assignment)
}

/// The partitions of a consumer protocol assignment, sorted; empty when it is none.
fn assigned(bytes: &[u8]) -> Vec<TopicPartition> {
    let mut buf = Bytes::copy_from_slice(bytes);
    if buf.remaining() < 2 {
        return Vec::new();
    }
    let version = buf.get_i16();
    let Ok(assignment) = ConsumerProtocolAssignment::decode(&mut buf, version.clamp(0, 3)) else {
        return Vec::new();
    };
    let mut partitions: Vec<TopicPartition> = assignment
        .assigned_partitions
        .iter()
        .flat_map(|t| {
            let topic: std::sync::Arc<str> = t.topic.0.to_string().into();
            t.partitions
                .iter()
                .map(move |p| TopicPartition::new(topic.clone(), *p))
        })
        .collect();
    partitions.sort();
    partitions
}

fn sorted(partitions: &[TopicPartition]) -> Vec<TopicPartition> {
    let mut partitions = partitions.to_vec();
    partitions.sort();
    partitions.dedup();
    partitions
}

/// The topics of a member's consumer protocol subscription, when it is one.
pub fn subscribed_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let subscription = decode_subscription(metadata)?;
    Some(subscription.topics.iter().map(|t| t.to_string()).collect())
}

impl Brokers {
    /// Every offset the group committed, in the coordinator's order (OffsetFetch of all topics).
    pub(crate) async fn fetch_offsets(&self, group: &str) -> Result<Vec<FetchedOffset>> {
        let attempt = Attempt::new(self.timeout);
        self.bounded(
            "offset fetch",
            &attempt,
            self.fetch_offsets_within(&attempt, group),
        )
        .await
    }

    async fn fetch_offsets_within(
        &self,
        attempt: &Attempt,
        group: &str,
    ) -> Result<Vec<FetchedOffset>> {
        let answer = self
            .ask_coordinator(
                attempt,
                group,
                LANE_GROUP,
                "OffsetFetch",
                ApiKey::OffsetFetch,
                OFFSET_FETCH_VERSIONS,
                |_| {
                    let mut request = OffsetFetchRequest::default();
                    request.group_id = group_id(group);
                    // All topics (v2+).
                    request.topics = None::<Vec<OffsetFetchRequestTopic>>;
                    request
                },
                |answer| answer.error_code,
            )
            .await?;
        if answer.error_code != 0 {
            return Err(self.refused("offset fetch", &format!("group {group}"), answer.error_code));
        }
        let mut fetched = Vec::new();
        for topic in answer.topics {
            let name: std::sync::Arc<str> = topic.name.0.to_string().into();
            for partition in topic.partitions {
                match partition.error_code {
                    0 => {}
                    code => {
                        return Err(self.refused(
                            "offset fetch",
                            &format!("group {group}, {}-{}", name, partition.partition_index),
                            code,
                        ))
                    }
                }
                // -1: nothing committed (an offset that expired, or a partition asked about).
                if partition.committed_offset < 0 {
                    continue;
                }
                fetched.push(FetchedOffset {
                    partition: TopicPartition::new(name.clone(), partition.partition_index),
                    offset: partition.committed_offset,
                    metadata: partition
                        .metadata
                        .map(|m| m.to_string())
                        .unwrap_or_default(),
                });
            }
        }
        Ok(fetched)
    }

    /// Commits the offsets (each with its metadata string) in one OffsetCommit request, as the
    /// member when given, else as a simple commit (generation -1: the coordinator accepts it
    /// only while the group has no members). Returns each partition's error code (0: stored),
    /// in the order given; an error of the whole request (the coordinator's refusal of the
    /// member) is every partition's. Retried on another coordinator within the deadline only
    /// when no partition was answered.
    pub(crate) async fn commit_offsets(
        &self,
        group: &str,
        member: Option<&Membership>,
        offsets: &[(TopicPartition, i64, String)],
    ) -> Result<Vec<i16>> {
        let requests = commit_requests(group, offsets);
        if requests.len() > 1 {
            log::warn!(
                "group {group}: committing {} offsets in {} OffsetCommit requests (the coordinator takes at most about {} MB of offset records in one): each is stored as one record batch, the batch as a whole is not",
                offsets.len(),
                requests.len(),
                OFFSET_COMMIT_RECORD_BYTES / 1_000_000 + 1
            );
        }
        let mut codes = Vec::with_capacity(offsets.len());
        for request in requests {
            let answered = self.commit_request(group, member, request).await?;
            // A request refused whole (the member fenced): the ones after it are not sent.
            let refused = answered
                .first()
                .copied()
                .filter(|_| answered.iter().all(|code| *code != 0));
            codes.extend(answered);
            if let Some(code) = refused {
                codes.resize(offsets.len(), code);
                break;
            }
        }
        Ok(codes)
    }

    /// One OffsetCommit request of `offsets`; see [`Self::commit_offsets`].
    async fn commit_request(
        &self,
        group: &str,
        member: Option<&Membership>,
        offsets: &[(TopicPartition, i64, String)],
    ) -> Result<Vec<i16>> {
        let attempt = Attempt::new(self.timeout);
        let answer = self
            .bounded(
                "offset commit",
                &attempt,
                self.ask_coordinator(
                    &attempt,
                    group,
                    LANE_GROUP,
                    "OffsetCommit",
                    ApiKey::OffsetCommit,
                    OFFSET_COMMIT_VERSIONS,
                    |version| offset_commit_request(version, group, member, offsets),
                    |answer| {
                        // A moved coordinator answers every partition with the same error.
                        let codes: Vec<i16> = answer
                            .topics
                            .iter()
                            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
                            .collect();
                        match codes.first() {
                            Some(first) if codes.iter().all(|c| c == first) => *first,
                            _ => 0,
                        }
                    },
                ),
            )
            .await?;
        let mut by_partition: HashMap<(&str, i32), i16> = HashMap::new();
        for topic in &answer.topics {
            for partition in &topic.partitions {
                by_partition.insert(
                    (&topic.name.0, partition.partition_index),
                    partition.error_code,
                );
            }
        }
        offsets
            .iter()
            .map(|(tp, _, _)| {
                by_partition
                    .get(&(&*tp.topic, tp.partition))
                    .copied()
                    .ok_or_else(|| {
                        self.failed(
                            "offset commit",
                            &format!("group {group}: the coordinator did not answer for {tp}"),
                        )
                    })
            })
            .collect()
    }

    /// Deletes the group's committed offsets of the partitions (OffsetDelete, Kafka 2.4+). The
    /// coordinator refuses a partition whose topic a live member subscribes to
    /// (`GROUP_SUBSCRIBED_TO_TOPIC`): that is the error, naming the partitions refused.
    pub(crate) async fn delete_offsets(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> Result<()> {
        use kafka_protocol::messages::offset_delete_request::{
            OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
        };
        use kafka_protocol::messages::OffsetDeleteRequest;
        let attempt = Attempt::new(self.timeout);
        let answer = self
            .bounded(
                "offset delete",
                &attempt,
                self.ask_coordinator(
                    &attempt,
                    group,
                    LANE_GROUP,
                    "OffsetDelete",
                    ApiKey::OffsetDelete,
                    OFFSET_DELETE_VERSIONS,
                    |_| {
                        let mut request = OffsetDeleteRequest::default();
                        request.group_id = group_id(group);
                        let mut topics: Vec<OffsetDeleteRequestTopic> = Vec::new();
                        for tp in partitions {
                            let mut partition = OffsetDeleteRequestPartition::default();
                            partition.partition_index = tp.partition;
                            match topics.last_mut() {
                                Some(topic) if *topic.name.0 == *tp.topic => {
                                    topic.partitions.push(partition)
                                }
                                _ => {
                                    let mut topic = OffsetDeleteRequestTopic::default();
                                    topic.name = TopicName(text(&tp.topic));
                                    topic.partitions.push(partition);
                                    topics.push(topic);
                                }
                            }
                        }
                        request.topics = topics;
                        request
                    },
                    |answer| answer.error_code,
                ),
            )
            .await?;
        if answer.error_code != 0 {
            return Err(self.refused(
                "offset delete",
                &format!("group {group}"),
                answer.error_code,
            ));
        }
        let refused: Vec<String> = answer
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .filter(|p| p.error_code != 0)
                    .map(move |p| {
                        format!(
                            "{}-{}: {}",
                            t.name.0,
                            p.partition_index,
                            protocol::error_name(p.error_code)
                        )
                    })
            })
            .collect();
        if refused.is_empty() {
            Ok(())
        } else {
            Err(self.failed(
                "offset delete",
                &format!(
                    "group {group}: the coordinator refused {}",
                    refused.join(", ")
                ),
            ))
        }
    }

    /// The group's state, protocol and members (DescribeGroups).
    pub(crate) async fn describe_group(&self, group: &str) -> Result<GroupView> {
        let attempt = Attempt::new(self.timeout);
        self.bounded(
            "group description",
            &attempt,
            self.describe_group_within(&attempt, group),
        )
        .await
    }

    async fn describe_group_within(&self, attempt: &Attempt, group: &str) -> Result<GroupView> {
        let answer = self
            .ask_coordinator(
                attempt,
                group,
                LANE_MEMBERSHIP,
                "DescribeGroups",
                ApiKey::DescribeGroups,
                DESCRIBE_GROUPS_VERSIONS,
                |_| {
                    let mut request = DescribeGroupsRequest::default();
                    request.groups = vec![group_id(group)];
                    request
                },
                |answer| answer.groups.first().map_or(0, |g| g.error_code),
            )
            .await?;
        let described: DescribedGroup = answer.groups.into_iter().next().ok_or_else(|| {
            self.failed("group description", &format!("group {group}: no answer"))
        })?;
        if described.error_code != 0 {
            return Err(self.refused("group description", group, described.error_code));
        }
        Ok(GroupView {
            state: described.group_state.to_string(),
            protocol_type: described.protocol_type.to_string(),
            protocol: described.protocol_data.to_string(),
            members: described
                .members
                .into_iter()
                .map(|m| {
                    let subscription =
                        (!m.member_metadata.is_empty()).then(|| m.member_metadata.to_vec());
                    GroupMember {
                        member_id: m.member_id.to_string(),
                        instance_id: m.group_instance_id.map(|id| id.to_string()),
                        client_id: m.client_id.to_string(),
                        host: m.client_host.to_string(),
                        subscription_user_data: subscription
                            .as_deref()
                            .and_then(decode_subscription)
                            .and_then(|s| s.user_data)
                            .map(|d| d.to_vec()),
                        subscription,
                    }
                })
                .collect(),
        })
    }

    /// Joins the group as its only member with `partitions` assigned to it: JoinGroup (again
    /// with the member id the coordinator gives, from v4), then SyncGroup as the leader. Other
    /// members that joined at the same time are given nothing; the caller checks the group
    /// after joining.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn join_group(
        &self,
        group: &str,
        instance_id: Option<&str>,
        topics: &[String],
        registration: &[u8],
        partitions: &[TopicPartition],
        session_timeout_ms: i32,
        rebalance_timeout_ms: i32,
        member_id: &str,
    ) -> Result<Joined> {
        // A join waits at the broker for the other members to join again, up to the rebalance
        // timeout: each request may take that plus 5 s, as Kafka's Java client allows.
        let rebalance = std::time::Duration::from_millis(rebalance_timeout_ms.max(0) as u64);
        let attempt = Attempt::with_request_timeout(
            self.timeout.max(rebalance * 2),
            self.request_timeout
                .max(rebalance + std::time::Duration::from_secs(5)),
        );
        let metadata = subscription(topics, registration)?;
        let mut member_id = member_id.to_string();
        loop {
            let answer: JoinGroupResponse = self
                .ask_coordinator(
                    &attempt,
                    group,
                    LANE_JOIN,
                    "JoinGroup",
                    ApiKey::JoinGroup,
                    JOIN_GROUP_VERSIONS,
                    |version| {
                        let mut request = JoinGroupRequest::default();
                        request.group_id = group_id(group);
                        request.session_timeout_ms = session_timeout_ms;
                        request.rebalance_timeout_ms = rebalance_timeout_ms;
                        request.member_id = text(&member_id);
                        if version >= 5 {
                            request.group_instance_id = instance_id.map(text);
                        }
                        request.protocol_type = text(PROTOCOL_TYPE);
                        let mut protocol = JoinGroupRequestProtocol::default();
                        protocol.name = text(PROTOCOL_NAME);
                        protocol.metadata = metadata.clone();
                        request.protocols = vec![protocol];
                        request
                    },
                    |answer| answer.error_code,
                )
                .await?;
            match answer.error_code {
                0 => {}
                codes::MEMBER_ID_REQUIRED => {
                    member_id = answer.member_id.to_string();
                    continue;
                }
                codes::INCONSISTENT_GROUP_PROTOCOL => {
                    return Ok(Joined::Refused(answer.error_code))
                }
                codes::UNKNOWN_MEMBER_ID if !member_id.is_empty() => {
                    member_id.clear();
                    continue;
                }
                codes::INVALID_SESSION_TIMEOUT => {
                    return Err(self.failed(
                        "group join",
                        &invalid_session_timeout(group, session_timeout_ms),
                    ))
                }
                code => return Err(self.refused("group join", group, code)),
            }
            let generation = answer.generation_id;
            let me = answer.member_id.to_string();
            let leader = answer.leader.to_string() == me;
            let assignments = if leader {
                leader_assignments(&answer, &me, partitions)?
            } else {
                Vec::new()
            };
            let synced = self
                .ask_coordinator(
                    &attempt,
                    group,
                    LANE_JOIN,
                    "SyncGroup",
                    ApiKey::SyncGroup,
                    SYNC_GROUP_VERSIONS,
                    |version| {
                        sync_request(version, group, generation, &me, instance_id, &assignments)
                    },
                    |answer| answer.error_code,
                )
                .await?;
            match synced.error_code {
                0 => {
                    let membership = Membership {
                        member_id: me,
                        generation,
                        instance_id: instance_id.map(str::to_string),
                    };
                    return Ok(if assigned(&synced.assignment) == sorted(partitions) {
                        Joined::Member(membership)
                    } else {
                        Joined::NotAlone(membership)
                    });
                }
                // Another member joined meanwhile: join again.
                codes::REBALANCE_IN_PROGRESS => {
                    member_id = me;
                    self.pause(&attempt, "group join", Retriable("a rebalance".into()))
                        .await?;
                }
                code => return Err(self.refused("group sync", group, code)),
            }
        }
    }

    /// One heartbeat: 0 while the member holds its place, else the coordinator's error
    /// (`REBALANCE_IN_PROGRESS`: join again; `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`,
    /// `FENCED_INSTANCE_ID`: the place is lost).
    pub(crate) async fn heartbeat(
        &self,
        group: &str,
        member: &Membership,
        within: std::time::Duration,
    ) -> Result<i16> {
        let attempt = Attempt::new(within);
        let answer = self
            .bounded(
                "group heartbeat",
                &attempt,
                self.ask_coordinator(
                    &attempt,
                    group,
                    LANE_MEMBERSHIP,
                    "Heartbeat",
                    ApiKey::Heartbeat,
                    HEARTBEAT_VERSIONS,
                    |version| {
                        let mut request = HeartbeatRequest::default();
                        request.group_id = group_id(group);
                        request.generation_id = member.generation;
                        request.member_id = text(&member.member_id);
                        if version >= 3 {
                            request.group_instance_id = member.instance_id.as_deref().map(text);
                        }
                        request
                    },
                    |answer| answer.error_code,
                ),
            )
            .await?;
        Ok(answer.error_code)
    }

    /// Leaves the group: this member, or (`instance_id` of another, LeaveGroup v3+) a static
    /// member that died without leaving.
    pub(crate) async fn leave_group(
        &self,
        group: &str,
        member_id: &str,
        instance_id: Option<&str>,
        within: std::time::Duration,
    ) -> Result<i16> {
        let attempt = Attempt::new(within);
        let answer = self
            .bounded(
                "group leave",
                &attempt,
                self.ask_coordinator(
                    &attempt,
                    group,
                    LANE_MEMBERSHIP,
                    "LeaveGroup",
                    ApiKey::LeaveGroup,
                    LEAVE_GROUP_VERSIONS,
                    |version| {
                        let mut request = LeaveGroupRequest::default();
                        request.group_id = group_id(group);
                        if version >= 3 {
                            let mut identity = MemberIdentity::default();
                            identity.member_id = text(member_id);
                            identity.group_instance_id = instance_id.map(text);
                            request.members = vec![identity];
                        } else {
                            request.member_id = text(member_id);
                        }
                        request
                    },
                    |answer| answer.error_code,
                ),
            )
            .await?;
        Ok(answer.error_code)
    }

    /// One request to the group's coordinator on `lane`: found (FindCoordinator) when not known;
    /// found again, after the retry backoff, when it does not answer or `error_of` its answer
    /// says it moved or is loading. Other answers are returned as they are.
    #[allow(clippy::too_many_arguments)]
    async fn ask_coordinator<R: Request>(
        &self,
        attempt: &Attempt,
        group: &str,
        lane: usize,
        api: &'static str,
        api_key: ApiKey,
        versions: RangeInclusive<i16>,
        request: impl Fn(i16) -> R,
        error_of: impl Fn(&R::Response) -> i16,
    ) -> Result<R::Response> {
        let operation = "group coordinator request";
        loop {
            let address = match self.coordinator(attempt, group).await {
                Ok(address) => address,
                Err(Retriable(cause)) => {
                    self.pause(attempt, operation, Retriable(cause)).await?;
                    continue;
                }
            };
            let answer = self
                .call(
                    attempt,
                    &address,
                    lane,
                    api,
                    api_key as i16,
                    versions.clone(),
                    &request,
                )
                .await;
            let cause = match answer {
                Ok(answer) => {
                    let code = error_of(&answer);
                    if !coordinator_moved(code) {
                        return Ok(answer);
                    }
                    format!("coordinator {address}: {}", protocol::error_name(code))
                }
                Err(
                    err @ (CallError::Unsupported { .. }
                    | CallError::Authentication(_)
                    | CallError::Malformed(_)),
                ) => return Err(self.failed(operation, &format!("broker {address}: {err}"))),
                Err(err) => format!("coordinator {address}: {err}"),
            };
            self.forget_coordinator(group);
            self.pause(attempt, operation, Retriable(cause)).await?;
        }
    }

    /// The group's coordinator address: the one found before, else FindCoordinator asked of
    /// any broker.
    async fn coordinator(
        &self,
        attempt: &Attempt,
        group: &str,
    ) -> std::result::Result<String, Retriable> {
        if let Some(address) = super::lock(&self.coordinators).get(group) {
            return Ok(address.clone());
        }
        let candidates = self.metadata_candidates();
        let mut causes = Vec::new();
        for address in candidates {
            let answer = self
                .call(
                    attempt,
                    &address,
                    LANE_MEMBERSHIP,
                    "FindCoordinator",
                    ApiKey::FindCoordinator as i16,
                    FIND_COORDINATOR_VERSIONS,
                    |version| {
                        let mut request = FindCoordinatorRequest::default();
                        request.key = text(group);
                        if version >= 1 {
                            request.key_type = 0; // a group
                        }
                        request
                    },
                )
                .await;
            match answer {
                Ok(found) if found.error_code == 0 => {
                    let coordinator = super::address(&found.host, found.port);
                    super::lock(&self.coordinators).insert(group.to_string(), coordinator.clone());
                    return Ok(coordinator);
                }
                Ok(found) => causes.push(format!(
                    "{address}: {}",
                    protocol::error_name(found.error_code)
                )),
                Err(err) => causes.push(format!("{address}: {err}")),
            }
        }
        Err(Retriable(format!(
            "no coordinator found for group {group} ({})",
            causes.join("; ")
        )))
    }

    fn forget_coordinator(&self, group: &str) {
        super::lock(&self.coordinators).remove(group);
    }
}

/// The leader's assignments: its own partitions to itself, nothing to any other member (one
/// that joined at the same time, which then leaves).
fn leader_assignments(
    answer: &JoinGroupResponse,
    me: &str,
    partitions: &[TopicPartition],
) -> Result<Vec<(String, Bytes)>> {
    let mine = assignment(partitions)?;
    let nothing = assignment(&[])?;
    Ok(answer
        .members
        .iter()
        .map(|m| {
            let id = m.member_id.to_string();
            let given = if id == me {
                mine.clone()
            } else {
                nothing.clone()
            };
            (id, given)
        })
        .collect())
}

/// SyncGroup of a member, with the leader's assignments (none from a follower).
fn sync_request(
    version: i16,
    group: &str,
    generation: i32,
    member_id: &str,
    instance_id: Option<&str>,
    assignments: &[(String, Bytes)],
) -> SyncGroupRequest {
    let mut request = SyncGroupRequest::default();
    request.group_id = group_id(group);
    request.generation_id = generation;
    request.member_id = text(member_id);
    if version >= 3 {
        request.group_instance_id = instance_id.map(text);
    }
    if version >= 5 {
        request.protocol_type = Some(text(PROTOCOL_TYPE));
        request.protocol_name = Some(text(PROTOCOL_NAME));
    }
    request.assignments = assignments
        .iter()
        .map(|(id, bytes)| {
            let mut a = SyncGroupRequestAssignment::default();
            a.member_id = text(id);
            a.assignment = bytes.clone();
            a
        })
        .collect();
    request
}

/// OffsetCommit of the offsets, each with its metadata string.
/// The bytes of offset records the coordinator takes in one OffsetCommit: it appends a
/// request's offsets as one record batch to `__consumer_offsets`, whose limit is the brokers'
/// `message.max.bytes` (1,048,588 by default; larger, the whole request is refused with
/// INVALID_COMMIT_OFFSET_SIZE), less room for the estimate's error.
const OFFSET_COMMIT_RECORD_BYTES: usize = 900_000;
/// An offset record's bytes besides its group, topic and metadata strings: the key's version,
/// string lengths and partition, the value's version, offset, leader epoch, metadata length
/// and commit time, and the record's framing in the batch.
const OFFSET_RECORD_FIXED_BYTES: usize = 50;

/// `offsets` cut into runs whose offset records fit one OffsetCommit; one run for a batch of
/// up to about 5,200 partitions with offsetkeeper's metadata (20-character group and topic names).
fn commit_requests<'a>(
    group: &str,
    offsets: &'a [(TopicPartition, i64, String)],
) -> Vec<&'a [(TopicPartition, i64, String)]> {
    let mut requests = Vec::new();
    let mut rest = offsets;
    while !rest.is_empty() {
        let mut bytes = 0;
        let len = rest
            .iter()
            .take_while(|(tp, _, metadata)| {
                bytes += OFFSET_RECORD_FIXED_BYTES + group.len() + tp.topic.len() + metadata.len();
                bytes <= OFFSET_COMMIT_RECORD_BYTES
            })
            .count()
            .max(1);
        let (request, tail) = rest.split_at(len);
        requests.push(request);
        rest = tail;
    }
    requests
}

fn offset_commit_request(
    version: i16,
    group: &str,
    member: Option<&Membership>,
    offsets: &[(TopicPartition, i64, String)],
) -> OffsetCommitRequest {
    let mut request = OffsetCommitRequest::default();
    request.group_id = group_id(group);
    match member {
        Some(member) => {
            request.generation_id_or_member_epoch = member.generation;
            request.member_id = text(&member.member_id);
            if version >= 7 {
                request.group_instance_id = member.instance_id.as_deref().map(text);
            }
        }
        None => {
            request.generation_id_or_member_epoch = -1;
            request.member_id = StrBytes::default();
        }
    }
    if version <= 4 {
        // The broker's own retention (offsets.retention.minutes).
        request.retention_time_ms = -1;
    }
    let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
    for (tp, offset, metadata) in offsets {
        let mut partition = OffsetCommitRequestPartition::default();
        partition.partition_index = tp.partition;
        partition.committed_offset = *offset;
        partition.committed_leader_epoch = -1;
        partition.committed_metadata = Some(text(metadata));
        match topics.last_mut() {
            Some(topic) if *topic.name.0 == *tp.topic => topic.partitions.push(partition),
            _ => {
                let mut topic = OffsetCommitRequestTopic::default();
                topic.name = TopicName(text(&tp.topic));
                topic.partitions.push(partition);
                topics.push(topic);
            }
        }
    }
    request.topics = topics;
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscription_reads_back_as_its_topics() {
        let mine = vec![TopicPartition::new("b", 0), TopicPartition::new("a", 1)];
        assert_eq!(assigned(&assignment(&mine).unwrap()), sorted(&mine));
        assert_eq!(assigned(&assignment(&[]).unwrap()), Vec::new());
        assert_eq!(assigned(&[0]), Vec::new());
        let bytes = subscription(&["a".to_string(), "b".to_string()], b"{}").unwrap();
        assert_eq!(
            decode_subscription(&bytes).and_then(|s| s.user_data),
            Some(Bytes::from_static(b"{}"))
        );
        assert_eq!(
            subscribed_topics(&bytes),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(subscribed_topics(&[1]), None);
    }

    #[test]
    fn a_commit_request_groups_partitions_by_topic_in_order() {
        let offsets = vec![
            (TopicPartition::new("a", 0), 5, "m".to_string()),
            (TopicPartition::new("a", 1), 6, String::new()),
            (TopicPartition::new("b", 0), 7, String::new()),
        ];
        let request = offset_commit_request(8, "g", None, &offsets);
        assert_eq!(request.generation_id_or_member_epoch, -1);
        assert_eq!(request.topics.len(), 2);
        assert_eq!(request.topics[0].partitions.len(), 2);
        assert_eq!(request.topics[1].partitions[0].committed_offset, 7);
    }

    /// A batch past the coordinator's record batch limit is cut into requests that fit it, in
    /// order, none empty; a small one stays one request.
    #[test]
    fn a_batch_past_the_offsets_topics_limit_is_cut_into_requests_that_fit() {
        // offsetkeeper's metadata string, 77 bytes.
        let metadata =
            r#"{"offsetkeeper":1,"topic_id":"AbCdEfGhIjKlMnOpQrStUv","committed_at":1765000000000}"#
                .to_string();
        let offsets: Vec<(TopicPartition, i64, String)> = (0..20_000)
            .map(|p| {
                (
                    TopicPartition::new("bench-p20000-t0", p),
                    7,
                    metadata.clone(),
                )
            })
            .collect();
        let requests = commit_requests("bench-commit-ko-p20000", &offsets);
        assert_eq!(
            requests.len(),
            4,
            "{:?}",
            requests.iter().map(|r| r.len()).collect::<Vec<_>>()
        );
        assert_eq!(requests.iter().map(|r| r.len()).sum::<usize>(), 20_000);
        assert_eq!(requests[0][0].0.partition, 0);
        assert_eq!(requests[3].last().map(|o| o.0.partition), Some(19_999));
        for request in &requests {
            let bytes: usize = request
                .iter()
                .map(|(tp, _, m)| OFFSET_RECORD_FIXED_BYTES + 22 + tp.topic.len() + m.len())
                .sum();
            assert!(bytes <= OFFSET_COMMIT_RECORD_BYTES, "{bytes}");
        }
        assert_eq!(commit_requests("g", &offsets[..5_000]).len(), 1);
    }
}
