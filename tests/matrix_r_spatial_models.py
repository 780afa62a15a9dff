"""Small spatial models for the 3-D semi-recursive method (tests/test_matrix_r_spatial.py,
tests/test_matrix_r_natural.py): every tree-joint kind in one open chain, a closed
spatial four-bar (with Euler-parameter or natural-coordinate coupler), and a chain of
natural-coordinate bodies."""
from pathlib import Path


#: A free-floating base (a free root: no joint to ground) carrying a chain with one joint
#: of every tree kind: revolute (base–b1, y axis), cylindrical (b1–b2, x), translational
#: (b2–b3, z), universal (b3–b4, y × z), spherical (b4–b5).  Springs pull the base to
#: ground and stretch the translational and cylindrical slides, the bodies spin, so every
#: relative coordinate moves.  15 relative coordinates: 6 + 1 + 2 + 1 + 2 + 3.
CHAIN = """
[model]
name = "spatial-chain"
[spatial]
gravity = [0.0, 0.0, -9.81]
[spatial.ground]
points = { O = [0.0, 0.0, 0.5], K = [2.0, 0.5, 0.0] }
[[spatial.bodies]]
name = "base"
mass = 5.0
inertia = [0.2, 0.3, 0.4]
points = { A = [0.3, 0.0, 0.0] }
initial = { position = [0.0, 0.0, 0.0] }
initial_velocity = { velocity = [0.4, 0.0, 0.2], angular_velocity = [0.3, -0.2, 1.0] }
[[spatial.bodies]]
name = "b1"
mass = 1.0
inertia = [0.01, 0.02, 0.02]
points = { P = [-0.2, 0.0, 0.0], A = [0.2, 0.0, 0.0] }
initial = { position = [0.5, 0.0, 0.0] }
initial_velocity = { angular_velocity = [0.0, 1.5, 0.0] }
[[spatial.bodies]]
name = "b2"
mass = 1.0
inertia = [0.01, 0.02, 0.03]
points = { P = [-0.2, 0.0, 0.0], A = [0.2, 0.0, 0.0] }
initial = { position = [0.9, 0.0, 0.0] }
initial_velocity = { angular_velocity = [2.0, 0.0, 0.0] }
[[spatial.bodies]]
name = "b3"
mass = 1.0
inertia = [0.02, 0.01, 0.03]
points = { P = [-0.2, 0.0, 0.0], A = [0.2, 0.0, 0.0] }
initial = { position = [1.3, 0.0, 0.0] }
[[spatial.bodies]]
name = "b4"
mass = 1.0
inertia = [0.01, 0.03, 0.02]
points = { P = [-0.2, 0.0, 0.0], A = [0.2, 0.0, 0.0] }
initial = { position = [1.7, 0.0, 0.0] }
initial_velocity = { angular_velocity = [0.0, -1.0, 1.0] }
[[spatial.bodies]]
name = "b5"
mass = 1.0
inertia = [0.02, 0.02, 0.01]
points = { P = [-0.2, 0.0, 0.0], T = [0.2, 0.0, 0.0] }
initial = { position = [2.1, 0.0, 0.0] }
initial_velocity = { angular_velocity = [1.0, 0.5, -0.5] }
[[spatial.joints]]
type = "revolute"
name = "rev"
a = "base.A"
b = "b1.P"
axis_a = "base.y"
axis_b = "b1.y"
[[spatial.joints]]
type = "cylindrical"
name = "cyl"
a = "b1.A"
b = "b2.P"
axis_a = "b1.x"
axis_b = "b2.x"
[[spatial.joints]]
type = "translational"
name = "slide"
a = "b3.P"
b = "b2.A"
axis_a = "b3.z"
axis_b = "b2.z"
[[spatial.joints]]
type = "universal"
name = "univ"
a = "b3.A"
b = "b4.P"
axis_a = "b3.y"
axis_b = "b4.z"
[[spatial.joints]]
type = "spherical"
name = "ball"
a = "b5.P"
b = "b4.A"
[[spatial.forces]]
type = "spring_damper"
name = "hold"
a = "ground.O"
b = "base.A"
stiffness = 400.0
damping = 2.0
length = 0.2
[[spatial.forces]]
type = "spring_damper"
name = "pull"
a = "ground.K"
b = "b5.T"
stiffness = 80.0
damping = 1.0
length = 0.3
[simulation]
t_end = 0.1
dt = 1e-2
integrator = "trapezoidal"
[[design]]
name = "m_b3"
path = "spatial.bodies.b3.mass"
[[design]]
name = "k_pull"
path = "spatial.forces.pull.stiffness"
[[design]]
name = "b2_A_x"
path = "spatial.bodies.b2.points.A.x"
[[objectives]]
name = "slide_load"
integrand = "reaction_sq"
joint = "slide"
[[objectives]]
name = "tip_acc"
integrand = "vertical_acceleration_sq"
point = "b5.T"
"""

