"""A reduced FFR body written to HDF5 and read back (``parmbs reduce``, and
``continua.NAME.reduction.load``): reduce a body once, reuse it in later runs.

The file is the body's "standard input data" in the sense of seed 003's SID (Held,
MSD 2021, §3 Tables 2–5): the body integrals of modal_components.py at one design,
together with what their design derivatives are computed from.  One group per body,
``/reduced/NAME``:

    attrs     format = "parmbs-reduced-body", version = 1, nx, ny, modes (K),
              n_elastic (n_f), density_law, attachment_nodes, lambda_next (λ_K+1)
    parameters (9,)   E, nu, thickness, rho0, penalization, size x, y, offset x, y
    density    (nel,) the element densities the body was reduced at
    lambda     (K,)   clamped-hub eigenvalues;  Phi (n_f, K) their M-normalized modes
    Psi        (n_f, 2·nodes) static responses to unit loads at the attachment nodes
    attachment_scale  the constants that scale the residual attachment modes
    data/m, S0, I0, Sbar, b, a, M, G, K   the reduced body integrals (modal_components.py)

Design derivatives.  dD/dρ is not stored as a matrix — at 10⁵ densities and K = 12
it would be ~500 × 10⁵ doubles and ~500 adjoint eigen-solves to fill.  It is
determined exactly by the eigenpairs and static modes stored here (Nelson's method
and its adjoint, modal.py): a loaded body runs its forward simulation with no
assembly or eigensolve, and its gradient re-forms K_ff(ρ) from the stored densities
(one sparse LU) and applies modal.py's ``vjp`` to the stored basis — the same
arithmetic on the same bytes as the body reduced in-process, hence the same gradient
bits.  At any other design (an optimization step, a finite difference) the body is
reduced afresh from its densities; the attachment scale stays the file's (it is a
constant of the nominal design).

Written under a temporary name and renamed (io/outputs.py ``replace_on_root``).
A file that is not such a body, or of another mesh, material, K, attachment node
set or density law, is refused naming the config key that differs (exit 2).
"""
import numpy as np

from ..model.system import ModelError

FORMAT, VERSION = "parmbs-reduced-body", 1
PARAMS = ("E", "nu", "thickness", "rho0", "penalization", "Lx", "Ly", "X0", "Y0")
#: the config key of each entry of ``parameters`` (for the refusal message)
PARAM_KEYS = ("E", "nu", "thickness", "rho0", "penalization", "size", "size", "offset", "offset")


def write_bodies(path, reductions, p):
    """Write every Reduction in ``reductions`` at the parameters p to ``path`` (one
    group per body).  Returns the body names."""
    import h5py
    from .modal_components import inertia_layout
    with h5py.File(path, "w") as f:
        for red in reductions:
            st = red.state(p)
            g = f.create_group(f"reduced/{red.name}")
            g.attrs.update(format=FORMAT, version=VERSION, nx=red.nx, ny=red.ny, modes=red.K,
                           n_elastic=red.nf, density_law=red.law, lambda_next=float(st["lam_next"]),
                           attachment_nodes=np.array(red.attach, np.int64))
            g["parameters"] = np.array([st["g"][k] for k in PARAMS])
            g["parameters"].attrs["names"] = ",".join(PARAMS)
            g["density"] = st["x"]
            g["lambda"], g["Phi"] = st["lam"], st["Phi"]
            if len(red.adofs):
                g["Psi"], g["attachment_scale"] = st["Psi"], red._ascale
            D = red._data(st, st["me"], st["ke"], st["V"])
            lay, ni = inertia_layout(red.nb)
            shapes = {"Sbar": (2, red.nb), "M": (red.nb, red.nb), "G": (red.nb, red.nb)}
            for name, sl in lay.items():
                v = D[sl]
                g[f"data/{name}"] = v.reshape(shapes[name]) if name in shapes else (v[0] if len(v) == 1 else v)
            g["data/K"] = D[ni:ni + red.nb ** 2].reshape(red.nb, red.nb)
    return [red.name for red in reductions]


def read_body(path, name, key):
    """The stored body ``name`` of ``path`` as a dict (arrays), or ModelError(key)."""
    import h5py
    try:
        with h5py.File(path, "r") as f:
            g = f.get(f"reduced/{name}")
            if g is None or g.attrs.get("format") != FORMAT:
                have = ", ".join(f["reduced"].keys()) if "reduced" in f else "none"
                raise ModelError(key, f"{path} holds no reduced body '{name}' (bodies: {have})")
            if int(g.attrs["version"]) != VERSION:
                raise ModelError(key, f"{path}: reduced-body format version {g.attrs['version']} "
                                      f"(this parmbs reads {VERSION})")
            out = {k: g.attrs[k] for k in ("nx", "ny", "modes", "n_elastic", "density_law", "lambda_next",
                                           "attachment_nodes")}
            for k in ("parameters", "density", "lambda", "Phi", "Psi", "attachment_scale"):
                if k in g:
                    out[k] = g[k][()]
    except OSError as e:
        raise ModelError(key, f"cannot read {path}: {e}") from None
    except KeyError as e:
        raise ModelError(key, f"{path}: not a complete reduced body ({e})") from None
    return out


def check_body(sid, c, modes, attach, path, values):
    """Refuse a stored body that is not this continuum's: mesh, clamp, K, attachment
    nodes, density law, material and geometry (bitwise: the basis belongs to exactly
    these numbers).  ``values``: the parameter vector (material entries of c.p)."""
    base = f"continua.{c.name}"
    for k, mine in (("nx", c.nx), ("ny", c.ny), ("density_law", c.cfg.density_law)):
        if sid[k] != mine:
            raise ModelError(f"{base}.{k}", f"{mine} differs from the reduced body in {path} ({sid[k]})")
    if int(sid["modes"]) != modes:
        raise ModelError(f"{base}.reduction.modes", f"{modes} differs from the reduced body in {path} "
                                                   f"({int(sid['modes'])})")
    if sorted(int(k) for k in sid["attachment_nodes"]) != sorted(attach):
        raise ModelError(f"{base}.reduction.attachment", f"the attachment nodes {sorted(attach)} differ from "
                                                        f"those of the reduced body in {path} "
                                                        f"({sorted(int(k) for k in sid['attachment_nodes'])})")
    if int(sid["n_elastic"]) != 2 * c.nfree:
        raise ModelError(f"{base}.clamp_radius", f"{c.nfree} free nodes; the reduced body in {path} has "
                                                 f"{int(sid['n_elastic']) // 2}")
    for name, k, v in zip(PARAMS, PARAM_KEYS, sid["parameters"]):
        mine = float(values[c.p[name]])
        if mine != v:
            raise ModelError(f"{base}.{k}", f"{mine!r} differs from the reduced body in {path} ({float(v)!r})")
    nf, K = int(sid["n_elastic"]), int(sid["modes"])
    shapes = [("density", (c.nel,)), ("lambda", (K,)), ("Phi", (nf, K))]
    if len(attach):
        shapes += [("Psi", (nf, 2 * len(attach))), ("attachment_scale", (2 * len(attach),))]
    for k, shape in shapes:
        a = sid.get(k)
        if a is None or a.shape != shape or not np.all(np.isfinite(a)):
            raise ModelError(f"{base}.reduction.load", f"{path}: '{k}' is missing, not of shape {shape} or "
                                                      "not finite")
