/* Prints what CUDA reports as one GPU's total and free memory (cudaMemGetInfo, what
 * torch.cuda.mem_get_info returns) next to NVML's, so that docs/plan.md's claim about --gpu-mem
 * (the engines size their pools from CUDA's total) is checked on a real GPU:
 *   nvcc -o build/cuda_total tests/gpu/cuda_total.cu && build/cuda_total
 * Output: "cuda total_bytes free_bytes" for device 0; compare with
 * nvidia-smi --query-gpu=memory.total,memory.reserved --format=csv,nounits. */
#include <cstdio>
#include <cuda_runtime.h>

int main()
{
	size_t free_b = 0, total_b = 0;
	cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
	if (e != cudaSuccess) {
		fprintf(stderr, "cudaMemGetInfo: %s\n", cudaGetErrorString(e));
		return 1;
	}
	printf("cuda %zu %zu\n", total_b, free_b);
	return 0;
}
