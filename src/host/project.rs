//! Projects: the project catalog (the tools whose provider works in a given project root) and
//! project-bound bindings (a described tool that may only be called while its project root is
//! the directory its plugin was started in).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::root::{Id, Pin};
use super::{ProviderEntry, ProviderSet};
use crate::error::{Error, ErrorCode};

/// Default bound of the serialized project-catalog entries.
pub const DEFAULT_PROJECT_CATALOG_BYTES: usize = 64 * 1024;
const DESCRIPTION_BYTES: usize = 512;

/// One tool of the project catalog.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProjectTool {
    /// The provider id.
    pub plugin: String,
    /// The provider's display name.
    pub name: String,
    /// The tool name.
    pub tool: String,
    /// The tool title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The description, cut to at most 512 bytes on a char boundary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The four interpreted hints, when any is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The tools of the ready providers working in one project root. Serialized with camelCase
/// keys (`totalCount`, `catalogRevision`) like every other `plugin_tool` output.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectCatalog {
    /// Entries ordered by (plugin, tool), cut at the byte bound.
    pub tools: Vec<ProjectTool>,
    /// How many tools matched before the bound.
    pub total_count: usize,
    /// `wc_plugcat_` + a digest that changes when an included provider is replaced or retired.
    pub catalog_revision: String,
}

pub(super) fn build(
    set: &ProviderSet,
    root: &Path,
    max_bytes: usize,
) -> Result<ProjectCatalog, Error> {
    if !root.is_absolute() {
        return Err(Error::not_started(
            ErrorCode::InvalidArguments,
            "the project root must be an absolute path",
        ));
    }
    let root = root.canonicalize().ok();
    let mut all = Vec::new();
    let mut revision = Sha256::new();
    revision.update(b"webcodex-plugin-project-catalog-v1\0");
    let mut included: Vec<_> = set
        .entries()
        .iter()
        .filter(|entry| match (&root, &entry.cwd) {
            (Some(root), Some(cwd)) => cwd.canonicalize().ok().as_ref() == Some(root),
            _ => false,
        })
        .filter_map(|entry| entry.provider().map(|p| (entry, p)))
        .filter(|(_, p)| !p.is_retired())
        .collect();
    included.sort_by(|a, b| a.0.id.cmp(&b.0.id));
    for (entry, provider) in included {
        revision.update(entry.id.as_bytes());
        revision.update(b"\0");
        revision.update(provider.instance().get().to_le_bytes());
        revision.update(provider.catalog().digest().as_bytes());
        for tool in provider.catalog().tools() {
            let hints = tool.hints();
            let mut annotations = serde_json::Map::new();
            for (key, value) in [
                ("readOnlyHint", hints.read_only),
                ("destructiveHint", hints.destructive),
                ("idempotentHint", hints.idempotent),
                ("openWorldHint", hints.open_world),
            ] {
                if let Some(v) = value {
                    annotations.insert(key.into(), v.into());
                }
            }
            all.push(ProjectTool {
                plugin: entry.id.clone(),
                name: entry.name.clone(),
                tool: tool.name().to_string(),
                title: tool.title().map(str::to_string),
                description: tool.description().map(|d| cut(d, DESCRIPTION_BYTES)),
                annotations: (!annotations.is_empty()).then_some(annotations),
            });
        }
    }
    let total_count = all.len();
    let mut used = 0;
    let mut tools = Vec::new();
    for tool in all {
        let size = serde_json::to_vec(&tool)
            .map(|v| v.len())
            .unwrap_or(usize::MAX);
        if used + size > max_bytes {
            break;
        }
        used += size;
        tools.push(tool);
    }
    let digest = revision.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    Ok(ProjectCatalog {
        tools,
        total_count,
        catalog_revision: format!("wc_plugcat_{hex}"),
    })
}

/// `text` cut to at most `max` bytes on a char boundary.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// The prefix of a project target id.
pub const PROJECT_TARGET_PREFIX: &str = "wc_proot_";

/// What a project-bound binding records of its project: the project as the caller named it,
/// its canonical root, and the directory the provider was started in (pinned, see `root`),
/// which was that root at describe time. Its [`ProjectTarget::id`] is opaque.
#[derive(Debug, Clone)]
pub struct ProjectTarget(Arc<Target>);

#[derive(Debug)]
struct Target {
    /// The project as the caller gave it (an absolute path).
    given: PathBuf,
    /// Its canonical form at describe time.
    canonical: PathBuf,
    /// True when `given` had no symbolic link or `..` to resolve: a call then looks at it
    /// with one `lstat` and canonicalizes nothing.
    canonical_given: bool,
    /// The provider's working directory, pinned when it started.
    pin: Arc<Pin>,
    /// `wc_proot_` + 32 hex digits: a keyed digest of the canonical root and its identity.
    id: String,
}

impl PartialEq for ProjectTarget {
    fn eq(&self, other: &ProjectTarget) -> bool {
        self.0.id == other.0.id && self.0.given == other.0.given
    }
}

impl Eq for ProjectTarget {}

impl ProjectTarget {
    /// The project as the caller named it.
    pub fn project(&self) -> &Path {
        &self.0.given
    }

