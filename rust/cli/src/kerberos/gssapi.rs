//! The system's GSS-API (MIT krb5's `libgssapi_krb5.so.2`), opened at run time with dlopen and
//! only when a configuration asks for Kerberos: the CLI binary itself needs nothing but glibc.
//! The few calls used are declared by hand from MIT's `gssapi.h` and `gssapi_ext.h`; every
//! `unsafe` block of the CLI's Kerberos is in this file, each wrapped in a type that releases
//! what GSS-API allocated.

use std::ffi::{c_int, c_void, CString};
use std::ptr;
use std::sync::OnceLock;

use libloading::Library;

/// The library's name as Debian, Ubuntu, RHEL and their kin install it.
pub const LIBRARY: &str = "libgssapi_krb5.so.2";

type OmUint32 = u32;
type GssName = *mut c_void;
type GssCred = *mut c_void;
type GssCtx = *mut c_void;

#[repr(C)]
struct BufferDesc {
    length: usize,
    value: *mut c_void,
}

#[repr(C)]
struct OidDesc {
    length: OmUint32,
    elements: *mut c_void,
}

#[repr(C)]
struct OidSetDesc {
    count: usize,
    elements: *mut OidDesc,
}

#[repr(C)]
struct KeyValueElement {
    key: *const std::ffi::c_char,
    value: *const std::ffi::c_char,
}

#[repr(C)]
struct KeyValueSet {
    count: OmUint32,
    elements: *mut KeyValueElement,
}

// Constants of RFC 2744 and MIT's headers.
const GSS_C_INITIATE: c_int = 1;
const GSS_C_INDEFINITE: OmUint32 = 0xffff_ffff;
const GSS_C_GSS_CODE: c_int = 1;
const GSS_C_MECH_CODE: c_int = 2;
const GSS_C_MUTUAL_FLAG: OmUint32 = 2;
const GSS_C_REPLAY_FLAG: OmUint32 = 4;
const GSS_C_SEQUENCE_FLAG: OmUint32 = 8;
const GSS_C_CONF_FLAG: OmUint32 = 16;
const GSS_C_INTEG_FLAG: OmUint32 = 32;
const GSS_S_CONTINUE_NEEDED: OmUint32 = 1;
/// The calling and routine error fields; the low 16 bits are supplementary information.
const GSS_ERROR_MASK: OmUint32 = 0xffff_0000;
/// GSS_S_FAILURE: "Unspecified GSS failure", the minor status says what.
const GSS_S_FAILURE: OmUint32 = 13 << 16;

// DER contents of the OIDs (RFC 2744, RFC 1964).
/// GSS_C_NT_HOSTBASED_SERVICE, 1.2.840.113554.1.2.1.4: `service@host`.
const NT_HOSTBASED_SERVICE: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x01\x04";
/// GSS_C_NT_USER_NAME, 1.2.840.113554.1.2.1.1: `user@REALM`.
const NT_USER_NAME: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x01\x01";
/// The Kerberos 5 mechanism, 1.2.840.113554.1.2.2.
const KRB5_MECHANISM: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02";

type ImportName =
    unsafe extern "C" fn(*mut OmUint32, *mut BufferDesc, *mut OidDesc, *mut GssName) -> OmUint32;
type ReleaseName = unsafe extern "C" fn(*mut OmUint32, *mut GssName) -> OmUint32;
type DisplayName =
    unsafe extern "C" fn(*mut OmUint32, GssName, *mut BufferDesc, *mut *mut OidDesc) -> OmUint32;
