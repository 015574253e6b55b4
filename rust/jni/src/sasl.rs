//! Kerberos through the JVM: the engine's [`SaslProvider`] over `io.offsetkeeper.GssapiClients`
//! (the JVM's JAAS login and GSSAPI client), whose exchanges are `GssapiExchange` objects.
//!
//! The engine calls from its tokio workers, not from JVM threads: each call attaches the thread
//! for its scope only (as the log bridge does), and uses classes and method IDs resolved once,
//! on a JVM thread inside a native method, since `FindClass` from a native thread would search
//! the system class loader, not the jar's. A Java exception is cleared and becomes a
//! [`SaslFailure`] carrying its message; nothing here panics or unwinds into the JVM.

use std::sync::Arc;

use jni::objects::{Global, JByteArray, JClass, JMethodID, JObject, JObjectArray, JString};
use jni::signature::{JavaType, MethodSignature, Primitive};
use jni::strings::JNIStr;
use jni::sys::jvalue;
use jni::{jni_sig, jni_str, Env, JavaVM};
use offsetkeeper::sasl::{
    LoginFacts, SaslExchange, SaslFailure, SaslProvider, SaslProviderHandle, SaslService,
};
use once_cell::sync::OnceCell;

use crate::errors::BridgeError;

// Descriptors of the Java methods called. The test below holds each to its Java source.
const CLIENTS_CLASS: &JNIStr = jni_str!("io/offsetkeeper/GssapiClients");
const START_SIG: MethodSignature<'static, 'static> =
    jni_sig!("(ILjava/lang/String;)Lio/offsetkeeper/GssapiExchange;");
const LOGIN_FACTS_SIG: MethodSignature<'static, 'static> = jni_sig!("(I)[Ljava/lang/String;");
const EXCHANGE_CLASS: &JNIStr = jni_str!("io/offsetkeeper/GssapiExchange");
const INITIAL_SIG: MethodSignature<'static, 'static> = jni_sig!("()[B");
const EVALUATE_SIG: MethodSignature<'static, 'static> = jni_sig!("([B)[B");
const IS_COMPLETE_SIG: MethodSignature<'static, 'static> = jni_sig!("()Z");
const DISPOSE_SIG: MethodSignature<'static, 'static> = jni_sig!("()V");
const TO_TEXT_SIG: MethodSignature<'static, 'static> = jni_sig!("()Ljava/lang/String;");

/// `GssapiClients`' service codes.
const ZOOKEEPER: i32 = 0;
const KAFKA: i32 = 1;

/// The classes (held, so that the IDs stay valid) and the methods called.
struct Methods {
    _clients: Global<JClass<'static>>,
    _exchange: Global<JClass<'static>>,
    _throwable: Global<JClass<'static>>,
    start: JMethodID,
    login_facts: JMethodID,
    initial: JMethodID,
    evaluate: JMethodID,
    is_complete: JMethodID,
    dispose: JMethodID,
    get_message: JMethodID,
    to_string: JMethodID,
}

/// Once per loaded copy of this library, as the result constructors (see results.rs).
static METHODS: OnceCell<Methods> = OnceCell::new();

