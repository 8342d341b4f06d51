//! The project catalog: the tools whose provider works in a given project root.

use std::path::Path;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::ProviderSet;
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