type AcquireCred = unsafe extern "C" fn(
    *mut OmUint32,
    GssName,
    OmUint32,
    *mut OidSetDesc,
    c_int,
    *mut GssCred,
    *mut *mut OidSetDesc,
    *mut OmUint32,
) -> OmUint32;
type AcquireCredFrom = unsafe extern "C" fn(
    *mut OmUint32,
    GssName,
    OmUint32,
    *mut OidSetDesc,
    c_int,
    *const KeyValueSet,
    *mut GssCred,
    *mut *mut OidSetDesc,
    *mut OmUint32,
) -> OmUint32;
type InquireCred = unsafe extern "C" fn(
    *mut OmUint32,
    GssCred,
    *mut GssName,
    *mut OmUint32,
    *mut c_int,
    *mut *mut OidSetDesc,
) -> OmUint32;
type ReleaseCred = unsafe extern "C" fn(*mut OmUint32, *mut GssCred) -> OmUint32;
type InitSecContext = unsafe extern "C" fn(
    *mut OmUint32,
    GssCred,
    *mut GssCtx,
    GssName,
    *mut OidDesc,
    OmUint32,
    OmUint32,
    *mut c_void,
    *mut BufferDesc,
    *mut *mut OidDesc,
    *mut BufferDesc,
    *mut OmUint32,
    *mut OmUint32,
) -> OmUint32;
type DeleteSecContext =
    unsafe extern "C" fn(*mut OmUint32, *mut GssCtx, *mut BufferDesc) -> OmUint32;
type Wrap = unsafe extern "C" fn(
    *mut OmUint32,
    GssCtx,
    c_int,
    OmUint32,
    *mut BufferDesc,
    *mut c_int,
    *mut BufferDesc,
) -> OmUint32;
type Unwrap = unsafe extern "C" fn(
    *mut OmUint32,
    GssCtx,
    *mut BufferDesc,
    *mut BufferDesc,
    *mut c_int,
    *mut OmUint32,
) -> OmUint32;
type DisplayStatus = unsafe extern "C" fn(
    *mut OmUint32,
    OmUint32,
    c_int,
    *mut OidDesc,
    *mut OmUint32,
    *mut BufferDesc,
) -> OmUint32;
type ReleaseBuffer = unsafe extern "C" fn(*mut OmUint32, *mut BufferDesc) -> OmUint32;

/// Why the library could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("Kerberos (GSSAPI) needs the system's GSS-API library {library} (Debian/Ubuntu: libgssapi-krb5-2; RHEL: krb5-libs): {reason}")]
    Missing { library: String, reason: String },
    #[error(
        "the GSS-API library {library} has no {symbol}; Kerberos here needs MIT krb5's: {reason}"
    )]
    NoSymbol {
        library: String,
        symbol: &'static str,
        reason: String,
    },
}

/// The functions used, resolved from the library, which is kept loaded with them.
pub struct Gssapi {
    import_name: ImportName,
    release_name: ReleaseName,
    display_name: DisplayName,
    acquire_cred: AcquireCred,
    /// MIT's credential store extension (krb5 1.11+), for keytabs: `None` where missing.
    acquire_cred_from: Option<AcquireCredFrom>,
    inquire_cred: InquireCred,
    release_cred: ReleaseCred,
    init_sec_context: InitSecContext,
    delete_sec_context: DeleteSecContext,
    wrap: Wrap,
    unwrap: Unwrap,
    display_status: DisplayStatus,
    release_buffer: ReleaseBuffer,
    _library: Library,
}

/// The process's copy: loaded once, on first need, and never unloaded (libkrb5 keeps
/// process-wide state such as MEMORY: caches).
pub fn system() -> Result<&'static Gssapi, LoadError> {
    static SYSTEM: OnceLock<Result<Gssapi, LoadError>> = OnceLock::new();
    SYSTEM
        .get_or_init(|| Gssapi::load(LIBRARY))
        .as_ref()
        .map_err(Clone::clone)
}

