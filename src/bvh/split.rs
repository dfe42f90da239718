//! Spatial splits (being written): for now the references pass through unchanged.

use super::build::PrimRef;
use super::Mesh;

/// Splits the references of large triangles.
pub fn presplit(_mesh: &Mesh, refs: Vec<PrimRef>) -> Vec<PrimRef> {
    refs
}
