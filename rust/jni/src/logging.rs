//! Rust `log` records go to SLF4J through `io.offsetkeeper.NativeLog`, so native warnings
//! reach the Spark driver's log. The class and method are resolved once, on a JVM thread;
//! a record from a native thread attaches it only for the call, so no thread of ours can keep
//! the JVM from exiting. Logging never throws into Java.

use jni::objects::{Global, JClass, JStaticMethodID};
use jni::signature::{Primitive, ReturnType};
use jni::sys::jvalue;
use jni::{jni_sig, jni_str, Env, JavaVM};
use once_cell::sync::OnceCell;

struct JvmLogger {
    vm: JavaVM,
    class: Global<JClass<'static>>,
    log_method: JStaticMethodID,
}

static LOGGER: OnceCell<JvmLogger> = OnceCell::new();

/// Installs the SLF4J bridge once per process. Failure leaves logging off, never an error.
pub fn init(env: &mut Env<'_>) {
    if LOGGER.get().is_some() {
        return;
    }
    match resolve(env) {
        Ok((logger, max_level)) => {
            if LOGGER.set(logger).is_ok() {
                if let Some(logger) = LOGGER.get() {
                    if log::set_logger(logger).is_ok() {
                        log::set_max_level(max_level);
                    }
                }
            }
        }
        Err(_) => {
            // Leave no pending exception behind: the caller's own work goes on.
            if env.exception_check() {
                env.exception_clear();
            }
        }
    }
}

fn resolve(env: &mut Env<'_>) -> jni::errors::Result<(JvmLogger, log::LevelFilter)> {
    let class = env.find_class(jni_str!("io/offsetkeeper/NativeLog"))?;
    let log_method = env.get_static_method_id(
        &class,
        jni_str!("log"),
        jni_sig!("(ILjava/lang/String;Ljava/lang/String;)V"),
    )?;
    let level = env
        .call_static_method(&class, jni_str!("maxLevel"), jni_sig!("()I"), &[])?
        .i()?;
    let logger = JvmLogger {
        vm: env.get_java_vm()?,
        class: env.new_global_ref(&class)?,
        log_method,
    };
    Ok((logger, level_filter(level)))
}

fn is_jni_crate(target: &str) -> bool {
    target == "jni" || target.starts_with("jni::")
}

fn level_filter(level: i32) -> log::LevelFilter {
    match level {
        i32::MIN..=0 => log::LevelFilter::Off,
        1 => log::LevelFilter::Error,
        2 => log::LevelFilter::Warn,
        3 => log::LevelFilter::Info,
        4 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    }
}

impl log::Log for JvmLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        // Not the jni crate's own records: forwarding one attaches the thread, which logs
        // again ("Attached thread ..."), without end when the JVM's logger is at DEBUG.
        metadata.level() <= log::max_level() && !is_jni_crate(metadata.target())
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let level = record.level() as i32;
        let target = record.target().replace("::", ".");
        let message = record.args().to_string();
        let _ = self
            .vm
            .attach_current_thread_for_scope(|env| -> jni::errors::Result<()> {
                let target = env.new_string(&target)?;
                let message = env.new_string(&message)?;
                let args = [
                    jvalue { i: level },
                    jvalue { l: target.as_raw() },
                    jvalue {
                        l: message.as_raw(),
                    },
                ];
                // Safety: the method id was resolved with exactly this signature.
                unsafe {
                    env.call_static_method_unchecked(
                        &self.class,
                        self.log_method,
                        ReturnType::Primitive(Primitive::Void),
                        &args,
                    )
                }?;
                Ok(())
            });
    }

    fn flush(&self) {}
}

#[cfg(test)]
mod tests {
    use super::is_jni_crate;

    #[test]
    fn the_jni_crates_own_records_are_not_forwarded() {
        assert!(is_jni_crate("jni"));
        assert!(is_jni_crate("jni::wrapper::java_vm::vm"));
        assert!(!is_jni_crate("jnix"));
        assert!(!is_jni_crate("offsetkeeper::zookeeper"));
        assert!(!is_jni_crate("offsetkeeper_jni::sasl"));
    }
}
