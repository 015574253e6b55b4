//! One active instance per group, the Kafka way: the keeper joins the group as its only
//! member (a static member, `group.instance.id` unique to the keeper) and every commit carries
//! its member id and generation, so that the coordinator itself refuses a commit of an instance
//! that lost its place (a zombie): `ILLEGAL_GENERATION`, `UNKNOWN_MEMBER_ID` or
//! `FENCED_INSTANCE_ID`, nothing written.
//!
//! Before joining, the keeper describes the group:
//! - members of another kind (a consumer with its own assignor: Spark's `Subscribe`, any
//!   `KafkaConsumer`) refuse the load at once, naming them;
//! - another offsetkeeper instance is waited for (the ownership wait: by default the member
//!   session (`offsetkeeper.kafka.session.timeout.ms`, 10 s by default) plus 5 s, time for a
//!   dead one's session to end), unless its subscription tells that it ran on this host and
//!   its process is gone (a SIGKILL), when it is removed from the group at once (LeaveGroup by
//!   its `group.instance.id`, Kafka 2.4+).
//!
//! While a member, a background task heartbeats every third of the session timeout and joins
//! again when the coordinator asks (a rebalance).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::kafka::group::{
    codes, subscribed_topics, GroupMember, GroupView, Joined, Membership, PROTOCOL_NAME,
    PROTOCOL_TYPE,
};
use crate::kafka::protocol::error_name;
use crate::kafka::Brokers;
use crate::ownership::{Identity, Registered};
use crate::runtime::runtime;
use crate::TopicPartition;

/// How often a waiting load describes the group again.
const POLL: Duration = Duration::from_millis(500);

/// Where this keeper stands in one group: its membership, or why it lost it.
#[derive(Default)]
struct Place {
    current: Option<Membership>,
    lost: Option<String>,
}

/// This keeper's membership of one group, kept by a background heartbeat.
pub(crate) struct Member {
    place: Arc<Mutex<Place>>,
    heartbeat: tokio::task::JoinHandle<()>,
    /// The member session it joined with.
    session: Duration,
}

impl Drop for Member {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

fn lock(place: &Mutex<Place>) -> std::sync::MutexGuard<'_, Place> {
    place
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What joining needs to say who this keeper is and what it holds.
pub(crate) struct Joining<'a> {
    pub(crate) brokers: &'a Arc<Brokers>,
    pub(crate) identity: &'a Identity,
    pub(crate) group: &'a str,
    pub(crate) topics: &'a [String],
    pub(crate) partitions: &'a [TopicPartition],
    /// The member session to join with (`offsetkeeper.kafka.session.timeout.ms`): a dead
    /// instance on another host leaves the group this long after its last heartbeat.
    pub(crate) session: Duration,
}

