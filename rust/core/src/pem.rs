//! Certificate files: PEM only. JKS and PKCS#12 stores, which offsetkeeper cannot read, are
//! refused saying what to give instead. The PEM itself is read by rustls' `pki_types`.

use std::path::PathBuf;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::{Error, Result};

/// The X.509 certificates in PEM text; `what` names it in errors (a key and a path).
pub(crate) fn certificates(what: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<_, _>>()
        .map_err(|err| Error::invalid(format!("{what}: not PEM: {err}")))
}

/// The first unencrypted private key (PKCS#8, PKCS#1 or SEC1) in PEM text; `None` when it
/// holds none.
pub(crate) fn private_key(what: &str, pem: &[u8]) -> Result<Option<PrivateKeyDer<'static>>> {
    match PrivateKeyDer::from_pem_slice(pem) {
        Ok(key) => Ok(Some(key)),
        Err(pem::Error::NoItemsFound) => Ok(None),
        Err(err) => Err(Error::invalid(format!("{what}: not PEM: {err}"))),
    }
}

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
