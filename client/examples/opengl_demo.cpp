// gnomon-opengl-demo: OpenGL 3.3 frames with CPU and GPU zones, in a hidden GLFW
// window (run it under Xvfb where there is no display).
//
// Each frame draws a full-screen triangle whose fragment shader loops --iterations
// times, in a "Fullscreen pass" GPU zone, then waits for the GPU (glFinish) inside the
// CPU zone "Draw and finish" — the bracket the GPU zone must lie in. Where the driver has
// ARB_pipeline_statistics_query, the pass is measured by pipeline statistics too.
//
//   gnomon-opengl-demo [--frames N] [--iterations N]
#define GLFW_INCLUDE_GLCOREARB
#define GL_GLEXT_PROTOTYPES
#include <GLFW/glfw3.h>

#include <cstdio>
#include <cstdlib>
#include <gnomon/gnomon.hpp>
#include <gnomon/opengl.hpp>
#include <string>

namespace {

constexpr const char* kVertexShader = R"(#version 330 core
void main() {
  vec2 p = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);
  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
})";

constexpr const char* kFragmentShader = R"(#version 330 core
uniform int iterations;
out vec4 color;
void main() {
  float x = gl_FragCoord.x * 0.001;
  for (int i = 0; i < iterations; ++i) x = fract(x * 1.618 + 0.1);
  color = vec4(x, 0.5, 0.25, 1.0);
})";

GLuint Compile(GLenum type, const char* source) {
  const GLuint shader = glCreateShader(type);
  glShaderSource(shader, 1, &source, nullptr);
  glCompileShader(shader);
  GLint ok = 0;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[1024];
    glGetShaderInfoLog(shader, sizeof(log), nullptr, log);
    std::fprintf(stderr, "gnomon-opengl-demo: shader: %s\n", log);
    std::exit(1);
  }
  return shader;
}

}  // namespace

int main(int argc, char** argv) {
  int frames = 120;
  int iterations = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--frames" && i + 1 < argc) {
      frames = std::atoi(argv[++i]);
    } else if (arg == "--iterations" && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else {
      std::printf("Usage: gnomon-opengl-demo [--frames N] [--iterations N]\n");
      return arg == "-h" || arg == "--help" ? 0 : 1;
    }
  }
  if (!glfwInit()) {
    std::fprintf(stderr, "gnomon-opengl-demo: no display (set DISPLAY, or run under Xvfb)\n");
    return 1;
  }
  glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  GLFWwindow* window = glfwCreateWindow(320, 240, "gnomon-opengl-demo", nullptr, nullptr);
  if (window == nullptr) {
    std::fprintf(stderr, "gnomon-opengl-demo: cannot create an OpenGL 3.3 context\n");
    return 1;
  }
  glfwMakeContextCurrent(window);
  gnomon::SetThreadName("gl");

  gnomon::opengl::ContextOptions options;
  options.name = "GL context";
  auto statistics = gnomon::opengl::CreatePipelineStatisticsSource(glfwGetProcAddress);  // outlives gpu
  auto gpu = gnomon::opengl::Context::Create(glfwGetProcAddress, options);
  if (!gpu->AttachCounters(*statistics)) {
    std::printf("gnomon-opengl-demo: no pipeline statistics (%s)\n",
                statistics->unavailable_reason().c_str());
  }
  std::printf("gnomon-opengl-demo: %s, GPU timing %s\n",
              reinterpret_cast<const char*>(glGetString(GL_RENDERER)), gpu->is_active() ? "on" : "off");

  const GLuint program = glCreateProgram();
  glAttachShader(program, Compile(GL_VERTEX_SHADER, kVertexShader));
  glAttachShader(program, Compile(GL_FRAGMENT_SHADER, kFragmentShader));
  glLinkProgram(program);
  glUseProgram(program);
  glUniform1i(glGetUniformLocation(program, "iterations"), iterations);
  GLuint vao = 0;
  glGenVertexArrays(1, &vao);
  glBindVertexArray(vao);
  glViewport(0, 0, 320, 240);

  for (int frame = 0; frame < frames; ++frame) {
    GNOMON_ZONE("Frame");
    {
      GNOMON_ZONE("Draw and finish");
      {
        GNOMON_GL_ZONE_COUNTERS(*gpu, "Fullscreen pass");
        glClear(GL_COLOR_BUFFER_BIT);
        glDrawArrays(GL_TRIANGLES, 0, 3);
      }
      glFinish();
    }
    gpu->Collect();
    GNOMON_FRAME_MARK();
  }
  glFinish();
  gpu->Collect();
  std::printf("gnomon-opengl-demo: %d frames, %llu GPU zones, %llu timestamps read, %llu untimed\n", frames,
              (unsigned long long)gpu->stats().zones_recorded,
              (unsigned long long)gpu->stats().timestamps_read,
              (unsigned long long)gpu->stats().zones_untimed);
  gpu.reset();
  glfwDestroyWindow(window);
  glfwTerminate();
  return 0;
}