    /// The opaque target id (`wc_proot_` + 32 hex digits): the same for two descriptions of one
    /// unchanged root by one runner process, different once the root changed. It encodes
    /// nothing a caller could read back.
    pub fn id(&self) -> &str {
        &self.0.id
    }

    /// Re-resolves the project before a call: `Ok` when its path still leads to the directory
    /// the provider was started in. One `lstat` of the root when the project was named by its
    /// canonical path, else a canonicalization and one `lstat`.
    ///
    /// - the path leads to another directory, or to the same one under another canonical path,
    ///   or nothing is there any more but the directory still exists elsewhere (it was moved)
    ///   → `plugin_project_changed`;
    /// - the directory was removed, or the path cannot be read → `plugin_project_unavailable`.
    ///
    /// Both `not_started`: nothing is sent to the plugin.
    pub(crate) fn check(&self) -> Result<(), Error> {
        let target = &*self.0;
        let found = if target.canonical_given {
            Pin::id_at(&target.canonical, false)
        } else {
            match target.given.canonicalize() {
                Ok(now) if now == target.canonical => Pin::id_at(&now, false),
                Ok(_) => return Err(changed()),
                Err(e) => Err(e),
            }
        };
        match found {
            Ok(id) if id == target.pin.id() => Ok(()),
            Ok(_) => Err(changed()),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Err(unreadable()),
            Err(_) if target.pin.still_linked() => Err(changed()),
            Err(_) => Err(unavailable(
                "the project root no longer exists; nothing was sent",
            )),
        }
    }
}

/// Binds a describe of a tool of `entry` to `project`: the project must be an absolute path of
/// this runner that exists, the provider's configured `cwd` must canonicalize to the same root
/// (the project catalog's rule), and the provider must have been started in the directory
/// that root is now. Failures are `plugin_project_unavailable` (no such root, or it cannot be
/// read) and `plugin_project_mismatch` (the plugin works elsewhere), both `not_started`.
///
/// Cold: a describe with a project is rare next to calls, and this stays out of the gateway's
/// request handler, into which the call path is inlined.
#[cold]
pub(super) fn bind(entry: &ProviderEntry, project: &str) -> Result<ProjectTarget, Error> {
    let given = Path::new(project);
    if !given.is_absolute() {
        return Err(unavailable(
            "the project is not an absolute path on this runner",
        ));
    }
    let canonical = given.canonicalize().map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => unavailable("the project root does not exist"),
        _ => unreadable(),
    })?;
    if !std::fs::metadata(&canonical).is_ok_and(|m| m.is_dir()) {
        return Err(unavailable("the project root is not a directory"));
    }
    let works_there = entry
        .cwd
        .as_ref()
        .and_then(|cwd| cwd.canonicalize().ok())
        .is_some_and(|cwd| cwd == canonical);
    if !works_there {
        return Err(mismatch(
            "the plugin does not work in that project root; the catalog action lists the \
             tools of a project",
        ));
    }
    let pin = entry.root.clone().ok_or_else(unreadable)?;
    match Pin::id_at(&canonical, true) {
        Ok(id) if id == pin.id() => {}
        Ok(_) => {
            return Err(mismatch(
                "the plugin was started in a directory that is no longer the project root (it \
                 was moved or replaced since); reload the runner to start it in the project, \
                 then describe again",
            ))
        }
        Err(_) => return Err(unreadable()),
    }
    let id = target_id(&canonical, pin.id());
    Ok(ProjectTarget(Arc::new(Target {
        canonical_given: given == canonical,
        given: given.to_path_buf(),
        canonical,
        pin,
        id,
    })))
}

/// `wc_proot_` + the first 16 bytes, in hex, of SHA-256 over a key drawn once per process, the
/// canonical root and its identity: opaque (a caller cannot confirm a guess of the path), the
/// same for one unchanged root, another for another directory.
fn target_id(canonical: &Path, id: Id) -> String {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    let key = KEY.get_or_init(|| {
        crate::random_bytes().unwrap_or_else(|| {
            // No system randomness: the time and an address, still different per process.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            Sha256::digest(format!("{nanos}:{:p}", &KEY).as_bytes()).into()
        })
    });
    let mut digest = Sha256::new();
    digest.update(b"webcodex-plugin-project-target-v1\0");
    digest.update(key);
    digest.update(canonical.as_os_str().as_encoded_bytes());
    digest.update(b"\0");
    digest.update(id.0.to_le_bytes());
    digest.update(id.1.to_le_bytes());
    let digest = digest.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("{PROJECT_TARGET_PREFIX}{hex}")
}

/// True for text of a project target id's form.
pub fn valid_project_target(text: &str) -> bool {
    text.strip_prefix(PROJECT_TARGET_PREFIX).is_some_and(|hex| {
        hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

fn changed() -> Error {
    Error::not_started(
        ErrorCode::ProjectChanged,
        "the project root changed; the call was not dispatched (list and describe again)",
    )
}

fn unavailable(message: &str) -> Error {
    Error::not_started(ErrorCode::ProjectUnavailable, message)
}

fn unreadable() -> Error {
    unavailable("the project root cannot be read on this runner")
}

fn mismatch(message: &str) -> Error {
    Error::not_started(ErrorCode::ProjectMismatch, message)
}
