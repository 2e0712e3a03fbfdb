"""``fg.shard_map`` over a mesh of ranks: two ranks under ``mpiexec`` against JAX's
``shard_map`` on two CPU devices (values and gradients of the same programs), a mesh of
one rank against the plain call, and the errors. The two-rank tests skip without mpi4py
(the ``distributed`` extra); the JAX comparison without JAX."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import funcgrad as fg
from funcgrad.sharding import P

from .test_distributed import NCCL_PRELUDE, ROOT, assert_ranks_ok, run_ranks

# The programs, written once for both libraries (``lax`` is fg.lax or jax.lax): each rank
# holds a block of 4 of x (8 in all) and the whole of w (4).
PROGRAMS = r"""
PROGRAMS = {
    "psum of products": (lambda lax, w, x: lax.psum((w * x).sum(), "data"), "replicated"),
    "replicated, no collective": (lambda lax, w, x: (w * w).sum() * 2.0, "replicated"),
    "all_gather": (lambda lax, w, x: lax.all_gather(x * w, "data", tiled=True) ** 2 * x.sum(), "split"),
    "pmean of a ring": (lambda lax, w, x: lax.pmean(((lax.ppermute(x, "data", [(0, 1), (1, 0)]) - w) ** 2).sum(),
                                                    "data"), "replicated"),
    "psum_scatter": (lambda lax, w, x: lax.psum_scatter(x * x * w, "data", tiled=True), "split"),
    "axis_index": (lambda lax, w, x: x * lax.axis_index("data") + w, "split"),
    "all_to_all": (lambda lax, w, x: lax.all_to_all((x * w).reshape(2, 2), "data", 0, 0, tiled=True), "split"),
    "pmax": (lambda lax, w, x: lax.pmax(x * w, "data"), "replicated"),
}
W = [0.5, -1.0, 2.0, 1.5]
X = [float(v) for v in range(-3, 5)]
"""

RANKS = PROGRAMS + r"""
import json
import numpy as np, funcgrad as fg
import funcgrad.distributed as dist
from funcgrad.sharding import P
dist.init_process_group("mpi")
r = dist.get_rank()
mesh = fg.make_mesh((2,), ("data",))
assert mesh.shape == {"data": 2} and repr(mesh) == "Mesh('data': 2)"
# the example of the issue: blocks of arange(6)
f = fg.shard_map(lambda w, x: fg.lax.psum((w * x).sum(), "data"), mesh=mesh, in_specs=(P(), P("data")),
                 out_specs=P())
w, x = fg.asarray([0.5, -1.0, 2.0]), fg.arange(6.0)[3 * r:3 * r + 3]
assert f(w, x).item() == 10.5 and fg.grad(f)(w, x).tolist() == [3.0, 5.0, 7.0]
assert fg.compile(f)(w, x).item() == 10.5 and fg.compile(fg.grad(f))(w, x).tolist() == [3.0, 5.0, 7.0]
assert x.tolist() == [3.0 * r, 3.0 * r + 1, 3.0 * r + 2]  # (the arguments unchanged)
# a vmap whose axis has the mesh axis's name: inside shard_map the name is the mesh's, the
# innermost binding, so the sum runs across the ranks for each member of the batch
across = fg.shard_map(lambda v: fg.lax.psum(v, "data"), mesh=mesh, in_specs=P(), out_specs=P())
rows = fg.asarray([[1.0 + r, 2.0], [3.0, 4.0 * (r + 1)]])
assert fg.vmap(across, axis_name="data")(rows).tolist() == [[3.0, 4.0], [6.0, 12.0]]
results = {}
w, x = fg.asarray(W), fg.asarray(X[4 * r:4 * r + 4])
for name, (program, kind) in PROGRAMS.items():
    mapped = fg.shard_map(lambda w, x: program(fg.lax, w, x), mesh=mesh, in_specs=(P(), P("data")),
                          out_specs=P() if kind == "replicated" else P("data"))
    value = mapped(w, x)
    assert np.array_equal(fg.compile(mapped)(w, x).numpy(), value.numpy()), name
    gw, gx = fg.grad(lambda w, x: mapped(w, x).sum(), (0, 1))(w, x)
    cw, cx = fg.compile(fg.grad(lambda w, x: mapped(w, x).sum(), (0, 1)))(w, x)
    assert np.allclose(cw.numpy(), gw.numpy()) and np.allclose(cx.numpy(), gx.numpy()), name
    results[name] = {"value": value.tolist(), "w": gw.tolist(), "x": gx.tolist()}