impl Gssapi {
    /// Opens `library` and resolves the functions.
    pub fn load(library: &str) -> Result<Gssapi, LoadError> {
        // Safety: loading MIT's GSS-API runs only its initializers, which have no
        // preconditions of ours.
        let lib = unsafe { Library::new(library) }.map_err(|err| LoadError::Missing {
            library: library.to_string(),
            reason: err.to_string(),
        })?;
        macro_rules! symbol {
            ($name:literal) => {
                // Safety: the type is the function's C signature as MIT's headers declare it.
                match unsafe { lib.get(concat!($name, "\0").as_bytes()) } {
                    Ok(symbol) => *symbol,
                    Err(err) => {
                        return Err(LoadError::NoSymbol {
                            library: library.to_string(),
                            symbol: $name,
                            reason: err.to_string(),
                        })
                    }
                }
            };
        }
        Ok(Gssapi {
            import_name: symbol!("gss_import_name"),
            release_name: symbol!("gss_release_name"),
            display_name: symbol!("gss_display_name"),
            acquire_cred: symbol!("gss_acquire_cred"),
            // Safety: as above.
            acquire_cred_from: unsafe { lib.get::<AcquireCredFrom>(b"gss_acquire_cred_from\0") }
                .ok()
                .map(|symbol| *symbol),
            inquire_cred: symbol!("gss_inquire_cred"),
            release_cred: symbol!("gss_release_cred"),
            init_sec_context: symbol!("gss_init_sec_context"),
            delete_sec_context: symbol!("gss_delete_sec_context"),
            wrap: symbol!("gss_wrap"),
            unwrap: symbol!("gss_unwrap"),
            display_status: symbol!("gss_display_status"),
            release_buffer: symbol!("gss_release_buffer"),
            _library: lib,
        })
    }

