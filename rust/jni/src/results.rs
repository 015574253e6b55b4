//! The answers of `load`, `inspect`, `commit`, `mirrorStatus` and `checkConfig` as the Java
//! objects that carry them: `NativePartitions`, `NativeLoadResult`, `NativeInspectResult`,
//! `CommitResult`, `MirrorStatus` and `NativeCheckedConfig` (package `io.offsetkeeper`), each
//! made through its one constructor.
//!
//! Each struct here has the fields of its Java class, in the constructor's order, with the
//! Rust type of the Java type, so a column cannot be passed in the wrong place or as the wrong
//! array type. Columns stay primitive arrays: one object per answer, never one per partition.
//!
//! The classes and constructors are looked up once per loaded copy of this library, on the
//! first answer. A copy belongs to one class loader (`NativeLibrary` loads a private copy for
//! a second loader), and `FindClass` in a native method uses the loader of the method's class,
//! so the cached classes are always the caller's own.

use jni::objects::{
    Global, JByteArray, JClass, JIntArray, JLongArray, JMethodID, JObject, JObjectArray, JString,
    JValue,
};
use jni::signature::{JavaType, MethodSignature};
use jni::strings::JNIStr;
use jni::sys::jvalue;
use jni::{jni_sig, jni_str, Env};
use once_cell::sync::OnceCell;

use crate::errors::BridgeError;

type Result<T> = std::result::Result<T, BridgeError>;

// The constructors' descriptors. The test below holds each to its Java constructor.
const PARTITIONS_CLASS: &JNIStr = jni_str!("io/offsetkeeper/NativePartitions");
const PARTITIONS_SIG: MethodSignature<'static, 'static> =
    jni_sig!("([Ljava/lang/String;[I[I[B[J[Ljava/lang/String;[J[J)V");
const LOAD_CLASS: &JNIStr = jni_str!("io/offsetkeeper/NativeLoadResult");
const LOAD_SIG: MethodSignature<'static, 'static> = jni_sig!(
    "(Lio/offsetkeeper/NativePartitions;[J[B[J[Ljava/lang/String;[Ljava/lang/String;[Ljava/lang/String;[Ljava/lang/String;[I[B[J[Ljava/lang/String;[Ljava/lang/String;[I[B[J[Ljava/lang/String;[B[J[Ljava/lang/String;[B)V"
);
const INSPECT_CLASS: &JNIStr = jni_str!("io/offsetkeeper/NativeInspectResult");
const INSPECT_SIG: MethodSignature<'static, 'static> =
    jni_sig!("(Lio/offsetkeeper/NativePartitions;[J)V");
const COMMIT_CLASS: &JNIStr = jni_str!("io/offsetkeeper/CommitResult");
const COMMIT_SIG: MethodSignature<'static, 'static> = jni_sig!("(JJJJZJJ)V");
const MIRROR_STATUS_CLASS: &JNIStr = jni_str!("io/offsetkeeper/MirrorStatus");
const MIRROR_STATUS_SIG: MethodSignature<'static, 'static> =
    jni_sig!("(Ljava/lang/String;IJLjava/lang/String;J)V");
const CHECKED_CONFIG_CLASS: &JNIStr = jni_str!("io/offsetkeeper/NativeCheckedConfig");
const CHECKED_CONFIG_SIG: MethodSignature<'static, 'static> =
    jni_sig!("(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)V");

/// One class and its constructor.
struct Constructor {
    class: Global<JClass<'static>>,
    id: JMethodID,
    sig: MethodSignature<'static, 'static>,
}

impl Constructor {
    fn resolve(
        env: &mut Env<'_>,
        name: &JNIStr,
        sig: MethodSignature<'static, 'static>,
    ) -> Result<Constructor> {
        let local = env.find_class(name)?;
        let id = env.get_method_id(&local, jni_str!("<init>"), &sig)?;
        let class = env.new_global_ref(&local)?;
        env.delete_local_ref(local);
        Ok(Constructor { class, id, sig })
    }

