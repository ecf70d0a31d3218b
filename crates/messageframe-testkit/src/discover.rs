//! Where the tests find the programs they start: `nats-server` and a
//! chromium. Each is looked for, in this order, before anything is
//! installed:
//!
//! 1. its environment variable (`NATS_SERVER`, `CHROMIUM`), taken as given;
//! 2. each of its names in each directory of `PATH`;
//! 3. the places Debian, Ubuntu and the vendors install it, which are often
//!    not on a normal user's `PATH` ([`NATS_SERVER`], [`CHROMIUM`]):
//!    Debian's `nats-server` is in `/usr/sbin`.
//!
//! `scripts/test` searches the same names and places in the same order
//! (`scripts/test --print-discovery` shows what it finds), and installs
//! only what neither finds; `tests/discovery.rs` checks that the two agree.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// A program the tests need: its environment variable, its names on
/// `PATH`, and the absolute places it is usually installed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Program {
    /// The environment variable that names the binary outright.
    pub env: &'static str,
    /// File names looked up in each directory of `PATH`, in order.
    pub names: &'static [&'static str],
    /// Absolute paths tried after `PATH`, in order.
    pub places: &'static [&'static str],
}

/// `nats-server`: Debian's package puts it in `/usr/sbin`, a manual
/// install in `/usr/local/sbin` or `/usr/local/bin`.
pub const NATS_SERVER: Program = Program {
    env: "NATS_SERVER",
    names: &["nats-server"],
    places: &[
        "/usr/sbin/nats-server",
        "/usr/local/sbin/nats-server",
        "/usr/local/bin/nats-server",
        "/usr/bin/nats-server",
    ],
};

/// A chromium: Debian's `chromium`, Ubuntu's `chromium-browser` (or its
/// snap), or Google Chrome.
pub const CHROMIUM: Program = Program {
    env: "CHROMIUM",
    names: &[
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ],
    places: &[
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/lib/chromium/chromium",
        "/usr/lib/chromium-browser/chromium-browser",
        "/snap/bin/chromium",
        "/usr/bin/google-chrome",
        "/usr/bin/google-chrome-stable",
        "/opt/google/chrome/chrome",
    ],
};

impl Program {
    /// Where the program is on this machine: the search above with this
    /// process's environment. `None` when it is nowhere.
    #[must_use]
    pub fn find(&self) -> Option<PathBuf> {
        self.find_in(
            std::env::var_os(self.env).as_deref(),
            std::env::var_os("PATH").as_deref(),
            Path::new("/"),
        )
    }

    /// The search with a given environment variable's value, `PATH`, and
    /// root for the usual places (`/` on a real machine; a temporary
    /// directory in tests).
    #[must_use]
    pub fn find_in(
        &self,
        env: Option<&OsStr>,
        path: Option<&OsStr>,
        root: &Path,
    ) -> Option<PathBuf> {
        if let Some(given) = env.filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(given));
        }
        let on_path = path.into_iter().flat_map(std::env::split_paths);
        let dirs: Vec<PathBuf> = on_path.filter(|d| !d.as_os_str().is_empty()).collect();
        let from_path = self
            .names
            .iter()
            .flat_map(|name| dirs.iter().map(move |dir| dir.join(name)));
        let usual = self
            .places
            .iter()
            .map(|place| root.join(place.trim_start_matches('/')));
        from_path.chain(usual).find(|p| is_executable(p))
    }
}

/// A regular file (or a link to one) that may be executed.
fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A fake program at `root/rel`: a shell script that prints its path.
    fn fake(root: &Path, rel: &str) -> PathBuf {
        let path = root.join(rel.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "#!/bin/sh\necho \"$0\"\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn path_of(dirs: &[&Path]) -> std::ffi::OsString {
        std::env::join_paths(dirs).unwrap()
    }

    #[test]
    fn nats_server_in_usr_sbin_is_found_when_path_lacks_it() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("home/me/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let path = path_of(&[&bin]);
        let find = |r: &Path| NATS_SERVER.find_in(None, Some(&path), r);
        assert_eq!(find(root.path()), None, "nowhere yet");

        let local = fake(root.path(), "/usr/local/sbin/nats-server");
        assert_eq!(find(root.path()), Some(local));
        let sbin = fake(root.path(), "/usr/sbin/nats-server");
        assert_eq!(find(root.path()), Some(sbin), "/usr/sbin comes first");
        // On PATH wins over the usual places.
        let mine = fake(&bin, "nats-server");
        assert_eq!(find(root.path()), Some(mine));
        // The environment variable wins over everything, as given.
        assert_eq!(
            NATS_SERVER.find_in(Some(OsStr::new("/opt/x/nats")), Some(&path), root.path()),
            Some(PathBuf::from("/opt/x/nats"))
        );
        // An empty one is as good as unset.
        assert_eq!(
            NATS_SERVER.find_in(Some(OsStr::new("")), Some(&path), root.path()),
            Some(bin.join("nats-server"))
        );
    }

    #[test]
    fn chromium_names_go_before_places_and_path_order_is_kept() {
        let root = tempfile::tempdir().unwrap();
        let first = root.path().join("first");
        let second = root.path().join("second");
        std::fs::create_dir_all(&first).unwrap();
        std::fs::create_dir_all(&second).unwrap();
        let path = path_of(&[&first, &second]);
        let find = || CHROMIUM.find_in(None, Some(&path), root.path());
        assert_eq!(find(), None);

        let chrome = fake(root.path(), "/opt/google/chrome/chrome");
        assert_eq!(find(), Some(chrome));
        let snap = fake(root.path(), "/snap/bin/chromium");
        assert_eq!(find(), Some(snap));
        let lib = fake(root.path(), "/usr/lib/chromium/chromium");
        assert_eq!(find(), Some(lib));
        // Any name on PATH beats every usual place.
        let browser = fake(&second, "chromium-browser");
        assert_eq!(find(), Some(browser));
        // An earlier name beats a later one, wherever it is on PATH.
        let chromium = fake(&second, "chromium");
        assert_eq!(find(), Some(chromium));
        // For one name, the earlier PATH directory wins.
        let earlier = fake(&first, "chromium");
        assert_eq!(find(), Some(earlier));
    }

    #[test]
    fn files_that_cannot_run_and_directories_are_passed_over() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        std::fs::create_dir_all(bin.join("nats-server")).unwrap(); // a directory
        let path = path_of(&[&bin]);
        let plain = root.path().join("usr/sbin/nats-server");
        std::fs::create_dir_all(plain.parent().unwrap()).unwrap();
        std::fs::write(&plain, "not a program").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(NATS_SERVER.find_in(None, Some(&path), root.path()), None);
        let local = fake(root.path(), "/usr/local/sbin/nats-server");
        assert_eq!(
            NATS_SERVER.find_in(None, Some(&path), root.path()),
            Some(local)
        );
        // No PATH at all: the usual places still count.
        assert!(NATS_SERVER.find_in(None, None, root.path()).is_some());
    }
}