    /// A host-based service name, `service@host`.
    pub fn service_name(&self, service: &str, host: &str) -> Result<Name<'_>, Status> {
        self.import(&format!("{service}@{host}"), NT_HOSTBASED_SERVICE)
    }

    /// A Kerberos principal, `name@REALM` (or `name`, in the default realm).
    pub fn user_name(&self, principal: &str) -> Result<Name<'_>, Status> {
        self.import(principal, NT_USER_NAME)
    }

    fn import(&self, text: &str, kind: &'static [u8]) -> Result<Name<'_>, Status> {
        let mut input = BufferDesc {
            length: text.len(),
            value: text.as_ptr() as *mut c_void,
        };
        let mut oid = oid(kind);
        let (mut minor, mut name) = (0, ptr::null_mut());
        // Safety: the buffer and the OID point to memory that outlives the call, which only
        // reads them; `name` receives a handle released by `Name`'s drop.
        let major = unsafe { (self.import_name)(&mut minor, &mut input, &mut oid, &mut name) };
        self.check(major, minor)?;
        Ok(Name {
            gss: self,
            raw: name,
        })
    }

    /// Initiator credentials: the default ticket cache's (`store` empty), or those of a
    /// credential store (MIT's `ccache`, `client_keytab`) for `name`, if given.
    pub fn credentials(
        &self,
        name: Option<&Name<'_>>,
        store: &[(&str, &str)],
    ) -> Result<Credentials<'_>, CredentialsError> {
        let mut mechanism = oid(KRB5_MECHANISM);
        let mut mechanisms = OidSetDesc {
            count: 1,
            elements: &mut mechanism,
        };
        let desired = name.map_or(ptr::null_mut(), |name| name.raw);
        let (mut minor, mut cred) = (0, ptr::null_mut());
        let major = if store.is_empty() {
            // Safety: the OID set outlives the call; `cred` receives a handle released by
            // `Credentials`' drop; the optional outputs are null.
            unsafe {
                (self.acquire_cred)(
                    &mut minor,
                    desired,
                    GSS_C_INDEFINITE,
                    &mut mechanisms,
                    GSS_C_INITIATE,
                    &mut cred,
                    ptr::null_mut(),
                    ptr::null_mut(),
                )
            }
        } else {
            let acquire = self
                .acquire_cred_from
                .ok_or(CredentialsError::NoCredentialStore)?;
            let texts = store
                .iter()
                .map(|(key, value)| Ok((CString::new(*key)?, CString::new(*value)?)))
                .collect::<Result<Vec<_>, std::ffi::NulError>>()
                .map_err(|_| CredentialsError::NulInPath)?;
            let mut elements: Vec<KeyValueElement> = texts
                .iter()
                .map(|(key, value)| KeyValueElement {
                    key: key.as_ptr(),
                    value: value.as_ptr(),
                })
                .collect();
            let set = KeyValueSet {
                count: elements.len() as OmUint32,
                elements: elements.as_mut_ptr(),
            };
            // Safety: as above; the key-value set and its strings outlive the call.
            unsafe {
                acquire(
                    &mut minor,
                    desired,
                    GSS_C_INDEFINITE,
                    &mut mechanisms,
                    GSS_C_INITIATE,
                    &set,
                    &mut cred,
                    ptr::null_mut(),
                    ptr::null_mut(),
                )
            }
        };
        self.check(major, minor).map_err(CredentialsError::Gss)?;
        Ok(Credentials {
            gss: self,
            raw: cred,
        })
    }

    /// The text of a failed call's statuses, for messages.
    fn check(&self, major: OmUint32, minor: OmUint32) -> Result<(), Status> {
        if major & GSS_ERROR_MASK == 0 {
            return Ok(());
        }
        // A minor status of a library's errno 0 reads "Success": it says nothing.
        let minor_text = if minor != 0 {
            Some(self.status_text(minor, GSS_C_MECH_CODE))
                .filter(|text| !text.eq_ignore_ascii_case("success"))
                .unwrap_or_default()
        } else {
            String::new()
        };
        let text = match (
            major & GSS_ERROR_MASK == GSS_S_FAILURE,
            minor_text.is_empty(),
        ) {
            // "Unspecified GSS failure. Minor code may provide more information": it does.
            (true, false) => minor_text,
            (_, true) => self.status_text(major, GSS_C_GSS_CODE),
            (false, false) => format!("{}: {minor_text}", self.status_text(major, GSS_C_GSS_CODE)),
        };
        Err(Status(text))
    }

    /// Every message of one status value, joined.
    fn status_text(&self, status: OmUint32, kind: c_int) -> String {
        let mut mechanism = oid(KRB5_MECHANISM);
        let mut messages = Vec::new();
        let mut context: OmUint32 = 0;
        // MIT returns one message per call; a bound in case a library never says it is done.
        for _ in 0..8 {
            let mut minor = 0;
            let mut buffer = BufferDesc {
                length: 0,
                value: ptr::null_mut(),
            };
            // Safety: `buffer` receives memory released below; the OID outlives the call.
            let major = unsafe {
                (self.display_status)(
                    &mut minor,
                    status,
                    kind,
                    &mut mechanism,
                    &mut context,
                    &mut buffer,
                )
            };
            if major & GSS_ERROR_MASK != 0 {
                break;
            }
            let text = self.take(&mut buffer);
            let text = String::from_utf8_lossy(&text).trim().to_string();
            if !text.is_empty() {
                messages.push(text);
            }
            if context == 0 {
                break;
            }
        }
        if messages.is_empty() {
            format!("GSS-API status {status:#x}")
        } else {
            messages.join(": ")
        }
    }

    /// A GSS-allocated buffer's bytes, the buffer released.
    fn take(&self, buffer: &mut BufferDesc) -> Vec<u8> {
        let bytes = if buffer.value.is_null() || buffer.length == 0 {
            Vec::new()
        } else {
            // Safety: GSS-API filled the buffer: `length` bytes at `value`.
            unsafe { std::slice::from_raw_parts(buffer.value as *const u8, buffer.length) }.to_vec()
        };
        let mut minor = 0;
        // Safety: the buffer was allocated by this library; releasing an empty one is allowed.
        unsafe { (self.release_buffer)(&mut minor, buffer) };
        bytes
    }
}