    /// A new object; `args` are checked against the descriptor (count and primitive kinds), as
    /// `Env::new_object` does, before the cached constructor is called.
    fn new_object<'local>(
        &self,
        env: &mut Env<'local>,
        args: &[JValue],
    ) -> Result<JObject<'local>> {
        let expected = self.sig.args();
        let matches = expected.len() == args.len()
            && expected.iter().zip(args).all(|(want, arg)| match want {
                JavaType::Primitive(p) => arg.primitive_type() == Some(*p),
                JavaType::Object | JavaType::Array => arg.primitive_type().is_none(),
            });
        if !matches {
            return Err(jni::errors::Error::InvalidArgList((&self.sig).into()).into());
        }
        let raw: Vec<jvalue> = args.iter().map(JValue::as_jni).collect();
        // Safety: `id` is the constructor of `class` looked up with `sig`, and the arguments
        // were checked against `sig` above; object arguments have the Java types by
        // construction (the typed fields of the structs below).
        Ok(unsafe { env.new_object_unchecked(&self.class, self.id, &raw) }?)
    }
}

struct Constructors {
    partitions: Constructor,
    load: Constructor,
    inspect: Constructor,
    commit: Constructor,
    mirror_status: Constructor,
    checked_config: Constructor,
}

static CONSTRUCTORS: OnceCell<Constructors> = OnceCell::new();

fn constructors(env: &mut Env<'_>) -> Result<&'static Constructors> {
    CONSTRUCTORS.get_or_try_init(|| {
        Ok(Constructors {
            partitions: Constructor::resolve(env, PARTITIONS_CLASS, PARTITIONS_SIG)?,
            load: Constructor::resolve(env, LOAD_CLASS, LOAD_SIG)?,
            inspect: Constructor::resolve(env, INSPECT_CLASS, INSPECT_SIG)?,
            commit: Constructor::resolve(env, COMMIT_CLASS, COMMIT_SIG)?,
            mirror_status: Constructor::resolve(env, MIRROR_STATUS_CLASS, MIRROR_STATUS_SIG)?,
            checked_config: Constructor::resolve(env, CHECKED_CONFIG_CLASS, CHECKED_CONFIG_SIG)?,
        })
    })
}

/// `NativePartitions`: the columns load and inspect share, one element per partition, each
/// topic name once.
pub struct Partitions<'local> {
    pub topic_names: JObjectArray<'local, JString<'local>>,
    pub topic_index: JIntArray<'local>,
    pub partitions: JIntArray<'local>,
    pub stored_kinds: JByteArray<'local>,
    pub stored_offsets: JLongArray<'local>,
    pub corrupt_texts: JObjectArray<'local, JString<'local>>,
    pub earliest: JLongArray<'local>,
    pub latest: JLongArray<'local>,
}

/// A `NativePartitions` object, for the results that hold one.
pub struct NativePartitions<'local>(JObject<'local>);

