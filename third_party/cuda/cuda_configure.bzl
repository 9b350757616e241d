"""Finds the CUDA toolkit, if any, and describes it to the build.

Creates the repository @local_cuda with:
  //:defs.bzl  CUDA_AVAILABLE (bool) and NVCC (path or "")
  //:cudart    the CUDA runtime to link against (empty when absent)
The toolkit is looked up at $CUDA_PATH, then /usr/local/cuda.
"""

def _cuda_configure_impl(ctx):
    root = ctx.os.environ.get("CUDA_PATH", "/usr/local/cuda")
    nvcc = ctx.path(root + "/bin/nvcc")
    available = nvcc.exists and ctx.os.environ.get("LEEWAY_NO_CUDA", "") == ""
    ctx.file("defs.bzl", "CUDA_AVAILABLE = %s\nNVCC = %r\nCUDA_ROOT = %r\n" % (
        available,
        str(nvcc) if available else "",
        root if available else "",
    ))
    if available:
        linkopts = '["-L%s/lib64", "-Wl,-rpath,%s/lib64", "-lcudart", "-ldl", "-lrt"]' % (root, root)
    else:
        linkopts = "[]"
    ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
exports_files(["defs.bzl"])
cc_library(name = "cudart", linkopts = %s)
""" % linkopts)

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_PATH", "LEEWAY_NO_CUDA"],
    local = True,
)