fn methods(env: &mut Env<'_>) -> Result<&'static Methods, BridgeError> {
    METHODS.get_or_try_init(|| {
        let clients = env.find_class(CLIENTS_CLASS)?;
        let exchange = env.find_class(EXCHANGE_CLASS)?;
        let throwable = env.find_class(jni_str!("java/lang/Throwable"))?;
        let methods = Methods {
            start: env.get_method_id(&clients, jni_str!("start"), &START_SIG)?,
            login_facts: env.get_method_id(&clients, jni_str!("loginFacts"), &LOGIN_FACTS_SIG)?,
            initial: env.get_method_id(&exchange, jni_str!("initial"), &INITIAL_SIG)?,
            evaluate: env.get_method_id(&exchange, jni_str!("evaluate"), &EVALUATE_SIG)?,
            is_complete: env.get_method_id(&exchange, jni_str!("isComplete"), &IS_COMPLETE_SIG)?,
            dispose: env.get_method_id(&exchange, jni_str!("dispose"), &DISPOSE_SIG)?,
            get_message: env.get_method_id(&throwable, jni_str!("getMessage"), &TO_TEXT_SIG)?,
            to_string: env.get_method_id(&throwable, jni_str!("toString"), &TO_TEXT_SIG)?,
            _clients: env.new_global_ref(&clients)?,
            _exchange: env.new_global_ref(&exchange)?,
            _throwable: env.new_global_ref(&throwable)?,
        };
        env.delete_local_ref(clients);
        env.delete_local_ref(exchange);
        env.delete_local_ref(throwable);
        Ok(methods)
    })
}

/// The engine's provider over a `GssapiClients` object. Call on a JVM thread (inside a native
/// method): the methods are resolved here.
pub fn provider(
    env: &mut Env<'_>,
    clients: &JObject<'_>,
) -> Result<SaslProviderHandle, BridgeError> {
    let methods = methods(env)?;
    Ok(SaslProviderHandle(Arc::new(JvmSasl {
        vm: env.get_java_vm()?,
        clients: Some(env.new_global_ref(clients)?),
        methods,
    })))
}

struct JvmSasl {
    vm: JavaVM,
    /// Always `Some` until dropped (taken by `Drop`, to release it while attached).
    clients: Option<Global<JObject<'static>>>,
    methods: &'static Methods,
}

/// A failed call inside an attachment: a JNI error (a Java exception may be pending) or a
/// failure already put into words.
enum CallError {
    Jni(jni::errors::Error),
    Failure(SaslFailure),
}

impl From<jni::errors::Error> for CallError {
    fn from(err: jni::errors::Error) -> Self {
        CallError::Jni(err)
    }
}

/// Runs `call` with the thread attached for its scope (and a local frame), turning a pending
/// Java exception into a [`SaslFailure`] with its message.
fn attached<T>(
    vm: &JavaVM,
    methods: &Methods,
    call: impl FnOnce(&mut Env<'_>) -> Result<T, CallError>,
) -> Result<T, SaslFailure> {
    let result = vm.attach_current_thread_for_scope(|env| -> Result<T, CallError> {
        match call(env) {
            Err(CallError::Jni(err)) => Err(CallError::Failure(caught(env, methods, err))),
            other => other,
        }
    });
    match result {
        Ok(value) => Ok(value),
        Err(CallError::Failure(failure)) => Err(failure),
        // Attaching failed, or an exception was caught on leaving the scope.
        Err(CallError::Jni(err)) => Err(SaslFailure(format!(
            "Kerberos through the JVM failed: {}",
            first_line(&err.to_string())
        ))),
    }
}

/// The failure for a JNI error: the pending Java exception's message (cleared), or the error.
fn caught(env: &mut Env<'_>, methods: &Methods, err: jni::errors::Error) -> SaslFailure {
    let Some(throwable) = env.exception_occurred() else {
        return SaslFailure(format!("Kerberos through the JVM failed: {err}"));
    };
    env.exception_clear();
    let text = text_of(env, &throwable, methods.get_message)
        .or_else(|| text_of(env, &throwable, methods.to_string))
        .unwrap_or_else(|| "a Java exception without a message".to_string());
    env.delete_local_ref(throwable);
    SaslFailure(text)
}

/// `getMessage()` or `toString()` of a throwable; `None` when null or when the call throws.
fn text_of(env: &mut Env<'_>, throwable: &JObject<'_>, method: JMethodID) -> Option<String> {
    // Safety: `method` was resolved on java.lang.Throwable as `()Ljava/lang/String;`.
    let value = unsafe { env.call_method_unchecked(throwable, method, JavaType::Object, &[]) };
    let object = match value.and_then(|v| v.l()) {
        Ok(object) => object,
        Err(_) => {
            env.exception_clear();
            return None;
        }
    };
    if object.is_null() {
        return None;
    }
    // Safety: the method returns a String.
    let text = unsafe { JString::from_raw(env, object.into_raw()) };
    let result = text.try_to_string(env).ok();
    if result.is_none() {
        env.exception_clear();
    }
    env.delete_local_ref(text);
    result.filter(|message| !message.is_empty())
}

/// The first line of a JNI error (a caught exception's stack trace follows it).
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

/// The bytes of a `byte[]` result; null is empty.
fn bytes_of(env: &mut Env<'_>, array: JObject<'_>) -> Result<Vec<u8>, CallError> {
    if array.is_null() {
        return Ok(Vec::new());
    }
    // Safety: the method returns a byte[].
    let array = unsafe { JByteArray::from_raw(env, array.into_raw()) };
    let bytes = env.convert_byte_array(&array)?;
    env.delete_local_ref(array);
    Ok(bytes)
}

impl SaslProvider for JvmSasl {
    fn start(
        &self,
        service: SaslService,
        host: &str,
    ) -> Result<Box<dyn SaslExchange>, SaslFailure> {
        let Some(clients) = &self.clients else {
            return Err(SaslFailure(
                "the JVM's Kerberos provider is released".into(),
            ));
        };
        let code = match service {
            SaslService::ZooKeeper => ZOOKEEPER,
            SaslService::Kafka => KAFKA,
        };
        let methods = self.methods;
        let (exchange, complete) = attached(&self.vm, methods, |env| {
            let host = env.new_string(host)?;
            let args = [jvalue { i: code }, jvalue { l: host.as_raw() }];
            // Safety: `start` was resolved on GssapiClients with START_SIG; `clients` is one.
            let exchange = unsafe {
                env.call_method_unchecked(clients, methods.start, JavaType::Object, &args)
            }?
            .l()?;
            env.delete_local_ref(host);
            if exchange.is_null() {
                return Err(CallError::Failure(SaslFailure(
                    "GssapiClients.start returned no exchange".into(),
                )));
            }
            let complete = is_complete(env, methods, &exchange)?;
            Ok((env.new_global_ref(&exchange)?, complete))
        })?;
        Ok(Box::new(JvmExchange {
            vm: self.vm.clone(),
            exchange: Some(exchange),
            methods,
            complete,
        }))
    }

    fn login_facts(&self, service: SaslService) -> Option<LoginFacts> {
        let clients = self.clients.as_ref()?;
        let code = match service {
            SaslService::ZooKeeper => ZOOKEEPER,
            SaslService::Kafka => KAFKA,
        };
        let methods = self.methods;
        let facts = attached(&self.vm, methods, |env| {
            let args = [jvalue { i: code }];
            // Safety: `loginFacts` was resolved on GssapiClients with LOGIN_FACTS_SIG.
            let array = unsafe {
                env.call_method_unchecked(clients, methods.login_facts, JavaType::Object, &args)
            }?
            .l()?;
            if array.is_null() {
                return Ok(None);
            }
            // Safety: the method returns a String[].
            let array = unsafe { JObjectArray::<JString>::from_raw(env, array.into_raw()) };
            let mut texts: Vec<Option<String>> = Vec::new();
            for index in 0..array.len(env)? {
                let element = array.get_element(env, index)?;
                texts.push(if element.is_null() {
                    None
                } else {
                    Some(element.try_to_string(env)?)
                });
                env.delete_local_ref(element);
            }
            env.delete_local_ref(array);
            Ok(Some(texts))
        })
        .ok()??;
        let mut texts = facts.into_iter();
        Some(LoginFacts {
            login: texts.next().flatten()?,
            principal: texts.next().flatten(),
            realm: texts.next().flatten(),
            krb5_conf: texts.next().flatten().map(std::path::PathBuf::from),
        })
    }
}

impl Drop for JvmSasl {
    fn drop(&mut self) {
        // Released while attached: a Global dropped on a detached thread attaches and warns.
        let clients = self.clients.take();
        let _ = self
            .vm
            .attach_current_thread_for_scope(|_env| -> jni::errors::Result<()> {
                drop(clients);
                Ok(())
            });
    }
}

fn is_complete(
    env: &mut Env<'_>,
    methods: &Methods,
    exchange: &JObject<'_>,
) -> Result<bool, CallError> {
    // Safety: `isComplete` was resolved on GssapiExchange as `()Z`; `exchange` is one.
    let value = unsafe {
        env.call_method_unchecked(
            exchange,
            methods.is_complete,
            JavaType::Primitive(Primitive::Boolean),
            &[],
        )
    }?;
    Ok(value.z()?)
}

/// One exchange: a `GssapiExchange`, disposed and released on drop.
struct JvmExchange {
    vm: JavaVM,
    /// Always `Some` until dropped.
    exchange: Option<Global<JObject<'static>>>,
    methods: &'static Methods,
    /// `isComplete()` as of the last call, so that `is_complete` needs no JNI.
    complete: bool,
}

impl JvmExchange {
    /// Calls a `byte[]` method of the exchange (`initial`, `evaluate`), then `isComplete`.
    fn token(
        &mut self,
        method: JMethodID,
        challenge: Option<&[u8]>,
    ) -> Result<Vec<u8>, SaslFailure> {
        let Some(exchange) = &self.exchange else {
            return Err(SaslFailure("the Kerberos exchange is released".into()));
        };
        let methods = self.methods;
        let (token, complete) = attached(&self.vm, methods, |env| {
            let argument = match challenge {
                Some(challenge) => Some(env.byte_array_from_slice(challenge)?),
                None => None,
            };
            let args: Vec<jvalue> = argument
                .iter()
                .map(|array| jvalue { l: array.as_raw() })
                .collect();
            // Safety: `method` was resolved on GssapiExchange as `()[B` (no argument) or
            // `([B)[B` (one), and `exchange` is one.
            let token =
                unsafe { env.call_method_unchecked(exchange, method, JavaType::Array, &args) }?
                    .l()?;
            if let Some(argument) = argument {
                env.delete_local_ref(argument);
            }
            let token = bytes_of(env, token)?;
            Ok((token, is_complete(env, methods, exchange)?))
        })?;
        self.complete = complete;
        Ok(token)
    }
}

impl SaslExchange for JvmExchange {
    fn initial(&mut self) -> Result<Vec<u8>, SaslFailure> {
        self.token(self.methods.initial, None)
    }

    fn evaluate(&mut self, challenge: &[u8]) -> Result<Vec<u8>, SaslFailure> {
        self.token(self.methods.evaluate, Some(challenge))
    }

    fn is_complete(&self) -> bool {
        self.complete
    }
}

impl Drop for JvmExchange {
    fn drop(&mut self) {
        let Some(exchange) = self.exchange.take() else {
            return;
        };
        let dispose = self.methods.dispose;
        let _ = self
            .vm
            .attach_current_thread_for_scope(|env| -> jni::errors::Result<()> {
                // Safety: `dispose` was resolved on GssapiExchange as `()V`.
                let disposed = unsafe {
                    env.call_method_unchecked(
                        &exchange,
                        dispose,
                        JavaType::Primitive(Primitive::Void),
                        &[],
                    )
                };
                if disposed.is_err() {
                    env.exception_clear();
                }
                drop(exchange);
                Ok(())
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The descriptor of a method `name` in a Java source file (parameters and return type of
    /// the types used here).
    fn java_method(class: &str, name: &str) -> String {
        let path = format!(
            "{}/../../jvm/src/main/java/io/offsetkeeper/{class}.java",
            env!("CARGO_MANIFEST_DIR")
        );
        let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let open = source
            .find(&format!(" {name}("))
            .unwrap_or_else(|| panic!("no method {name} in {path}"));
        let line_start = source[..open].rfind('\n').map_or(0, |i| i + 1);
        let return_type = source[line_start..open]
            .split_whitespace()
            .last()
            .expect("a return type");
        let close = open + source[open..].find(')').expect("a closing parenthesis");
        let parameters = &source[open + name.len() + 2..close];
        let descriptor = |java_type: &str| match java_type {
            "int" => "I".to_string(),
            "boolean" => "Z".to_string(),
            "void" => "V".to_string(),
            "byte[]" => "[B".to_string(),
            "String" => "Ljava/lang/String;".to_string(),
            "String[]" => "[Ljava/lang/String;".to_string(),
            other => format!("Lio/offsetkeeper/{other};"),
        };
        let arguments: String = parameters
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| descriptor(p.split_whitespace().next().expect("a parameter type")))
            .collect();
        format!("({arguments}){}", descriptor(return_type))
    }

    #[test]
    fn each_descriptor_is_its_java_method() {
        assert_eq!(CLIENTS_CLASS.to_str(), "io/offsetkeeper/GssapiClients");
        assert_eq!(EXCHANGE_CLASS.to_str(), "io/offsetkeeper/GssapiExchange");
        for (class, name, sig) in [
            ("GssapiClients", "start", START_SIG),
            ("GssapiClients", "loginFacts", LOGIN_FACTS_SIG),
            ("GssapiExchange", "initial", INITIAL_SIG),
            ("GssapiExchange", "evaluate", EVALUATE_SIG),
            ("GssapiExchange", "isComplete", IS_COMPLETE_SIG),
            ("GssapiExchange", "dispose", DISPOSE_SIG),
        ] {
            assert_eq!(
                sig.sig().to_str(),
                java_method(class, name),
                "{class}.{name}"
            );
        }
    }

    #[test]
    fn service_codes_are_the_java_ones() {
        let source = std::fs::read_to_string(format!(
            "{}/../../jvm/src/main/java/io/offsetkeeper/GssapiClients.java",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("GssapiClients.java");
        assert!(source.contains(&format!("static final int ZOOKEEPER = {ZOOKEEPER};")));
        assert!(source.contains(&format!("static final int KAFKA = {KAFKA};")));
    }
}