import os
with open(os.path.join(os.environ["FG_RESULTS"], f"rank{r}.json"), "w") as out:
    json.dump(results, out)
print(f"rank {r}: ok")
"""

# The same programs over NCCL on the stand-in GPU (test_distributed's stand-in: NCCL's calls
# on device pointers carried out by MPI), on a mesh whose other axis has one rank: each
# axis's communicator is made by splitting the world's.
NCCL_RANKS = NCCL_PRELUDE + PROGRAMS + r"""
import json, os
from funcgrad.sharding import P
mesh = fg.make_mesh((1, 2), ("one", "data"))
assert [(type(mesh.group(a)).__name__, mesh.group(a).size, mesh.group(a).rank) for a in ("one", "data")] == \
    [("NCCLGroup", 1, 0), ("NCCLGroup", 2, r)]
gpu = lambda v: fg.asarray(v).to("gpu")
f = fg.shard_map(lambda w, x: fg.lax.psum((w * x).sum(), "data"), mesh=mesh, in_specs=(P(), P("data")),
                 out_specs=P())
w, x = gpu([0.5, -1.0, 2.0]), gpu(np.arange(6.0)[3 * r:3 * r + 3])
assert f(w, x).item() == 10.5 and fg.grad(f)(w, x).cpu().tolist() == [3.0, 5.0, 7.0]
both = fg.shard_map(lambda x: fg.lax.psum(x, "one") * 10 + fg.lax.axis_index("one") + fg.lax.psum(x, ("one", "data")),
                    mesh=mesh, in_specs=P("data"), out_specs=P("data"))
assert both(x).cpu().tolist() == [v * 10 + s for v, s in zip(x.cpu().tolist(), [3.0, 5.0, 7.0])]
results = {}
w, x = gpu(W), gpu(X[4 * r:4 * r + 4])
for name, (program, kind) in PROGRAMS.items():
    mapped = fg.shard_map(lambda w, x: program(fg.lax, w, x), mesh=mesh, in_specs=(P(), P("data")),
                          out_specs=P() if kind == "replicated" else P("data"))
    value = mapped(w, x)
    gw, gx = fg.grad(lambda w, x: mapped(w, x).sum(), (0, 1))(w, x)
    assert value.device == gw.device == gx.device == x.device, name
    results[name] = {"value": value.cpu().tolist(), "w": gw.cpu().tolist(), "x": gx.cpu().tolist()}
assert {"group", "allGather", "allReduce", "reduceScatter", "send", "recv"} <= set(CALLS), CALLS
with open(os.path.join(os.environ["FG_RESULTS"], f"rank{r}.json"), "w") as out:
    json.dump(results, out)
print(f"rank {r}: ok")
"""

JAX = PROGRAMS + r"""
import json
import jax, jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec as P
jax.config.update("jax_enable_x64", True)
mesh = Mesh(jax.devices(), ("data",))
out = {}
w, x = jnp.asarray(W), jnp.asarray(X)
for name, (program, kind) in PROGRAMS.items():
    mapped = jax.shard_map(lambda w, x: program(jax.lax, w, x), mesh=mesh, in_specs=(P(), P("data")),
                           out_specs=P() if kind == "replicated" else P("data"))
    try:
        gw, gx = jax.grad(lambda w, x: mapped(w, x).sum(), (0, 1))(w, x)
        grads = {"w": gw.tolist(), "x": gx.tolist()}
    except Exception:  # (JAX differentiates no pmax)
        grads = {}
    out[name] = {"value": mapped(w, x).tolist(), **grads}
print(json.dumps(out))
"""


def _jax_results() -> dict | None:
    try:
        import jax  # noqa: F401
    except ImportError:
        return None
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", JAX], capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def mpi_ranks(tmp_path_factory) -> dict:
    """Each rank's values and gradients of PROGRAMS, two ranks over MPI."""
    where = tmp_path_factory.mktemp("mpi")
    assert_ranks_ok(run_ranks(RANKS, env={"FG_RESULTS": str(where)}))
    return {r: json.loads((where / f"rank{r}.json").read_text()) for r in (0, 1)}


