//! One async runtime per process, started on first use. Its worker threads are plain native
//! threads, so they never hold a JVM open at exit.

use once_cell::sync::OnceCell;
use tokio::runtime::Runtime;

use crate::error::{Error, Result};

static RUNTIME: OnceCell<Runtime> = OnceCell::new();

/// The shared runtime.
pub(crate) fn runtime() -> Result<&'static Runtime> {
    RUNTIME.get_or_try_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("offsetkeeper-io")
            .enable_all()
            .build()
            .map_err(|err| Error::Internal(format!("cannot start the I/O runtime: {err}")))
    })
}
