//! The frozen, sorted catalog of one provider instance.

use std::sync::Arc;

use serde_json::Value;

use super::{Diagnostic, Tool};

/// Most tools one provider may declare.
pub const MAX_TOOLS: usize = 128;

/// The admitted tools of one provider instance, sorted by name, never mutated.
#[derive(Debug, Clone)]
pub struct FrozenCatalog {
    tools: Arc<[Tool]>,
    digest: String,
}

impl FrozenCatalog {
    /// The tools, sorted by name.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }
    /// Looks a tool up by exact name.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        let _ = name;
        todo!()
    }
    /// `sha256:` + hex digest of a domain tag and the canonical JSON of the sorted tools.
    pub fn digest(&self) -> &str {
        &self.digest
    }
    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }
    /// True when the provider declared no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// Validates a tools/list `result` and freezes it; the first failing item wins.
pub fn admit_tools_list(result: &Value) -> Result<FrozenCatalog, Diagnostic> {
    let _ = result;
    todo!()
}