#: A spatial RSUR four-bar: crank (revolute about global x at O1), coupler (spherical at
#: the crank tip, universal at the rocker tip), rocker (revolute about global y at O2).
#: 1 degree of freedom: 18 coordinates − (5 + 3 + 4 + 5) rows; the crank is released
#: at 2 rad/s and falls under gravity.  With cut = ["pivot_r"] the tree is crank
#: (revolute), coupler (spherical), rocker (universal), closed by the rocker's revolute
#: joint (5 cut rows, 6 relative coordinates).
FOURBAR = """
[model]
name = "spatial-fourbar"
[spatial]
gravity = [0.0, 0.0, -9.81]
[spatial.ground]
points = { O1 = [0.0, 0.0, 0.0], O2 = [1.0, 0.2, 0.0] }
[[spatial.bodies]]
name = "crank"
mass = 1.0
inertia = [0.008, 0.008, 0.001]
points = { O = [0.0, 0.0, -0.15], A = [0.0, 0.0, 0.15] }
initial = { position = [0.0, 0.0, 0.15] }
initial_velocity = { angular_velocity = [2.0, 0.0, 0.0] }
independent = ["rx"]
[[spatial.bodies]]
name = "coupler"
mass = 2.0
inertia = [0.01, 0.18, 0.18]
points = { A = [-0.5, -0.1, -0.1], B = [0.5, 0.1, 0.1] }
initial = { position = [0.5, 0.1, 0.4] }
independent = []
[[spatial.bodies]]
name = "rocker"
mass = 1.5
inertia = [0.03, 0.03, 0.002]
points = { O = [0.0, 0.0, -0.25], B = [0.0, 0.0, 0.25] }
initial = { position = [1.0, 0.2, 0.25] }
independent = []
[[spatial.joints]]
type = "revolute"
name = "pivot_c"
a = "ground.O1"
b = "crank.O"
axis_a = "ground.x"
axis_b = "crank.x"
[[spatial.joints]]
type = "spherical"
name = "ball"
a = "crank.A"
b = "coupler.A"
[[spatial.joints]]
type = "universal"
name = "cross"
a = "rocker.B"
b = "coupler.B"
axis_a = "rocker.y"
axis_b = "coupler.x"
[[spatial.joints]]
type = "revolute"
name = "pivot_r"
a = "ground.O2"
b = "rocker.O"
axis_a = "ground.y"
axis_b = "rocker.y"
[simulation]
t_end = 0.1
dt = 1e-2
integrator = "trapezoidal"
[simulation.matrix_r]
cut = ["pivot_r"]
[[design]]
name = "m_coupler"
path = "spatial.bodies.coupler.mass"
[[design]]
name = "crank_A_z"
path = "spatial.bodies.crank.points.A.z"
[[design]]
name = "O2_x"
path = "spatial.ground.points.O2.x"
[[objectives]]
name = "rocker_load"
integrand = "reaction_sq"
joint = "pivot_r"
[[objectives]]
name = "ball_load"
integrand = "reaction_sq"
joint = "ball"
[[objectives]]
name = "coupler_roll"
integrand = "roll_rate_sq"
body = "coupler"
"""

