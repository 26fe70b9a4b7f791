"""Default schedules for target cuda, written as te schedule ops.

Placeholder until the CUDA schedules land: every output's axes fused and
split over blocks of 256 threads (blockIdx.x / threadIdx.x), the other
stages inlined (reductions computed at root by one thread per output)."""
