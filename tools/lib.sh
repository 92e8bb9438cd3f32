# tools/lib.sh -- sourced by the tools: what a solution's header says, how
# many GPUs this machine has, and the environment every GPU run gets.

# header FILE KEY: the value of FILE's header line "KEY: value" (empty if none)
header() {
	sed -nE "s/.*$2: *([^ ].*[^ ]|[^ ]) *\$/\\1/p" "$1" | head -1
}

# the NVIDIA GPUs here (PKB_TEST_GPUS pretends, for the tools' own tests on
# fake ranks)
gpu_count() {
	echo "${PKB_TEST_GPUS:-$(ls /proc/driver/nvidia/gpus 2>/dev/null | wc -l)}"
}

# never NVLink multicast: on shared machines it can take GPUs out of service,
# and no pkb kernel needs it
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