#: CHAIN with a weld in the tree: body b6 welded ("rigid") to b5's tip, offset and
#: rotated, so b5 + b6 move as one body with a zero-coordinate tree joint between them
#: (relative_tree.py, ρ = Q₀); the pull spring acts on b6.  b6's guess puts W on b5.T.
_B6 = """[[spatial.bodies]]
name = "b6"
mass = 0.5
inertia = [0.004, 0.006, 0.008]
points = { W = [-0.1, 0.05, 0.0], T = [0.15, 0.0, 0.05] }
initial = { position = [2.40950238, -0.00267779, 0.02240665], bryant = [0.3, -0.2, 0.5] }
[[spatial.joints]]
type = "rigid"
name = "weld"
a = "b5.T"
b = "b6.W"
"""
WELD = (CHAIN.replace('[[spatial.joints]]\ntype = "revolute"\nname = "rev"', _B6 + '[[spatial.joints]]\ntype = "revolute"\nname = "rev"')
        .replace('b = "b5.T"\nstiffness = 80.0', 'b = "b6.T"\nstiffness = 80.0'))
assert WELD.count('name = "weld"') == 1 and 'b = "b6.T"' in WELD

#: configs/spatial-fourbar-natural.toml: an RSSR four-bar whose coupler is a natural-
#: coordinate body (spatial/natural.py), and the same model with the coupler in Euler
#: parameters (``NFOURBAR_EULER``)
NFOURBAR = (Path(__file__).resolve().parents[1] / "configs" / "spatial-fourbar-natural.toml").read_text()
NFOURBAR_EULER = (NFOURBAR.replace('[[spatial.natural_bodies]]\nname = "coupler"', '[[spatial.bodies]]\nname = "coupler"')
                  .replace("spatial.natural_bodies.coupler.", "spatial.bodies.coupler."))

#: Natural-coordinate bodies everywhere in a tree: n1 hangs from ground (spherical,
#: rigid–natural), n2 from n1 (natural–natural), the Euler-parameter box from n2 (a
#: rigid child of a natural parent: its Euler parameters' sign comes from the tree's
#: e_P ∘ ρ, relative_tree.positions), and the natural body "drone" is a free root held by
#: a spring-damper to ground.  A distance joint from ground to n2 closes a loop (1 cut
#: row).  Relative coordinates 3 + 3 + 3 + 6 = 15; 14 degrees of freedom.
NCHAIN = """
[model]
name = "natural-chain"
[spatial]
gravity = [0.0, 0.0, -9.81]
[spatial.ground]
points = { O = [0.0, 0.0, 0.0], K = [0.6, 0.8, -0.3], F = [0.0, 1.0, 0.5] }
[[spatial.bodies]]
name = "box"
mass = 0.8
inertia = [0.004, 0.006, 0.008]
points = { P = [-0.1, 0.0, 0.0], T = [0.1, 0.05, 0.0] }
initial = { position = [1.05, 0.0, -0.1], bryant = [0.1, 0.2, -0.3] }
initial_velocity = { angular_velocity = [0.5, -1.0, 0.8] }
independent = ["rx", "ry", "rz"]
[[spatial.natural_bodies]]
name = "n1"
mass = 1.0
inertia = [0.01, 0.03, 0.03]
points = { P = [-0.25, 0.0, 0.0], A = [0.25, 0.0, 0.0] }
initial = { position = [0.25, 0.0, 0.0] }
initial_velocity = { angular_velocity = [0.3, 1.0, 2.0] }
independent = ["rx", "ry", "rz"]
[[spatial.natural_bodies]]
name = "n2"
mass = 0.7
inertia = [0.005, 0.02, 0.02]
points = { P = [-0.2, 0.0, 0.0], A = [0.2, 0.0, 0.1], Q = [0.0, 0.05, 0.0] }
initial = { position = [0.7, 0.0, 0.0], bryant = [0.0, 0.0, 0.2] }
initial_velocity = { angular_velocity = [1.0, 0.0, -0.5] }
independent = ["rx", "ry"]
[[spatial.natural_bodies]]
name = "drone"
mass = 0.5
inertia = [0.002, 0.003, 0.004]
points = { H = [0.0, 0.0, 0.1] }
initial = { position = [0.0, 1.0, 0.2], bryant = [0.4, -0.2, 0.1] }
initial_velocity = { velocity = [0.2, 0.0, 0.5], angular_velocity = [2.0, 1.0, -1.0] }
independent = ["x", "y", "z", "rx", "ry", "rz"]
[[spatial.joints]]
type = "spherical"
name = "s0"
a = "ground.O"
b = "n1.P"
[[spatial.joints]]
type = "spherical"
name = "s1"
a = "n1.A"
b = "n2.P"
[[spatial.joints]]
type = "spherical"
name = "s2"
a = "box.P"
b = "n2.A"
[[spatial.joints]]
type = "distance"
name = "tie"
a = "ground.K"
b = "n2.Q"
[[spatial.forces]]
type = "spring_damper"
name = "hold"
a = "ground.F"
b = "drone.H"
stiffness = 300.0
damping = 1.5
length = 0.1
[simulation]
t_end = 0.1
dt = 1e-2
integrator = "trapezoidal"
formulation = "matrix-r"
[[design]]
name = "m_n2"
path = "spatial.natural_bodies.n2.mass"
[[design]]
name = "Jxx_n1"
path = "spatial.natural_bodies.n1.inertia.xx"
[[design]]
name = "n1_A_x"
path = "spatial.natural_bodies.n1.points.A.x"
[[design]]
name = "k_hold"
path = "spatial.forces.hold.stiffness"
[[objectives]]
name = "tie_load"
integrand = "reaction_sq"
joint = "tie"
[[objectives]]
name = "s1_load"
integrand = "reaction_sq"
joint = "s1"
[[objectives]]
name = "box_acc"
integrand = "vertical_acceleration_sq"
point = "box.T"
[[objectives]]
name = "drone_speed"
integrand = "point_velocity_sq"
point = "drone.H"
"""

