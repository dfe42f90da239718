//! The pinhole camera.

use crate::math::Ray;
use crate::{Error, Result};
use glam::Vec3;

/// A pinhole camera. Pixel `(x, y)` covers `[x, x+1) x [y, y+1)` on the film; row 0 is the
/// top of the image.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    pub eye: Vec3,
    /// Unit vectors of the camera frame in world space: right, up, forward.
    right: Vec3,
    up: Vec3,
    forward: Vec3,
    /// tan(vfov / 2).
    tan_half_vfov: f32,
    aspect: f32,
    height: f32,
    width: f32,
}

impl Camera {
    /// A camera at `eye` looking at `look_at`, with `up` roughly up and a vertical field of
    /// view of `vfov_deg`, for a `width` x `height` film.
    pub fn new(
        eye: Vec3,
        look_at: Vec3,
        up: Vec3,
        vfov_deg: f32,
        width: u32,
        height: u32,
    ) -> Result<Camera> {
        let forward = (look_at - eye)
            .try_normalize()
            .ok_or_else(|| Error::field("camera.look_at", "must differ from camera.eye"))?;
        let right = forward.cross(up).try_normalize().ok_or_else(|| {
            Error::field("camera.up", "must not be parallel to the viewing direction")
        })?;
        if !(vfov_deg > 0.0 && vfov_deg < 180.0) {
            return Err(Error::field(
                "camera.vfov_deg",
                format!("{vfov_deg} is not in (0, 180)"),
            ));
        }
        if width == 0 || height == 0 {
            return Err(Error::field("film", "width and height must be at least 1"));
        }
        Ok(Camera {
            eye,
            right,
            up: right.cross(forward),
            forward,
            tan_half_vfov: (vfov_deg.to_radians() * 0.5).tan(),
            aspect: width as f32 / height as f32,
            width: width as f32,
            height: height as f32,
        })
    }

    /// A camera framing the box `lo`..`hi` for a `width` x `height` film, as the bare-mesh
    /// commands frame a mesh: a 40 degree vertical field of view, looking at the box's
    /// centre from the direction (0.45, 0.35, 1) at the distance where the box's bounding
    /// sphere fills the field of view, +Y up.
    pub fn framing(lo: Vec3, hi: Vec3, width: u32, height: u32) -> Result<Camera> {
        let center = (lo + hi) * 0.5;
        let radius = ((hi - lo).length() * 0.5).max(1e-6);
        let vfov_deg = 40.0f32;
        let distance = radius / (vfov_deg.to_radians() * 0.5).sin();
        let dir = Vec3::new(0.45, 0.35, 1.0).normalize();
        Camera::new(
            center + dir * distance,
            center,
            Vec3::Y,
            vfov_deg,
            width,
            height,
        )
    }

    /// The same camera (position, frame, vertical field of view) for a `width` x `height`
    /// film: a film of another aspect shows more or less to the sides.
    pub fn resized(&self, width: u32, height: u32) -> Result<Camera> {
        if width == 0 || height == 0 {
            return Err(Error::field("film", "width and height must be at least 1"));
        }
        Ok(Camera {
            aspect: width as f32 / height as f32,
            width: width as f32,
            height: height as f32,
            ..*self
        })
    }

    /// The ray through film position `(fx, fy)` in pixels (continuous: pixel centre of
    /// `(x, y)` is `(x + 0.5, y + 0.5)`). The direction is normalized.
    pub fn ray(&self, fx: f32, fy: f32) -> Ray {
        let sx = (2.0 * fx / self.width - 1.0) * self.tan_half_vfov * self.aspect;
        let sy = (1.0 - 2.0 * fy / self.height) * self.tan_half_vfov;
        let dir = (self.forward + self.right * sx + self.up * sy).normalize();
        Ray::new(self.eye, dir, 0.0, f32::INFINITY)
    }

    /// Angle subtended by one pixel at the image centre (the spread of a ray cone).
    pub fn pixel_spread_angle(&self) -> f32 {
        2.0 * self.tan_half_vfov / self.height
    }
}
