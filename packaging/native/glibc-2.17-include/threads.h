/*
 * Put first on the include path of the glibc 2.17 builds (packaging/native/build.sh): C11 threads
 * (mtx_lock, thrd_create, ...) came with glibc 2.28, but zig's glibc headers declare them for
 * every version. librdkafka's ./configure then finds <threads.h>, and the link against glibc
 * 2.17 fails with "undefined symbol: mtx_lock". With this header the check fails and
 * librdkafka uses its own tinycthread on pthreads.
 */
#error "C11 threads need glibc 2.28; this build targets glibc 2.17"
