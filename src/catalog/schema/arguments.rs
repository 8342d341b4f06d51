//! Call arguments checked in one walk: the JSON bounds with a size bound (the steps of
//! [`check_json_bounds_sized`](crate::frame::check_json_bounds_sized), in its order) and the
//! schema match (the checks of `match_node`, in its order), instead of a walk for each.
//!
//! A broken bound wins wherever it is, as when the bounds were walked first: the walk stops at
//! it. A mismatch is only noted (the first one, with its path) and the walk goes on for the
//! bounds without the schema; the mismatch is the verdict when no bound breaks.

use std::mem::discriminant;

use serde_json::Value;

#[cfg(test)]
use super::match_rules;
use super::{match_here, Failure, Kind, Node, Schema, SchemaMismatch, Segment};
use crate::frame::{JsonBoundsError, Measured, Tally};

/// Why arguments were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A JSON bound or the size bound broke (it wins over any mismatch).
    Bounds(JsonBoundsError),
    /// The first mismatch with the schema, exactly as [`Schema::check`] reports it.
    Mismatch(SchemaMismatch),
}

impl Schema {
    /// Checks `instance` against the JSON bounds and `max_bytes` of compact serialization,
    /// then against the schema, in one walk: the verdict of
    /// [`check_json_bounds_sized`](crate::frame::check_json_bounds_sized) when it fails, else
    /// that of [`Schema::check`]. Returns what the bounds walk measured.
    pub(crate) fn check_bounded(
        &self,
        instance: &Value,
        max_bytes: usize,
    ) -> Result<Measured, Refusal> {
        if let Some(measured) = self.check_flat(instance, max_bytes) {
            return Ok(measured);
        }
        let mut walk = Walk {
            tally: Tally::default(),
            max_bytes,
            mismatch: None,
        };
        walk.value(instance, 0, Some(&self.root), None)
            .map_err(Refusal::Bounds)?;
        match walk.mismatch {
            Some(mismatch) => Err(Refusal::Mismatch(mismatch)),
            None => Ok(walk.tally.measured()),
        }
    }

    /// The usual arguments in one loop: an object of scalar members, each a property whose
    /// schema checks nothing but its variant, every required property there, within the
    /// bounds. `None` for anything else: the walk decides (the same `Ok` when this has one).
    #[inline]
    fn check_flat(&self, instance: &Value, max_bytes: usize) -> Option<Measured> {
        let (Value::Object(map), Kind::Object(rule)) = (instance, &self.root.kind) else {
            return None;
        };
        if self.root.only_variant != Some(discriminant(instance)) {
            return None;
        }
        let mut tally = Tally::default();
        tally.node(instance, 0, max_bytes).ok()?;
        let mut required = 0;
        for (key, value) in map {
            let i = (rule.properties)
                .binary_search_by(|(name, _)| name.as_str().cmp(key))
                .ok()?;
            let variant_only = rule.properties[i].1.only_variant == Some(discriminant(value));
            if !variant_only || matches!(value, Value::Array(_) | Value::Object(_)) {
                return None;
            }
            required += usize::from(rule.property_required[i]);
            match rule.plain_names {
                // A fault or length it adds is caught with the value's.
                true => tally.plain_key(key.len()),
                false => tally.member_key(key, max_bytes).ok()?,
            }
            tally.node(value, 1, max_bytes).ok()?;
        }
        let complete = required >= rule.required_properties && !rule.required_elsewhere;
        complete.then(|| tally.measured())
    }
}

/// Where a value is: its step from its parent, and the parent's place (on the stack, so the
/// walk allocates nothing unless it finds a mismatch).
struct Path<'p, 's> {
    segment: Segment<'s>,
    parent: Option<&'p Path<'p, 's>>,
}

struct Walk {
    tally: Tally,
    max_bytes: usize,
    /// The first mismatch found; once there is one, no schema is matched any more.
    mismatch: Option<SchemaMismatch>,
}