#: Natural-coordinate bodies on the joints with axes (flexible/ancf3d_joints.AXIS_PAIRS):
#: n1 swings on a revolute hinge to ground (rigid–natural), n2 hangs from n1 by a
#: universal joint and n4 from n2 by a revolute joint (natural–natural), the
#: Euler-parameter box slides and turns on n2 by a cylindrical joint (a rigid child of a
#: natural parent) and n3 slides on the box by a translational joint held by a spring
#: (a natural child of a rigid parent).  Relative coordinates 1 + 2 + 1 + 2 + 1 = 7, all
#: degrees of freedom (no cut).  ``NAXES_EULER``: every natural body in Euler parameters.
NAXES = """
[model]
name = "natural-axes"
[spatial]
gravity = [0.0, 0.0, -9.81]
[spatial.ground]
points = { O = [0.0, 0.0, 0.0], F = [0.5, 1.2, 0.3] }
[[spatial.natural_bodies]]
name = "n1"
mass = 1.0
inertia = [0.03, 0.01, 0.03]
points = { P = [0.0, -0.25, 0.0], A = [0.0, 0.25, 0.0] }
initial = { position = [0.0, 0.25, 0.0] }
initial_velocity = { angular_velocity = [1.0, 0.0, 0.0] }
independent = ["rx"]
axes = { h = [1.0, 0.0, 0.0] }
[[spatial.natural_bodies]]
name = "n2"
mass = 0.7
inertia = [0.02, 0.005, 0.02]
points = { P = [0.0, -0.2, 0.0], A = [0.0, 0.2, 0.05], B = [0.1, 0.0, 0.0] }
initial = { position = [0.0, 0.7, 0.0], bryant = [0.0, 0.0, 0.0] }
initial_velocity = { angular_velocity = [1.5, 0.0, 0.8] }
independent = ["rx", "rz"]
[[spatial.natural_bodies]]
name = "n4"
mass = 0.4
inertia = [0.002, 0.004, 0.004]
points = { P = [-0.15, 0.0, 0.0] }
initial = { position = [0.25, 0.7, 0.0] }
initial_velocity = { angular_velocity = [0.0, 0.0, 2.0] }
independent = ["rz"]
[[spatial.bodies]]
name = "box"
mass = 0.8
inertia = [0.004, 0.006, 0.008]
points = { P = [0.05, -0.1, 0.0], T = [0.1, 0.1, 0.0] }
initial = { position = [-0.05, 1.0, 0.05] }
initial_velocity = { velocity = [0.0, 0.2, 0.0], angular_velocity = [0.0, 1.0, 0.0] }
independent = ["y", "ry"]
[[spatial.natural_bodies]]
name = "n3"
mass = 0.3
inertia = [0.001, 0.002, 0.002]
points = { P = [-0.1, 0.0, 0.0] }
initial = { position = [0.15, 1.1, 0.05] }
initial_velocity = { velocity = [0.1, 0.0, 0.0] }
independent = ["x"]
[[spatial.joints]]
type = "revolute"
name = "hinge"
a = "ground.O"
b = "n1.P"
axis_a = "ground.x"
axis_b = "n1.h"
[[spatial.joints]]
type = "universal"
name = "cross"
a = "n1.A"
b = "n2.P"
axis_a = "n1.x"
axis_b = "n2.z"
[[spatial.joints]]
type = "revolute"
name = "knee"
a = "n2.B"
b = "n4.P"
axis_a = "n2.z"
axis_b = "n4.z"
[[spatial.joints]]
type = "cylindrical"
name = "sleeve"
a = "box.P"
b = "n2.A"
axis_a = "box.y"
axis_b = "n2.y"
[[spatial.joints]]
type = "translational"
name = "rail"
a = "box.T"
b = "n3.P"
axis_a = "box.x"
axis_b = "n3.x"
[[spatial.forces]]
type = "spring_damper"
name = "hold"
a = "ground.F"
b = "n3.P"
stiffness = 200.0
damping = 1.0
length = 0.2
[simulation]
t_end = 0.1
dt = 1e-2
integrator = "trapezoidal"
formulation = "matrix-r"
[simulation.matrix_r]
coordinates = "independent"
[[design]]
name = "m_n2"
path = "spatial.natural_bodies.n2.mass"
[[design]]
name = "Jzz_n4"
path = "spatial.natural_bodies.n4.inertia.zz"
[[design]]
name = "n2_A_z"
path = "spatial.natural_bodies.n2.points.A.z"
[[design]]
name = "n1_A_y"
path = "spatial.natural_bodies.n1.points.A.y"
[[design]]
name = "k_hold"
path = "spatial.forces.hold.stiffness"
[[objectives]]
name = "hinge_load"
integrand = "reaction_sq"
joint = "hinge"
[[objectives]]
name = "sleeve_load"
integrand = "reaction_sq"
joint = "sleeve"
[[objectives]]
name = "box_acc"
integrand = "vertical_acceleration_sq"
point = "box.T"
[[objectives]]
name = "n4_acc"
integrand = "vertical_acceleration_sq"
point = "n4.P"
"""
NAXES_EULER = NAXES.replace("[[spatial.natural_bodies]]", "[[spatial.bodies]]").replace(
    "spatial.natural_bodies.", "spatial.bodies.")

#: The RSUR four-bar (``FOURBAR``) with its coupler a natural-coordinate body: the
#: universal joint "cross" joins the Euler-parameter rocker (side a) to the natural
#: coupler; in the tree the rocker hangs from the coupler (a rigid child of a natural
#: parent across a universal joint), pivot_r cut.
NFOURBAR_U = (FOURBAR.replace('[[spatial.bodies]]\nname = "coupler"', '[[spatial.natural_bodies]]\nname = "coupler"')
              .replace("spatial.bodies.coupler.", "spatial.natural_bodies.coupler.")
              .replace('name = "coupler_roll"\nintegrand = "roll_rate_sq"\nbody = "coupler"',
                       'name = "coupler_acc"\nintegrand = "vertical_acceleration_sq"\npoint = "coupler.B"'))
NFOURBAR_U_EULER = NFOURBAR_U.replace('[[spatial.natural_bodies]]\nname = "coupler"',
                                      '[[spatial.bodies]]\nname = "coupler"').replace(
    "spatial.natural_bodies.coupler.", "spatial.bodies.coupler.")
assert NFOURBAR_U.count("natural_bodies") == 2 and "coupler_acc" in NFOURBAR_U
