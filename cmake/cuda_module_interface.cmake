# The CUDA module's interface digest (src/engine/backend/cuda_module_fingerprint.h): a SHA-256 of
# the engine headers whose types cross between the engine and libnn_cuda.so. Engine and module
# pass C++ objects through the module's table, so a module compiled from other headers (a virtual
# function added to Backend, members reordered) must be refused, not called; hashing the headers
# themselves means no version number has to be raised by hand.
#
# Which headers: the roots below and every project header they include (#include "...", looked
# up in src/engine/ and include/), followed to the end, so a header newly pulled into the
# interface is hashed without an edit here. A quoted include that cannot be found stops the
# build: an unhashed header could change unnoticed.
#
# What is hashed: each header's name and its text without // comments (only those with no quote
# before them on their line, so a string literal is never cut), indentation, repeated blanks and
# empty lines. Comment and whitespace edits then leave the digest alone; any other edit changes
# it (at worst a spurious change, which only asks for the module to be rebuilt).
#
# Run as a script (src/engine/CMakeLists.txt does, whenever a hashed header changes):
#   cmake -DSOURCE_DIR=<tree> -DOUTPUT=<header> [-DDEPFILE=<file>] -P cuda_module_interface.cmake
# writes OUTPUT, defining NN_CUDA_MODULE_INTERFACE_DIGEST (rewritten only when the digest or the
# list of headers changes, so an edit to a comment recompiles nothing more), and DEPFILE naming
# every header hashed, for the build tool. Included, it provides nn_cuda_module_interface()
# (tests/support/cuda_module_variants.cmake hashes edited copies of a header with it).

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  cmake_minimum_required(VERSION 3.20)  # this file's policies when it runs as the script
endif()

# The headers that spell the table (backend/cuda_module.h: CudaModule, CudaHost, and through its
# includes Backend and the parameter structs of its virtual functions) and the Communicator the
# table hands out (only forward-declared there).
set(NN_CUDA_MODULE_INTERFACE_ROOTS backend/cuda_module.h distributed/communicator.h)

# The text of `file` as it is hashed.
function(nn_cuda_module_interface_text out file)
  file(READ "${file}" text)
  string(REPLACE "\r" "" text "${text}")
  # A // comment to the end of its line, where what comes before it on the line holds no quote
  # or apostrophe (which could open a literal the // belongs to; such a line is kept whole).
  string(REGEX REPLACE "\n([^\n\"'/]*(/[^\n\"'/][^\n\"'/]*)*)//[^\n]*" "\n\\1" text "\n${text}")
  string(REGEX REPLACE "[ \t]+" " " text "${text}")
  string(REGEX REPLACE " ?\n ?" "\n" text "${text}")
  string(REGEX REPLACE "\n\n+" "\n" text "${text}")
  string(STRIP "${text}" text)
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# Sets `digest_var` to the interface digest of the tree at `source_dir` and `names_var` and
# `files_var` to the headers hashed (names as included, and the files they were found at). When
# `override_dir` is not empty it is searched first: a header there replaces the tree's.
function(nn_cuda_module_interface digest_var names_var files_var source_dir override_dir)
  set(dirs ${source_dir}/src/engine ${source_dir}/include)
  if(override_dir)
    list(PREPEND dirs ${override_dir})
  endif()
  set(queue ${NN_CUDA_MODULE_INTERFACE_ROOTS})
  set(names)
  set(files)
  set(hashed "")
  while(queue)
    list(POP_FRONT queue name)
    list(FIND names ${name} seen)
    if(seen GREATER_EQUAL 0)
      continue()
    endif()
    set(found "")
    foreach(dir ${dirs})
      if(EXISTS ${dir}/${name})
        set(found ${dir}/${name})
        break()
      endif()
    endforeach()
    if(NOT found)
      message(FATAL_ERROR "cuda_module_interface: ${name}, part of the CUDA module's interface, "
                          "is not in ${dirs} (a system header is included with <>)")
    endif()
    list(APPEND names ${name})
    list(APPEND files ${found})
    nn_cuda_module_interface_text(text ${found})
    string(APPEND hashed "== ${name}\n${text}\n")
    # Its own includes: a name is looked up beside the header first, as the compiler does.
    get_filename_component(name_dir ${name} DIRECTORY)
    string(REGEX MATCHALL "#[ ]?include ?\"[^\"]+\"" includes "${text}")
    foreach(include ${includes})
      string(REGEX REPLACE ".*\"([^\"]+)\"" "\\1" include "${include}")
      set(beside "")
      if(name_dir)
        foreach(dir ${dirs})
          if(EXISTS ${dir}/${name_dir}/${include})
            set(beside ${name_dir}/${include})
            break()
          endif()
        endforeach()
      endif()
      if(beside)
        list(APPEND queue ${beside})
      else()
        list(APPEND queue ${include})
      endif()
    endforeach()
  endwhile()
  string(SHA256 digest "${hashed}")
  set(${digest_var} ${digest} PARENT_SCOPE)
  set(${names_var} ${names} PARENT_SCOPE)
  set(${files_var} ${files} PARENT_SCOPE)
endfunction()

# Writes `text` to `file` unless it already holds exactly that (its time stamp then stays, and
# nothing that includes it is recompiled).
function(nn_write_if_changed file text)
  if(EXISTS ${file})
    file(READ ${file} old)
    if(old STREQUAL text)
      return()
    endif()
  endif()
  file(WRITE ${file} "${text}")
endfunction()

# A depfile (Make's syntax) saying that `output` depends on `files`.
function(nn_write_depfile depfile output files)
  set(text "${output}:")
  foreach(f ${files})
    string(REPLACE " " "\\ " f "${f}")
    string(APPEND text " \\\n  ${f}")
  endforeach()
  file(WRITE ${depfile} "${text}\n")
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT SOURCE_DIR OR NOT OUTPUT)
    message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<tree> -DOUTPUT=<header> [-DDEPFILE=<file>] "
                        "-P cuda_module_interface.cmake")
  endif()
  nn_cuda_module_interface(digest names files ${SOURCE_DIR} "")
  list(JOIN names ", " hashed)
  string(CONCAT header
    "// Generated by cmake/cuda_module_interface.cmake at build time: do not edit.\n"
    "// The CUDA module's interface digest (backend/cuda_module_fingerprint.h), hashed from\n"
    "// ${hashed}.\n"
    "#pragma once\n\n"
    "#define NN_CUDA_MODULE_INTERFACE_DIGEST \"${digest}\"\n")
  nn_write_if_changed(${OUTPUT} "${header}")
  if(DEPFILE)
    nn_write_depfile(${DEPFILE} ${OUTPUT} "${files}")
  endif()
endif()
