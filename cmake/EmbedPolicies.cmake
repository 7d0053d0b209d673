# Writes a C++ source that holds every policies/*.policy file as a string, so the built-in
# policies travel inside the binary. Invoked by the build as: cmake -DOUT=.. -DDIR=.. -P this.
file(GLOB files ${DIR}/*.policy)
list(SORT files)
set(body "// Generated from policies/*.policy by cmake/EmbedPolicies.cmake. Do not edit.\n")
string(APPEND body "#include \"compiler/builtin_policies.h\"\n\nnamespace kiln {\n\n")
string(APPEND body "const std::vector<BuiltinPolicy>& BuiltinPolicies() {\n")
string(APPEND body "  static const std::vector<BuiltinPolicy> policies = {\n")
foreach(f ${files})
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} text)
  # A raw string literal with a delimiter no policy uses.
  string(APPEND body "    {\"${name}\", \"policies/${name}.policy\", R\"KILNPOLICY(${text})KILNPOLICY\"},\n")
endforeach()
string(APPEND body "  };\n  return policies;\n}\n\n}  // namespace kiln\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