def test_shard_map_on_two_ranks_equals_jax(mpi_ranks) -> None:
    """Each rank's values and gradients are its blocks of JAX's on the whole arrays (the
    gradient of the replicated w is the same on both ranks; a replicated output counts once)."""
    ranks = mpi_ranks
    want = _jax_results()
    namespace: dict = {}
    exec(PROGRAMS, namespace)
    for name, (_, kind) in namespace["PROGRAMS"].items():
        mine = [ranks[r][name] for r in (0, 1)]
        assert mine[0]["w"] == pytest.approx(mine[1]["w"]), name  # one replicated gradient
        if kind == "replicated":
            assert mine[0]["value"] == pytest.approx(mine[1]["value"]), name
        if want is None:
            continue
        theirs = want[name]
        value = np.concatenate([np.atleast_1d(m["value"]) for m in mine]) if kind == "split" else mine[0]["value"]
        np.testing.assert_allclose(value, theirs["value"], rtol=1e-12, err_msg=name)
        if "w" in theirs:
            np.testing.assert_allclose(mine[0]["w"], theirs["w"], rtol=1e-12, err_msg=name)
            np.testing.assert_allclose(mine[0]["x"] + mine[1]["x"], theirs["x"], rtol=1e-12, err_msg=name)


def test_shard_map_over_nccl_equals_mpi(mpi_ranks, tmp_path) -> None:
    """A mesh over NCCL (stand-in GPU and NCCL) splits the world's communicator per axis, and
    every collective, with its gradient, gives what it gives over MPI."""
    assert_ranks_ok(run_ranks(NCCL_RANKS, env={"FG_RESULTS": str(tmp_path)}))
    for r in (0, 1):
        nccl = json.loads((tmp_path / f"rank{r}.json").read_text())
        assert nccl.keys() == mpi_ranks[r].keys()
        for name, got in nccl.items():
            for part, want in mpi_ranks[r][name].items():
                np.testing.assert_allclose(got[part], want, rtol=1e-6, err_msg=f"{name} {part} rank {r}")


GRID = r"""
import numpy as np, funcgrad as fg
import funcgrad.distributed as dist
from funcgrad.sharding import P
if not dist.is_initialized():
    dist.init_process_group("mpi")
r = dist.get_rank()
mesh = fg.make_mesh((2, 2), ("a", "b"))
a, b = divmod(r, 2)
assert [(mesh.group(n).size, mesh.group(n).rank) for n in ("a", "b")] == [(2, a), (2, b)]
device = "gpu" if dist.get_backend() == "nccl" else "cpu"
x = fg.asarray(np.full(2, float(r))).to(device)
every = P(("a", "b"))
def f(x):
    return fg.stack([fg.lax.psum(x, "b"), fg.lax.psum(x, "a"), fg.lax.psum(x, ("a", "b")),
                     fg.lax.all_gather(x, "b")[1], fg.lax.ppermute(x, "a", [(0, 1), (1, 0)]),
                     x * 0 + fg.lax.axis_index(("a", "b"))])
got = fg.shard_map(f, mesh=mesh, in_specs=every, out_specs=every)(x)
want = [4 * a + 1, 2 * b + 2, 6, 2 * a + 1, 2 * (1 - a) + b, r]
assert got.device == x.device and got.cpu().numpy().tolist() == [[float(v)] * 2 for v in want], got
print(f"rank {r}: ok")
"""


@pytest.mark.parametrize("backend", ["mpi", "nccl"])
def test_a_two_by_two_mesh_on_four_ranks(backend: str) -> None:
    """Each axis of a (2, 2) mesh is its own group of two ranks: sums along either axis, both,
    a gather, a permutation and the index, over MPI and over NCCL (the stand-ins)."""
    script = (NCCL_PRELUDE if backend == "nccl" else "") + GRID
    assert_ranks_ok(run_ranks(script, n=4), n=4)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-2, 2)), min_size=1, max_size=8))
def test_a_split_partitions_the_ranks_by_color_in_key_order(colors_and_keys: list[tuple[int, int]]) -> None:
    """The NCCL group's split (MPI's ``Comm.Split``): the ranks of one color form one group,
    each computes the same members, ordered by key and then by rank."""
    from funcgrad.backends.process_group import split_members

    every = [list(ck) for ck in colors_and_keys]
    groups = {r: split_members(every, r) for r in range(len(every))}
    for r, members in groups.items():
        assert r in members and all(groups[m] == members for m in members)
        assert {every[m][0] for m in members} == {every[r][0]}
        assert [(every[m][1], m) for m in members] == sorted((every[m][1], m) for m in members)
    assert sorted(r for members in {tuple(m) for m in groups.values()} for r in members) == list(range(len(every)))


