"""How many thread block clusters the GPU runs at once: ``python -m benchmarks.cluster_capacity`` (GPU).

For clusters of 1-16 blocks at 1-4 blocks per SM (forced by each block's shared memory), the driver's
``cuOccupancyMaxActiveClusters`` for an empty kernel. Clusters are placed within one GPC, so fewer fit than
``SMs x b / k``: the source of :data:`kernels.norm.row_tail.CLUSTERS_AT_ONCE` (H200, session 23), which the norm
tails' default block limit uses (a tail of more blocks than run at once runs in waves).
"""

from __future__ import annotations

SMEM_KB = {1: 150, 2: 100, 3: 70, 4: 50}  # a block's shared memory that lets b blocks share an SM (228 KB)
SIZES = (1, 2, 4, 8, 16)


def active_clusters(func, grid, block, smem: int, cluster: int = 0):
    """``cuOccupancyMaxActiveClusters`` of kernel ``func`` launched with ``grid`` / ``block`` (dim3 tuples) and
    ``smem`` bytes of dynamic shared memory, in clusters of ``cluster`` blocks (0: the kernel's own, compiled in),
    or None where the driver refuses."""
    from cuda.bindings import driver as d

    cfg = d.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
    cfg.sharedMemBytes, cfg.numAttrs = smem, 0
    if cluster:
        a = d.CUlaunchAttribute()
        a.id = d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = cluster, 1, 1
        cfg.attrs, cfg.numAttrs = [a], 1
    err, n = d.cuOccupancyMaxActiveClusters(func, cfg)
    return int(n) if int(err) == 0 else None


def capacities(threads: int = 512) -> dict:
    """``{b: {k: clusters}}`` on device 0."""
    import torch
    from cuda.bindings import driver as d

    torch.zeros(1, device="cuda")  # the primary context
    ptx = b".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k() { ret; }\n\0"
    err, mod = d.cuModuleLoadData(ptx)
    err, f = d.cuModuleGetFunction(mod, b"k")
    attr = d.CUfunction_attribute
    d.cuFuncSetAttribute(f, attr.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
    d.cuFuncSetAttribute(f, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200 * 1024)
    out = {}
    for b, kb in SMEM_KB.items():
        out[b] = {k: active_clusters(f, (k * 64, 1, 1), (threads, 1, 1), kb * 1024, k) for k in SIZES}
    return out


def main() -> int:
    import torch

    from kernels.norm.row_tail import CLUSTERS_AT_ONCE

    print(f"{torch.cuda.get_device_name()}: {torch.cuda.get_device_properties(0).multi_processor_count} SMs")
    got = capacities()
    for b, row in got.items():
        print(f"{b} block(s) per SM: " + "  ".join(f"{k}: {n}" for k, n in row.items()))
    same = got == CLUSTERS_AT_ONCE
    print("CLUSTERS_AT_ONCE " + ("matches" if same else f"differs: {CLUSTERS_AT_ONCE}"))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
