//! Scenes: the TOML scene file, OBJ/MTL meshes, camera, materials and lights.
//!
//! (Being written.)
