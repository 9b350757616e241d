"""cuda_library: compile .cu files with nvcc into a static library.

Where the toolkit is absent (see cuda_configure.bzl) the target is an empty
cc_library, so dependents build either way; they pick their implementation
with `#if LEEWAY_HAVE_CUDA`, which a cuda_library defines for everything
that depends on it when the toolkit was found.
"""

load("@local_cuda//:defs.bzl", "CUDA_AVAILABLE", "NVCC")

CUDA_ARCHS = ["80", "90"]

def cuda_library(name, srcs, hdrs = [], deps = [], nvcc_hdrs = [], nvcc_flags = [],
                 cuda_linkopts = [], **kwargs):
    """nvcc_hdrs: headers of other targets the .cu files include (nvcc runs
    in a genrule, which sees only what it lists); nvcc_flags: extra flags;
    cuda_linkopts: link options where the toolkit exists (e.g. -lcublas)."""
    if not CUDA_AVAILABLE:
        native.cc_library(name = name, hdrs = hdrs, deps = deps, **kwargs)
        return
    # nvcc reads headers of this repository relative to the exec root.
    gencode = " ".join([
        "-gencode arch=compute_%s,code=sm_%s" % (a, a)
        for a in CUDA_ARCHS
    ])
    objs = []
    for src in srcs:
        obj = name + "_" + src.replace("/", "_").replace(".cu", ".o")
        native.genrule(
            name = obj + "_nvcc",
            srcs = [src] + hdrs + nvcc_hdrs,
            outs = [obj],
            cmd = "%s -std=c++17 -O3 -Xcompiler -fPIC %s %s -I. -c $(location %s) -o $@" % (
                NVCC,
                gencode,
                " ".join(nvcc_flags),
                src,
            ),
        )
        objs.append(obj)
    native.cc_library(
        name = name,
        srcs = objs,
        hdrs = hdrs,
        deps = deps + ["@local_cuda//:cudart"],
        linkopts = cuda_linkopts,
        defines = ["LEEWAY_HAVE_CUDA=1"],
        linkstatic = True,
        **kwargs
    )
