test --no-times --compare binpack tests/kiln-test/compare/binpack_cpu_memory.policy --cases 40 --gpus --arg binpack.resources=nvidia.com/gpu
