// ShaderLibrary.cpp - compiles and caches the pipeline's shader programs.
#include "ShaderLibrary.h"

#include <fstream>
#include <sstream>

#include "Core/Log.h"
#include "Render/GL.h"

namespace render {

namespace {

std::string ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

GLuint Compile(GLenum stage, const std::string& source, const std::string& name) {
    GLuint shader = glCreateShader(stage);
    const char* src = source.c_str();
    glShaderSource(shader, 1, &src, nullptr);
    glCompileShader(shader);

    GLint ok = GL_FALSE;
    glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    if (ok != GL_TRUE) {
        char log[1024];
        glGetShaderInfoLog(shader, sizeof(log), nullptr, log);
        LOG_ERROR("shader {} failed to compile: {}", name, log);
        glDeleteShader(shader);
        return 0;
    }
    return shader;
}

}  // namespace

GLuint ShaderLibrary::Program(const std::string& name) {
    auto it = programs_.find(name);
    if (it != programs_.end()) {
        return it->second;
    }
    const std::string base = root_ + "/" + name;
    GLuint vs = Compile(GL_VERTEX_SHADER, ReadFile(base + ".vert"), name);
    GLuint fs = Compile(GL_FRAGMENT_SHADER, ReadFile(base + ".frag"), name);
    if (vs == 0 || fs == 0) {
        glDeleteShader(vs);
        glDeleteShader(fs);
        return fallback_;
    }
    GLuint prog = glCreateProgram();
    glAttachShader(prog, vs);
    glAttachShader(prog, fs);
    glLinkProgram(prog);
    glDeleteShader(vs);
    glDeleteShader(fs);
    programs_.emplace(name, prog);
    return prog;
}

}  // namespace render
