# src/consumer (consumer.h): the one consumer, from sources (the ring
# buffer) to sinks (stream files, snapshots), linked by libringtrace
# (embedded mode) and ringtraced (through src/daemon's rtd_consumer).
# Link it together with rt_core (ring buffer, CTF writer); it brings
# rt_common and Threads::Threads.
add_library(rt_consumer STATIC
  ${CMAKE_CURRENT_LIST_DIR}/errors.c
  ${CMAKE_CURRENT_LIST_DIR}/files.c
  ${CMAKE_CURRENT_LIST_DIR}/metadata.c
  ${CMAKE_CURRENT_LIST_DIR}/packet.c
  ${CMAKE_CURRENT_LIST_DIR}/rb_source.c
  ${CMAKE_CURRENT_LIST_DIR}/recover.c
  ${CMAKE_CURRENT_LIST_DIR}/recovery.c
  ${CMAKE_CURRENT_LIST_DIR}/read.c
  ${CMAKE_CURRENT_LIST_DIR}/rotate.c
  ${CMAKE_CURRENT_LIST_DIR}/snapshot.c
  ${CMAKE_CURRENT_LIST_DIR}/trace_dir.c)
target_include_directories(rt_consumer PUBLIC ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(rt_consumer PUBLIC rt_common Threads::Threads)

# The network sink (consumer_net.h), for the daemon only: libringtrace
# never streams to a relay, and so never links OpenSSL.
add_library(rt_consumer_net STATIC ${CMAKE_CURRENT_LIST_DIR}/net_sink.c
  ${CMAKE_CURRENT_LIST_DIR}/net_cluster.c)
target_link_libraries(rt_consumer_net PUBLIC rt_consumer rt_net)
