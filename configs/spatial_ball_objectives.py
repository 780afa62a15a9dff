"""Objective of configs/spatial-ball.toml: g = v_x² of the ball's centre (∫ g dt is
smaller the sooner friction stops the sliding, so it depends on μ and v₀)."""
import numpy as np


def vx_sq(t, q, v, a, lam, p, model):
    i = model.spatial.bodies["ball"].offset
    dv = np.zeros_like(v)
    dv[i] = 2 * v[i]
    return v[i] ** 2, {"v": dv}
