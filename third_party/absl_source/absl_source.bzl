"""absl_source: Abseil built from Debian's source package, for TSan.

Debian's libabsl is not instrumented for ThreadSanitizer, so TSan cannot see
the synchronization inside absl::Mutex and reports false races. The TSan
pass builds Abseil from the same source (deploy/fetch-absl-source.sh puts
it where --repo_env=LEEWAY_ABSL_SRC points) with the same flags as ours.
Without LEEWAY_ABSL_SRC this repository is empty: only --config=tsan uses it.
"""

def _absl_source_impl(ctx):
    src = ctx.os.environ.get("LEEWAY_ABSL_SRC", "")
    if src == "":
        ctx.file("BUILD", "# LEEWAY_ABSL_SRC not set: Abseil source not used.\n")
        return
    root = ctx.path(src)
    if not root.exists or not root.get_child("absl").exists:
        fail("LEEWAY_ABSL_SRC=%s holds no Abseil source (run deploy/fetch-absl-source.sh)" % src)
    for child in root.readdir():
        if child.basename not in ["WORKSPACE", "WORKSPACE.bazel"]:
            ctx.symlink(child, child.basename)
    ctx.file("WORKSPACE", "workspace(name = \"com_google_absl\")\n")

absl_source = repository_rule(
    implementation = _absl_source_impl,
    environ = ["LEEWAY_ABSL_SRC"],
    local = True,
)