impl<'local> Partitions<'local> {
    /// The object; the column arrays' local references are freed (the object holds them).
    pub fn build(self, env: &mut Env<'local>) -> Result<NativePartitions<'local>> {
        let object = constructors(env)?.partitions.new_object(
            env,
            &[
                JValue::Object(&self.topic_names),
                JValue::Object(&self.topic_index),
                JValue::Object(&self.partitions),
                JValue::Object(&self.stored_kinds),
                JValue::Object(&self.stored_offsets),
                JValue::Object(&self.corrupt_texts),
                JValue::Object(&self.earliest),
                JValue::Object(&self.latest),
            ],
        )?;
        let Partitions {
            topic_names,
            topic_index,
            partitions,
            stored_kinds,
            stored_offsets,
            corrupt_texts,
            earliest,
            latest,
        } = self;
        for column in [
            JObject::from(topic_names),
            topic_index.into(),
            partitions.into(),
            stored_kinds.into(),
            stored_offsets.into(),
            corrupt_texts.into(),
            earliest.into(),
            latest.into(),
        ] {
            env.delete_local_ref(column);
        }
        Ok(NativePartitions(object))
    }
}

/// `NativeLoadResult`: a load's partitions and decisions, then the stale partitions, then the
/// partitions where a move's mirror differed.
pub struct LoadResult<'local> {
    pub partitions: NativePartitions<'local>,
    pub chosen: JLongArray<'local>,
    pub actions: JByteArray<'local>,
    pub records_lost: JLongArray<'local>,
    pub recreated_from_ids: JObjectArray<'local, JString<'local>>,
    pub recreated_to_ids: JObjectArray<'local, JString<'local>>,
    pub recreated_reasons: JObjectArray<'local, JString<'local>>,
    pub stale_topics: JObjectArray<'local, JString<'local>>,
    pub stale_partitions: JIntArray<'local>,
    pub stale_kinds: JByteArray<'local>,
    pub stale_offsets: JLongArray<'local>,
    pub stale_texts: JObjectArray<'local, JString<'local>>,
    pub mirror_topics: JObjectArray<'local, JString<'local>>,
    pub mirror_partitions: JIntArray<'local>,
    pub mirror_authoritative_kinds: JByteArray<'local>,
    pub mirror_authoritative_offsets: JLongArray<'local>,
    pub mirror_authoritative_texts: JObjectArray<'local, JString<'local>>,
    pub mirror_kinds: JByteArray<'local>,
    pub mirror_offsets: JLongArray<'local>,
    pub mirror_texts: JObjectArray<'local, JString<'local>>,
    pub mirror_taken: JByteArray<'local>,
}

impl<'local> LoadResult<'local> {
    pub fn build(self, env: &mut Env<'local>) -> Result<JObject<'local>> {
        constructors(env)?.load.new_object(
            env,
            &[
                JValue::Object(&self.partitions.0),
                JValue::Object(&self.chosen),
                JValue::Object(&self.actions),
                JValue::Object(&self.records_lost),
                JValue::Object(&self.recreated_from_ids),
                JValue::Object(&self.recreated_to_ids),
                JValue::Object(&self.recreated_reasons),
                JValue::Object(&self.stale_topics),
                JValue::Object(&self.stale_partitions),
                JValue::Object(&self.stale_kinds),
                JValue::Object(&self.stale_offsets),
                JValue::Object(&self.stale_texts),
                JValue::Object(&self.mirror_topics),
                JValue::Object(&self.mirror_partitions),
                JValue::Object(&self.mirror_authoritative_kinds),
                JValue::Object(&self.mirror_authoritative_offsets),
                JValue::Object(&self.mirror_authoritative_texts),
                JValue::Object(&self.mirror_kinds),
                JValue::Object(&self.mirror_offsets),
                JValue::Object(&self.mirror_texts),
                JValue::Object(&self.mirror_taken),
            ],
        )
    }
}

/// `NativeInspectResult`: the partitions and the engine's lag of each.
pub struct InspectResult<'local> {
    pub partitions: NativePartitions<'local>,
    pub lag: JLongArray<'local>,
}

impl<'local> InspectResult<'local> {
    pub fn build(self, env: &mut Env<'local>) -> Result<JObject<'local>> {
        constructors(env)?.inspect.new_object(
            env,
            &[
                JValue::Object(&self.partitions.0),
                JValue::Object(&self.lag),
            ],
        )
    }
}

/// `CommitResult` itself (the public class): its fields are the commit's counts.
pub struct CommitCounts {
    pub written: i64,
    pub unchanged: i64,
    pub requests: i64,
    pub skipped: i64,
    pub deferred: bool,
    pub pending: i64,
    pub behind_ms: i64,
}

impl CommitCounts {
    pub fn build<'local>(self, env: &mut Env<'local>) -> Result<JObject<'local>> {
        constructors(env)?.commit.new_object(
            env,
            &[
                JValue::Long(self.written),
                JValue::Long(self.unchanged),
                JValue::Long(self.requests),
                JValue::Long(self.skipped),
                JValue::Bool(self.deferred),
                JValue::Long(self.pending),
                JValue::Long(self.behind_ms),
            ],
        )
    }
}