impl Walk {
    /// `value` at `depth` and below it; `node` is the schema it must match, if any is left to
    /// match.
    fn value<'s>(
        &mut self,
        value: &Value,
        depth: usize,
        node: Option<&'s Node>,
        path: Option<&Path<'_, 's>>,
    ) -> Result<(), JsonBoundsError> {
        self.tally.node(value, depth, self.max_bytes)?;
        let node = node.and_then(|node| self.matched(node, value, path));
        match value {
            Value::Array(items) => {
                let items_node = match node.map(|n| &n.kind) {
                    Some(Kind::Array(rule)) => rule.items.as_deref(),
                    _ => None,
                };
                for (i, item) in items.iter().enumerate() {
                    let here = Path {
                        segment: Segment::Index(i),
                        parent: path,
                    };
                    let node = items_node.filter(|_| self.mismatch.is_none());
                    self.child(item, depth + 1, node, &here)?;
                }
            }
            Value::Object(map) => {
                let rule = match node.map(|n| &n.kind) {
                    Some(Kind::Object(rule)) => Some(rule),
                    _ => None,
                };
                // The required properties are counted as the members go by; the names are
                // looked up only when one is missing (or `required` names a non-property).
                let mut required = 0;
                for (key, child) in map {
                    self.tally.member_key(key, self.max_bytes)?;
                    let mut here = Path {
                        segment: Segment::Index(0),
                        parent: path,
                    };
                    let mut child_node = None;
                    if let Some(rule) = rule {
                        match rule
                            .properties
                            .binary_search_by(|(name, _)| name.as_str().cmp(key))
                        {
                            Ok(i) => {
                                required += usize::from(rule.property_required[i]);
                                if self.mismatch.is_none() {
                                    let (name, schema) = &rule.properties[i];
                                    here.segment = Segment::Key(name);
                                    child_node = Some(schema);
                                }
                            }
                            Err(_) if !rule.additional => {
                                self.fail(Failure::new("unknown property"), path)
                            }
                            Err(_) => {}
                        }
                    }
                    self.child(child, depth + 1, child_node, &here)?;
                }
                if let Some(rule) = rule {
                    if required < rule.required_properties || rule.required_elsewhere {
                        if let Some(name) = rule.missing(map) {
                            // `Schema::check` looks for it before the members: it comes first,
                            // before whatever the members broke (this object's schema applied,
                            // so nothing was broken before it).
                            self.mismatch = None;
                            let failure = Failure::new("missing required property");
                            self.fail(failure.at(Segment::Key(name)), path);
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// An item or member value: [`Walk::value`], with a scalar's steps done here.
    #[inline]
    fn child<'s>(
        &mut self,
        value: &Value,
        depth: usize,
        node: Option<&'s Node>,
        path: &Path<'_, 's>,
    ) -> Result<(), JsonBoundsError> {
        if let Value::Array(_) | Value::Object(_) = value {
            return self.value(value, depth, node, Some(path));
        }
        self.tally.node(value, depth, self.max_bytes)?;
        if let Some(node) = node {
            self.matched(node, value, Some(path));
        }
        Ok(())
    }

    /// `node` when `value` itself matches it (its schema then applies below it); else the
    /// mismatch is noted.
    #[inline]
    fn matched<'s>(
        &mut self,
        node: &'s Node,
        value: &Value,
        path: Option<&Path<'_, 's>>,
    ) -> Option<&'s Node> {
        match match_here(node, value) {
            Ok(()) => Some(node),
            Err(failure) => {
                self.fail(failure, path);
                None
            }
        }
    }

    /// Notes `failure`, found at `path`, unless a mismatch was noted before.
    #[cold]
    fn fail<'s>(&mut self, mut failure: Failure<'s>, path: Option<&Path<'_, 's>>) {
        if self.mismatch.is_some() {
            return;
        }
        let mut at = path;
        while let Some(step) = at {
            failure.reversed_path.push(step.segment);
            at = step.parent;
        }
        self.mismatch = Some(failure.into_mismatch());
    }
}

#[cfg(test)]
mod tests;
