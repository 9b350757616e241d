# Offline stand-in for @rules_java: Bazel 4's native Java rules under the
# names that the registered JDK toolchains load.
java_binary = native.java_binary
java_import = native.java_import
java_library = native.java_library
java_plugin = native.java_plugin
java_test = native.java_test
java_toolchain = native.java_toolchain
java_runtime = native.java_runtime
java_package_configuration = native.java_package_configuration
java_proto_library = native.java_proto_library
