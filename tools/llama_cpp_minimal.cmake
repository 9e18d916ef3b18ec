# Included before every project() call of the llama-cpp-python build (make setup passes it as
# CMAKE_PROJECT_INCLUDE_BEFORE in CMAKE_ARGS). llama-cpp-python forces llama.cpp's "common" library on, but the
# Python bindings call only libllama and libggml: common (argument parsing, chat templates, JSON; half of the
# compile) is never loaded. Setting it off again here, before llama.cpp's own project() reads it, halves the build.
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama.cpp common library (not used by the Python bindings)" FORCE)
