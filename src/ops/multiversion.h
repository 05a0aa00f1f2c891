// FS_MULTIVERSION compiles a hot function twice, for AVX2+FMA (x86-64-v3) and for baseline
// x86-64, and picks one when the library loads, so one binary is fast on current CPUs and still
// runs on old ones.
#pragma once

// Sanitizer runtimes are not ready when the loader runs ifunc resolvers, so sanitizer builds use
// the baseline version only.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define FS_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define FS_MULTIVERSION
#endif
