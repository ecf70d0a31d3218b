//! The descriptor limit. Debian starts processes with a soft limit of 1,024
//! descriptors and a hard limit far above; a server holding a thousand
//! peers needs more than the soft one, and any process may raise its soft
//! limit up to the hard one.

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the soft
/// limit in force afterwards (`None` if it is unlimited or unknown).
#[cfg(unix)]
pub(crate) fn raise_nofile() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            limit = getrlimit(Resource::Nofile);
        }
    }
    limit.current
}

#[cfg(not(unix))]
pub(crate) fn raise_nofile() -> Option<u64> {
    None
}