/// A GSS-API failure in words: the major status's text and the mechanism's (Kerberos) reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Status(pub String);

/// Why credentials could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialsError {
    #[error("{0}")]
    Gss(Status),
    #[error("the GSS-API library {LIBRARY} has no gss_acquire_cred_from (MIT krb5 1.11 or later has it), which keytabs and named ticket caches need")]
    NoCredentialStore,
    #[error("a keytab or ticket cache path holds a NUL character")]
    NulInPath,
}

fn oid(bytes: &'static [u8]) -> OidDesc {
    OidDesc {
        length: bytes.len() as OmUint32,
        // GSS-API only reads OIDs passed in.
        elements: bytes.as_ptr() as *mut c_void,
    }
}

/// An imported name, released on drop.
pub struct Name<'a> {
    gss: &'a Gssapi,
    raw: GssName,
}

impl Drop for Name<'_> {
    fn drop(&mut self) {
        let mut minor = 0;
        // Safety: `raw` came from gss_import_name or gss_inquire_cred and is released once.
        unsafe { (self.gss.release_name)(&mut minor, &mut self.raw) };
    }
}

/// Initiator credentials, released on drop.
pub struct Credentials<'a> {
    gss: &'a Gssapi,
    raw: GssCred,
}

impl Credentials<'_> {
    /// The principal the credentials are of, as Kerberos shows it (`user@REALM`).
    pub fn principal(&self) -> Result<String, Status> {
        let gss = self.gss;
        let (mut minor, mut raw) = (0, ptr::null_mut());
        // Safety: `raw` receives a name released by `Name`'s drop; the other outputs are null.
        let major = unsafe {
            (gss.inquire_cred)(
                &mut minor,
                self.raw,
                &mut raw,
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        gss.check(major, minor)?;
        let name = Name { gss, raw };
        let mut buffer = BufferDesc {
            length: 0,
            value: ptr::null_mut(),
        };
        // Safety: `buffer` receives memory released by `take`; the name type is not asked.
        let major =
            unsafe { (gss.display_name)(&mut minor, name.raw, &mut buffer, ptr::null_mut()) };
        gss.check(major, minor)?;
        Ok(String::from_utf8_lossy(&gss.take(&mut buffer)).into_owned())
    }
}

impl Drop for Credentials<'_> {
    fn drop(&mut self) {
        let mut minor = 0;
        // Safety: `raw` came from gss_acquire_cred(_from) and is released once.
        unsafe { (self.gss.release_cred)(&mut minor, &mut self.raw) };
    }
}

/// A security context being established with one server, deleted on drop.
pub struct Context<'a> {
    gss: &'a Gssapi,
    raw: GssCtx,
    established: bool,
}