impl Joining<'_> {
    fn instance_id(&self) -> String {
        self.identity.consumer_id(self.group)
    }

    /// The subscription's user data: the registration an `ids` node holds on ZooKeeper (host,
    /// pid, start time), for another instance to tell whether this one is gone.
    fn registration(&self) -> Vec<u8> {
        let topics: BTreeSet<String> = self.topics.iter().cloned().collect();
        self.identity.registration(&topics)
    }

    /// Joins the group once it has no other member, waiting up to `wait` for another
    /// offsetkeeper instance to go; see the module's documentation.
    pub(crate) async fn join(&self, wait: Duration) -> Result<Member> {
        let started = Instant::now();
        loop {
            self.wait_for_no_members(started, wait).await?;
            let membership = match self.join_once("").await? {
                Joined::Member(membership) => membership,
                Joined::NotAlone(membership) => {
                    // Another member leads the group (an instance that joined at the same
                    // time: waited for), or the coordinator assigns partitions itself and shows
                    // no classic member (a consumer group of Kafka 4's protocol: refused at
                    // once, so that its members are rebalanced once, not at every try).
                    self.leave(&membership).await;
                    let view = self.brokers.describe_group(self.group).await?;
                    let mine = self.instance_id();
                    let visible = view
                        .members
                        .iter()
                        .any(|m| m.instance_id.as_deref() != Some(mine.as_str()));
                    if !visible {
                        return Err(Error::GroupInUse {
                            group: self.group.to_string(),
                            detail: "the coordinator assigned this keeper partitions it did not ask for, while the group shows no classic member: it is a consumer group of Kafka's new consumer protocol (KIP-848) with live members".to_string(),
                        });
                    }
                    self.pause_or_refuse(
                        started,
                        wait,
                        "another instance joined the group at the same time and leads it",
                    )
                    .await?;
                    continue;
                }
                Joined::Refused(code) => {
                    // Someone joined in between: say who, or try again.
                    let view = self.brokers.describe_group(self.group).await?;
                    if is_other_kind(&view) {
                        return Err(other_kind(self.group, &view));
                    }
                    self.pause_or_refuse(
                        started,
                        wait,
                        &format!(
                            "the coordinator refused this keeper's join ({})",
                            error_name(code)
                        ),
                    )
                    .await?;
                    continue;
                }
            };
            log::info!(
                "group {}: this keeper is the group's member {} (generation {}); commits carry it, and the coordinator refuses them once another instance takes the group",
                self.group,
                membership.member_id,
                membership.generation
            );
            let place = Arc::new(Mutex::new(Place {
                current: Some(membership),
                lost: None,
            }));
            let heartbeat = runtime()?.spawn(heartbeat(
                self.brokers.clone(),
                self.group.to_string(),
                self.instance_id(),
                self.topics.to_vec(),
                self.partitions.to_vec(),
                self.registration(),
                place.clone(),
                self.session,
            ));
            return Ok(Member {
                place,
                heartbeat,
                session: self.session,
            });
        }
    }

    /// Waits a moment before another try, or refuses with `why` once `wait` has passed.
    async fn pause_or_refuse(&self, started: Instant, wait: Duration, why: &str) -> Result<()> {
        let waited = started.elapsed();
        if waited >= wait {
            return Err(Error::GroupInUse {
                group: self.group.to_string(),
                detail: format!("{why}; waited {} ms", waited.as_millis()),
            });
        }
        tokio::time::sleep(POLL.min(wait - waited)).await;
        Ok(())
    }

    async fn join_once(&self, member_id: &str) -> Result<Joined> {
        self.brokers
            .join_group(
                self.group,
                Some(&self.instance_id()),
                self.topics,
                &self.registration(),
                self.partitions,
                millis(self.session),
                millis(self.session),
                member_id,
            )
            .await
    }

    async fn leave(&self, membership: &Membership) {
        let _ = self
            .brokers
            .leave_group(
                self.group,
                &membership.member_id,
                membership.instance_id.as_deref(),
                self.brokers.timeout(),
            )
            .await;
    }

    /// Returns once the group has no member but this keeper's own earlier place (a static
    /// member of its `group.instance.id`, which its join replaces); members of another kind
    /// refuse at once, another offsetkeeper instance known gone is removed, a live one (or a
    /// group in the middle of a rebalance) waited for until `wait` has passed since `started`.
    async fn wait_for_no_members(&self, started: Instant, wait: Duration) -> Result<()> {
        let mine = self.instance_id();
        let mut told = false;
        loop {
            let view = self.brokers.describe_group(self.group).await?;
            let others: Vec<&GroupMember> = view
                .members
                .iter()
                .filter(|m| m.instance_id.as_deref() != Some(mine.as_str()))
                .collect();
            if others.is_empty() {
                if told {
                    log::info!(
                        "group {}: the other member went; this keeper joins after waiting {} ms",
                        self.group,
                        started.elapsed().as_millis()
                    );
                }
                return Ok(());
            }
            if is_other_kind(&view) {
                return Err(other_kind(self.group, &view));
            }
            for member in &others {
                let registered = member_registration(&view, &member.member_id);
                let (Some(gone), Some(instance)) = (
                    registered.and_then(|r| self.identity.gone(&r)),
                    member.instance_id.as_deref(),
                ) else {
                    continue;
                };
                let code = self
                    .brokers
                    .leave_group(
                        self.group,
                        &member.member_id,
                        Some(instance),
                        self.brokers.timeout(),
                    )
                    .await?;
                log::info!(
                    "group {}: removing {} from the group ({gone}): {}",
                    self.group,
                    member.describe(),
                    if code == 0 {
                        "done".to_string()
                    } else {
                        error_name(code)
                    }
                );
            }
            let waited = started.elapsed();
            if !told && waited < wait {
                told = true;
                log::info!(
                    "group {}: waiting up to {} ms for {} other member(s) to leave the group ({}; a member's session ends its session timeout after its last heartbeat: {} ms for an instance with this keeper's offsetkeeper.kafka.session.timeout.ms)",
                    self.group,
                    wait.saturating_sub(waited).as_millis(),
                    others.len(),
                    others[0].describe(),
                    self.session.as_millis()
                );
            }
            if waited >= wait {
                let owner = others[0];
                return Err(Error::Owned {
                    group: self.group.to_string(),
                    partition: self
                        .partitions
                        .first()
                        .cloned()
                        .unwrap_or_else(|| TopicPartition::new("-", 0)),
                    owner: format!(
                        "{} of the Kafka group (state {}; its member session ends its session timeout after its last heartbeat: {} ms if it runs with this keeper's offsetkeeper.kafka.session.timeout.ms)",
                        owner.describe(),
                        view.state,
                        self.session.as_millis()
                    ),
                    others: 0,
                    waited,
                });
            }
            tokio::time::sleep(POLL.min(wait - waited)).await;
        }
    }
}

