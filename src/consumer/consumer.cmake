# src/consumer: the consumer, from buffers to CTF packets in trace files.
# rt_consumer holds what ringtraced links (with rt_core; it brings
# rt_common and Threads::Threads); embedded mode compiles trace_dir.c
# into libringtrace.
add_library(rt_consumer STATIC
  ${CMAKE_CURRENT_LIST_DIR}/metadata.c
  ${CMAKE_CURRENT_LIST_DIR}/packet.c
  ${CMAKE_CURRENT_LIST_DIR}/snapshot.c
  ${CMAKE_CURRENT_LIST_DIR}/stream.c
  ${CMAKE_SOURCE_DIR}/src/daemon/consumer_thread.c)
target_include_directories(rt_consumer PUBLIC ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(rt_consumer PUBLIC rt_common Threads::Threads)