/// `MirrorStatus` itself (the public class): a move's mirror, as the engine's `MirrorStatus`.
pub struct MirrorState<'local> {
    pub store: JString<'local>,
    pub pending_partitions: i32,
    pub failures: i64,
    pub last_error: JString<'local>,
    pub behind_ms: i64,
}

impl<'local> MirrorState<'local> {
    pub fn build(self, env: &mut Env<'local>) -> Result<JObject<'local>> {
        constructors(env)?.mirror_status.new_object(
            env,
            &[
                JValue::Object(&self.store),
                JValue::Int(self.pending_partitions),
                JValue::Long(self.failures),
                JValue::Object(&self.last_error),
                JValue::Long(self.behind_ms),
            ],
        )
    }
}

/// `NativeCheckedConfig`: the engine's reading of a configuration and its pairs as shown.
pub struct CheckedConfig<'local> {
    pub description: JString<'local>,
    pub shown_settings: JString<'local>,
    pub shown_kafka_params: JString<'local>,
}

impl<'local> CheckedConfig<'local> {
    pub fn build(self, env: &mut Env<'local>) -> Result<JObject<'local>> {
        constructors(env)?.checked_config.new_object(
            env,
            &[
                JValue::Object(&self.description),
                JValue::Object(&self.shown_settings),
                JValue::Object(&self.shown_kafka_params),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The descriptor of a Java constructor's parameter list, read from its source file.
    fn java_constructor(class: &str) -> String {
        let path = format!(
            "{}/../../jvm/src/main/java/io/offsetkeeper/{class}.java",
            env!("CARGO_MANIFEST_DIR")
        );
        let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let start = source
            .find(&format!("\n    {class}("))
            .unwrap_or_else(|| panic!("no constructor in {path}"))
            + class.len()
            + 6;
        let end = start + source[start..].find(')').expect("a closing parenthesis");
        let mut descriptor = String::from("(");
        for parameter in source[start..end].split(',') {
            let java_type = parameter
                .split_whitespace()
                .next()
                .expect("a parameter type");
            let (element, array) = match java_type.strip_suffix("[]") {
                Some(element) => (element, "["),
                None => (java_type, ""),
            };
            let element = match element {
                "long" => "J".to_string(),
                "int" => "I".to_string(),
                "byte" => "B".to_string(),
                "boolean" => "Z".to_string(),
                "String" => "Ljava/lang/String;".to_string(),
                other => format!("Lio/offsetkeeper/{other};"),
            };
            descriptor.push_str(array);
            descriptor.push_str(&element);
        }
        descriptor + ")V"
    }

    #[test]
    fn each_descriptor_is_its_java_constructor() {
        for (class, name, sig) in [
            ("NativePartitions", PARTITIONS_CLASS, PARTITIONS_SIG),
            ("NativeLoadResult", LOAD_CLASS, LOAD_SIG),
            ("NativeInspectResult", INSPECT_CLASS, INSPECT_SIG),
            ("CommitResult", COMMIT_CLASS, COMMIT_SIG),
            ("MirrorStatus", MIRROR_STATUS_CLASS, MIRROR_STATUS_SIG),
            (
                "NativeCheckedConfig",
                CHECKED_CONFIG_CLASS,
                CHECKED_CONFIG_SIG,
            ),
        ] {
            assert_eq!(
                name.to_str(),
                format!("io/offsetkeeper/{class}"),
                "class name of {class}"
            );
            assert_eq!(sig.sig().to_str(), java_constructor(class), "{class}");
        }
    }
}
