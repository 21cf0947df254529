// The compute shader of gnomon-vulkan-demo: each invocation iterates a linear
// congruential generator `iterations` times over its element, so a dispatch takes a
// predictable, adjustable time. Compiled to vulkan_compute_spirv.h with:
//   glslangValidator -V --vn kComputeSpirv -o vulkan_compute_spirv.h vulkan_compute.comp
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { uint values[]; };
layout(push_constant) uniform Push { uint iterations; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  uint x = values[i];
  for (uint k = 0u; k < iterations; ++k) x = x * 1664525u + 1013904223u;
  values[i] = x;
}