/// A member session in the JoinGroup's milliseconds (the configuration keeps it within an
/// `i32`: at most an hour).
fn millis(session: Duration) -> i32 {
    i32::try_from(session.as_millis()).unwrap_or(i32::MAX)
}

/// Whether the described group's members are of another kind than offsetkeeper: another
/// protocol type, or another assignor once the group has chosen one (in the middle of a
/// rebalance the assignor is not known yet, and the group is waited for).
fn is_other_kind(view: &GroupView) -> bool {
    (!view.protocol_type.is_empty() && view.protocol_type != PROTOCOL_TYPE)
        || (!view.protocol.is_empty() && view.protocol != PROTOCOL_NAME)
}

/// The registration a described member's subscription carries; `None` when it has none.
fn member_registration(view: &GroupView, member_id: &str) -> Option<Registered> {
    let member = view.members.iter().find(|m| m.member_id == member_id)?;
    let data = member.subscription_user_data.as_deref()?;
    Some(Registered::parse(data))
}

/// The refusal of a group whose members are of another kind.
fn other_kind(group: &str, view: &GroupView) -> Error {
    let members: Vec<String> = view.members.iter().map(|m| m.describe()).collect();
    let topics: BTreeSet<String> = view
        .members
        .iter()
        .filter_map(|m| m.subscription.as_deref().and_then(subscribed_topics))
        .flatten()
        .collect();
    Error::GroupInUse {
        group: group.to_string(),
        detail: format!(
            "{} live member(s) of another kind (protocol type '{}', assignor '{}'{}): {}",
            members.len(),
            view.protocol_type,
            view.protocol,
            if topics.is_empty() {
                String::new()
            } else {
                format!(
                    ", subscribed to {}",
                    topics.into_iter().collect::<Vec<_>>().join(", ")
                )
            },
            members.join("; ")
        ),
    }
}

impl Member {
    /// The membership commits carry, or why it was lost.
    pub(crate) fn membership(&self) -> std::result::Result<Membership, String> {
        let place = lock(&self.place);
        match (&place.current, &place.lost) {
            (Some(current), _) => Ok(current.clone()),
            (None, Some(lost)) => Err(lost.clone()),
            (None, None) => Err("this keeper is rejoining the group".to_string()),
        }
    }

