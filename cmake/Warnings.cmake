# linalgd_target_defaults(target): warnings and sanitizers for our own code.
# LINALGD_SANITIZE: ON/address adds ASan + UBSan (any UB aborts the test);
# thread adds TSan. Third-party libraries stay uninstrumented.
# -Wno-missing-field-initializers: options structs are aggregates whose members
# have default initializers, meant to be given in part ({.blas_threads = 1});
# GCC 12 warns on every such brace list, designated or not.
function(linalgd_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers>)
  if(LINALGD_SANITIZE STREQUAL "thread")
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread -fno-omit-frame-pointer>)
    target_link_options(${target} PRIVATE -fsanitize=thread)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE")
      # absl's locks made visible to TSan (Debian's abseil is not instrumented).
      target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests/tsan_absl_annotations.cc)
      set_target_properties(${target} PROPERTIES ENABLE_EXPORTS ON)
      target_link_libraries(${target} PRIVATE ${CMAKE_DL_LIBS})
    endif()
  elseif(LINALGD_SANITIZE)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer
        -fno-sanitize-recover=undefined>)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# linalgd_link_malloc(target): an executable that hosts a server links
# jemalloc (LINALGD_JEMALLOC) ahead of the C library, so jemalloc's malloc
# serves the whole process. gRPC's threads allocate a call's buffers on one
# thread and free them on another; glibc's per-thread arenas made that the
# server's main cost under concurrent callers (README, "Memory allocator").
# --no-as-needed (the executable's link) keeps the library although nothing
# names its symbols (Ubuntu's linker drops such libraries by default).
# server/common/jemalloc_conf.cc, compiled into the executable, is jemalloc's
# settings (malloc_conf).
function(linalgd_link_malloc target)
  if(LINALGD_JEMALLOC)
    target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/server/common/jemalloc_conf.cc)
    target_link_options(${target} PRIVATE "LINKER:--no-as-needed")
    target_link_libraries(${target} PRIVATE ${JEMALLOC_LIBRARY})
  endif()
endfunction()
