//! A provider's working directory, pinned: the directory object a plugin was started in, held
//! open for the life of its instance, so that a project-bound call can tell whether a path
//! still leads to that very directory.
//!
//! # The problem
//! A path names whatever directory is there now. Between a `describe` and a `call`, the
//! directory of a project root can be renamed away, deleted, re-created under the same name, or
//! reached through a symbolic link that points elsewhere; a plugin that acts on its working
//! directory (or on the configured root) would then act on a directory the caller never looked
//! at. Comparing device and inode numbers alone is not enough either: once a directory is
//! deleted, its inode number may be given to the next directory created (ext4 does so).
//!
//! # The mechanism
//! The host opens the provider's configured `cwd` right before it starts the plugin and keeps
//! that handle ([`Pin`]) for as long as the instance lives. An open handle keeps the directory
//! object alive, so its identity (device and inode on Unix, volume serial number and file index
//! on Windows) cannot be reused while the pin exists: a path whose `stat` shows the same
//! identity leads to the same directory. When a path no longer leads anywhere, the pin also
//! tells a directory that was moved (it still has a link) from one that was removed (none).
//!
//! # Caveats
//! One descriptor per provider instance whose configuration has a `cwd`. A directory without
//! read permission cannot be opened, so it is not pinned (a project-bound `describe` of it is
//! `plugin_project_unavailable`). On Windows a pinned lookup opens the path (there is no
//! `stat` by path that gives the file index), and a reparse point at the last component is
//! followed.

use std::io;
use std::path::Path;

/// An open handle to a directory and its identity.
#[derive(Debug)]
pub(crate) struct Pin {
    #[cfg(unix)]
    dir: std::fs::File,
    #[cfg(windows)]
    dir: crate::sys::windows::DirHandle,
    id: Id,
}

/// A directory's identity while it is pinned: (device, inode) on Unix, (volume serial number,
/// file index) on Windows.
pub(crate) type Id = (u64, u64);

impl Pin {
    /// Opens the directory at `path` (following symbolic links). Fails when nothing is there,
    /// it cannot be opened, or it is not a directory.
    pub(crate) fn open(path: &Path) -> io::Result<Pin> {
        let (dir, id, is_dir) = imp::open(path)?;
        if !is_dir {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a directory",
            ));
        }
        Ok(Pin { dir, id })
    }

    /// The pinned directory's identity.
    pub(crate) fn id(&self) -> Id {
        self.id
    }

    /// The identity of what `path` leads to now: one `stat` on Unix (`lstat` when
    /// `follow_last` is false, so a symbolic link now standing at the last component is seen
    /// as itself). Windows opens the path and asks its handle.
    pub(crate) fn id_at(path: &Path, follow_last: bool) -> io::Result<Id> {
        imp::id_at(path, follow_last)
    }

    /// True while the pinned directory still has a name somewhere (it was not removed).
    pub(crate) fn still_linked(&self) -> bool {
        imp::links(&self.dir).is_ok_and(|links| links > 0)
    }
}

/// Unix: std suffices (`open`, `fstat`, `stat`/`lstat`; the identity from `MetadataExt`).
#[cfg(unix)]
mod imp {
    use std::fs::File;
    use std::io;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;

    pub(super) fn open(path: &Path) -> io::Result<(File, super::Id, bool)> {
        let dir = File::open(path)?;
        let meta = dir.metadata()?;
        Ok((dir, (meta.dev(), meta.ino()), meta.is_dir()))
    }

    pub(super) fn id_at(path: &Path, follow_last: bool) -> io::Result<super::Id> {
        let meta = match follow_last {
            true => std::fs::metadata(path)?,
            false => std::fs::symlink_metadata(path)?,
        };
        Ok((meta.dev(), meta.ino()))
    }

    pub(super) fn links(dir: &File) -> io::Result<u64> {
        dir.metadata().map(|meta| meta.nlink())
    }
}

/// Windows: the handle and its identity through `sys` (winapi-util's safe wrappers).
#[cfg(windows)]
mod imp {
    pub(super) use crate::sys::windows::{link_count as links, open_dir as open};

    pub(super) fn id_at(path: &std::path::Path, _follow_last: bool) -> std::io::Result<super::Id> {
        crate::sys::windows::file_id_at(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let bytes: [u8; 8] = crate::random_bytes().unwrap();
        let dir = std::env::temp_dir().join(format!("wc-pin-{tag}-{}", u64::from_le_bytes(bytes)));
        std::fs::create_dir(&dir).unwrap();
        dir
    }

    #[test]
    fn a_pinned_directory_is_found_at_its_path_and_no_other() {
        let base = scratch("same");
        let (one, two) = (base.join("one"), base.join("two"));
        std::fs::create_dir(&one).unwrap();
        std::fs::create_dir(&two).unwrap();
        let pin = Pin::open(&one).unwrap();
        assert_eq!(Pin::id_at(&one, false).unwrap(), pin.id());
        assert_eq!(Pin::id_at(&one, true).unwrap(), pin.id());
        assert_ne!(Pin::id_at(&two, false).unwrap(), pin.id());
        assert!(pin.still_linked());
        drop(pin);
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// Unix only: Windows refuses to rename or remove a directory a process works in, so a
    /// provider's root cannot move under it there.
    #[cfg(unix)]
    #[test]
    fn a_pinned_directory_is_found_at_its_path_until_it_is_replaced() {
        let base = scratch("replace");
        let root = base.join("root");
        std::fs::create_dir(&root).unwrap();
        let pin = Pin::open(&root).unwrap();
        assert_eq!(Pin::id_at(&root, false).unwrap(), pin.id());
        assert!(pin.still_linked());
        // Renamed away: nothing at the path, the directory still linked elsewhere.
        std::fs::rename(&root, base.join("moved")).unwrap();
        assert!(Pin::id_at(&root, false).is_err());
        assert!(pin.still_linked());
        // Another directory of the same name: another identity, even if the file system
        // would reuse numbers (the pin keeps the old one alive).
        std::fs::create_dir(&root).unwrap();
        assert_ne!(Pin::id_at(&root, false).unwrap(), pin.id());
        // Removed: no link left.
        std::fs::remove_dir(base.join("moved")).unwrap();
        assert!(!pin.still_linked());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn only_a_directory_is_pinned() {
        let base = scratch("file");
        let file = base.join("file");
        std::fs::write(&file, b"x").unwrap();
        let e = Pin::open(&file).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(Pin::open(&base.join("absent")).is_err());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_at_the_last_component_is_seen_as_itself_unless_followed() {
        let base = scratch("link");
        let real = base.join("real");
        std::fs::create_dir(&real).unwrap();
        let link = base.join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let pin = Pin::open(&link).unwrap();
        assert_eq!(Pin::id_at(&link, true).unwrap(), pin.id());
        assert_ne!(Pin::id_at(&link, false).unwrap(), pin.id());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
