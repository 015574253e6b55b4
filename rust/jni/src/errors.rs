//! Errors of the bridge and the policy that turns them, and panics, into Java exceptions.
//! Nothing here may unwind into the JVM or abort it.

use std::any::Any;

use jni::errors::ErrorPolicy;
use jni::strings::JNIString;
use jni::Env;

/// Why a native call failed.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(transparent)]
    Engine(#[from] offsetkeeper::Error),
    #[error("argument '{0}' is null; a value is required")]
    Null(String),
    #[error("this OffsetKeeper is closed")]
    Closed,
    #[error("{0}")]
    InvalidArgument(String),
    /// A JNI call failed; usually a Java exception is already pending and takes precedence.
    #[error("JNI call failed: {0}")]
    Jni(#[from] jni::errors::Error),
}

/// A bulk validation entry's error: bad input, or a `fail` policy (the engine's error).
impl From<offsetkeeper::validate::EntryError> for BridgeError {
    fn from(err: offsetkeeper::validate::EntryError) -> Self {
        use offsetkeeper::validate::EntryError as E;
        match err {
            E::NotARange { .. } => BridgeError::InvalidArgument(err.to_string()),
            E::Refused { .. } => offsetkeeper::Error::PolicyViolation(err.to_string()).into(),
        }
    }
}

const ILLEGAL_ARGUMENT: &str = "java/lang/IllegalArgumentException";
const ILLEGAL_STATE: &str = "java/lang/IllegalStateException";
const OFFSETKEEPER: &str = "io/offsetkeeper/OffsetKeeperException";

impl BridgeError {
    /// The Java exception class for this error.
    fn java_class(&self) -> &'static str {
        use offsetkeeper::Error as E;
        match self {
            BridgeError::Null(_) | BridgeError::InvalidArgument(_) => ILLEGAL_ARGUMENT,
            BridgeError::Closed => ILLEGAL_STATE,
            BridgeError::Jni(_) => OFFSETKEEPER,
            BridgeError::Engine(err) => match err {
                E::InvalidArgument(_) => ILLEGAL_ARGUMENT,
                E::UnknownTopic { .. } => "io/offsetkeeper/UnknownTopicException",
                E::ZooKeeper { .. } | E::MissingChroot { .. } => {
                    "io/offsetkeeper/ZooKeeperException"
                }
                E::Kafka { .. } => "io/offsetkeeper/KafkaClusterException",
                E::Timeout { .. } | E::KerberosLogin { .. } => {
                    "io/offsetkeeper/ServerTimeoutException"
                }
                E::PolicyViolation(_) => "io/offsetkeeper/PolicyViolationException",
                E::CommitConflict { .. } => "io/offsetkeeper/CommitConflictException",
                E::Owned { .. } | E::GroupInUse { .. } => "io/offsetkeeper/PartitionOwnedException",
                E::Internal(_) => OFFSETKEEPER,
            },
        }
    }
}

/// Throws the matching Java exception for an error, and an `OffsetKeeperException` for a
/// panic, then returns the type's default to the JVM. A pending exception is never replaced.
#[derive(Debug, Default)]
pub struct ThrowJavaException;

impl<T: Default> ErrorPolicy<T, BridgeError> for ThrowJavaException {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _captures: &mut (),
        err: BridgeError,
    ) -> jni::errors::Result<T> {
        throw(env, err.java_class(), &err.to_string());
        Ok(T::default())
    }

    fn on_panic<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _captures: &mut (),
        payload: Box<dyn Any + Send + 'static>,
    ) -> jni::errors::Result<T> {
        let message = panic_message(payload);
        throw(
            env,
            OFFSETKEEPER,
            &format!("native panic in offsetkeeper: {message}"),
        );
        Ok(T::default())
    }
}

/// Panics are reported once, through `log` (so into SLF4J), instead of Rust's default hook
/// printing to the JVM's stderr; the entry point then throws.
pub fn report_panics_through_log() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        std::panic::set_hook(Box::new(|info| log::error!("native panic: {info}")));
    });
}

fn throw(env: &mut Env<'_>, class: &str, message: &str) {
    if env.exception_check() {
        return;
    }
    if env
        .throw_new(JNIString::from(class), JNIString::from(message))
        .is_err()
        && !env.exception_check()
    {
        // The class could not be found (a broken classpath): fall back to a JDK class.
        let _ = env.throw_new(
            JNIString::from("java/lang/RuntimeException"),
            JNIString::from(format!("{class}: {message}")),
        );
    }
}

fn panic_message(payload: Box<dyn Any + Send + 'static>) -> String {
    match payload.downcast::<String>() {
        Ok(text) => *text,
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(text) => (*text).to_string(),
            Err(payload) => {
                // Dropping an unknown payload could itself panic: leak it instead.
                std::mem::forget(payload);
                "unknown panic payload".to_string()
            }
        },
    }
}