def test_a_mesh_of_one_rank_is_the_plain_call() -> None:
    mesh = fg.make_mesh((1,), ("data",))
    w, x = fg.asarray([0.5, -1.0]), fg.asarray([2.0, 3.0])
    f = fg.shard_map(lambda w, x: fg.lax.psum((w * x).sum(), "data") + fg.lax.axis_index("data"), mesh=mesh,
                     in_specs=(P(), P("data")), out_specs=P())
    assert f(w, x).item() == -2.0
    assert fg.grad(f, (0, 1))(w, x)[0].tolist() == [2.0, 3.0]
    gathered = fg.shard_map(lambda x: fg.lax.all_gather(x, "data"), mesh=mesh, in_specs=P("data"), out_specs=P())
    assert gathered(x).tolist() == [[2.0, 3.0]]


def test_a_mesh_axis_inside_a_vmap_of_its_name_is_the_meshs() -> None:
    """The innermost binding of a name wins, as in JAX: inside ``shard_map`` over a one-rank
    mesh axis ``"i"``, a collective over ``"i"`` is the mesh's (one rank: the value), though
    a vmap around it binds ``"i"`` to its batch; outside the shard_map, the vmap's."""
    mesh = fg.make_mesh((1,), ("i",))
    x = fg.arange(6.0).reshape(3, 2)
    inner = fg.shard_map(lambda v: fg.lax.psum(v, "i") * 2.0 + fg.lax.axis_index("i"), mesh=mesh, in_specs=P(),
                         out_specs=P())
    assert fg.vmap(inner, axis_name="i")(x).tolist() == (x * 2.0).tolist()
    assert fg.vmap(lambda v: inner(v) + fg.lax.psum(v, "i"), axis_name="i")(x).tolist() == \
        (x * 2.0 + x.sum(0)).tolist()
    assert fg.grad(lambda x: fg.vmap(inner, axis_name="i")(x).sum())(x).tolist() == [[2.0, 2.0]] * 3


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=1, max_size=5), st.sampled_from(["psum", "pmean", "pmax", "pmin"]))
def test_collectives_on_one_rank_give_the_value(values: list[float], op: str) -> None:
    mesh = fg.make_mesh((1,), ("i",))
    x = fg.asarray(values)
    f = fg.shard_map(lambda v: (getattr(fg.lax, op)(v, "i") * v).sum(), mesh=mesh, in_specs=P("i"), out_specs=P())
    np.testing.assert_allclose(f(x).item(), (x * x).sum().item(), rtol=1e-12)
    np.testing.assert_allclose(fg.grad(f)(x).numpy(), 2 * x.numpy(), rtol=1e-12)


def test_bad_meshes_and_specs_are_refused() -> None:
    with pytest.raises(fg.ArgumentValueError, match=r"a mesh of shape \(2,\) has 2 ranks, but the process group has 1"):
        fg.make_mesh((2,), ("data",))
    with pytest.raises(fg.ArgumentValueError, match="pair up one to one"):
        fg.make_mesh((1, 1), ("a", "a"))
    mesh = fg.make_mesh((1,), ("data",))
    x = fg.ones((2,))
    with pytest.raises(fg.ArgumentValueError, match=r"in_specs\[0\] P\('model'\) names axes not in the mesh"):
        fg.shard_map(lambda v: v, mesh=mesh, in_specs=P("model"), out_specs=P())(x)
    with pytest.raises(fg.ShapeError, match=r"P\('data', None\) has 2 entries for an array of 1 dimension"):
        fg.shard_map(lambda v: v, mesh=mesh, in_specs=P("data", None), out_specs=P())(x)
    with pytest.raises(fg.ArgumentTypeError, match="mesh must be an fg.sharding.Mesh"):
        fg.shard_map(lambda v: v, mesh="data", in_specs=P(), out_specs=P())
    with pytest.raises(fg.ArgumentValueError, match="does not match the structure"):
        fg.shard_map(lambda v, u: v, mesh=mesh, in_specs=(P(),), out_specs=P())(x, x)


def test_the_two_rank_example_in_the_docs_runs_under_the_launcher() -> None:
    import re

    text = open(os.path.join(ROOT, "docs", "distributed.md")).read()
    blocks = re.findall(r"```python two-ranks\n(.*?)```", text, re.S)
    assert blocks
    for code in blocks:
        assert_ranks_ok(run_ranks(code + '\nprint(f"rank {dist.get_rank()}: ok")\n', launcher=True))
