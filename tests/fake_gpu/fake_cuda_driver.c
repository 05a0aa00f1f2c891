/* A stand-in libcuda.so.1 that reports a driver with no GPU. With it on LD_LIBRARY_PATH, GPU
 * discovery loads the real CUDA runtime and the real CUDA backend plugin on a machine without a
 * GPU, so a test can check that the plugin loads, registers its kernels and reports "no GPU"
 * cleanly. Only the entry points the runtime looks up first are provided; every call fails the
 * way a driver without devices does. */
#include <stddef.h>
#include <stdlib.h>

enum { kCudaSuccess = 0, kCudaErrorNoDevice = 100, kCudaErrorNotFound = 500 };

/* FLOWSTONE_FAKE_DRIVER_VERSION (e.g. 12020 for CUDA 12.2) plays an older driver. */
int cuDriverGetVersion(int* version) {
  const char* forced = getenv("FLOWSTONE_FAKE_DRIVER_VERSION");
  *version = forced != NULL ? atoi(forced) : 13000;
  return kCudaSuccess;
}

int cuInit(unsigned int flags) {
  (void)flags;
  return kCudaErrorNoDevice;
}

int cuDeviceGetCount(int* count) {
  *count = 0;
  return kCudaErrorNoDevice;
}

int cuGetProcAddress_v2(const char* symbol, void** fn, int version, unsigned long long flags,
                        int* status) {
  (void)symbol;
  (void)version;
  (void)flags;
  *fn = NULL;
  if (status != NULL) *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
  return kCudaErrorNotFound;
}
