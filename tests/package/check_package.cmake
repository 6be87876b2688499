# The package test (cmake -P): install the fuseflow build FUSEFLOW_BUILD_DIR into a fresh
# prefix under WORK_DIR, configure and build the consumer project CONSUMER_DIR against
# it with find_package(fuseflow), run its app and check what it prints. With WITH_DUMP
# (examples built), also runs the installed fuseflow-dump.
foreach(var FUSEFLOW_BUILD_DIR CONSUMER_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_package.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package test: ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

function(expect text what)
  string(FIND "${output}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "package test: ${what} printed\n${output}\nwhich lacks: ${text}")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})

run("cmake --install" ${CMAKE_COMMAND} --install ${FUSEFLOW_BUILD_DIR} --prefix ${prefix})
foreach(file include/fuseflow/fuseflow.hpp include/fuseflow/frontend/expr.hpp include/fuseflow/codegen/plan.hpp
             include/fuseflow/runtime/runtime.hpp lib/cmake/fuseflow/fuseflowConfig.cmake
             lib/cmake/fuseflow/fuseflowConfigVersion.cmake)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "package test: the install lacks ${file}")
  endif()
endforeach()

run("configuring the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/consumer -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run("building the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run("the consumer's app" ${WORK_DIR}/consumer/app)
expect("%0 = reduce(plus: f32, x * y)" "the consumer's app")
expect("kernel: ff_reduce_chunked_f32_plus" "the consumer's app")

if(WITH_DUMP)
  run("the installed fuseflow-dump" ${prefix}/bin/fuseflow-dump --example dot --emit program)
  expect("reduce(plus: f32, x * y)" "the installed fuseflow-dump")
endif()
message(STATUS "package test: installed, found with find_package(fuseflow), built and ran the consumer")
