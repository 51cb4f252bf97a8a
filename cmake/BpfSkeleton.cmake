# wanlab_bpf_skeleton(NAME SOURCE src.bpf.c HEADERS h...)
# Compiles SOURCE with clang for the BPF target, generates NAME.skel.h with
# bpftool and offers an interface library NAME_skel that puts it on the include
# path. The object is embedded in the skeleton: nothing is looked up at run time.
find_program(CLANG_BPF NAMES clang REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)

function(wanlab_bpf_skeleton name)
  cmake_parse_arguments(ARG "" "SOURCE" "HEADERS" ${ARGN})
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/skel)
  set(obj ${out_dir}/${name}.bpf.o)
  set(skel ${out_dir}/${name}.skel.h)
  execute_process(COMMAND uname -m OUTPUT_VARIABLE arch OUTPUT_STRIP_TRAILING_WHITESPACE)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
    COMMAND ${CLANG_BPF} -g -O2 -target bpf -Wall -Wextra -Werror
            -I${CMAKE_CURRENT_SOURCE_DIR} -I/usr/include/${arch}-linux-gnu
            -c ${CMAKE_CURRENT_SOURCE_DIR}/${ARG_SOURCE} -o ${obj}
    DEPENDS ${ARG_SOURCE} ${ARG_HEADERS}
    COMMENT "BPF ${ARG_SOURCE}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name} > ${skel}
    DEPENDS ${obj}
    COMMENT "skeleton ${name}.skel.h")
  add_custom_target(${name}_skel_gen DEPENDS ${skel})
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${out_dir} ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${name}_skel INTERFACE PkgConfig::LIBBPF)
endfunction()