impl<'a> Context<'a> {
    pub fn new(gss: &'a Gssapi) -> Context<'a> {
        Context {
            gss,
            raw: ptr::null_mut(),
            established: false,
        }
    }

    pub fn is_established(&self) -> bool {
        self.established
    }

    /// One step of gss_init_sec_context with the Kerberos mechanism and mutual
    /// authentication: the token for the server (the AP-REQ first), and whether the context
    /// is established.
    pub fn step(
        &mut self,
        credentials: &Credentials<'_>,
        target: &Name<'_>,
        input: &[u8],
    ) -> Result<Vec<u8>, Status> {
        let gss = self.gss;
        let mut mechanism = oid(KRB5_MECHANISM);
        let mut input = BufferDesc {
            length: input.len(),
            value: input.as_ptr() as *mut c_void,
        };
        let mut output = BufferDesc {
            length: 0,
            value: ptr::null_mut(),
        };
        let flags = GSS_C_MUTUAL_FLAG
            | GSS_C_REPLAY_FLAG
            | GSS_C_SEQUENCE_FLAG
            | GSS_C_CONF_FLAG
            | GSS_C_INTEG_FLAG;
        let mut minor = 0;
        // Safety: the handles are live; the input buffer and OID outlive the call, which only
        // reads them; `output` receives memory released by `take`; the context handle is
        // updated in place and deleted by drop; no channel bindings; the optional outputs
        // are null.
        let major = unsafe {
            (gss.init_sec_context)(
                &mut minor,
                credentials.raw,
                &mut self.raw,
                target.raw,
                &mut mechanism,
                flags,
                0,
                ptr::null_mut(),
                &mut input,
                ptr::null_mut(),
                &mut output,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        let token = gss.take(&mut output);
        gss.check(major, minor)?;
        self.established = major & GSS_S_CONTINUE_NEEDED == 0;
        Ok(token)
    }

    /// A message of the established context's peer, unwrapped.
    pub fn unwrap(&self, message: &[u8]) -> Result<Vec<u8>, Status> {
        let gss = self.gss;
        let mut input = BufferDesc {
            length: message.len(),
            value: message.as_ptr() as *mut c_void,
        };
        let mut output = BufferDesc {
            length: 0,
            value: ptr::null_mut(),
        };
        let mut minor = 0;
        // Safety: as in `step`; the optional outputs are null.
        let major = unsafe {
            (gss.unwrap)(
                &mut minor,
                self.raw,
                &mut input,
                &mut output,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        let bytes = gss.take(&mut output);
        gss.check(major, minor)?;
        Ok(bytes)
    }

    /// A message for the peer, integrity-protected but not encrypted.
    pub fn wrap(&self, message: &[u8]) -> Result<Vec<u8>, Status> {
        let gss = self.gss;
        let mut input = BufferDesc {
            length: message.len(),
            value: message.as_ptr() as *mut c_void,
        };
        let mut output = BufferDesc {
            length: 0,
            value: ptr::null_mut(),
        };
        let mut minor = 0;
        // Safety: as in `step`; no confidentiality, the default QOP, no conf_state.
        let major = unsafe {
            (gss.wrap)(
                &mut minor,
                self.raw,
                0,
                0,
                &mut input,
                ptr::null_mut(),
                &mut output,
            )
        };
        let bytes = gss.take(&mut output);
        gss.check(major, minor)?;
        Ok(bytes)
    }
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        if self.raw.is_null() {
            return;
        }
        let mut minor = 0;
        // Safety: `raw` came from gss_init_sec_context and is deleted once; no output token.
        unsafe { (self.gss.delete_sec_context)(&mut minor, &mut self.raw, ptr::null_mut()) };
    }
}

// Safety: MIT's GSS-API is thread-safe for distinct objects, and each of these handles is used
// by one thread at a time (an exchange moves between the engine's workers between steps).
unsafe impl Send for Name<'_> {}
unsafe impl Send for Credentials<'_> {}
unsafe impl Send for Context<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_says_which_and_how_to_install_it() {
        let err = Gssapi::load("libgssapi_krb5.so.999-not-here")
            .err()
            .expect("no such library");
        let message = err.to_string();
        assert!(
            message.starts_with("Kerberos (GSSAPI) needs the system's GSS-API library libgssapi_krb5.so.999-not-here (Debian/Ubuntu: libgssapi-krb5-2; RHEL: krb5-libs): "),
            "{message}"
        );
        // dlopen's own reason follows.
        assert!(
            message.contains("libgssapi_krb5.so.999-not-here:"),
            "{message}"
        );
    }

    #[test]
    fn the_oids_are_the_rfcs() {
        // 1.2.840.113554.1.2.1.4, 1.2.840.113554.1.2.1.1, 1.2.840.113554.1.2.2 in DER.
        let prefix = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02];
        assert_eq!(NT_HOSTBASED_SERVICE, [&prefix[..], &[0x01, 0x04]].concat());
        assert_eq!(NT_USER_NAME, [&prefix[..], &[0x01, 0x01]].concat());
        assert_eq!(KRB5_MECHANISM, [&prefix[..], &[0x02]].concat());
    }
}
