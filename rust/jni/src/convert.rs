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
    let mut values = Vec::with_capacity(len);
    for index in 0..len {
        let element = array.get_element(env, index)?;
        if element.is_null() {
            return Err(BridgeError::Null(format!("{name}[{index}]")));
        }
        values.push(element.try_to_string(env)?);
        env.delete_local_ref(element);
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

/// The other direction: each topic once, and per entry the index of its name.
pub fn topic_index<'a>(topics: impl Iterator<Item = &'a str>) -> (Vec<String>, Vec<i32>) {
    let mut names: Vec<String> = Vec::new();
    let mut index = Vec::new();
    for topic in topics {
        // Entries come grouped by topic: the last name is almost always the one.
        let position = match names.iter().rposition(|name| name == topic) {
            Some(position) => position,
            None => {
                names.push(topic.to_string());
                names.len() - 1
            }
        };
        index.push(position as i32);
    }
    (names, index)
}

/// A String[] with null where there is no value.
pub fn new_optional_strings<'local>(
    env: &mut Env<'local>,
    values: &[Option<String>],
) -> Result<JObjectArray<'local, JString<'local>>> {
    let array = JObjectArray::<JString>::new(env, values.len(), JString::null())?;
    for (index, value) in values.iter().enumerate() {
        if let Some(value) = value {
            let text = env.new_string(value)?;
            array.set_element(env, index, &text)?;
            env.delete_local_ref(text);
        }
    }
    Ok(array)
}

pub fn new_strings<'local>(
    env: &mut Env<'local>,
    values: &[String],
) -> Result<JObjectArray<'local, JString<'local>>> {
    let array = JObjectArray::<JString>::new(env, values.len(), JString::null())?;
    for (index, value) in values.iter().enumerate() {
        let text = env.new_string(value)?;
        array.set_element(env, index, &text)?;
        env.delete_local_ref(text);
    }
    Ok(array)
}

macro_rules! primitive_writer {
    ($fn_name:ident, $new:ident, $array:ident, $elem:ty) => {
        pub fn $fn_name<'local>(env: &mut Env<'local>, values: &[$elem]) -> Result<$array<'local>> {
            let array = env.$new(values.len())?;
            array.set_region(env, 0, values)?;
            Ok(array)
        }
    };
}

primitive_writer!(new_ints, new_int_array, JIntArray, i32);
primitive_writer!(new_longs, new_long_array, JLongArray, i64);
primitive_writer!(new_bytes, new_byte_array, JByteArray, i8);

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_cross_once_each_with_an_index_per_entry() {
        let (names, index) = topic_index(["a", "a", "b", "a", "b"].into_iter());
        assert_eq!(
            (names.as_slice(), index.as_slice()),
            (
                &["a".to_string(), "b".to_string()][..],
                &[0, 0, 1, 0, 1][..]
            )
        );
    }
}
