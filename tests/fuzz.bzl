"""fuzz_test: a libFuzzer target and the test that runs it.

fuzz_test(name = "wire", srcs = [...], deps = [...], corpus = "testdata/x")
makes `wire_fuzzer` (real libFuzzer under --config=fuzz, the replay driver
of fuzz_replay_main.cc otherwise) and `wire_fuzz_test`, which runs it for
`seconds` over a writable copy of the checked-in corpus (fuzz_test.sh).
"""

def fuzz_test(name, srcs, deps, corpus, seconds = 20):
    fuzzer = name + "_fuzzer"
    native.cc_binary(
        name = fuzzer,
        testonly = True,
        srcs = srcs,
        linkopts = select({
            "//tests:libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        deps = deps + select({
            "//tests:libfuzzer": [],
            "//conditions:default": ["//tests:fuzz_replay_main"],
        }),
    )
    native.sh_test(
        name = name + "_fuzz_test",
        size = "medium",
        srcs = ["//tests:fuzz_test.sh"],
        args = [
            "$(location :%s)" % fuzzer,
            native.package_name() + "/" + corpus,
            str(seconds),
        ],
        data = [":" + fuzzer] + native.glob([corpus + "/*"]),
    )
