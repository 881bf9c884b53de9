# The daemon's consumers (helper `consumer`): dp.h's consumer_* functions.
# Included by the daemon's CMakeLists.txt (or the top level until it
# exists). Link rt_consumer together with rt_core (ring buffer, CTF
# writer); it brings rt_common (fs_util, config_parse) and Threads::Threads.
add_library(rt_consumer STATIC
  ${CMAKE_CURRENT_LIST_DIR}/consumer_meta.c
  ${CMAKE_CURRENT_LIST_DIR}/consumer_packet.c
  ${CMAKE_CURRENT_LIST_DIR}/consumer_snapshot.c
  ${CMAKE_CURRENT_LIST_DIR}/consumer_stream.c
  ${CMAKE_CURRENT_LIST_DIR}/consumer_thread.c)
target_include_directories(rt_consumer PUBLIC ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(rt_consumer PUBLIC rt_common Threads::Threads)
