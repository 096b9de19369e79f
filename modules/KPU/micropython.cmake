# openkpu `_kpu` user C module for MicroPython's CMake-based ports (esp32, rp2):
#   make USER_C_MODULES=/path/to/openkpu/modules/KPU/micropython.cmake
add_library(usermod_kpu INTERFACE)

get_filename_component(OKPU_CORE_DIR ${CMAKE_CURRENT_LIST_DIR}/../../c_src ABSOLUTE)
file(GLOB OKPU_CORE_SRC ${OKPU_CORE_DIR}/*/*.c)

target_sources(usermod_kpu INTERFACE
    ${CMAKE_CURRENT_LIST_DIR}/modkpu.c
    ${OKPU_CORE_SRC}
)

target_include_directories(usermod_kpu INTERFACE
    ${CMAKE_CURRENT_LIST_DIR}
    ${OKPU_CORE_DIR}
)

target_link_libraries(usermod INTERFACE usermod_kpu)
