// A current OpenGL 3.3 core context for the OpenGL collector's tests (Mesa's llvmpipe
// under an Xvfb of the test's own in CI), and a GL program that draws points.
#pragma once

#include <doctest/doctest.h>

#ifndef GLFW_INCLUDE_GLCOREARB
#define GLFW_INCLUDE_GLCOREARB
#endif
#ifndef GL_GLEXT_PROTOTYPES
#define GL_GLEXT_PROTOTYPES
#endif
#include <GLFW/glfw3.h>

#include <cstdlib>
#include <utility>

#include "xvfb.h"

namespace gnomon::test {

// A hidden window with a current GL 3.3 core context, on an Xvfb of its own.
struct GlFixture {
  Xvfb xvfb;
  GLFWwindow* window = nullptr;
  GlFixture() {
    REQUIRE_MESSAGE(!xvfb.display().empty(), "Xvfb did not start");
    setenv("DISPLAY", xvfb.display().c_str(), 1);
    REQUIRE(glfwInit());
    glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    window = glfwCreateWindow(64, 64, "gnomon test", nullptr, nullptr);
    REQUIRE(window != nullptr);
    glfwMakeContextCurrent(window);
  }
  ~GlFixture() {
    glfwDestroyWindow(window);
    glfwTerminate();
  }
  GlFixture(const GlFixture&) = delete;
  GlFixture& operator=(const GlFixture&) = delete;
};

// A GL program that draws points: each vertex at the origin, one fragment each.
inline GLuint PointProgram() {
  const char* vertex = "#version 330 core\nvoid main() { gl_Position = vec4(0.0, 0.0, 0.0, 1.0); }\n";
  const char* fragment = "#version 330 core\nout vec4 color;\nvoid main() { color = vec4(1.0); }\n";
  GLuint program = glCreateProgram();
  for (auto [type, source] : {std::pair{GL_VERTEX_SHADER, vertex}, std::pair{GL_FRAGMENT_SHADER, fragment}}) {
    GLuint shader = glCreateShader(type);
    glShaderSource(shader, 1, &source, nullptr);
    glCompileShader(shader);
    GLint ok = 0;
    glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    REQUIRE(ok == GL_TRUE);
    glAttachShader(program, shader);
    glDeleteShader(shader);
  }
  glLinkProgram(program);
  GLint linked = 0;
  glGetProgramiv(program, GL_LINK_STATUS, &linked);
  REQUIRE(linked == GL_TRUE);
  return program;
}

}  // namespace gnomon::test
