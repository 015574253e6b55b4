//! Certificate files: PEM only. JKS and PKCS#12 stores, which offsetkeeper cannot read, are
//! refused saying what to give instead.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// A PEM file: JKS and PKCS#12 stores, which offsetkeeper cannot read, are refused saying
/// what to give instead.
pub(crate) fn pem_file(key: &str, path: &str, kind: &str, type_key: &str) -> Result<PathBuf> {
    let path = PathBuf::from(path.trim());
    let head = std::fs::read(&path)
        .map(|bytes| bytes.into_iter().take(4).collect::<Vec<u8>>())
        .map_err(|err| {
            Error::invalid(format!("{key} {}: cannot read it: {err}", path.display()))
        })?;
    let is_jks = head == [0xfe, 0xed, 0xfe, 0xed] || kind.eq_ignore_ascii_case("JKS");
    if is_jks {
        return Err(Error::invalid(format!(
            "{key} {} is a Java KeyStore (JKS), which offsetkeeper cannot read; give the same certificates as a PEM file and set {type_key}=PEM (keytool -exportcert -rfc, or openssl pkcs12 -nokeys on a PKCS#12 export)",
            path.display()
        )));
    }
    if !kind.eq_ignore_ascii_case("PEM") {
        return Err(Error::invalid(format!(
            "{key} {} has {type_key}={kind}; allowed: PEM (convert a PKCS#12 store with openssl pkcs12 -nodes)",
            path.display()
        )));
    }
    Ok(path)
}

/// The text of a checked PEM file.
pub(crate) fn pem_text(key: &str, path: &str, kind: &str, type_key: &str) -> Result<String> {
    let path = pem_file(key, path, kind, type_key)?;
    std::fs::read_to_string(&path).map_err(|err| {
        Error::invalid(format!(
            "{key} {}: cannot read it as text: {err}",
            path.display()
        ))
    })
}
