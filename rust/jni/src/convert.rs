//! Java values in and out: every argument is checked for null and for matching lengths, and
//! bulk data crosses as whole arrays.

use jni::objects::{JByteArray, JIntArray, JLongArray, JObject, JObjectArray, JString};
use jni::Env;

use crate::errors::BridgeError;

type Result<T> = std::result::Result<T, BridgeError>;

pub fn string(env: &Env<'_>, value: &JString<'_>, name: &str) -> Result<String> {
    if value.is_null() {
        return Err(BridgeError::Null(name.to_string()));
    }
    Ok(value.try_to_string(env)?)
}

/// A string that may be null (meaning "use the default").
pub fn optional_string(env: &Env<'_>, value: &JString<'_>) -> Result<Option<String>> {
    if value.is_null() {
        return Ok(None);
    }
    Ok(Some(value.try_to_string(env)?))
}

pub fn strings(
    env: &mut Env<'_>,
    array: &JObjectArray<'_, JString<'_>>,
    name: &str,
) -> Result<Vec<String>> {
    if array.is_null() {
        return Err(BridgeError::Null(name.to_string()));
    }
    let len = array.len(env)?;
    let mut values: Vec<String> = Vec::with_capacity(len);
    let mut previous: Option<JString<'_>> = None;
    for index in 0..len {
        let element = array.get_element(env, index)?;
        if element.is_null() {
            return Err(BridgeError::Null(format!("{name}[{index}]")));
        }
        // A batch names each topic many times, usually with the same String object: copy
        // the characters once per run of it.
        let repeated = match (&previous, values.last()) {
            (Some(previous), Some(last)) if env.is_same_object(previous, &element)? => {
                Some(last.clone())
            }
            _ => None,
        };
        values.push(match repeated {
            Some(value) => value,
            None => element.try_to_string(env)?,
        });
        if let Some(previous) = previous.replace(element) {
            env.delete_local_ref(previous);
        }
    }
    if let Some(previous) = previous {
        env.delete_local_ref(previous);
    }
    Ok(values)
}

macro_rules! primitive_reader {
    ($fn_name:ident, $array:ty, $elem:ty) => {
        pub fn $fn_name(env: &Env<'_>, array: &$array, name: &str) -> Result<Vec<$elem>> {
            if array.is_null() {
                return Err(BridgeError::Null(name.to_string()));
            }
            let mut values = vec![<$elem>::default(); array.len(env)?];
            array.get_region(env, 0, &mut values)?;
            Ok(values)
        }
    };
}

primitive_reader!(ints, JIntArray<'_>, i32);
primitive_reader!(longs, JLongArray<'_>, i64);
primitive_reader!(bytes, JByteArray<'_>, i8);

/// Refuses arrays that should pair up element by element but differ in length.
pub fn same_lengths(names: &[&str], lengths: &[usize]) -> Result<()> {
    if lengths.windows(2).all(|pair| pair[0] == pair[1]) {
        return Ok(());
    }
    let described: Vec<String> = names
        .iter()
        .zip(lengths)
        .map(|(name, len)| format!("{name}={len}"))
        .collect();
    Err(BridgeError::InvalidArgument(format!(
        "array lengths differ ({}); they must be equal",
        described.join(", ")
    )))
}

pub fn new_strings<'local>(env: &mut Env<'local>, values: &[String]) -> Result<JObject<'local>> {
    let array = JObjectArray::<JString>::new(env, values.len(), JString::null())?;
    for (index, value) in values.iter().enumerate() {
        let text = env.new_string(value)?;
        array.set_element(env, index, &text)?;
        env.delete_local_ref(text);
    }
    Ok(array.into())
}

macro_rules! primitive_writer {
    ($fn_name:ident, $new:ident, $elem:ty) => {
        pub fn $fn_name<'local>(
            env: &mut Env<'local>,
            values: &[$elem],
        ) -> Result<JObject<'local>> {
            let array = env.$new(values.len())?;
            array.set_region(env, 0, values)?;
            Ok(array.into())
        }
    };
}

primitive_writer!(new_ints, new_int_array, i32);
primitive_writer!(new_longs, new_long_array, i64);
primitive_writer!(new_bytes, new_byte_array, i8);

/// An `Object[]` holding the given arrays, in order.
pub fn new_object_array<'local>(
    env: &mut Env<'local>,
    elements: Vec<JObject<'local>>,
) -> Result<JObjectArray<'local>> {
    let array = JObjectArray::<JObject>::new(env, elements.len(), JObject::null())?;
    for (index, element) in elements.into_iter().enumerate() {
        array.set_element(env, index, &element)?;
        env.delete_local_ref(element);
    }
    Ok(array)
}

/// A Java `int` timeout in milliseconds, refused unless positive.
pub fn millis(value: i32, name: &str) -> Result<std::time::Duration> {
    if value <= 0 {
        return Err(BridgeError::InvalidArgument(format!(
            "{name} is {value} ms; allowed: 1 ms or more"
        )));
    }
    Ok(std::time::Duration::from_millis(value as u64))
}
