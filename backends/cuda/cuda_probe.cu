// cuda_probe.cu -- smallest piece of the CUDA backend: proves that .cu files
// compile with nvcc into libzero (shared and static) and link with cudart.
#include <cuda_runtime.h>

// Number of visible CUDA devices; 0 when there is no device or no driver.
extern "C" int zero_cuda_probe_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}