    /// Stops heartbeating (as a process paused longer than the session timeout would): tests
    /// of zombie fencing.
    pub(crate) fn stop_heartbeat(&self) {
        self.heartbeat.abort();
    }

    /// The coordinator refused the membership `used`: commits fail until the keeper joins
    /// again. False (nothing changed) when the heartbeat has joined again meanwhile, with
    /// another generation: the commit may try that one.
    pub(crate) fn lose(&self, used: &Membership, why: String) -> bool {
        let mut place = lock(&self.place);
        if place
            .current
            .as_ref()
            .is_some_and(|current| current != used)
        {
            return false;
        }
        place.current = None;
        place.lost = Some(why);
        true
    }

    /// Leaves the group (the heartbeat stops first), within `within`.
    pub(crate) async fn leave(self, brokers: &Brokers, group: &str, within: Duration) {
        self.heartbeat.abort();
        let current = lock(&self.place).current.clone();
        if let Some(membership) = current {
            let left = brokers
                .leave_group(
                    group,
                    &membership.member_id,
                    membership.instance_id.as_deref(),
                    within,
                )
                .await;
            if let Err(err) = left {
                log::warn!(
                    "group {group}: closing could not leave the Kafka group ({err}); the member goes when its session of {} ms ends",
                    self.session.as_millis()
                );
            }
        }
    }
}

/// Heartbeats every third of the session timeout; joins again when the coordinator asks, and
/// marks the place lost when the coordinator no longer knows the member.
#[allow(clippy::too_many_arguments)]
async fn heartbeat(
    brokers: Arc<Brokers>,
    group: String,
    instance_id: String,
    topics: Vec<String>,
    partitions: Vec<TopicPartition>,
    registration: Vec<u8>,
    place: Arc<Mutex<Place>>,
    session: Duration,
) {
    loop {
        tokio::time::sleep(session / 3).await;
        let Some(current) = lock(&place).current.clone() else {
            return;
        };
        let code = match brokers.heartbeat(&group, &current, session / 3).await {
            Ok(code) => code,
            Err(err) => {
                log::debug!("group {group}: heartbeat failed ({err}); trying again");
                continue;
            }
        };
        match code {
            0 => {}
            codes::REBALANCE_IN_PROGRESS => {
                let joined = brokers
                    .join_group(
                        &group,
                        Some(&instance_id),
                        &topics,
                        &registration,
                        &partitions,
                        millis(session),
                        millis(session),
                        &current.member_id,
                    )
                    .await;
                match joined {
                    Ok(Joined::Member(membership)) => lock(&place).current = Some(membership),
                    Ok(Joined::NotAlone(membership)) => {
                        let _ = brokers
                            .leave_group(
                                &group,
                                &membership.member_id,
                                membership.instance_id.as_deref(),
                                session / 3,
                            )
                            .await;
                        let mut place = lock(&place);
                        place.current = None;
                        place.lost = Some("when the group rebalanced, the coordinator gave this keeper other partitions than it holds: another consumer leads the group now (one of Kafka's new protocol, KIP-848, converts the group); this keeper left it".to_string());
                        log::warn!(
                            "group {group}: {}",
                            place.lost.as_deref().unwrap_or_default()
                        );
                        return;
                    }
                    Ok(Joined::Refused(code)) => {
                        let mut place = lock(&place);
                        place.current = None;
                        place.lost = Some(format!(
                            "the coordinator refused this keeper's join again ({})",
                            error_name(code)
                        ));
                        return;
                    }
                    Err(err) => log::debug!("group {group}: joining again failed ({err})"),
                }
            }
            code => {
                let mut place = lock(&place);
                place.current = None;
                place.lost = Some(format!(
                    "the group coordinator no longer knows this keeper's member {} of generation {} ({}): its session ended, or another instance took the group",
                    current.member_id,
                    current.generation,
                    error_name(code)
                ));
                log::warn!(
                    "group {group}: {}",
                    place.lost.as_deref().unwrap_or_default()
                );
                return;
            }
        }
    }
}
