# The CMake package: `cmake --install` puts the library, the public headers of the three
# layers, fuseflow-dump and a fuseflowConfig.cmake under the prefix, so that a project can
#
#   find_package(fuseflow REQUIRED)
#   target_link_libraries(app PRIVATE fuseflow::fuseflow)
#
# The library is static by default; its users also need the CUDA toolkit's headers
# (the runtime's headers use CUstream and CUdeviceptr) and Threads, which the config file
# finds. libcuda and libnvrtc are loaded at run time, so nothing else is linked.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FUSEFLOW_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/fuseflow)

install(TARGETS fuseflow EXPORT fuseflowTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(layer frontend codegen runtime)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.hpp")
endforeach()
# The one device header the public headers include (plan.hpp): the constants host and
# device share.
install(FILES ${PROJECT_SOURCE_DIR}/codegen/device/fuseflow/shared_constants.cuh
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fuseflow)
if(TARGET fuseflow-dump)
  install(TARGETS fuseflow-dump RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT fuseflowTargets NAMESPACE fuseflow:: DESTINATION ${FUSEFLOW_INSTALL_CMAKEDIR}
  FILE fuseflowTargets.cmake)
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/fuseflowConfig.cmake CONTENT [[
# fuseflow's CMake package: defines fuseflow::fuseflow.
include(CMakeFindDependencyMacro)
find_dependency(CUDAToolkit)
find_dependency(Threads)
include("${CMAKE_CURRENT_LIST_DIR}/fuseflowTargets.cmake")
]] @ONLY)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fuseflowConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fuseflowConfig.cmake ${PROJECT_BINARY_DIR}/fuseflowConfigVersion.cmake
  DESTINATION ${FUSEFLOW_INSTALL_CMAKEDIR})

# The package test: installs this build into a prefix under the build tree, then builds
# and runs tests/package/consumer against it (no GPU needed).
if(FUSEFLOW_BUILD_TESTS)
  add_test(NAME package_find_package
    COMMAND ${CMAKE_COMMAND}
      -DFUSEFLOW_BUILD_DIR=${PROJECT_BINARY_DIR}
      -DCONSUMER_DIR=${PROJECT_SOURCE_DIR}/tests/package/consumer
      -DWORK_DIR=${PROJECT_BINARY_DIR}/package-test
      -DGENERATOR=${CMAKE_GENERATOR}
      -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
      -DWITH_DUMP=$<TARGET_EXISTS:fuseflow-dump>
      -P ${PROJECT_SOURCE_DIR}/tests/package/check_package.cmake)
endif()
